"""Dr. GRPO: GRPO Done Right (Liu et al. 2025, "Understanding R1-Zero-Like Training: A Critical
Perspective", §3.1 "GRPO leads to biased optimization").

GRPO's objective carries two biases; Dr. GRPO removes both and changes nothing else:

    GRPO:     A_i = (R_i - mean(R)) / std(R)       J = 1/G sum_i 1/|o_i| sum_t min(r A_i, clip(r) A_i)
    Dr. GRPO: A_i =  R_i - mean(R)                 J = 1/G sum_i 1/L_max sum_t min(r A_i, clip(r) A_i)

    - question-level difficulty bias: dividing by std(R) weighs questions that are nearly always
      or nearly never solved more (group_relative(scale=False));
    - response-length bias: 1/|o_i| makes a short correct answer's tokens weigh more and a long
      wrong answer's tokens weigh less; one constant L_max (the generation budget, the batch's
      length limit) for every sequence (aggregate "seq-mean-token-sum-norm").

verl: ``algorithm.norm_adv_by_std_in_grpo=False``, ``loss_agg_mode="seq-mean-token-sum-norm"``
(whose sum over sequences has no 1/G: verl's loss is this one times its micro-batch size);
TRL: ``scale_rewards="none"`` (False), ``loss_type="dr_grpo"`` (divides by max_completion_length,
and by G, as here).

The rest (clip, update procedure, and the KL term to pi_ref with GRPO's beta) is this suite's
GRPO, so that against ``grpo`` only the two §3.1 changes differ. The paper's own recipe runs
without the KL term (sail-sg/understand-r1-zero, examples/qwen2.5-math-7b.sh: ``--beta 0``;
verl docs/algo/grpo.md: ``use_kl_loss=False`` for Dr. GRPO): ``algo.kl_coef=0`` gives it.
"""
from __future__ import annotations

from dataclasses import dataclass

from algos import register
from algos.grpo import GRPO, GRPOConfig


@dataclass
class DrGRPOConfig(GRPOConfig):
    scale_rewards: bool = False                 # Dr. GRPO §3.1: no std in the advantage (TRL scale_rewards="none", verl norm_adv_by_std_in_grpo=False)
    loss_agg: str = "seq-mean-token-sum-norm"   # Dr. GRPO §3.1: token sums over the constant length limit (verl loss_agg_mode, TRL loss_type="dr_grpo")


@register
class DrGRPO(GRPO):
    name = "dr_grpo"
    Config = DrGRPOConfig
