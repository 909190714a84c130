"""Advantage estimators: pure functions of time-major tensors.

Shapes: ``[T]`` or ``[T, N]`` (time first, then environment / sequence column).
Every estimator is a plain function so a variant can swap one in without a new
buffer class (the lesson of Stable-Baselines3's stateful ``RolloutBuffer``).
"""
from __future__ import annotations

import numpy as np
import torch
from torch import Tensor


def gae(rewards: Tensor, values: Tensor, dones: Tensor, last_value: Tensor,
        gamma: float, lam: float) -> tuple[Tensor, Tensor]:
    """Generalised Advantage Estimation (Schulman et al. 2016, eq. 16).

    ``rewards, values, dones``: ``[T]`` or ``[T, N]``; ``last_value``: ``[]`` or ``[N]``,
    the value of the observation after the last step of each column.
    ``dones[t] = 1`` where the episode ended at step ``t``: nothing is bootstrapped
    across it. (A time-limit truncation is not an ending of the MDP; the harness
    folds ``gamma * V(s_final)`` into that step's reward before calling this.)

        delta_t = r_t + gamma * V(s_{t+1}) * (1 - d_t) - V(s_t)
        A_t     = delta_t + gamma * lam * (1 - d_t) * A_{t+1}

    Returns ``(advantages, returns)`` with ``returns = advantages + values``.
    """
    not_done = 1.0 - dones.to(values.dtype)
    last_value = torch.as_tensor(last_value, dtype=values.dtype, device=values.device)
    next_values = torch.cat([values[1:], last_value.expand_as(values[:1])], dim=0)
    deltas = rewards + gamma * next_values * not_done - values
    advantages = _discounted_cumsum(deltas, gamma * lam * not_done, torch.zeros_like(deltas[0]))
    return advantages, advantages + values


def discounted_returns(rewards: Tensor, dones: Tensor, last_value: Tensor, gamma: float) -> Tensor:
    """Return-to-go ``G_t = r_t + gamma * (1 - d_t) * G_{t+1}``, with ``G_T = last_value``.

    Shapes as in :func:`gae`. Pass ``last_value = 0`` for pure Monte-Carlo returns.
    """
    not_done = 1.0 - dones.to(rewards.dtype)
    last_value = torch.as_tensor(last_value, dtype=rewards.dtype, device=rewards.device)
    return _discounted_cumsum(rewards, gamma * not_done, last_value.expand_as(rewards[0]))


def _discounted_cumsum(x: Tensor, discount: Tensor, tail: Tensor) -> Tensor:
    """``y_t = x_t + discount_t * y_{t+1}`` with ``y_T = tail``, backwards over dim 0.

    The recursion is sequential in time, vectorised over columns; it runs in NumPy
    because a per-step loop of torch ops costs ~10x more in dispatch overhead.
    """
    x_np = x.detach().cpu().numpy()
    d_np = discount.detach().cpu().numpy()
    out = np.empty_like(x_np)
    running = tail.detach().cpu().numpy().astype(x_np.dtype, copy=True)
    for t in range(x_np.shape[0] - 1, -1, -1):
        running = x_np[t] + d_np[t] * running
        out[t] = running
    return torch.from_numpy(out).to(x.device)


def _group_index(groups: Tensor) -> tuple[Tensor, int]:
    """Map arbitrary integer group ids to ``0..G-1`` (groups need not be contiguous)."""
    unique, index = torch.unique(groups, return_inverse=True)
    return index, unique.numel()


def group_relative(scores: Tensor, groups: Tensor, scale: bool = True, eps: float = 1e-6) -> Tensor:
    """GRPO's group-relative advantage (Shao et al. 2024, §4.1.2).

    ``scores``: ``[M]``; ``groups``: ``[M]`` integer ids (any order).

        A_i = (s_i - mean_g(s)) / (std_g(s) + eps)      (sample std, ddof = 1)

    or ``s_i - mean_g(s)`` with ``scale=False`` (Dr. GRPO, Liu et al. 2025). A group whose
    scores are all equal carries no signal and gets zeros (also when it has one member).
    """
    scores = scores.to(torch.float64)
    index, num_groups = _group_index(groups)
    like = {"dtype": scores.dtype, "device": scores.device}   # per-group sums where the scores are (CPU or GPU)
    count = torch.zeros(num_groups, **like).index_add_(0, index, torch.ones_like(scores))
    mean = torch.zeros(num_groups, **like).index_add_(0, index, scores) / count
    centred = scores - mean[index]
    sq = torch.zeros(num_groups, **like).index_add_(0, index, centred ** 2)
    std = torch.sqrt(sq / (count - 1).clamp(min=1))
    group_min = torch.full((num_groups,), float("inf"), **like).scatter_reduce(0, index, scores, "amin")
    group_max = torch.full((num_groups,), float("-inf"), **like).scatter_reduce(0, index, scores, "amax")
    constant = (group_max == group_min)[index]
    advantages = centred / (std[index] + eps) if scale else centred
    return torch.where(constant, torch.zeros_like(advantages), advantages).to(torch.float32)


def leave_one_out(scores: Tensor, groups: Tensor) -> Tensor:
    """RLOO's advantage (Kool et al. 2019; Ahmadian et al. 2024).

        A_i = s_i - (sum_g(s) - s_i) / (k - 1)

    where ``k`` is the size of ``i``'s group. A group of one member has no baseline and
    gets zero advantage.
    """
    scores = scores.to(torch.float64)
    index, num_groups = _group_index(groups)
    like = {"dtype": scores.dtype, "device": scores.device}   # per-group sums where the scores are (CPU or GPU)
    count = torch.zeros(num_groups, **like).index_add_(0, index, torch.ones_like(scores))
    total = torch.zeros(num_groups, **like).index_add_(0, index, scores)
    k = count[index]
    baseline = (total[index] - scores) / (k - 1).clamp(min=1)
    return torch.where(k > 1, scores - baseline, torch.zeros_like(scores)).to(torch.float32)


def reinforce_pp(scores: Tensor, mask: Tensor, kl: Tensor | None = None, kl_coef: float = 0.0,
                 gamma: float = 1.0) -> Tensor:
    """REINFORCE++'s advantage (Hu 2025, arXiv 2501.03262, §3): the KL penalty folded into the
    reward token by token, the return to go, then normalised over the whole batch.

    ``scores``: ``[N]``, each column's outcome; ``mask``: ``[T, N]`` (1 on the sequence's tokens);
    ``kl``: ``[T, N]`` per-token ``log pi_old - log pi_ref`` (k1), or None.

        r_t = 1[t = last token] * score - kl_coef * kl_t
        G_t = sum_{s >= t} gamma^(s - t) r_s
        A_t = (G_t - mean(G)) / std(G)     mean and std over every valid token of the batch

    The global normalisation, not GRPO's per-prompt one, is the paper's point: no small-group std
    blows a near-constant group up (OpenRLHF ``advantage_estimator="reinforce"``, verl
    ``reinforce_plus_plus``). Returns ``[T, N]``, 0 on padding.
    """
    m = mask.to(torch.float32)
    last = m.cumsum(0).argmax(0)              # the last valid token of each column (the first index of the max)
    rewards = torch.zeros_like(m)
    rewards[last, torch.arange(m.shape[1], device=m.device)] = scores.to(m.dtype)
    if kl is not None:
        rewards = rewards - kl_coef * kl * m
    returns = discounted_returns(rewards, torch.zeros_like(m), torch.zeros_like(m[0]), gamma)
    return normalize(returns, m)


def group_baseline_normalized(scores: Tensor, groups: Tensor, mask: Tensor) -> Tensor:
    """REINFORCE++-baseline's advantage (Hu 2025, arXiv 2501.03262, §3; OpenRLHF
    ``advantage_estimator="reinforce_baseline"``, verl ``reinforce_plus_plus_baseline``):

        A~_i  = s_i - mean_g(s)                          the group mean as the baseline (no group std)
        A_i,t = (A~_i - mean(A~)) / std(A~)              over every valid token of the batch

    ``scores``: ``[M]``; ``groups``: ``[M]`` ids; ``mask``: ``[T, M]``. Returns ``[T, M]``, each
    column's advantage on its tokens, 0 on padding. A group whose scores are all equal has
    A~ = 0 (``group_relative(scale=False)``).
    """
    centred = group_relative(scores, groups, scale=False)
    m = mask.to(torch.float32)
    return normalize(centred.unsqueeze(0) * m, m)


def normalize(x: Tensor, mask: Tensor | None = None, eps: float = 1e-8, center: bool = True) -> Tensor:
    """Whiten ``x`` over the valid entries (``mask == 1``): ``(x - mean) / (std + eps)``, or
    ``x / (std + eps)`` with ``center=False`` (subtracting the batch mean is itself a baseline;
    an estimator without one must only be scaled). ``std`` is the sample std (ddof = 1).
    Over the last two dimensions ``[T, N]``: a leading run dimension (a stack) whitens each run
    on its own."""
    steps = (-2, -1) if x.dim() >= 2 else (-1,)
    if mask is None:
        mean, std = x.mean(steps, keepdim=True), x.std(steps, keepdim=True)
        return ((x - mean) if center else x) / (std + eps)
    m = mask.to(x.dtype)
    n = m.sum(steps, keepdim=True)
    mean = (x * m).sum(steps, keepdim=True) / n
    var = (((x - mean) * m) ** 2).sum(steps, keepdim=True) / (n - 1).clamp(min=1)
    return ((x - mean) if center else x) / (var.sqrt() + eps) * m
