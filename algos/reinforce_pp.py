"""REINFORCE++ (Hu 2025, arXiv 2501.03262, §3).

PPO's clipped update without a critic: the KL to pi_ref goes into the reward token by token, and
the advantage is the return to go normalised over the whole batch (not per prompt):

    r_t = 1[t = last] * score - beta * (log pi_old(a_t) - log pi_ref(a_t))     k1, in the reward
    G_t = sum_{s >= t} gamma^(s - t) r_s                                        gamma = 1
    A_t = (G_t - mean_batch(G)) / std_batch(G)                                  (advantages.reinforce_pp)
    L = token mean of -min(r A_t, clip(r, 1 - eps, 1 + eps) A_t)                PPO's clip, eps 0.2

OpenRLHF: ``--advantage_estimator reinforce``; verl: ``algorithm.adv_estimator=reinforce_plus_plus``
with ``use_kl_in_reward=True``. A GRPO subclass: the group rollout and GRPO's clipped epochs,
another advantage; its groups are only how the completions were drawn (the estimator ignores
them; ``reinforce_pp_baseline`` uses them). ``scale_rewards`` is not read.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from algos import register
from algos.advantages import reinforce_pp
from algos.base import check_range
from algos.grpo import GRPO, GRPOConfig


@dataclass
class ReinforcePPConfig(GRPOConfig):
    kl_coef: float = 0.0            # no KL loss term: REINFORCE++ puts the KL in the reward (kl_reward_coef)
    kl_reward_coef: float = 0.01    # beta of the k1 KL in the reward: OpenRLHF examples/scripts/train_reinforce_llama_ray.sh at 6089a8ca (2024-11): --init_kl_coef 0.01 (1e-4 from 65c19bba, 2025-02)
    gamma: float = 1.0              # REINFORCE++ §3: undiscounted return to go (OpenRLHF gamma 1.0)
    loss_agg: str = "token-mean"    # OpenRLHF's PolicyLoss: token-level loss (every token weighs the same)

    def __post_init__(self):
        super().__post_init__()
        check_range(self, "kl_reward_coef", 0, why="0: no KL in the reward")


@register
class ReinforcePP(GRPO):
    name = "reinforce_pp"
    Config = ReinforcePPConfig
    # each run reads its KL weight alone, in its own advantages
    per_run_options = GRPO.per_run_options + ("kl_reward_coef",)

    @classmethod
    def needs(cls, cfg):
        # pi_ref where a KL acts: in the reward (kl_reward_coef) or as a loss term (kl_coef)
        return replace(super().needs(cfg), reference=cfg.kl_coef > 0 or cfg.kl_reward_coef > 0)

    def kl_per_token(self, batch):
        """``log pi_old - log pi_ref`` on every token (k1, the KL folded into the reward), or None."""
        if not self.cfg.kl_reward_coef:
            return None
        return (batch.logp_old - self.reference_logp(batch)) * batch.mask

    def advantages(self, batch):
        return reinforce_pp(self.shaped_scores(batch), batch.mask, self.kl_per_token(batch),
                            self.cfg.kl_reward_coef, self.cfg.gamma)
