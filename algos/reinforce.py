"""REINFORCE (Williams 1992): the "vanilla policy gradient" of the PPO paper's Figure 3.

    G_t = sum_k gamma^k r_{t+k}           return-to-go (bootstrapped with V at the horizon cut: value baseline)
    A_t = G_t - b(s_t)                    b: none (b = 0), the batch mean, or a learned V(s_t)
    theta <- theta + lr * grad E[ log pi_theta(a_t|s_t) A_t ]      one step per batch
    (value baseline: V regressed on G_t)
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from algos.advantages import discounted_returns, normalize
from algos.base import (Algorithm, HorizonRollout, Metrics, check_choice, check_lr, check_max_grad_norm,
                        check_positive, fit_value)
from algos.losses import aggregate, policy_gradient


@dataclass
class ReinforceConfig(HorizonRollout):
    # none: A_t = G_t; mean: A_t = G_t - mean of the batch's G; value: A_t = G_t - V(s_t), V fitted
    # on G_t (only then is there a critic: no V(s) is collected or bootstrapped otherwise)
    baseline: str = "value"       # the paper's "vanilla PG" comparison used a value baseline
    lr: float = 1e-3              # Adam; rllab's VPG benchmark (Duan et al. 2016) tuned step sizes near 1e-3..1e-2
    # Whitening: divide A by its std over the batch; with a baseline also centre it (rllab VPG:
    # center_adv=True). With baseline=none it only divides: centring IS the mean baseline.
    adv_norm: bool = True
    vf_lr: float = 1e-3           # as TRPO's critic (baselines trpo_mpi vf_stepsize); baseline=value only
    vf_epochs: int = 5
    vf_minibatch_size: int = 64
    max_grad_norm: float | None = None

    def __post_init__(self):
        super().__post_init__()
        check_choice("baseline", self.baseline, ("none", "mean", "value"))
        check_lr(self, "lr", "vf_lr")
        check_positive(self, "vf_epochs", "vf_minibatch_size")
        check_max_grad_norm(self)


class Reinforce(Algorithm):
    name = "reinforce"
    Config = ReinforceConfig
    rollout = "horizon"

    @classmethod
    def needs(cls, cfg):
        # a critic only for the value baseline: with none / mean no untrained V(s_final) is folded
        # into the reward at a time-limit truncation, and no return is bootstrapped at the horizon
        return replace(super().needs(cfg), critic=cfg.baseline == "value")

    def __init__(self, agent, cfg: ReinforceConfig, total_updates: int, seed: int):
        super().__init__(agent, cfg, total_updates, seed)
        self.policy_params = agent.policy_parameters()
        self.optimizer = self.make_optimizer(self.policy_params, cfg.lr)
        if self.resolved_needs.critic:
            self.vf_optimizer = self.make_optimizer(agent.value_parameters(), cfg.vf_lr)

    def update(self, batch):
        cfg = self.cfg
        critic = self.resolved_needs.critic
        returns = discounted_returns(batch.rewards, batch.dones, batch.last_value if critic else 0.0, cfg.gamma)
        if cfg.baseline == "value":
            advantages = returns - batch.values
        elif cfg.baseline == "mean":
            advantages = returns - aggregate(returns, batch.mask, "token-mean")
        else:
            advantages = returns
        if cfg.adv_norm:
            advantages = normalize(advantages, batch.mask, center=cfg.baseline != "none")

        logp = self.agent.dist(batch.obs).log_prob(batch.actions)
        loss = aggregate(policy_gradient(logp, advantages), batch.mask, "token-mean")
        self.gradient_step(self.optimizer, loss, self.policy_params, cfg.max_grad_norm)

        metrics = Metrics()
        metrics.add(policy_loss=loss, first_ratio_error=(logp - batch.logp_old).abs().max())
        if critic:
            metrics.add(value_loss=fit_value(self, self.vf_optimizer, batch, returns, cfg.vf_epochs,
                                             cfg.vf_minibatch_size))
        return self.finish_update(metrics.means() | self.after_update_metrics(batch, returns))
