"""REINFORCE Leave-One-Out (Kool et al. 2019; Ahmadian et al. 2024, "Back to Basics").

    sample k outputs per prompt / initial state from pi                    (group rollout)
    R_i = score_i - beta * sum_t (log pi_old(a_t|s_t) - log pi_ref(a_t|s_t))   KL folded into the reward
    A_i = R_i - mean_{j != i} R_j                                          (leave_one_out)
    theta <- theta + lr * grad mean_i [ A_i * sum_t log pi(a_t|s_t) ]      the whole output is one action
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial
from typing import ClassVar

from algos.advantages import leave_one_out
from algos.base import (Algorithm, GroupRollout, Metrics, check_choice, check_lr, check_max_grad_norm,
                        check_positive, check_range, clipped_epochs)
from algos.losses import AGGREGATION_MODES, clipped_surrogate, policy_gradient
from algos.stack import RunStack, per_run, split_metrics


@dataclass
class RLOOConfig(GroupRollout):
    group_size: int = 4           # k = 4 (Ahmadian et al. 2024's main setting; TRL's rloo_k default 4)
    num_groups: int = 4
    lr: float = 3e-4              # Adam; the PPO paper's MuJoCo step size
    kl_coef: float = 0.05         # beta: TRL RLOOTrainer's default kl_coef 0.05; 0: no pi_ref at all
    num_epochs: int = 1           # one step per batch (REINFORCE); >1 uses PPO-style clipped epochs
    num_minibatches: int = 1
    clip_eps: float = 0.2         # only for num_epochs > 1 (TRL's PPO-style RLOO option)
    adv_norm: bool = False        # TRL: normalize_advantage=False
    loss_agg: str = "seq-mean-token-sum"  # each sequence's token sum, mean over sequences: the whole output is one action (Ahmadian et al. 2024)
    max_grad_norm: float | None = None

    def __post_init__(self):
        super().__post_init__()
        check_choice("loss_agg", self.loss_agg, AGGREGATION_MODES)
        check_lr(self, "lr")
        check_positive(self, "num_epochs", "clip_eps")
        self.check_minibatches()
        check_range(self, "kl_coef", 0, why="0: no KL penalty, no reference policy")
        check_max_grad_norm(self)


class RLOO(Algorithm):
    name = "rloo"
    Config = RLOOConfig
    rollout = "groups"

    @classmethod
    def needs(cls, cfg):
        # pi_ref only where the KL is folded into the reward (kl_coef > 0)
        return replace(super().needs(cfg), reference=cfg.kl_coef > 0)

    def __init__(self, agent, cfg, total_updates: int, seed: int):
        super().__init__(agent, cfg, total_updates, seed)
        self.params = agent.policy_parameters()
        self.optimizer = self.make_optimizer(self.params, cfg.lr)

    # What may differ between the runs of a stack (algos/stack.py): the optimizer's step size, the
    # KL weight folded into each run's own rewards, and the clip range (a per-run tensor)
    per_run_options: ClassVar[tuple[str, ...]] = ("lr", "clip_eps")

    @classmethod
    def stackable(cls, cfg: RLOOConfig) -> bool:
        return True

    def objective(self, dist, logp, mb, metrics: Metrics, clip_eps):
        """Per token, to minimise: REINFORCE's -A_i log pi(a_t|s_t) (one epoch), or PPO's clipped
        surrogate on A_i (the epochs option)."""
        if self.cfg.num_epochs == 1:
            return policy_gradient(logp, mb["advantages"])
        return clipped_surrogate(logp, mb["logp_old"], mb["advantages"], clip_eps)

    def advantages(self, batch) -> tuple:
        """The leave-one-out advantage of each column, broadcast over its steps; the extra metrics."""
        cfg = self.cfg
        extra = {}
        rewards = batch.scores
        if self.reference is not None:
            kl_sequence = ((batch.logp_old - self.reference_logp(batch)) * batch.mask).sum(0)
            rewards = batch.scores - cfg.kl_coef * kl_sequence
            extra["kl_ref"] = float(kl_sequence.mean())
        advantages = leave_one_out(rewards, batch.groups)
        if cfg.adv_norm:
            advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
        return advantages.unsqueeze(0) * batch.mask, extra | {"reward_with_kl": float(rewards.mean())}

    @classmethod
    def update_runs(cls, stack: RunStack) -> list[dict[str, float]]:
        """The update of the K runs of ``stack`` (``algos/stack.py``; K = 1 for a run alone): each
        run's leave-one-out advantages, then one gradient step on each sequence's token sum (the
        whole output is one action; ``loss_agg``), mean over sequences; every run in one stacked pass."""
        batches = stack.batch.batches
        runs, cfg = stack.algos, stack.algos[0].cfg    # the options the runs of a stack share
        prepared = [run.advantages(b) for run, b in zip(runs, batches)]
        advantages = stack.stack_steps([p[0] for p in prepared])
        clip_eps = per_run([run.cfg.clip_eps for run in runs], like=advantages, dims=2)
        out = clipped_epochs(
            stack, stack.batch, partial(runs[0].objective, clip_eps=clip_eps), aggregation=cfg.loss_agg,
            max_length=batches[0].length_limit,   # the runs of a stack share the length limit
            by="column", num_epochs=cfg.num_epochs, num_minibatches=cfg.num_minibatches,
            optimizer=stack.optimizers["optimizer"], params=None, max_grad_norm=cfg.max_grad_norm,
            clip=(clip_eps, clip_eps) if cfg.num_epochs > 1 else None, advantages=advantages)
        stack.write_back()
        return [run.finish_update(m | extra)
                for run, (_, extra), m in zip(runs, prepared, split_metrics(out, len(stack)))]
