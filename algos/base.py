"""The update procedures and bookkeeping shared by the algorithms.

An algorithm file picks an advantage estimator (``advantages.py``), a policy objective
(``losses.py``) and one of the update procedures here, and says nothing about suites.
"""
from __future__ import annotations

import math
from abc import ABC
from dataclasses import dataclass, fields
from typing import Any, Callable, ClassVar, Iterator

import torch
from torch import Tensor, nn

from algos.advantages import normalize
from algos.losses import aggregate, clip_fractions
from algos.stack import RunStack, any_nonzero
from core.batch import Batch
from core.errors import ConfigError


@dataclass
class HorizonRollout:
    """Fixed-horizon collection: ``num_envs`` environments x ``num_steps`` steps per batch."""
    num_envs: int = 1          # PPO paper Table 3 (MuJoCo): one environment
    num_steps: int = 2048      # PPO paper Table 3: horizon T = 2048
    gamma: float = 0.99        # PPO paper Table 3

    def __post_init__(self):
        check_positive(self, "num_envs", "num_steps")
        check_range(self, "gamma", 0, 1, low_open=True)


@dataclass
class GroupRollout:
    """Group collection: ``num_groups`` groups of ``group_size`` episodes, each group from one state."""
    group_size: int = 8        # GRPO's G; the DeepSeekMath paper used 64 on language, 8 keeps MuJoCo batches small
    num_groups: int = 2
    gamma: float = 0.99        # only used where a return is discounted

    def __post_init__(self):
        check_range(self, "group_size", 2, why="a group of one has no baseline: its advantage is always 0")
        check_positive(self, "num_groups")
        check_range(self, "gamma", 0, 1, low_open=True)

    def check_minibatches(self) -> None:
        """A minibatch keeps whole columns (episodes / completions): at most one per column, else
        some minibatches are empty and their loss is 0/0 (NaN)."""
        columns = self.num_groups * self.group_size
        check_range(self, "num_minibatches", 1, columns,
                    why=f"minibatches of whole episodes: at most num_groups x group_size = "
                        f"{self.num_groups} x {self.group_size}")


@dataclass(frozen=True)
class Needs:
    """What an algorithm asks of the harness and the suites, derived from its resolved config
    (``Algorithm.needs(cfg)``): nothing outside ``algos/`` looks at an algorithm's name or class."""
    rollout: str          # "horizon" (N environments x T steps) or "groups" (G episodes from one state)
    critic: bool          # a value function is trained: collection records V(s) and bootstraps
                          # time-limit truncations with it (no untrained critic touches a return)
    reference: bool       # a frozen copy of the starting policy is kept (KL to pi_ref)
    # a sequence-level option that needs every column to be one sequence of one generation (an LM
    # completion: GSPO's sequence ratio), as "option=value" for the refusal; None: any columns do
    sequence_level: str | None = None


def check_choice(name: str, value: Any, choices: tuple) -> None:
    if value not in choices:
        raise ConfigError(f"{name}={value!r} is not valid; valid: {', '.join(map(str, choices))}")


def _interval(low: float, high: float, low_open: bool, high_open: bool) -> str:
    """The valid range in words: ``> 0``, ``>= 0``, ``< 1``, ``(0, 1]``."""
    if math.isinf(high):
        return "any finite number" if math.isinf(low) else f"{'>' if low_open else '>='} {low:g}"
    if math.isinf(low):
        return f"{'<' if high_open else '<='} {high:g}"
    return f"{'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"


def check_range(cfg: Any, name: str, low: float = -math.inf, high: float = math.inf, *,
                low_open: bool = False, high_open: bool = False, optional: bool = False, finite: bool = True,
                why: str = "") -> None:
    """Raise a ConfigError naming ``name`` and its valid range unless ``cfg.<name>`` is a number
    in ``[low, high]`` (an end excluded where ``low_open`` / ``high_open``). NaN is always refused,
    the infinities unless ``finite=False``. ``optional``: None is valid too (the option is off)."""
    value = getattr(cfg, name)
    if value is None and optional:
        return
    valid = (isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isnan(value)
             and (math.isfinite(value) or not finite)
             and (value > low if low_open else value >= low) and (value < high if high_open else value <= high))
    if not valid:
        text = _interval(low, high, low_open, high_open)
        raise ConfigError(f"{name}={value!r} is not valid; valid: {'None or ' if optional else ''}{text}"
                          + (f" ({why})" if why else ""))


def check_positive(cfg: Any, *names: str) -> None:
    """Each of ``names`` is a finite number > 0."""
    for name in names:
        check_range(cfg, name, 0, low_open=True)


def check_lr(cfg: Any, *names: str) -> None:
    """Step sizes: > 0, NaN refused. ``lr=inf`` stays valid: it is how the fault tests make a run
    diverge at its first update (tests/test_faults.py, test_harness.py, test_ray.py)."""
    for name in names:
        check_range(cfg, name, 0, low_open=True, finite=False)


def check_max_grad_norm(cfg: Any) -> None:
    """Gradient-norm clipping: None (off) or a bound > 0 (torch scales by max / norm: a negative
    bound would reverse the gradient)."""
    check_range(cfg, "max_grad_norm", 0, low_open=True, optional=True, why="None: no clipping")


# Where an update's logged kl / entropy / explained_variance come from (an algorithm's
# ``diagnostics`` option): one more pass over the batch after the update, or the last epoch.
DIAGNOSTICS = ("after_update", "last_epoch")


class Metrics:
    """Running means of detached scalar tensors; one host sync when read."""

    def __init__(self):
        self._sums: dict[str, Tensor] = {}
        self._counts: dict[str, int] = {}

    def add(self, **values: Tensor | float) -> None:
        for key, value in values.items():
            value = (value.detach() if isinstance(value, Tensor)
                     else torch.tensor(value) if isinstance(value, list)   # one number per run of a stack
                     else torch.tensor(float(value)))
            self._sums[key] = self._sums.get(key, 0.0) + value
            self._counts[key] = self._counts.get(key, 0) + 1

    def means(self) -> dict[str, float | list[float]]:
        """Floats; a list of floats per key where the values were vectors (one per run of a stack)."""
        return {k: float(v) / self._counts[k] if v.dim() == 0 else [x / self._counts[k] for x in v.tolist()]
                for k, v in self._sums.items()}


class Algorithm(ABC):
    """Base class: holds the agent, an optimiser and the minibatch machinery."""

    name: ClassVar[str]
    Config: ClassVar[type]
    rollout: ClassVar[str]                 # "horizon" or "groups"
    uses_critic: ClassVar[bool] = False    # the defaults of ``needs``; an algorithm whose needs
    uses_reference: ClassVar[bool] = False  # depend on its options overrides ``needs`` instead

    @classmethod
    def needs(cls, cfg: Any) -> Needs:
        """What this algorithm with the resolved config ``cfg`` needs from the harness."""
        return Needs(rollout=cls.rollout, critic=cls.uses_critic, reference=cls.uses_reference)

    def __init__(self, agent: nn.Module, cfg: Any, total_updates: int, seed: int):
        self.agent, self.cfg, self.total_updates = agent, cfg, max(1, total_updates)
        self.resolved_needs = self.needs(cfg)   # what this instance needs: derived once, from its cfg
        self.updates_done = 0
        self.generator = torch.Generator().manual_seed(seed)
        self.reference = agent.frozen_copy() if self.resolved_needs.reference else None

    def collect(self, collector, agent) -> tuple[Batch | None, list, dict[str, float]]:
        """One batch from the shared collector: (batch, finished episodes, extra metrics). An
        algorithm that samples differently (DAPO's dynamic sampling) overrides this; a batch of
        None means nothing to learn from this time (the harness logs the episodes and goes on)."""
        batch, episodes = collector.collect(agent)
        return batch, episodes, {}

    # -- pieces the subclasses combine ------------------------------------------------

    def make_optimizer(self, params, lr: float) -> torch.optim.Optimizer:
        # fused: one kernel for all parameters; on small MLPs the per-parameter dispatch of
        # the default implementation costs ~2.5x more than the arithmetic (bench/throughput.py).
        # eps=1e-5 as baselines ppo2 / CleanRL (torch's default 1e-8).
        return torch.optim.Adam(params, lr=lr, eps=1e-5, fused=True)

    def anneal(self, value: float, enabled: bool) -> float:
        """``value * (1 - updates_done / total_updates)`` when enabled (PPO paper, Atari's alpha)."""
        return value * (1.0 - self.updates_done / self.total_updates) if enabled else value

    def set_lr(self, optimizer: torch.optim.Optimizer, lr: float) -> None:
        for group in optimizer.param_groups:
            group["lr"] = lr

    def epochs(self, batch: Batch, num_epochs: int, num_minibatches: int, by: str = "step",
               **per_step: Tensor) -> Iterator[dict[str, Tensor]]:
        """K passes over the batch in shuffled minibatches (the PPO update procedure)."""
        for _ in range(num_epochs):
            yield from batch.minibatches(num_minibatches, self.generator, by=by, **per_step)

    def gradient_step(self, optimizer: torch.optim.Optimizer, loss: Tensor, params,
                      max_grad_norm: float | None) -> Tensor | None:
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        norm = nn.utils.clip_grad_norm_(params, max_grad_norm, foreach=True) if max_grad_norm else None
        optimizer.step()
        return norm

    def reference_logp(self, batch: Batch) -> Tensor:
        with torch.no_grad():
            return self.reference.dist(batch.obs).log_prob(batch.actions)

    @torch.no_grad()
    def after_update_metrics(self, batch: Batch, values_target: Tensor | None = None) -> dict[str, float]:
        """What every algorithm logs: KL(old || new) (k3 estimate over the batch), entropy,
        and explained variance of the critic where there is one."""
        dist = self.agent.dist(batch.obs)
        logp = dist.log_prob(batch.actions)
        mask = batch.mask
        n = mask.sum()
        log_ratio = logp - batch.logp_old
        out = {
            "kl": float(((torch.expm1(log_ratio) - log_ratio) * mask).sum() / n),
            "entropy": float((dist.entropy() * mask).sum() / n),
        }
        if values_target is not None and self.resolved_needs.critic:
            out["explained_variance"] = explained_variance(self.agent.value(batch.obs), values_target, mask)
        return out

    def finish_update(self, metrics: dict[str, float]) -> dict[str, float]:
        self.updates_done += 1
        return metrics

    # -- checkpointing ------------------------------------------------------------------

    def optimizers(self) -> dict[str, torch.optim.Optimizer]:
        return {k: v for k, v in vars(self).items() if isinstance(v, torch.optim.Optimizer)}

    def state_dict(self) -> dict[str, Any]:
        return {"updates_done": self.updates_done, "generator": self.generator.get_state(),
                "optimizers": {k: o.state_dict() for k, o in self.optimizers().items()},
                "extra": self.extra_state(),
                "reference": self.reference.state_dict() if self.reference is not None else None}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.updates_done = state["updates_done"]
        self.generator.set_state(state["generator"])
        for k, o in self.optimizers().items():
            o.load_state_dict(state["optimizers"][k])
        self.load_extra_state(state["extra"])
        if self.reference is not None:
            self.reference.load_state_dict(state["reference"])

    def extra_state(self) -> dict[str, Any]:
        """Algorithm state besides optimisers (e.g. PPO-KL's beta)."""
        return {}

    def load_extra_state(self, state: dict[str, Any]) -> None:
        pass

    # -- the update: one method, written for K runs ---------------------------------------
    # A run alone is a stack of one (algos/stack.py): the harness calls ``update_runs`` with the
    # runs of a stack, K = 1 included, so a run's numbers do not depend on its stack. An algorithm
    # that can train K runs as one stacked model writes ``update_runs``, names the options that may
    # differ between the runs of a stack and says which configs it can stack; the planner stacks
    # runs whose configs agree on every other option. A new algorithm may instead write
    # ``update(batch)`` for one run: it is never stacked.

    per_run_options: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def stackable(cls, cfg: Any) -> bool:
        return False

    @classmethod
    def update_runs(cls, stack: RunStack) -> list[dict[str, float]]:
        """The update of each run of ``stack`` (a ``RunStack``) on its batch, as one stacked update;
        returns each run's scalar metrics. Here: an algorithm written for one run (``update``), on
        its stack of one."""
        if len(stack) != 1:
            raise NotImplementedError(f"{cls.name} trains one run at a time")
        return [stack.algos[0].update(stack.batch.batches[0])]

    def update(self, batch: Batch) -> dict[str, float]:
        """Consume one batch, change the agent, return scalar metrics: this run's ``update_runs``
        on a stack of one (``RunStack.of_one``)."""
        return type(self).update_runs(RunStack.of_one(self, batch))[0]

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "name" in vars(cls) and cls.update is Algorithm.update \
                and cls.update_runs.__func__ is Algorithm.update_runs.__func__:
            raise TypeError(f"algorithm {cls.name} writes its update: update_runs(stack) for K runs, "
                            f"or update(batch) for one")


def value_loss(values: Tensor, returns: Tensor, mask: Tensor | None, values_old: Tensor | None = None,
               clip_eps: float | None = None) -> Tensor:
    """Mean squared error of the critic, optionally clipped around the old values (ppo2)."""
    err = (values - returns) ** 2
    if clip_eps is not None and values_old is not None:
        clipped = values_old + torch.clamp(values - values_old, -clip_eps, clip_eps)
        err = torch.maximum(err, (clipped - returns) ** 2)
    steps = (-2, -1) if err.dim() >= 2 else (-1,)   # a leading run dimension (a stack) is kept
    return err.mean(steps) if mask is None else (err * mask).sum(steps) / mask.sum(steps)


def explained_variance(pred: Tensor, target: Tensor, mask: Tensor) -> float:
    """``1 - Var[target - pred] / Var[target]`` over valid steps (NaN if the target is constant)."""
    valid = mask > 0
    pred, target = pred[valid], target[valid]
    var = target.var()
    return float("nan") if var == 0 else float(1 - (target - pred).var() / var)


class LastEpochDiagnostics:
    """``after_update_metrics`` without the extra pass (``diagnostics=last_epoch``): kl (k3 of
    KL(old || current)), entropy and, given values, explained variance over the last epoch's
    minibatches, each as seen before its own gradient step. ``runs``: the minibatches carry a
    leading run dimension (a ``RunStack``'s), and each run gets its own numbers (lists)."""

    def __init__(self, runs: bool = False):
        self.runs = runs
        self.kl, self.entropy, self.values, self.returns, self.masks = [], [], [], [], []

    def _flat(self, x: Tensor) -> Tensor:
        return x.flatten(1) if self.runs else x.flatten()

    @torch.no_grad()
    def add(self, dist, logp, mb, values: Tensor | None = None) -> None:
        mask = mb["mask"] if mb["mask"] is not None else torch.ones_like(logp)   # None: every step valid
        log_ratio = logp - mb["logp_old"]
        self.kl.append(self._flat((torch.expm1(log_ratio) - log_ratio) * mask))
        self.entropy.append(self._flat(dist.entropy() * mask))
        if values is not None:
            self.values.append(self._flat(values.detach()))
            self.returns.append(self._flat(mb["returns"]))
        self.masks.append(self._flat(mask))

    def means(self) -> dict[str, float | list[float]]:
        if not self.runs:
            return self._means(torch.cat(self.masks), torch.cat(self.kl), torch.cat(self.entropy),
                               torch.cat(self.values) if self.values else None,
                               torch.cat(self.returns) if self.values else None)
        parts = [torch.cat(x, 1) if x else None for x in (self.masks, self.kl, self.entropy, self.values, self.returns)]
        per_run = [self._means(*(None if x is None else x[k] for x in parts)) for k in range(parts[0].shape[0])]
        return {key: [m[key] for m in per_run] for key in per_run[0]}

    @staticmethod
    def _means(mask, kl, entropy, values, returns) -> dict[str, float]:
        n = mask.sum()
        out = {"kl": float(kl.sum() / n), "entropy": float(entropy.sum() / n)}
        if values is not None:
            out["explained_variance"] = explained_variance(values, returns, mask)
        return out


CLIP_FRACTIONS = ("clip_fraction", "clip_fraction_low", "clip_fraction_high")


def clipped_epochs(algo: Algorithm, batch: Batch, objective: Callable[..., Tensor], *, aggregation: str,
                   by: str, num_epochs: int, num_minibatches: int, optimizer: torch.optim.Optimizer, params,
                   max_grad_norm: float | None, clip: tuple[float, float] | None = None,
                   penalty: Callable[..., Tensor | None] | None = None, vf_coef: float | None = None,
                   value_clip_eps: float | None = None, ent_coef: float = 0.0, minibatch_adv_norm: bool = False,
                   diagnostics: str = "after_update", max_length: int | None = None,
                   clip_log_ratio: Callable[[Tensor, dict], Tensor] | None = None,
                   **per_step: Tensor) -> dict[str, float]:
    """The PPO update procedure (Schulman et al. 2017, Algorithm 1), shared by PPO-clip, PPO-KL,
    GRPO, DAPO and RLOO: ``num_epochs`` passes over the batch, each in ``num_minibatches``
    shuffled minibatches (``by``: ``"step"`` samples single steps, ``"column"`` keeps whole
    columns / sequences), one gradient step per minibatch on

        loss = aggregate(objective, mask, aggregation) [+ penalty] [+ vf_coef * L^VF] [- ent_coef * S]

    - ``objective(dist, logp, mb, metrics)``: the per-step (per-token) policy loss ``[T, n]`` to
      minimise; ``mb`` holds the batch's step fields and the ``per_step`` tensors (``advantages``;
      ``returns`` for a critic, ``logp_ref`` for a KL to pi_ref), ``metrics`` takes extra numbers;
    - ``penalty(dist, logp, mb, metrics)``: a scalar added after the aggregation, or None (PPO-KL's
      ``beta * KL[pi_old, pi]``);
    - ``vf_coef``: the critic is trained jointly (``value_loss``; with ``value_clip_eps``, clipped
      around the old values as ppo2);
    - ``clip``: ``(eps_low, eps_high)`` of a clipped objective: ``clip_fraction``, ``_low`` and
      ``_high`` (``losses.clip_fractions``) are logged;
    - ``clip_log_ratio(logp, mb)``: the log of the ratio the clip acts on, per step, for the clip
      fractions (GSPO: the sequence's ratio); None: the step's own ``logp - logp_old``;
    - ``max_length``: the constant of an aggregation that divides by one (``seq-mean-token-sum-norm``,
      Dr. GRPO: the length limit of the batch);
    - ``minibatch_adv_norm``: whiten the advantages of each minibatch (CleanRL).

    Returns the means over minibatches (``first_ratio_error`` of the first one, ``policy_loss``,
    ``value_loss``, the clip fractions, what the objective logs) and the diagnostics (kl, entropy,
    explained variance) of ``diagnostics``: after the update, or over the last epoch.
    """
    if by == "column" or not batch.splittable_steps:
        # a minibatch keeps whole columns: never more minibatches than columns (an empty one's loss is
        # 0/0). Configs refuse more than a full batch has; a DAPO batch of fewer kept groups lands here.
        num_minibatches = min(num_minibatches, batch.num_columns)
    metrics, last_epoch = Metrics(), LastEpochDiagnostics(runs=isinstance(algo, RunStack))
    last_epoch_from = (num_epochs - 1) * num_minibatches if diagnostics == "last_epoch" else None
    clip_sums = None   # the clip fractions summed over minibatches, one tensor: no host sync in the loop
    for i, mb in enumerate(algo.epochs(batch, num_epochs, num_minibatches, by=by, **per_step)):
        mask = mb["mask"]                  # None: every sampled step is valid
        if minibatch_adv_norm:
            mb["advantages"] = normalize(mb["advantages"], mask)
        dist = algo.agent.dist(mb["obs"])
        logp = dist.log_prob(mb["actions"])
        if i == 0:  # theta == theta_old here: the ratio must be 1 (catches dropout, a stale logp_old)
            log_ratio = logp - mb["logp_old"]
            metrics.add(first_ratio_error=(log_ratio if mask is None else log_ratio * mask).abs().amax((-2, -1)))
        policy_loss = aggregate(objective(dist, logp, mb, metrics), mask, aggregation, max_length=max_length)
        if penalty is not None and (term := penalty(dist, logp, mb, metrics)) is not None:
            policy_loss = policy_loss + term
        loss, values = policy_loss, None
        if vf_coef is not None:
            values = algo.agent.value(mb["obs"])
            vf_loss = value_loss(values, mb["returns"], mask, mb["values"], value_clip_eps)
            loss = policy_loss + vf_coef * vf_loss
        if any_nonzero(ent_coef):
            loss = loss - ent_coef * aggregate(dist.entropy(), mask, "token-mean")
        if clip is not None:
            if clip_log_ratio is None:
                sides = clip_fractions(logp.detach(), mb["logp_old"], mb["advantages"], *clip)   # [3, (K,) T, N]
            else:
                log_ratio = clip_log_ratio(logp.detach(), mb)
                sides = clip_fractions(log_ratio, torch.zeros_like(log_ratio), mb["advantages"], *clip)
            share = sides.mean((-2, -1)) if mask is None else (sides * mask).sum((-2, -1)) / mask.sum((-2, -1))
            clip_sums = share if clip_sums is None else clip_sums + share
        if last_epoch_from is not None and i >= last_epoch_from:
            last_epoch.add(dist, logp, mb, values)
        algo.gradient_step(optimizer, loss, params, max_grad_norm)
        if values is None:
            metrics.add(policy_loss=policy_loss)
        else:
            metrics.add(policy_loss=policy_loss, value_loss=vf_loss)
    out = metrics.means()
    if clip_sums is not None:
        out.update(zip(CLIP_FRACTIONS, ([x / (i + 1) for x in s] if isinstance(s, list) else s / (i + 1)
                                        for s in clip_sums.tolist())))
    return out | (last_epoch.means() if last_epoch_from is not None
                  else algo.after_update_metrics(batch, per_step.get("returns")))


def fit_value(algo: Algorithm, optimizer: torch.optim.Optimizer, batch: Batch, returns: Tensor,
              num_epochs: int, minibatch_size: int, max_grad_norm: float | None = None) -> float:
    """Regress the critic on ``returns`` with minibatch Adam (TRPO's and REINFORCE's critic)."""
    num_minibatches = max(1, math.ceil(batch.num_steps / minibatch_size))
    params = algo.agent.value_parameters()
    metrics = Metrics()
    for mb in algo.epochs(batch, num_epochs, num_minibatches, by="step", returns=returns):
        loss = value_loss(algo.agent.value(mb["obs"]), mb["returns"], mb["mask"])
        algo.gradient_step(optimizer, loss, params, max_grad_norm)
        metrics.add(value_loss=loss)
    return metrics.means()["value_loss"]


def config_fields(cls: type) -> list[str]:
    return [f.name for f in fields(cls)]
