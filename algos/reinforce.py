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
from algos.stack import RunStack, split_metrics


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

    # the batched engine (algos/stack.py): seeds and these numbers may differ within a stack
    per_run_options = ("lr", "gamma", "vf_lr")

    @classmethod
    def stackable(cls, cfg: ReinforceConfig) -> bool:
        return True

    def __init__(self, agent, cfg: ReinforceConfig, total_updates: int, seed: int):
        super().__init__(agent, cfg, total_updates, seed)
        self.policy_params = agent.policy_parameters()
        self.optimizer = self.make_optimizer(self.policy_params, cfg.lr)
        if self.resolved_needs.critic:
            self.vf_optimizer = self.make_optimizer(agent.value_parameters(), cfg.vf_lr)

    @classmethod
    def update_runs(cls, stack: RunStack) -> list[dict[str, float]]:
        """The update of the K runs of ``stack`` (``algos/stack.py``; K = 1 for a run alone): one
        stacked gradient step, the critics fitted as one stack."""
        batches = stack.batch.batches
        prepared = [run.advantages(batch) for run, batch in zip(stack.algos, batches)]
        returns, advantages = (stack.stack_steps([p[i] for p in prepared]) for i in (0, 1))
        cfg, batch = stack.algos[0].cfg, stack.batch
        logp = stack.agent.dist(batch.stacked("obs")).log_prob(batch.stacked("actions"))
        loss = aggregate(policy_gradient(logp, advantages), batch.stacked("mask"), "token-mean")
        stack.gradient_step(stack.optimizers["optimizer"], loss, None, cfg.max_grad_norm)
        vf_optimizer = stack.optimizers.get("vf_optimizer")
        out = finish(stack, cfg, batch, returns, loss, logp, batch.stacked("logp_old"), vf_optimizer)
        stack.write_back()
        return [run.finish_update(m) for run, m in zip(stack.algos, split_metrics(out, len(stack)))]

    def advantages(self, batch):
        """Returns-to-go and the advantages (the configured baseline subtracted, whitened)."""
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
        return returns, advantages


def finish(owner, cfg: ReinforceConfig, batch, returns, loss, logp, logp_old, vf_optimizer) -> dict:
    """The update's metrics, after regressing the critic on the returns where there is one
    (``vf_optimizer``). ``owner``: the ``RunStack`` of the runs (one for a run alone)."""
    metrics = Metrics()
    metrics.add(policy_loss=loss, first_ratio_error=(logp - logp_old).abs().amax((-2, -1)))
    if vf_optimizer is not None:
        metrics.add(value_loss=fit_value(owner, vf_optimizer, batch, returns, cfg.vf_epochs, cfg.vf_minibatch_size))
    return metrics.means() | owner.after_update_metrics(batch, returns)
