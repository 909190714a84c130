"""Trust Region Policy Optimization (Schulman et al. 2015, Appendix C).

    compute advantages A by GAE; whiten them
    g = grad of the surrogate L(theta) = E[ pi_theta(a|s) / pi_old(a|s) * A ]
    x = F^-1 g by conjugate gradient, F the Hessian of mean KL[pi_old, pi_theta] (Fisher)
    full step s = sqrt(2 * max_kl / (x^T F x)) * x
    backtracking line search on theta + frac * s, frac = 1, shrink, shrink^2, ...:
        accept the first step whose measured KL <= max_kl_tolerance * max_kl and whose surrogate
        does not fall (trpo_mpi: a tolerance of 1.5, for the Fisher estimated on part of the batch)
    fit the value function separately by regression on the returns
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
from torch import Tensor
from torch.distributions import kl_divergence

from algos.advantages import gae, normalize
from algos.base import Algorithm, HorizonRollout, Metrics, check_lr, check_positive, check_range, fit_value
from algos.losses import aggregate, importance_surrogate
from algos.stack import RunStack, per_run, split_metrics


@dataclass
class TRPOConfig(HorizonRollout):
    # Defaults: OpenAI baselines trpo_mpi/run_mujoco.py, the TRPO of the PPO paper's comparison.
    num_steps: int = 1024          # trpo_mpi: timesteps_per_batch=1024
    lam: float = 0.98              # trpo_mpi: lam=0.98
    max_kl: float = 0.01           # trpo_mpi: max_kl=0.01
    cg_iters: int = 10             # trpo_mpi: cg_iters=10
    cg_damping: float = 0.1        # trpo_mpi: cg_damping=0.1
    line_search_shrink: float = 0.5  # trpo_mpi halves the step
    line_search_steps: int = 10    # trpo_mpi tries 10 step sizes
    max_kl_tolerance: float = 1.5  # trpo_mpi: a step is refused only when its KL (on the whole batch) exceeds 1.5 * max_kl
    vf_lr: float = 1e-3            # trpo_mpi: vf_stepsize=1e-3
    vf_epochs: int = 5             # trpo_mpi: vf_iters=5
    vf_minibatch_size: int = 64    # trpo_mpi fits the value in minibatches of 64
    adv_norm: bool = True          # trpo_mpi standardises advantages
    fvp_fraction: float = 0.2      # Fisher-vector products on this random part of the batch: trpo_mpi uses every 5th sample

    def __post_init__(self):
        super().__post_init__()
        check_positive(self, "max_kl", "cg_iters", "line_search_steps", "vf_epochs", "vf_minibatch_size")
        check_lr(self, "vf_lr")
        check_range(self, "lam", 0, 1)
        check_range(self, "cg_damping", 0)
        check_range(self, "fvp_fraction", 0, 1, low_open=True)
        check_range(self, "line_search_shrink", 0, 1, low_open=True, high_open=True)
        check_range(self, "max_kl_tolerance", 1, why="1: the step's KL at most max_kl")


def conjugate_gradient(matvec: Callable[[Tensor], Tensor], b: Tensor, iters: int = 10, tol: float = 1e-10) -> Tensor:
    """Solve ``A x = b`` for symmetric positive-definite ``A`` given only ``matvec(v) = A v``
    (Hestenes & Stiefel 1952; Nocedal & Wright, Algorithm 5.2), starting from ``x = 0``.

    ``b``: ``[P]``, or ``[K, P]``: K independent systems (the runs of a stack, ``matvec`` block
    diagonal), each iterated as alone: its own dot products, and a system whose residual is
    within ``tol`` stops changing while the others go on."""
    if b.dim() == 2:
        return _conjugate_gradient_rows(matvec, b, iters, tol)
    x = torch.zeros_like(b)
    r = b.clone()            # residual b - A x
    p = b.clone()            # search direction
    rr = r @ r
    for _ in range(iters):
        if rr <= tol:
            break
        Ap = matvec(p)
        alpha = rr / (p @ Ap)
        x += alpha * p
        r -= alpha * Ap
        rr_new = r @ r
        p = r + (rr_new / rr) * p
        rr = rr_new
    return x


def _conjugate_gradient_rows(matvec, b: Tensor, iters: int, tol: float) -> Tensor:
    """``conjugate_gradient`` of each row of ``b`` (a converged row is frozen, as alone it stops)."""
    x, r, p = torch.zeros_like(b), b.clone(), b.clone()
    rr = (r * r).sum(-1, keepdim=True)
    for _ in range(iters):
        active = rr > tol
        if not bool(active.any()):
            break
        Ap = matvec(p)
        alpha = rr / (p * Ap).sum(-1, keepdim=True)
        x = torch.where(active, x + alpha * p, x)
        r_new = r - alpha * Ap
        rr_new = (r_new * r_new).sum(-1, keepdim=True)
        p = torch.where(active, r_new + (rr_new / rr) * p, p)
        r, rr = torch.where(active, r_new, r), torch.where(active, rr_new, rr)
    return x


class TRPO(Algorithm):
    name = "trpo"
    Config = TRPOConfig
    rollout = "horizon"
    uses_critic = True

    def __init__(self, agent, cfg: TRPOConfig, total_updates: int, seed: int):
        super().__init__(agent, cfg, total_updates, seed)
        self.policy_params = agent.policy_parameters()
        self.vf_optimizer = self.make_optimizer(agent.value_parameters(), cfg.vf_lr)

    # the batched engine (algos/stack.py): seeds and these numbers may differ within a stack
    per_run_options = ("gamma", "lam", "max_kl", "max_kl_tolerance", "vf_lr")

    @classmethod
    def stackable(cls, cfg: TRPOConfig) -> bool:
        return True

    def advantages(self, batch):
        cfg = self.cfg
        advantages, returns = gae(batch.rewards, batch.values, batch.dones, batch.last_value, cfg.gamma, cfg.lam)
        if cfg.adv_norm:
            advantages = normalize(advantages, batch.mask)
        return advantages, returns

    def fvp_part(self, batch):
        """The random part of the batch the Fisher-vector products see: ``(obs, mask)``."""
        if self.cfg.fvp_fraction < 1:
            part = next(batch.minibatches(max(1, round(1 / self.cfg.fvp_fraction)), self.generator, by="step"))
            return part["obs"], part["mask"]
        return batch.obs, batch.mask

    @classmethod
    def update_runs(cls, stack: RunStack) -> list[dict[str, float]]:
        """The update of the K runs of ``stack`` (``algos/stack.py``; K = 1 for a run alone): the
        surrogate's gradient, the Fisher-vector products and the conjugate gradient of every run in
        one stacked pass (a block-diagonal Fisher matrix: each run's own), the line search per run
        (a run keeps the first step it accepts while the others try shorter ones), the critics
        fitted as one stack. The Fisher-vector products use a random part of each run's batch
        (``fvp_fraction``; rllab's subsample_factor): they dominate the cost (double backward)."""
        batches = stack.batch.batches
        runs, cfg, K = stack.algos, stack.algos[0].cfg, len(stack)
        prepared = [run.advantages(batch) for run, batch in zip(runs, batches)]
        advantages, returns = (stack.stack_steps([p[i] for p in prepared]) for i in (0, 1))
        parts = [run.fvp_part(batch) for run, batch in zip(runs, batches)]   # each run's own random part
        fvp_obs = torch.stack([o for o, _ in parts])
        fvp_mask = None if parts[0][1] is None else torch.stack([m for _, m in parts])
        batch, agent = stack.batch, stack.agent
        obs, actions, mask, logp_old = (batch.stacked(k) for k in ("obs", "actions", "mask", "logp_old"))
        params = agent.policy_parameters()
        max_kl = per_run([r.cfg.max_kl for r in runs], like=advantages)
        kl_bound = per_run([r.cfg.max_kl_tolerance * r.cfg.max_kl for r in runs], like=advantages)
        with torch.no_grad():
            old_dist, fvp_old_dist = agent.dist(obs), agent.dist(fvp_obs)

        def surrogate() -> Tensor:   # [K]
            logp = agent.dist(obs).log_prob(actions)
            return -aggregate(importance_surrogate(logp, logp_old, advantages), mask, "token-mean")

        def mean_kl() -> Tensor:     # [K]
            return aggregate(kl_divergence(old_dist, agent.dist(obs)), mask, "token-mean")

        def fisher_vector_product(v: Tensor) -> Tensor:   # [K, P] -> [K, P]
            kl = aggregate(kl_divergence(fvp_old_dist, agent.dist(fvp_obs)), fvp_mask, "token-mean")
            grads = torch.autograd.grad(kl.sum(), params, create_graph=True)
            flat = _rows(grads, K)
            hvp = torch.autograd.grad((flat * v).sum(), params)
            return _rows(hvp, K) + cfg.cg_damping * v

        surr_before = surrogate()
        g = _rows(torch.autograd.grad(surr_before.sum(), params), K)
        direction = conjugate_gradient(fisher_vector_product, g, cfg.cg_iters)
        shs = (direction * fisher_vector_product(direction)).sum(-1, keepdim=True)
        limit = max_kl.unsqueeze(1)
        full_step = direction * torch.sqrt(2 * limit / shs.clamp(min=1e-12))
        expected_improve = (g * full_step).sum(-1)

        theta_old = _rows([p.detach() for p in params], K)
        surr_before = surr_before.detach()
        # the fraction in double, as the Python number the step used (0.8 ** k is logged as itself)
        accepted, step_frac = torch.zeros(K, dtype=torch.bool), torch.zeros(K, dtype=torch.float64)
        kl, surr, theta = torch.zeros(K), surr_before.clone(), theta_old.clone()
        with torch.no_grad():
            for k in range(cfg.line_search_steps):
                frac = cfg.line_search_shrink ** k
                trial = torch.where(accepted.unsqueeze(1), theta, theta_old + frac * full_step)
                _set_rows(params, trial)
                surr_new, kl_new = surrogate(), mean_kl()
                ok = ~accepted & (kl_new <= kl_bound) & (surr_new >= surr_before) & torch.isfinite(surr_new)
                theta = torch.where(ok.unsqueeze(1), trial, theta)
                step_frac, kl, surr = (torch.where(ok, new, old) for new, old in
                                       ((torch.full((K,), frac, dtype=torch.float64), step_frac), (kl_new, kl),
                                        (surr_new, surr)))
                accepted |= ok
                if bool(accepted.all()):
                    break
            _set_rows(params, torch.where(accepted.unsqueeze(1), theta, theta_old))

        vf_loss = fit_value(stack, stack.optimizers["vf_optimizer"], batch, returns, cfg.vf_epochs,
                            cfg.vf_minibatch_size)
        metrics = Metrics()
        metrics.add(policy_loss=-surr, value_loss=vf_loss, step_accepted=accepted.float(), step_fraction=step_frac,
                    kl_line_search=kl, expected_improve=expected_improve)
        out = metrics.means() | stack.after_update_metrics(batch, returns)
        return [run.finish_update(m) for run, m in zip(runs, split_metrics(out, K))]


def _rows(tensors, K: int) -> Tensor:
    """Per-parameter tensors of K runs (stacked ``[K, ...]``, or one run's own ``[...]`` for K = 1)
    as one ``[K, P]``: run k's parameters flattened, in order."""
    return torch.cat([t.reshape(K, -1) for t in tensors], 1)


def _set_rows(params: list[Tensor], flat: Tensor) -> None:
    """Parameters (stacked ``[K, ...]``, or one run's own for K = 1) from their rows ``[K, P]``."""
    offset = 0
    for p in params:
        n = p.numel() // flat.shape[0]
        p.copy_(flat[:, offset:offset + n].reshape(p.shape))
        offset += n
