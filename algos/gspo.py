"""Group Sequence Policy Optimization (Zheng et al. 2025, arXiv 2507.18071, eq. 5 and 7).

GRPO's advantage and update procedure; the importance ratio and its clip move from each token
to the whole response, the unit the reward is given for:

    s_i(theta) = (pi(y_i|x) / pi_old(y_i|x))^(1/|y_i|) = exp(1/|y_i| sum_t log(pi / pi_old)(y_i,t))
    J = 1/G sum_i min(s_i A_i, clip(s_i, 1 - eps_low, 1 + eps_high) A_i)     (losses.gspo_surrogate)

    A_i = (R_i - mean(R)) / std(R) as GRPO; no KL term; eps of order 1e-4 (a length-normalised
    ratio moves far less than a token's); a clipped response drops out of the gradient whole.

GSPO-token (``importance_sampling_level=sequence_token``): s_i,t = sg[s_i] pi / sg[pi], the same
value and, with one advantage per response, the same gradient (the paper's eq. 11 and 18). TRL:
``importance_sampling_level="sequence"``, ``loss_type="grpo"`` (its paper index's GSPO recipe);
verl: ``policy_loss.loss_mode="gspo"`` (the GSPO-token form). The ratio leaves 1 only when a
batch is used for more than one step: the paper splits each rollout batch into 4 minibatches.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from algos import register
from algos.base import Metrics, check_choice, check_positive, check_range
from algos.grpo import GRPO, GRPOConfig
from algos.losses import gspo_surrogate, sequence_log_ratio

IMPORTANCE_SAMPLING_LEVELS = ("sequence", "sequence_token")


@dataclass
class GSPOConfig(GRPOConfig):
    clip_eps_low: float = 3e-4      # GSPO paper (v2) §5.1: left clipping range 3e-4 (TRL paper index: epsilon=3e-4)
    clip_eps_high: float = 4e-4     # GSPO paper (v2) §5.1: right clipping range 4e-4 (TRL paper index: epsilon_high=4e-4)
    kl_coef: float = 0.0            # GSPO sets no KL regularisation (TRL paper index: beta=0.0, after verl PR 2775)
    importance_sampling_level: str = "sequence"  # GSPO eq. 7 (TRL importance_sampling_level="sequence"); sequence_token: GSPO-token

    def __post_init__(self):
        super().__post_init__()
        check_choice("importance_sampling_level", self.importance_sampling_level, IMPORTANCE_SAMPLING_LEVELS)
        # GSPO eq. 5 is 1/G sum_i of a per-response term; each token carries its response's term, so
        # only the per-sequence token mean gives it (any other mode weighs a response by its length;
        # verl's gspo loss fixes this mode, TRL warns on the others)
        check_choice("loss_agg", self.loss_agg, ("seq-mean-token-mean",))
        check_range(self, "clip_eps_low", 0, 1, low_open=True, high_open=True,
                    why="the sequence ratio is clipped at 1 - clip_eps_low")
        check_positive(self, "clip_eps_high")


@register
class GSPO(GRPO):
    name = "gspo"
    Config = GSPOConfig
    per_run_options = GRPO.per_run_options + ("clip_eps_low", "clip_eps_high")

    @classmethod
    def needs(cls, cfg):
        # the ratio of a whole response: every column must be one generated sequence (refused at planning otherwise)
        return replace(super().needs(cfg), sequence_level=f"importance_sampling_level={cfg.importance_sampling_level}")

    def clip_range(self):
        return self.cfg.clip_eps_low, self.cfg.clip_eps_high

    def clip_log_ratio(self, logp, mb):
        """The clip acts on the sequence's ratio: each token counts as clipped where its sequence is."""
        return sequence_log_ratio(logp, mb["logp_old"], mb["mask"]).unsqueeze(-2).expand_as(logp)

    def objective(self, dist, logp, mb, metrics: Metrics, eps_low, eps_high):
        """Per token, to minimise: its sequence's -min(s_i A_i, clip(s_i) A_i) (+ beta KL_k3 if kl_coef > 0)."""
        per_token = gspo_surrogate(logp, mb["logp_old"], mb["advantages"], mb["mask"], eps_low, eps_high,
                                   token_level=self.cfg.importance_sampling_level == "sequence_token")
        if self.cfg.kl_coef:   # GRPO's KL term, should a run ask for one
            per_token = per_token + self.kl_term(logp, mb, metrics)
        return per_token
