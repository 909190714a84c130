"""REINFORCE++-baseline (Hu 2025, arXiv 2501.03262, §3: REINFORCE++ with a group baseline, for
reasoning tasks with one outcome per response).

REINFORCE++ with G responses per prompt: the group mean is the baseline, then the global
normalisation; the KL leaves the reward for a k2 loss term:

    A~_i  = R_i - mean_group(R)                          (no group std, unlike GRPO)
    A_i,t = (A~_i - mean_batch(A~)) / std_batch(A~)      over every valid token (advantages.group_baseline_normalized)
    L = token mean of -min(r A, clip(r, 1 - eps, 1 + eps) A) + beta k2(pi, pi_ref)

OpenRLHF: ``--advantage_estimator reinforce_baseline --use_kl_loss --kl_estimator k2``; verl:
``algorithm.adv_estimator=reinforce_plus_plus_baseline``. ``kl_reward_coef > 0`` folds
``beta * sum_t (log pi_old - log pi_ref)`` into each response's score before the baseline.
"""
from __future__ import annotations

from dataclasses import dataclass

from algos import register
from algos.advantages import group_baseline_normalized
from algos.reinforce_pp import ReinforcePP, ReinforcePPConfig


@dataclass
class ReinforcePPBaselineConfig(ReinforcePPConfig):
    kl_reward_coef: float = 0.0     # the baseline form keeps the KL out of the reward (a loss term instead)
    kl_coef: float = 1e-3           # OpenRLHF examples/scripts/train_reinforce_baseline_llama_ray_agent_async.sh (deleted in 34ba2900): --init_kl_coef 1e-3 --use_kl_loss
    kl_estimator: str = "k2"        # same script: --kl_estimator k2


@register
class ReinforcePPBaseline(ReinforcePP):
    name = "reinforce_pp_baseline"
    Config = ReinforcePPBaselineConfig

    def advantages(self, batch):
        scores = self.shaped_scores(batch)
        kl = self.kl_per_token(batch)
        if kl is not None:   # a sequence-level reward: the response's summed KL, as RLOO
            scores = scores - self.cfg.kl_reward_coef * kl.sum(0)
        return group_baseline_normalized(scores, batch.groups, batch.mask)
