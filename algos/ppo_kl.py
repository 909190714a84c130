"""PPO with a KL penalty (Schulman et al. 2017, §4, eq. 8).

    L^KLPEN(theta) = E[ r_t(theta) A_t - beta * KL[pi_old(.|s_t), pi_theta(.|s_t)] ]

    after each update: d = E[KL[pi_old, pi_theta]]
        if d < d_targ / 1.5: beta <- beta / 2
        if d > d_targ * 1.5: beta <- beta * 2

``adaptive=false`` keeps beta fixed; ``kl_coef=0, adaptive=false`` is the paper's
"no clipping or penalty" row of Table 1.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import torch
from torch.distributions import kl_divergence

from algos.base import Metrics, check_choice, check_positive, check_range
from algos.stack import any_nonzero, per_run
from algos.losses import KL_ESTIMATORS, aggregate, importance_surrogate, kl_estimate
from algos.ppo_clip import PPOClip, PPOClipConfig
from core.distributions import DiagGaussian


@dataclass
class PPOKLConfig(PPOClipConfig):
    kl_coef: float = 1.0        # beta; PPO paper Table 1: "beta initialised at 1"
    kl_target: float = 0.01     # d_targ; Table 1's adaptive rows use 0.003, 0.01, 0.03
    adaptive: bool = True       # paper §4's adaptive rule; false = fixed beta
    kl_estimator: str = "analytic"  # KL[pi_old, pi] in closed form (as baselines ppo1), or k1/k2/k3 from samples

    def __post_init__(self):
        super().__post_init__()
        check_choice("kl_estimator", self.kl_estimator, ("analytic", *KL_ESTIMATORS))
        check_range(self, "kl_coef", 0, why="0 with adaptive=false: no penalty")
        check_positive(self, "kl_target")


class PPOKL(PPOClip):
    name = "ppo_kl"
    Config = PPOKLConfig
    clipped = False
    per_run_options = PPOClip.per_run_options + ("kl_coef", "kl_target", "adaptive")

    def __init__(self, agent, cfg: PPOKLConfig, total_updates: int, seed: int):
        super().__init__(agent, cfg, total_updates, seed)
        self.beta = cfg.kl_coef

    def begin_epochs(self, batch):
        self.old_policy = self.agent.frozen_copy()  # pi_old, for the closed-form KL

    def objective(self, dist, logp, mb, metrics: Metrics, clip_eps):
        """The unclipped surrogate ``-r_t A_t`` per step."""
        return importance_surrogate(logp, mb["logp_old"], mb["advantages"])

    @classmethod
    def penalty_term(cls, runs, agent, batch):
        """``beta * E[KL[pi_old, pi]]`` (None when every run's beta is 0: no penalty). ``agent``:
        the runs' stacked agent, whose frozen copy is the stacked pi_old. A Gaussian pi_old with a
        state-independent std is its means: computed once on the batch and cut into minibatches
        with it (``old_loc``), not once per minibatch and epoch."""
        beta = per_run([r.beta for r in runs], like=next(iter(agent.parameters())))
        if not any_nonzero(beta):
            return None, {}
        old_policy, estimator = agent.frozen_copy(), runs[0].cfg.kl_estimator
        old_of, per_step = (lambda mb: old_policy.dist(mb["obs"])), {}
        if estimator == "analytic" and getattr(agent, "state_independent_gaussian", False):
            with torch.no_grad():
                whole = old_policy.dist(batch.stacked("obs"))
            old_of, per_step = (lambda mb: DiagGaussian(mb["old_loc"], whole.log_std)), {"old_loc": whole.loc}
        return partial(kl_penalty, beta=beta, old_of=old_of, estimator=estimator), per_step

    def end_epochs(self, batch, metrics):
        with torch.no_grad():
            dist = self.agent.dist(batch.obs)
            kl = kl_old_new(lambda: self.old_policy.dist(batch.obs), self.cfg.kl_estimator, dist,
                            dist.log_prob(batch.actions), batch.logp_old)
            d = float(aggregate(kl, batch.mask, "token-mean"))
        beta_used = self.beta
        if self.cfg.adaptive:
            self.beta = adapt_beta(self.beta, d, self.cfg.kl_target)
        del self.old_policy
        extra = {"beta": beta_used, "kl_measured": d}
        if beta_used == 0.0:   # in a stack with penalised runs the loop measured it; alone it is not logged
            metrics.pop("kl_penalty", None)
        return extra

    def extra_state(self):
        return {"beta": self.beta}

    def load_extra_state(self, state):
        self.beta = state["beta"]


def kl_old_new(old_dist, estimator: str, dist, logp, logp_old):
    """Per-step KL[pi_old(.|s), pi(.|s)], ``dist`` being pi(.|s) and ``old_dist()`` pi_old(.|s)
    (called only for the closed form)."""
    if estimator == "analytic":
        with torch.no_grad():
            old = old_dist()
        return kl_divergence(old, dist)
    # samples were drawn from pi_old: estimate KL(pi_old || pi) with pi_old as the sampler
    return kl_estimate(logp_old, logp, estimator)


def kl_penalty(dist, logp, mb, metrics: Metrics, beta, old_of, estimator: str):
    """``beta * E[KL[pi_old, pi]]`` over the minibatch (eq. 8's penalty); ``old_of(mb)``: pi_old there."""
    kl = aggregate(kl_old_new(lambda: old_of(mb), estimator, dist, logp, mb["logp_old"]), mb["mask"], "token-mean")
    metrics.add(kl_penalty=kl)
    return beta * kl


def adapt_beta(beta: float, d: float, d_targ: float) -> float:
    """The paper's rule (§4): halve beta below d_targ/1.5, double it above 1.5 d_targ."""
    if d < d_targ / 1.5:
        return beta / 2
    if d > d_targ * 1.5:
        return beta * 2
    return beta
