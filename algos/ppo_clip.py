"""PPO with the clipped surrogate objective (Schulman et al. 2017, Algorithm 1, eq. 7).

    for iteration = 1, 2, ...:
        run pi_old for T timesteps in each of N environments       (the harness)
        compute advantage estimates A_1..A_T by GAE                (advantages.gae)
        optimise L^CLIP + c1 L^VF - c2 S for K epochs, minibatch M  (Adam)
        theta_old <- theta
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial
from typing import Callable, ClassVar

from algos.advantages import gae, normalize
from algos.base import (DIAGNOSTICS, Algorithm, HorizonRollout, Metrics, check_choice, check_lr,
                        check_max_grad_norm, check_positive, check_range, clipped_epochs)
from algos.losses import clipped_surrogate
from algos.stack import RunStack, per_run, split_metrics


@dataclass
class PPOClipConfig(HorizonRollout):
    lr: float = 3e-4                 # PPO paper Table 3 (MuJoCo): Adam stepsize 3e-4
    num_epochs: int = 10             # Table 3: 10 epochs
    minibatch_size: int = 64         # Table 3: minibatch size 64
    lam: float = 0.95                # Table 3: GAE lambda 0.95
    clip_eps: float = 0.2            # §6.2: epsilon = 0.2 scored best
    vf_coef: float = 1.0             # baselines ppo1 (pposgd_simple): total loss adds vf_loss with weight 1
    ent_coef: float = 0.0            # §6.1: no entropy bonus on MuJoCo
    # The code-level options (Engstrom et al. 2020; Huang et al. 2022), defaulting as baselines ppo1 did.
    adv_norm: str = "batch"          # ppo1 whitens advantages over the batch; CleanRL per minibatch; or none
    value_clip: bool = False         # ppo2/CleanRL clip the value update to +-clip_eps around the old value; ppo1 does not
    lr_anneal: bool = True           # linear decay to 0: baselines ppo1 run_mujoco.py, schedule='linear' (also CleanRL)
    clip_anneal: bool = True         # ppo1's schedule='linear' scales clip_param by the same factor (Table 5's alpha; baselines d9f194f, 2017; removed in b875fb7, 2019)
    max_grad_norm: float | None = None  # ppo1: no clipping; ppo2/CleanRL: 0.5
    # after_update: one more forward pass over the batch after the epochs (exact; cheap for an MLP).
    # last_epoch: each minibatch of the last epoch before its own step (no extra pass; how CleanRL's
    # approx_kl and ppo2's approxkl are measured; a little below the final KL). Learning is unchanged.
    diagnostics: str = "after_update"  # where the logged kl / entropy / explained_variance come from: after_update | last_epoch

    def __post_init__(self):
        super().__post_init__()
        check_choice("adv_norm", self.adv_norm, ("batch", "minibatch", "none"))
        check_choice("diagnostics", self.diagnostics, DIAGNOSTICS)
        check_lr(self, "lr")
        check_positive(self, "num_epochs", "minibatch_size", "clip_eps")
        check_range(self, "lam", 0, 1)
        check_range(self, "vf_coef", 0)
        check_range(self, "ent_coef", 0)
        check_max_grad_norm(self)


class PPOClip(Algorithm):
    name = "ppo_clip"
    Config = PPOClipConfig
    rollout = "horizon"
    uses_critic = True
    clipped: ClassVar[bool] = True   # the objective is clipped at clip_eps (PPO-KL: penalised instead)
    # What may differ between the runs of a stack (algos/stack.py): the numbers the minibatch
    # loop reads per run, and the per-run schedules. Every other option is the same in a stack.
    per_run_options: ClassVar[tuple[str, ...]] = ("lr", "clip_eps", "vf_coef", "ent_coef", "gamma", "lam",
                                                  "lr_anneal", "clip_anneal")

    def __init__(self, agent, cfg: PPOClipConfig, total_updates: int, seed: int):
        super().__init__(agent, cfg, total_updates, seed)
        self.params = list(agent.parameters())
        self.optimizer = self.make_optimizer(self.params, cfg.lr)

    @classmethod
    def stackable(cls, cfg: PPOClipConfig) -> bool:
        # the last epoch's diagnostics are gathered per minibatch (not per run of a stack)
        return cfg.diagnostics == "after_update"

    def objective(self, dist, logp, mb, metrics: Metrics, clip_eps):
        """L^CLIP per step (eq. 7), to minimise; PPO-KL overrides this and ``penalty``."""
        return clipped_surrogate(logp, mb["logp_old"], mb["advantages"], clip_eps)

    @classmethod
    def update_runs(cls, stack: RunStack) -> list[dict[str, float]]:
        """The update of the K runs of ``stack`` (``algos/stack.py``; K = 1 for a run alone): GAE,
        then L^CLIP + c1 L^VF - c2 S for K epochs of minibatches of M steps, every run's minibatch
        in one stacked pass."""
        batches = stack.batch.batches
        prepared = [run.prepare(batch) for run, batch in zip(stack.algos, batches)]
        advantages, returns = (stack.stack_steps([p[i] for p in prepared]) for i in (0, 1))
        clip_eps = per_run([p[2] for p in prepared], like=advantages, dims=2)
        out = clipped_epochs(stack, stack.batch, advantages=advantages, returns=returns,
                             **cls.loss_terms(stack.algos, clip_eps, stack.optimizers["optimizer"], stack.agent.parameters(),
                                              stack.batch, stack.agent))
        stack.write_back()
        return [run.finish(batch, out_k)
                for run, batch, out_k in zip(stack.algos, batches, split_metrics(out, len(stack)))]

    def prepare(self, batch):
        """GAE advantages (whitened as ``adv_norm`` says), returns, this update's clip epsilon and
        learning rate (annealed as configured)."""
        cfg = self.cfg
        advantages, returns = gae(batch.rewards, batch.values, batch.dones, batch.last_value, cfg.gamma, cfg.lam)
        if cfg.adv_norm == "batch":
            advantages = normalize(advantages, batch.mask)
        clip_eps = self.anneal(cfg.clip_eps, cfg.clip_anneal)
        self.set_lr(self.optimizer, self.anneal(cfg.lr, cfg.lr_anneal))
        self.begin_epochs(batch)
        return advantages, returns, clip_eps

    @classmethod
    def loss_terms(cls, runs: list["PPOClip"], clip_eps, optimizer, params, batch, agent) -> dict:
        """The arguments of ``clipped_epochs`` for the runs of a stack, ``agent`` their stacked agent
        and ``batch`` their batches: the options they share as they are, the numbers of
        ``per_run_options`` as per-run tensors, and the per-step tensors the penalty reads."""
        cfg = runs[0].cfg   # the options the runs of a stack share
        penalty, penalty_steps = cls.penalty_term(runs, agent, batch)

        def coef(name: str):
            return per_run([getattr(r.cfg, name) for r in runs], like=clip_eps)
        return dict(
            objective=partial(runs[0].objective, clip_eps=clip_eps), aggregation="token-mean", by="step",
            num_epochs=cfg.num_epochs, num_minibatches=max(1, math.ceil(batch.num_steps / cfg.minibatch_size)),
            optimizer=optimizer, params=params, max_grad_norm=cfg.max_grad_norm,
            clip=(clip_eps, clip_eps) if cls.clipped else None, penalty=penalty,
            vf_coef=coef("vf_coef"), value_clip_eps=clip_eps if cfg.value_clip else None,
            ent_coef=coef("ent_coef"), minibatch_adv_norm=cfg.adv_norm == "minibatch",
            diagnostics=cfg.diagnostics) | penalty_steps

    @classmethod
    def penalty_term(cls, runs: list["PPOClip"], agent, batch) -> tuple[Callable | None, dict]:
        """A term added after aggregation, or None (PPO-KL: beta * KL[pi_old, pi]), and the per-step
        tensors it reads from each minibatch (cut from ``batch``'s steps as the minibatches are)."""
        return None, {}

    def finish(self, batch, out: dict[str, float]) -> dict[str, float]:
        return self.finish_update(out | self.end_epochs(batch, out))

    def begin_epochs(self, batch) -> None:
        """Hook before the epochs (PPO-KL freezes pi_old here)."""

    def end_epochs(self, batch, metrics) -> dict[str, float]:
        """Hook after the epochs (PPO-KL adapts beta here); returns extra metrics."""
        return {}
