"""Policy objectives and their aggregation: pure functions, elementwise where possible.

All losses are to be *minimised*. ``logp`` is the log-probability of the taken action
under the policy being optimised, ``logp_old`` under the policy that collected the
data, ``logp_ref`` under a frozen reference policy.
"""
from __future__ import annotations

import torch
from torch import Tensor

AGGREGATION_MODES = ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum", "seq-mean-token-sum-norm")
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


def sequence_log_ratio(logp: Tensor, logp_old: Tensor, mask: Tensor) -> Tensor:
    """GSPO's length-normalised sequence log-ratio (Zheng et al. 2025, eq. 7), per column:

        log s_i = 1/|y_i| sum_t (log pi(y_i,t) - log pi_old(y_i,t))

    ``logp, logp_old, mask``: time-major ``[T, N]`` (or ``[K, T, N]``, a stack); returns ``[N]``
    (``[K, N]``). ``s_i = exp(log s_i)`` is the geometric mean of the token ratios: one number per
    sequence whose size does not grow with the length (TRL ``importance_sampling_level="sequence"``).
    An empty column (no valid token) gets 0, a ratio of 1."""
    m = mask.to(logp.dtype)
    return ((logp - logp_old) * m).sum(-2) / m.sum(-2).clamp(min=1)


def sequence_ratio(logp: Tensor, logp_old: Tensor, mask: Tensor) -> Tensor:
    """``s_i(theta) = exp(sequence_log_ratio)``: GSPO's sequence-level importance ratio, ``[N]``."""
    return torch.exp(sequence_log_ratio(logp, logp_old, mask))


def gspo_surrogate(logp: Tensor, logp_old: Tensor, adv: Tensor, mask: Tensor, eps_low: float,
                   eps_high: float | None = None, token_level: bool = False) -> Tensor:
    """GSPO's clipped sequence-level objective (Zheng et al. 2025, eq. 5), negated, per token:

        s_i  = exp(1/|y_i| sum_t log(pi / pi_old)(y_i,t))                    sequence_log_ratio
        loss_i = -min(s_i A_i, clip(s_i, 1 - eps_low, 1 + eps_high) A_i)     clipped per sequence

    returned ``[T, N]``, each valid token of sequence i carrying ``loss_i`` (``adv`` is the
    sequence's advantage broadcast over its tokens, 0 on padding), so that a per-sequence token
    mean (``seq-mean-token-mean``) is the paper's ``1/G sum_i loss_i``. A clipped sequence drops
    out whole: the clip acts on whole responses, as the reward does.

    ``token_level``: GSPO-token, ``s_i,t = sg[s_i] pi(y_i,t) / sg[pi(y_i,t)]``: the same value,
    and with one advantage per sequence the same gradient (the paper's eq. 11 and 18); it lets a
    per-token advantage act per token (verl's ``policy_loss="gspo"`` is this form).
    """
    log_s = sequence_log_ratio(logp, logp_old, mask).unsqueeze(-2)       # [1, N]: one ratio per column
    if token_level:
        log_s = log_s.detach() + logp - logp.detach()                    # [T, N]: sg[s_i] pi / sg[pi]
    return clipped_surrogate(log_s.expand_as(adv), torch.zeros_like(adv), adv, eps_low, eps_high)


def cispo_loss(logp: Tensor, logp_old: Tensor, adv: Tensor, eps_low: float, eps_high: float) -> Tensor:
    """CISPO (MiniMax-M1, 2025, arXiv 2506.13585, eq. 4-5), elementwise, negated:

        r_hat = clip(r, 1 - eps_low, 1 + eps_high),   r = exp(logp - logp_old)
        loss  = -sg(r_hat) * A * logp

    The importance weight is clipped and held constant (stop-gradient), so the gradient is
    ``-sg(r_hat) A grad log pi`` on *every* token: unlike PPO's clip no token's gradient is ever
    cut (the rare "fork" tokens whose ratio leaves the range still learn), only its weight is
    bounded. TRL ``loss_type="cispo"`` clamps at ``epsilon_high`` itself (``min(r, eps_max)``,
    no lower bound); here ``1 + eps_high``, and ``eps_low >= 1`` is no lower bound (r > 0)."""
    weight = torch.clamp(torch.exp(logp - logp_old), 1.0 - eps_low, 1.0 + eps_high).detach()
    return -weight * adv * logp


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


def aggregate(x: Tensor, mask: Tensor | None, mode: str, normalizer: float | Tensor | None = None,
              max_length: int | None = None) -> Tensor:
    """Reduce a time-major ``[T, N]`` per-token quantity to a scalar over valid tokens.

    ``mask``: ``[T, N]``, 1 for a real token/step, 0 for padding (None: all valid). Modes
    (verl's names):

    - ``token-mean``: ``sum(x * m) / sum(m)`` (DAPO: every token weighs the same);
    - ``seq-mean-token-mean``: mean over sequences of each sequence's token mean (GRPO);
    - ``seq-mean-token-sum``: mean over sequences of each sequence's token sum (REINFORCE on
      whole sequences: the whole output is one action, RLOO);
    - ``seq-mean-token-sum-norm``: mean over sequences of each sequence's token sum divided by
      the constant ``max_length`` (Dr. GRPO, Liu et al. 2025, §3.1: the length normaliser
      ``1/|o_i|`` is replaced by one constant, the generation budget, so no sequence's tokens
      weigh more for being short; TRL ``loss_type="dr_grpo"`` divides by
      ``max_completion_length``, and by the number of sequences, as here; verl's mode of this
      name sums over the sequences without the 1/G). ``max_length`` must be given: the padded
      width of a batch is not a constant.

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
    elif mode == "seq-mean-token-sum-norm":
        if max_length is None:
            raise ValueError("aggregation seq-mean-token-sum-norm divides by a constant length: pass max_length "
                             "(the response length limit)")
        per_seq = (x * m).sum(-2) / max_length
    else:
        raise ValueError(f"unknown aggregation mode {mode!r}; valid: {', '.join(AGGREGATION_MODES)}")
    denom = (m.sum(-2) > 0).sum(-1) if normalizer is None else normalizer
    return per_seq.sum(-1) / denom
