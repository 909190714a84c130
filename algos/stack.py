"""K runs of one algorithm trained as one stacked model (the batched engine's update).

The runs of a stack share the algorithm class, the network shapes and every option the
minibatch loop branches on; they differ in seeds and in numeric hyper-parameters (Table 1's
clip epsilon, beta, d_targ; learning rates; ...). PureJaxRL's lesson: a small MLP's update
is bound by per-call overhead, so K runs' minibatch steps cost little more than one when
their matrix products are batched.

How a stacked update is the runs' own updates:

- every parameter of run k is row k of a stacked leaf ``[K, *shape]``
  (``Suite.stack_agents``); a forward pass computes all K runs with batched matrix products;
- per-step tensors carry the run as their leading dimension (``[K, T, N]``), and every
  reduction of the update procedure (``aggregate``, ``value_loss``, ``normalize``, the clip
  fractions) reduces the last two dimensions: each run's loss is the number it gets alone;
- the gradient of ``sum_k loss_k`` with respect to run k's rows is run k's own gradient (the
  runs share no parameter);
- ``StackedAdam`` is Adam per run: per-run step counts, learning rates and gradient-norm
  clipping, the moments loaded from and written back to each run's own ``torch.optim.Adam``,
  so a run's checkpoint is the same whichever engine wrote it;
- each run's minibatches come from its own generator, in the order it draws them alone.

Bit-identical whatever K and whichever runs share the stack (``tests/test_invariance.py``): a
lone run of a stackable algorithm trains as a stack of one (``harness/train.py``), and every
kernel here gives run k's slice the same bits at any K (``suites/stacked_mlp.py``'s networks,
``StackedAdam``; ``per_run``'s tensors; group batches padded to the length limit). Every
algorithm has one update, ``update_runs``, written for K runs; ``Algorithm.update(batch)`` is it
on a stack of one (``RunStack.of_one``; ``OneRunAgent``, with the run's own optimizer, for an
agent no suite stacks: such a run never shares a stack, and on an MLP it agrees with the suite's
stacked agent of one to ~1e-7, ``tests/test_stack.py``). Everything else (collection,
advantages, the per-run bookkeeping) runs each run's own code.
"""
from __future__ import annotations

import math
from typing import Any, Iterator, Sequence

import torch
from torch import Tensor
from torch.distributions import Distribution, kl_divergence, register_kl

from core.batch import Batch, stacked_minibatches


def per_run(values: Sequence[float], like: Tensor | None = None, dims: int = 0) -> Tensor:
    """One value per run as a ``[K, 1 x dims]`` tensor (``like``'s dtype and device; float32 on
    the CPU without it) that broadcasts against ``[K, ...]`` quantities with ``dims`` trailing
    dimensions (``dims=0`` for per-run scalars such as a loss, ``dims=2`` for per-step
    ``[K, T, N]`` tensors).

    A tensor also when every run has the same value, and for a stack of one: a run's numbers must
    not depend on which runs share its stack (tests/test_invariance.py), and a Python number is
    not the same operand as its float32 tensor (``1.0 - eps`` computed in double and rounded once
    differs from float32 ``1 - eps`` for about 1 in 10 annealed clip epsilons)."""
    if any(v is None for v in values):
        raise ValueError("a stack cannot mix None with numbers; the planner keeps such runs apart")
    kwargs = {"dtype": like.dtype, "device": like.device} if like is not None else {"dtype": torch.float32}
    return torch.tensor([float(v) for v in values], **kwargs).view(len(values), *([1] * dims))


def any_nonzero(x: Tensor | float) -> bool:
    """Whether a per-run coefficient acts on any run (a term whose coefficient is 0 for every run is
    left out; one that is 0 for some runs only adds an exact 0 to their loss and gradient)."""
    return bool(x.ne(0).any()) if isinstance(x, Tensor) else x != 0


class StackedBatch:
    """The K runs' batches side by side: what ``clipped_epochs`` reads of a batch."""

    def __init__(self, batches: list[Batch]):
        shapes = {tuple(b.mask.shape) for b in batches}
        if len(shapes) != 1:
            raise ValueError(f"the runs of a stack collect batches of one shape; got {sorted(shapes)}")
        self.batches = batches
        self.splittable_steps = all(b.splittable_steps for b in batches)
        self.num_columns = batches[0].num_columns
        # a horizon batch's valid steps are the same for every run (what the minibatches of steps
        # are cut by); group batches of whole episodes differ (None) and are cut by column
        steps = {b.num_steps for b in batches}
        self.num_steps = steps.pop() if len(steps) == 1 else None
        self._stacked: dict[str, Tensor] = {}

    def stacked(self, name: str) -> Tensor:
        """The runs' per-step field ``name`` as one ``[K, T, N, ...]`` tensor (stacked once)."""
        if name not in self._stacked:
            fields = [b.step_fields()[name] for b in self.batches]
            # a stack of one is a view of the run's batch (no copy of its frames)
            self._stacked[name] = fields[0].unsqueeze(0) if len(fields) == 1 else torch.stack(fields)
        return self._stacked[name]

    def step_tensors(self) -> dict[str, Tensor]:
        """Every per-step field but the mask, stacked: what the minibatches are cut from."""
        return {name: self.stacked(name) for name in self.batches[0].step_fields() if name != "mask"}


SIMD_FLOATS = 64   # a multiple of every SIMD width's floats (AVX-512: 16): rows of it start a block


class StackedAdam:
    """Adam (Kingma & Ba 2015, as ``torch.optim.Adam``) on stacked parameters, per run.

    ``leaves``: the stacked parameters ``[K, *shape]``; ``runs``: each run's ``(optimizer, params)``,
    ``params`` in the order of the stacked leaves. The moments and step counts are read from each
    run's optimizer state on creation and written back by ``write_back``; the learning rate of each
    run is its optimizer's at each step (the run's schedule sets it when the update begins). ``clip_grad_norms_`` clips each
    run's gradient to its own norm. A step is torch's fused Adam kernel (``torch._fused_adam_``, as
    ``torch.optim.Adam(fused=True)``): one pass over every leaf of the runs that share a learning
    rate and a step count (all of them, in a sweep), where the unfused rule's dozen tensor
    operations and per-run rate tensors cost ~0.34 ms a minibatch step on a stack of 12 Hopper
    agents (an update 972 against 862 ms with this change alone, one thread). Each run's numbers are the same bits whichever
    runs share the leaves (``tests/test_stacked_mlp.py``; see ``step``).
    """

    def __init__(self, leaves: list[Tensor], runs: list[tuple[torch.optim.Optimizer, list[Tensor]]]):
        self.leaves, self.runs = leaves, runs
        group = runs[0][0].param_groups[0]
        self.beta1, self.beta2 = group["betas"]
        self.eps = group["eps"]
        for optimizer, _ in runs:
            g = optimizer.param_groups[0]
            if (tuple(g["betas"]), g["eps"], g["weight_decay"], g["amsgrad"]) != (
                    (self.beta1, self.beta2), self.eps, 0, False):
                raise ValueError("the runs of a stack use Adam with the same betas and eps, no weight decay")
        self.num_runs = len(runs)
        self.sizes = [leaf.numel() // self.num_runs for leaf in leaves]
        states = [[optimizer.state.get(p, {}) for p in params] for optimizer, params in runs]
        self.step_count = [float(s[0]["step"]) if s[0] else 0.0 for s in states]
        self.exp_avg = self._stacked_state(states, "exp_avg")
        self.exp_avg_sq = self._stacked_state(states, "exp_avg_sq")

    def _stacked_state(self, states, key: str) -> list[Tensor]:
        """One ``[K, *shape]`` tensor per leaf: each run's moment (zero before its first step)."""
        return [torch.stack([s[i][key].detach().reshape(leaf.shape[1:]) if s[i] else torch.zeros_like(leaf[0])
                             for s in states]).to(leaf.device)
                for i, leaf in enumerate(self.leaves)]

    def zero_grad(self) -> None:
        for leaf in self.leaves:
            leaf.grad = None

    @torch.no_grad()
    def clip_grad_norms_(self, max_grad_norm: float | None) -> Tensor | None:
        """Scale each run's gradient to norm at most ``max_grad_norm`` by
        ``torch.nn.utils.clip_grad_norm_``'s rule; returns the per-run norms before clipping
        (None, and nothing done, without a bound)."""
        if max_grad_norm is None:
            return None
        flat = torch.cat([leaf.grad.reshape(self.num_runs, -1) for leaf in self.leaves], 1)
        norms = torch.linalg.vector_norm(flat, dim=1)
        coef = torch.clamp(max_grad_norm / (norms + 1e-6), max=1.0)
        for leaf in self.leaves:
            leaf.grad.mul_(coef.view(-1, *([1] * (leaf.dim() - 1))))
        return norms

    @torch.no_grad()
    def step(self) -> None:
        """One Adam step of every run, each with its own step count and learning rate."""
        self.step_count = [s + 1 for s in self.step_count]
        # each run's rate as its optimizer holds it now: a run's schedule sets it after the stack is
        # built (PPO's prepare anneals it), so a rate read at construction would lag one update
        settings = [(o.param_groups[0]["lr"], s) for (o, _), s in zip(self.runs, self.step_count)]
        groups: dict[tuple[float, float], list[int]] = {}
        for k, setting in enumerate(settings):
            groups.setdefault(setting, []).append(k)
        tensors = list(zip(self.leaves, [leaf.grad for leaf in self.leaves], self.exp_avg, self.exp_avg_sq))
        for (lr, step), members in groups.items():
            # a leaf whole where every run of it is in the group and its rows fill whole SIMD
            # blocks; else each run's own rows (views: the kernel writes through them). The kernel
            # takes a tensor's last partial block on its scalar path, whose last bits differ (a
            # fused multiply-add): a 3-number bias of 4 runs would be one vector and a scalar tail,
            # alone all scalar
            parts = [[], [], [], []]
            for leaf_tensors, size in zip(tensors, self.sizes):
                rows = ([t] for t in leaf_tensors) if len(members) == self.num_runs and size % SIMD_FLOATS == 0 \
                    else ([t[k] for k in members] for t in leaf_tensors)
                for part, chosen in zip(parts, rows):
                    part += chosen
            steps = [torch.tensor(step, dtype=torch.float32)] * len(parts[0])
            torch._fused_adam_(*parts, [], steps, lr=lr, beta1=self.beta1, beta2=self.beta2, weight_decay=0.0,
                               eps=self.eps, amsgrad=False, maximize=False)

    def write_back(self) -> None:
        """Each run's optimizer state as ``torch.optim.Adam`` keeps it (a lone run continues from it)."""
        for k, (optimizer, params) in enumerate(self.runs):
            for p, m, v in zip(params, self.exp_avg, self.exp_avg_sq):
                state = optimizer.state[p]
                like = state["step"] if "step" in state else torch.tensor(0.0, dtype=torch.float32)
                optimizer.state[p] = {"step": torch.tensor(self.step_count[k], dtype=like.dtype, device=like.device),
                                      "exp_avg": m[k].reshape(p.shape).clone(),
                                      "exp_avg_sq": v[k].reshape(p.shape).clone()}


class OwnOptimizer:
    """A lone run's own ``torch.optim`` optimizer as ``RunStack`` steps it (``OneRunAgent``'s stack
    of one: the agent's own parameters). A suite's stacked agent of one run is stepped by
    ``StackedAdam`` instead, the kernels of any stack; an agent no suite stacks never shares a
    stack, and its optimizer's fused kernel is ~8x faster than ``StackedAdam``'s ten passes on a
    Nature CNN (1.7M parameters, one CPU thread: 1.4 ms against 12 ms a step)."""

    def __init__(self, optimizer: torch.optim.Optimizer):
        self.optimizer = optimizer
        self.params = [p for group in optimizer.param_groups for p in group["params"]]

    def zero_grad(self) -> None:
        self.optimizer.zero_grad(set_to_none=True)

    def clip_grad_norms_(self, max_grad_norm: float | None) -> Tensor | None:
        if max_grad_norm is None:
            return None
        return torch.nn.utils.clip_grad_norm_(self.params, max_grad_norm, foreach=True).reshape(1)

    def step(self) -> None:
        self.optimizer.step()

    def write_back(self) -> None:
        pass


class RunStack:
    """What the update procedures (``algos/base.clipped_epochs``) see in place of one algorithm
    when K runs train together: the stacked agent, one optimizer, per-run minibatches.

    ``algos``: the runs' algorithm objects (one class); ``stacked_agent``: their agents as one
    model (``Suite.stack_agents``), parameters in the order of each agent's ``parameters()``.
    """

    def __init__(self, algos: list, stacked_agent, batches: list[Batch]):
        self.algos, self.agent = algos, stacked_agent
        self.batch = StackedBatch(batches)
        # one StackedAdam per optimizer of the algorithm (PPO: one; REINFORCE, TRPO: the critic's too),
        # over the stacked leaves of the parameters it steps; a OneRunAgent's parameters are the run's
        # own, stepped by the run's own optimizer
        if isinstance(stacked_agent, OneRunAgent):
            self.optimizers = {name: OwnOptimizer(o) for name, o in algos[0].optimizers().items()}
        else:
            leaves = list(stacked_agent.parameters())
            self.optimizers = {name: self._stacked_adam(name, leaves) for name in algos[0].optimizers()}
        self._written = False

    def _stacked_adam(self, name: str, leaves: list[Tensor]) -> StackedAdam:
        runs = []
        for a in self.algos:
            optimizer = a.optimizers()[name]
            position = {id(p): i for i, p in enumerate(a.agent.parameters())}
            params = list(optimizer.param_groups[0]["params"])
            runs.append((optimizer, params, [position[id(p)] for p in params]))
        if any(r[2] != runs[0][2] for r in runs):
            raise ValueError(f"the runs of a stack step the same parameters with {name}")
        return StackedAdam([leaves[i] for i in runs[0][2]], [(o, p) for o, p, _ in runs])

    @classmethod
    def of_one(cls, algo, batch: Batch, stacked_agent=None) -> "RunStack":
        """One run as a stack of one: ``stacked_agent`` (its agent as a suite stacks it), else
        ``OneRunAgent`` (any agent, with a leading run dimension of one)."""
        return cls([algo], stacked_agent if stacked_agent is not None else OneRunAgent(algo.agent), [batch])

    @property
    def optimizer(self) -> StackedAdam:
        return self.optimizers["optimizer"]

    def __len__(self) -> int:
        return len(self.algos)

    def stack_steps(self, tensors: list[Tensor]) -> Tensor:
        """Per-run ``[T, N]`` tensors as one ``[K, T, N]``."""
        return torch.stack(tensors)

    # -- the interface of one algorithm, as clipped_epochs uses it ----------------------------

    def epochs(self, batch: StackedBatch, num_epochs: int, num_minibatches: int, by: str = "step",
               **per_step: Tensor) -> Iterator[dict[str, Tensor]]:
        generators = [a.generator for a in self.algos]
        tensors = batch.step_tensors() | {"mask": batch.stacked("mask")} | per_step   # stacked once for all the epochs
        for _ in range(num_epochs):
            yield from stacked_minibatches(batch.batches, generators, num_minibatches, tensors, by=by)

    def gradient_step(self, optimizer: StackedAdam, loss: Tensor, params, max_grad_norm: float | None) -> Tensor:
        """``loss``: ``[K]``, run k's own loss; the gradient of their sum is each run's own.
        ``max_grad_norm``: the runs' shared bound (None: no clipping)."""
        optimizer.zero_grad()
        self._written = False
        loss.sum().backward()
        norms = optimizer.clip_grad_norms_(max_grad_norm)
        optimizer.step()
        return norms

    def after_update_metrics(self, batch: StackedBatch, values_target: Tensor | None = None) -> dict[str, list]:
        """The runs' agents take the stacked weights, then each logs what it logs alone."""
        self.write_back()
        per_run = [a.after_update_metrics(b, None if values_target is None else values_target[k])
                   for k, (a, b) in enumerate(zip(self.algos, batch.batches))]
        return {key: [m[key] for m in per_run] for key in per_run[0]}

    def write_back(self) -> None:
        """The stacked weights and Adam states into the runs' own agents and optimizers (once per
        update: the diagnostics read the runs' agents, and the update ends with them current)."""
        if not self._written:
            self.agent.write_back()
            for optimizer in self.optimizers.values():
                optimizer.write_back()
            self._written = True


def split_metrics(metrics: dict[str, Any], k: int) -> list[dict[str, Any]]:
    """``{key: [v_1..v_K] or v}`` as K dicts (a number shared by every run goes to each)."""
    return [{key: (v[i] if isinstance(v, list) else v) for key, v in metrics.items()} for i in range(k)]


class OneRunDist(Distribution):
    """A lone agent's distribution with a leading run dimension of one, as a stacked agent's:
    ``log_prob`` of ``[1, *shape]`` actions and ``entropy`` are ``[1, ...]``."""

    arg_constraints = {}

    def __init__(self, base: Distribution):
        self.base = base
        super().__init__(torch.Size((1, *base.batch_shape)), base.event_shape, validate_args=False)

    def log_prob(self, value: Tensor) -> Tensor:
        return self.base.log_prob(value[0]).unsqueeze(0)

    def entropy(self) -> Tensor:
        return self.base.entropy().unsqueeze(0)


@register_kl(OneRunDist, OneRunDist)
def _kl_one_run(p: OneRunDist, q: OneRunDist) -> Tensor:
    return kl_divergence(p.base, q.base).unsqueeze(0)


class OneRunAgent:
    """Any agent (the contract of ``core/agent.py``) as a stack of one, for ``RunStack``: inputs and
    outputs carry a leading run dimension of one; its parameters are the agent's own (a step changes
    the agent: ``write_back`` has nothing to do)."""

    def __init__(self, agent):
        self.agent = agent
        self._last: tuple[Tensor, Tensor] | None = None

    def _one(self, obs: Tensor) -> Tensor:
        # the same view for the same input: an agent may reuse dist(obs)'s trunk in value(obs) (Atari)
        if self._last is None or self._last[0] is not obs:
            self._last = (obs, obs[0])
        return self._last[1]

    def parameters(self):
        return self.agent.parameters()

    def policy_parameters(self) -> list[Tensor]:
        return self.agent.policy_parameters()

    def value_parameters(self) -> list[Tensor]:
        return self.agent.value_parameters()

    def dist(self, obs: Tensor) -> OneRunDist:
        return OneRunDist(self.agent.dist(self._one(obs)))

    def value(self, obs: Tensor) -> Tensor:
        return self.agent.value(self._one(obs)).unsqueeze(0)

    def frozen_copy(self) -> "OneRunAgent":
        return OneRunAgent(self.agent.frozen_copy())

    def write_back(self) -> None:
        pass
