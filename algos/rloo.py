"""REINFORCE Leave-One-Out (Kool et al. 2019; Ahmadian et al. 2024, "Back to Basics").

    sample k outputs per prompt / initial state from pi                    (group rollout)
    R_i = score_i - beta * sum_t (log pi_old(a_t|s_t) - log pi_ref(a_t|s_t))   KL folded into the reward
    A_i = R_i - mean_{j != i} R_j                                          (leave_one_out)
    theta <- theta + lr * grad mean_i [ A_i * sum_t log pi(a_t|s_t) ]      the whole output is one action
"""
from __future__ import annotations

from dataclasses import dataclass

from algos.advantages import leave_one_out
from algos.base import Algorithm, GroupRollout, Metrics, check_positive
from algos.losses import aggregate, clipped_surrogate, policy_gradient


@dataclass
class RLOOConfig(GroupRollout):
    group_size: int = 4           # k = 4 (Ahmadian et al. 2024's main setting; TRL's rloo_k default 4)
    num_groups: int = 4
    lr: float = 3e-4              # Adam; the PPO paper's MuJoCo step size
    kl_coef: float = 0.05         # beta: TRL RLOOTrainer's default kl_coef 0.05
    num_epochs: int = 1           # one step per batch (REINFORCE); >1 uses PPO-style clipped epochs
    num_minibatches: int = 1
    clip_eps: float = 0.2         # only for num_epochs > 1 (TRL's PPO-style RLOO option)
    adv_norm: bool = False        # TRL: normalize_advantage=False
    max_grad_norm: float | None = None

    def __post_init__(self):
        check_positive(self, "lr", "num_epochs", "num_minibatches", "group_size", "num_groups")


class RLOO(Algorithm):
    name = "rloo"
    Config = RLOOConfig
    rollout = "groups"
    uses_reference = True

    def __init__(self, agent, cfg, total_updates: int, seed: int):
        super().__init__(agent, cfg, total_updates, seed)
        self.params = agent.policy_parameters()
        self.optimizer = self.make_optimizer(self.params, cfg.lr)

    def update(self, batch):
        cfg = self.cfg
        kl_sequence = ((batch.logp_old - self.reference_logp(batch)) * batch.mask).sum(0)
        rewards = batch.scores - cfg.kl_coef * kl_sequence
        advantages = leave_one_out(rewards, batch.groups)
        if cfg.adv_norm:
            advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
        advantages = advantages.unsqueeze(0) * batch.mask

        metrics = Metrics()
        for i, mb in enumerate(self.epochs(batch, cfg.num_epochs, cfg.num_minibatches, by="column",
                                           advantages=advantages)):
            logp = self.agent.dist(mb["obs"]).log_prob(mb["actions"])
            if i == 0:
                metrics.add(first_ratio_error=((logp - mb["logp_old"]) * mb["mask"]).abs().max())
            if cfg.num_epochs == 1:
                per_token = policy_gradient(logp, mb["advantages"])
            else:
                per_token = clipped_surrogate(logp, mb["logp_old"], mb["advantages"], cfg.clip_eps)
            loss = aggregate(per_token, mb["mask"], "seq-mean-token-sum")
            self.gradient_step(self.optimizer, loss, self.params, cfg.max_grad_norm)
            metrics.add(policy_loss=loss)
        metrics.add(kl_ref=kl_sequence.mean(), reward_with_kl=rewards.mean())
        return self.finish_update(metrics.means() | self.after_update_metrics(batch))
