"""Policy objectives and their aggregation: pure functions, elementwise where possible.

All losses are to be *minimised*. ``logp`` is the log-probability of the taken action
under the policy being optimised, ``logp_old`` under the policy that collected the
data, ``logp_ref`` under a frozen reference policy.
"""
from __future__ import annotations

import torch
from torch import Tensor

AGGREGATION_MODES = ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum")
KL_ESTIMATORS = ("k1", "k2", "k3")


def clipped_surrogate(logp: Tensor, logp_old: Tensor, adv: Tensor, eps_low: float,
                      eps_high: float | None = None) -> Tensor:
    """PPO's clipped surrogate (Schulman et al. 2017, eq. 7), elementwise, negated.

        r = exp(logp - logp_old)
        loss = -min(r * A, clip(r, 1 - eps_low, 1 + eps_high) * A)

    ``eps_high`` defaults to ``eps_low``; DAPO's clip-higher sets it larger (Yu et al. 2025).
    The gradient is zero exactly where the paper's clipping table says: ``A > 0`` and
    ``r > 1 + eps_high``, or ``A < 0`` and ``r < 1 - eps_low``.
    """
    eps_high = eps_low if eps_high is None else eps_high
    ratio = torch.exp(logp - logp_old)
    unclipped = ratio * adv
    clipped = torch.clamp(ratio, 1.0 - eps_low, 1.0 + eps_high) * adv
    return -torch.minimum(unclipped, clipped)


def clip_fraction(logp: Tensor, logp_old: Tensor, eps_low: float, eps_high: float | None = None) -> Tensor:
    """Elementwise 1.0 where the ratio lies outside ``[1 - eps_low, 1 + eps_high]``."""
    eps_high = eps_low if eps_high is None else eps_high
    ratio = torch.exp(logp - logp_old)
    return ((ratio < 1.0 - eps_low) | (ratio > 1.0 + eps_high)).float()


def clip_fractions(logp: Tensor, logp_old: Tensor, adv: Tensor, eps_low: float,
                   eps_high: float | None = None) -> Tensor:
    """Where the clip acts, elementwise, stacked ``[3, *logp.shape]`` (1.0 or 0.0), with
    ``r = exp(logp - logp_old)``:

        outside = 1[r < 1 - eps_low  or  r > 1 + eps_high]      (what ``clip_fraction`` counts)
        low     = 1[r < 1 - eps_low  and A < 0]                  the low side of the clip is active
        high    = 1[r > 1 + eps_high and A > 0]                  the high side of the clip is active

    ``low`` and ``high`` are where :func:`clipped_surrogate`'s gradient is cut, one side each;
    their token-means over the valid tokens are ``clip_fraction_low`` and ``clip_fraction_high``
    (DAPO's clip-higher shows as fewer ``high`` than a symmetric clip of ``eps_low``).
    """
    eps_high = eps_low if eps_high is None else eps_high
    ratio = torch.exp(logp - logp_old)
    below, above = ratio < 1.0 - eps_low, ratio > 1.0 + eps_high
    return torch.stack((below | above, below & (adv < 0), above & (adv > 0))).float()


def importance_surrogate(logp: Tensor, logp_old: Tensor, adv: Tensor) -> Tensor:
    """The unclipped surrogate ``-exp(logp - logp_old) * A`` (TRPO, PPO-KL), elementwise."""
    return -torch.exp(logp - logp_old) * adv


def policy_gradient(logp: Tensor, adv: Tensor) -> Tensor:
    """REINFORCE's ``-log pi(a|s) * A``, elementwise (Williams 1992)."""
    return -logp * adv


def kl_estimate(logp: Tensor, logp_ref: Tensor, kind: str) -> Tensor:
    """Per-sample estimate of ``KL(pi || pi_ref)`` from actions sampled from ``pi``
    (Schulman 2020, "Approximating KL divergence"). With ``log_r = logp_ref - logp``:

        k1 = -log_r                 unbiased, high variance, can be negative
        k2 = log_r ** 2 / 2         biased, low variance
        k3 = (exp(log_r) - 1) - log_r   unbiased, low variance, always >= 0 (GRPO)
    """
    log_r = logp_ref - logp
    if kind == "k1":
        return -log_r
    if kind == "k2":
        return 0.5 * log_r ** 2
    if kind == "k3":
        return torch.expm1(log_r) - log_r
    raise ValueError(f"unknown KL estimator {kind!r}; valid: {', '.join(KL_ESTIMATORS)}")


def aggregate(x: Tensor, mask: Tensor | None, mode: str, normalizer: float | Tensor | None = None) -> Tensor:
    """Reduce a time-major ``[T, N]`` per-token quantity to a scalar over valid tokens.

    ``mask``: ``[T, N]``, 1 for a real token/step, 0 for padding (None: all valid). Modes
    (verl's names):

    - ``token-mean``: ``sum(x * m) / sum(m)`` (DAPO: every token weighs the same);
    - ``seq-mean-token-mean``: mean over sequences of each sequence's token mean (GRPO);
    - ``seq-mean-token-sum``: mean over sequences of each sequence's token sum (Dr. GRPO
      with a constant instead of the length, REINFORCE on whole sequences).

    ``normalizer`` overrides the denominator (token count or sequence count) so that a
    micro-batch can be scaled by the *whole* batch's count: accumulating micro-batch
    gradients then equals the full-batch gradient in every mode.

    Leading dimensions are kept: ``[K, T, N]`` (the K runs of a stack, ``algos/stack.py``)
    reduces to ``[K]``, each entry the number the run alone gets (the reductions over the last
    two dimensions are the very reductions of a ``[T, N]`` tensor: bit-identical, tested).
    """
    steps = (-2, -1) if x.dim() >= 2 else (-1,)
    if mask is None:  # every entry valid (a minibatch of sampled steps)
        mask = torch.ones((), dtype=x.dtype, device=x.device).expand_as(x)
        if normalizer is None and mode == "token-mean":
            return x.mean(steps)
    m = mask.to(x.dtype)
    if mode == "token-mean":
        denom = m.sum(steps) if normalizer is None else normalizer
        return (x * m).sum(steps) / denom
    if mode == "seq-mean-token-mean":
        per_seq = (x * m).sum(-2) / m.sum(-2).clamp(min=1)
    elif mode == "seq-mean-token-sum":
        per_seq = (x * m).sum(-2)
    else:
        raise ValueError(f"unknown aggregation mode {mode!r}; valid: {', '.join(AGGREGATION_MODES)}")
    denom = (m.sum(-2) > 0).sum(-1) if normalizer is None else normalizer
    return per_seq.sum(-1) / denom
