"""CISPO: Clipped IS-weight Policy Optimization (MiniMax-M1, 2025, arXiv 2506.13585, §3.1, eq. 4-5).

GRPO's group-relative advantage; the objective is off-policy REINFORCE whose importance weight is
clipped and held constant, instead of PPO's clip of the update:

    r_i,t = pi(o_i,t) / pi_old(o_i,t)
    r_hat = clip(r_i,t, 1 - eps_low, 1 + eps_high)               no lower bound in the paper
    J = 1/sum_i |o_i| sum_i sum_t sg(r_hat) A_i log pi(o_i,t)     (losses.cispo_loss, token mean)

PPO / GRPO / DAPO drop the gradient of a token whose ratio left the clip range; in long reasoning
those are often the rare "fork" tokens (However, Wait, ...) that start a reflection. CISPO keeps
every token's gradient and only bounds its weight. TRL: ``loss_type="cispo"`` (clamps at
``epsilon_high`` itself: TRL's epsilon_high = 1 + clip_eps_high here, no lower bound); verl:
``policy_loss.loss_mode="cispo"``. With one step per batch the weight is exactly 1 (REINFORCE
with GRPO's advantage): the clip acts when a batch is used for several steps.
"""
from __future__ import annotations

from dataclasses import dataclass

from algos import register
from algos.base import Metrics, check_positive
from algos.grpo import GRPO, GRPOConfig
from algos.losses import cispo_loss


@dataclass
class CISPOConfig(GRPOConfig):
    clip_eps_low: float = 1.0       # MiniMax-M1 §3.1: no lower bound on the IS weight (eps_low "large"; verl's examples/cispo_trainer: clip_ratio_low=10); >= 1 is none
    clip_eps_high: float = 0.2      # verl examples/cispo_trainer: clip_ratio_high=0.2 (the paper tunes only eps_high; TRL's ScaleRL eps_max=5.0 is clip_eps_high=4)
    kl_coef: float = 0.0            # MiniMax-M1 eq. 4 has no KL term (TRL's default beta=0.0)
    loss_agg: str = "token-mean"    # MiniMax-M1 eq. 4: 1 / sum_i |o_i| over every token (TRL loss_type="cispo": active tokens)

    def __post_init__(self):
        super().__post_init__()
        check_positive(self, "clip_eps_low", "clip_eps_high")


@register
class CISPO(GRPO):
    name = "cispo"
    Config = CISPOConfig
    per_run_options = GRPO.per_run_options + ("clip_eps_low", "clip_eps_high")

    def clip_range(self):
        """The range the IS weight is clipped to (the clip fractions count the tokens whose weight was cut)."""
        return self.cfg.clip_eps_low, self.cfg.clip_eps_high

    def objective(self, dist, logp, mb, metrics: Metrics, eps_low, eps_high):
        """Per token, to minimise: -sg(clip(r, 1 - eps_low, 1 + eps_high)) A log pi (+ beta KL if kl_coef > 0)."""
        per_token = cispo_loss(logp, mb["logp_old"], mb["advantages"], eps_low, eps_high)
        if self.cfg.kl_coef:   # GRPO's KL term, should a run ask for one
            per_token = per_token + self.kl_term(logp, mb, metrics)
        return per_token
