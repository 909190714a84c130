"""Group Relative Policy Optimization (Shao et al. 2024, DeepSeekMath, §4.1 and Algorithm 1).

    for each prompt / initial state: sample G outputs o_1..o_G from pi_old     (group rollout)
    A_i = (R_i - mean(R)) / std(R), the same for every token of o_i            (group_relative)
    J = mean_i [ 1/|o_i| sum_t min(r A, clip(r, 1-eps, 1+eps) A) - beta KL_k3(pi || pi_ref) ]
    K epochs of minibatch Adam on -J; pi_ref frozen (the starting policy)
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial
from typing import ClassVar

from algos.advantages import group_relative
from algos.base import (DIAGNOSTICS, Algorithm, GroupRollout, Metrics, check_choice, check_lr,
                        check_max_grad_norm, check_positive, check_range, clipped_epochs)
from algos.losses import AGGREGATION_MODES, KL_ESTIMATORS, aggregate, clipped_surrogate, kl_estimate
from algos.stack import RunStack, per_run, split_metrics


@dataclass
class GRPOConfig(GroupRollout):
    lr: float = 3e-4              # Adam; the PPO paper's MuJoCo step size (DeepSeekMath's 1e-6 is for a 7B LM)
    num_epochs: int = 10          # K; as PPO on MuJoCo (DeepSeekMath: mu = 1 on language)
    num_minibatches: int = 4      # minibatches of whole episodes
    clip_eps: float = 0.2         # DeepSeekMath / TRL default epsilon 0.2
    kl_coef: float = 0.04         # beta: DeepSeekMath §4.2 and TRL's original default 0.04
    kl_estimator: str = "k3"      # DeepSeekMath eq. 4: the unbiased, non-negative k3 estimator
    loss_agg: str = "seq-mean-token-mean"  # per-sequence mean, then batch mean (DeepSeekMath eq. 3); seq-mean-token-sum-norm divides by the length limit
    scale_rewards: bool = True    # divide by the group std; false = Dr. GRPO (Liu et al. 2025)
    max_grad_norm: float | None = None
    diagnostics: str = "after_update"  # where the logged kl / entropy come from: after_update (one more pass) | last_epoch (free)

    def __post_init__(self):
        super().__post_init__()
        check_choice("loss_agg", self.loss_agg, AGGREGATION_MODES)
        check_choice("diagnostics", self.diagnostics, DIAGNOSTICS)
        check_choice("kl_estimator", self.kl_estimator, KL_ESTIMATORS)
        check_lr(self, "lr")
        check_positive(self, "num_epochs", "clip_eps")
        self.check_minibatches()
        check_range(self, "kl_coef", 0, why="0: no KL term, no reference policy")
        check_max_grad_norm(self)


class GRPO(Algorithm):
    name = "grpo"
    Config = GRPOConfig
    rollout = "groups"

    @classmethod
    def needs(cls, cfg):
        # pi_ref only where the KL term is on (DAPO removes it: kl_coef 0; any kl_coef > 0 brings it back)
        return replace(super().needs(cfg), reference=cfg.kl_coef > 0)

    def __init__(self, agent, cfg, total_updates: int, seed: int):
        super().__init__(agent, cfg, total_updates, seed)
        self.params = agent.policy_parameters()
        self.optimizer = self.make_optimizer(self.params, cfg.lr)

    # What may differ between the runs of a stack (algos/stack.py): numbers each run reads alone
    # (its scores' shaping, its optimizer's step size) or as a per-run tensor (the clip range)
    per_run_options: ClassVar[tuple[str, ...]] = ("lr", "clip_eps")

    @classmethod
    def stackable(cls, cfg: GRPOConfig) -> bool:
        # the last epoch's diagnostics are gathered per minibatch (not per run of a stack)
        return cfg.diagnostics == "after_update"

    def clip_range(self) -> tuple[float, float]:
        """(eps_low, eps_high) of the clipped surrogate; DAPO raises eps_high."""
        return self.cfg.clip_eps, self.cfg.clip_eps

    def shaped_scores(self, batch):
        """The score each column is judged by; DAPO adds its overlong penalty here."""
        return batch.scores

    def advantages(self, batch):
        """Per-column advantage, broadcast over the column's steps."""
        per_column = group_relative(self.shaped_scores(batch), batch.groups, scale=self.cfg.scale_rewards)
        return per_column.unsqueeze(0) * batch.mask

    def clip_log_ratio(self, logp, mb):
        """The log of the ratio the clip acts on, per token (what the clip fractions count): the
        token's own ``log pi - log pi_old``; GSPO's is its sequence's."""
        return logp - mb["logp_old"]

    def kl_term(self, logp, mb, metrics: Metrics):
        """Per token: beta KL(pi || pi_ref) by ``kl_estimator`` (DeepSeekMath eq. 4: k3); logged as kl_ref."""
        kl_ref = kl_estimate(logp, mb["logp_ref"], self.cfg.kl_estimator)
        metrics.add(kl_ref=aggregate(kl_ref, mb["mask"], "token-mean"))
        return self.cfg.kl_coef * kl_ref

    def objective(self, dist, logp, mb, metrics: Metrics, eps_low, eps_high):
        """Per token, to minimise: -min(r A, clip(r, 1 - eps_low, 1 + eps_high) A) + beta KL_k3(pi || pi_ref)."""
        per_token = clipped_surrogate(logp, mb["logp_old"], mb["advantages"], eps_low, eps_high)
        if self.cfg.kl_coef:
            per_token = per_token + self.kl_term(logp, mb, metrics)
        return per_token

    @classmethod
    def update_runs(cls, stack: RunStack) -> list[dict[str, float]]:
        """The update of the K runs of ``stack`` (``algos/stack.py``; K = 1 for a run alone): each
        run's group-relative advantages, then K epochs of minibatches of whole columns, the
        objective aggregated as ``loss_agg`` says, every run's minibatch in one stacked pass."""
        batches = stack.batch.batches
        runs, cfg = stack.algos, stack.algos[0].cfg    # the options the runs of a stack share
        per_step = {"advantages": stack.stack_steps([run.advantages(b) for run, b in zip(runs, batches)])}
        if cfg.kl_coef:
            per_step["logp_ref"] = stack.stack_steps([run.reference_logp(b) for run, b in zip(runs, batches)])
        eps_low, eps_high = (per_run([run.clip_range()[side] for run in runs], like=per_step["advantages"], dims=2)
                             for side in (0, 1))
        out = clipped_epochs(
            stack, stack.batch, partial(runs[0].objective, eps_low=eps_low, eps_high=eps_high),
            aggregation=cfg.loss_agg, by="column", num_epochs=cfg.num_epochs, num_minibatches=cfg.num_minibatches,
            optimizer=stack.optimizers["optimizer"], params=None, max_grad_norm=cfg.max_grad_norm,
            clip=(eps_low, eps_high), diagnostics=cfg.diagnostics, clip_log_ratio=runs[0].clip_log_ratio,
            max_length=batches[0].length_limit, **per_step)   # the runs of a stack share the length limit
        stack.write_back()
        return [run.finish_update(m) for run, m in zip(runs, split_metrics(out, len(stack)))]
