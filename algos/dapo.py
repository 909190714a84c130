"""DAPO: Decoupled Clip and Dynamic sAmpling Policy Optimization (Yu et al. 2025, Algorithm 1).

GRPO's group-relative advantage, with four changes and no KL term:

    clip-higher:       min(r A, clip(r, 1 - eps_low, 1 + eps_high) A), eps_low 0.2 < eps_high 0.28
    token-level loss:  sum over all tokens / number of tokens (every token weighs the same)
    dynamic sampling:  drop groups whose outcomes (correctness, before the length shaping) are all
                       equal; sample more groups until the batch is full (at most
                       ``max_sample_batches`` draws)
    overlong shaping:  score += R_length(L):  0 if L <= L_max - L_cache,
                       (L_max - L_cache - L) / L_cache if L_max - L_cache < L <= L_max, else -1
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from algos.base import check_positive, check_range
from core.batch import concat_columns
from algos.grpo import GRPO, GRPOConfig


@dataclass
class DAPOConfig(GRPOConfig):
    clip_eps_low: float = 0.2       # DAPO §3.1
    clip_eps_high: float = 0.28     # DAPO §3.1
    kl_coef: float = 0.0            # DAPO §2.3: the KL term is removed
    loss_agg: str = "token-mean"    # DAPO §3.3: token-level policy-gradient loss
    max_sample_batches: int = 3     # dynamic sampling's cap on draws per update (verl's max_num_gen_batches)
    overlong_buffer: int | None = None  # L_cache; default 20% of the length limit (DAPO: 4096 of 20480)
    overlong_coef: float = 1.0      # DAPO's overlong penalty factor

    def __post_init__(self):
        super().__post_init__()
        check_range(self, "clip_eps_low", 0, 1, low_open=True, high_open=True,
                    why="the ratio is clipped at 1 - clip_eps_low")
        check_positive(self, "clip_eps_high", "max_sample_batches")
        check_range(self, "overlong_buffer", 0, low_open=True, optional=True, why="None: 20% of the length limit")
        check_range(self, "overlong_coef", 0, why="0: no overlong shaping")


def overlong_penalty(lengths: torch.Tensor, length_limit: int, buffer: int) -> torch.Tensor:
    """DAPO eq. 13: the soft length penalty R_length(|y|)."""
    lengths = lengths.to(torch.float32)
    expected = length_limit - buffer
    penalty = (expected - lengths) / buffer
    return torch.where(lengths <= expected, torch.zeros_like(lengths),
                       torch.where(lengths <= length_limit, penalty, -torch.ones_like(lengths)))


class DAPO(GRPO):
    name = "dapo"
    Config = DAPOConfig
    per_run_options = GRPO.per_run_options + ("clip_eps_low", "clip_eps_high", "overlong_coef", "overlong_buffer")

    def clip_range(self):
        return self.cfg.clip_eps_low, self.cfg.clip_eps_high

    def shaped_scores(self, batch) -> torch.Tensor:
        if batch.length_limit is None or not self.cfg.overlong_coef:
            return batch.scores
        buffer = self.cfg.overlong_buffer or max(1, int(0.2 * batch.length_limit))
        return batch.scores + self.cfg.overlong_coef * overlong_penalty(batch.lengths, batch.length_limit, buffer)

    def select_groups(self, batch) -> torch.Tensor:
        """Dynamic sampling (DAPO eq. 11: 0 < |{o_i : is_equivalent(a, o_i)}| < G): keep the columns
        of groups whose *outcomes* are not all equal. The outcome is ``batch.scores`` before the
        overlong shaping: the verifier's correctness on a verifiable task, the reward model's score
        on a preference task, the return on a control suite. A group that differs only through the
        length penalty carries no signal about the answer, so it is dropped."""
        scores = batch.scores
        keep = torch.zeros_like(scores, dtype=torch.bool)
        for g in torch.unique(batch.groups):
            members = batch.groups == g
            keep |= members & (scores[members].max() > scores[members].min())
        return keep

    def collect(self, collector, agent):
        """Dynamic sampling (DAPO §3.2): draw groups until ``num_groups`` of them carry a signal
        (at most ``max_sample_batches`` draws), then trim to the batch size."""
        cfg = self.cfg
        kept, episodes, groups_kept, draws, dropped = [], [], 0, 0, 0
        while groups_kept < cfg.num_groups and draws < cfg.max_sample_batches:
            batch, eps = collector.collect(agent)
            episodes += eps
            draws += 1
            keep = self.select_groups(batch)
            dropped += int(torch.unique(batch.groups).numel() - torch.unique(batch.groups[keep]).numel())
            if keep.any():
                part = batch.select_columns(torch.nonzero(keep, as_tuple=True)[0])
                kept.append(part)
                groups_kept += int(torch.unique(part.groups).numel())
        extra = {"sample_batches": draws, "groups_dropped": dropped}
        if not kept:
            return None, episodes, extra
        batch = concat_columns(kept)
        if groups_kept > cfg.num_groups:  # trim to the batch size, as DAPO does
            wanted = torch.unique(batch.groups)[: cfg.num_groups]
            batch = batch.select_columns(torch.nonzero(torch.isin(batch.groups, wanted), as_tuple=True)[0])
        return batch, episodes, extra
