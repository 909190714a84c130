"""Policy objectives, KL estimators, aggregation and conjugate gradient against formulas."""
import math

import pytest
import torch

from algos.losses import (AGGREGATION_MODES, aggregate, cispo_loss, clip_fraction, clip_fractions, clipped_surrogate,
                          gspo_surrogate, importance_surrogate, kl_estimate, policy_gradient, sequence_log_ratio,
                          sequence_ratio)
from algos.trpo import conjugate_gradient


def gen(seed):
    return torch.Generator().manual_seed(seed)


# --------------------------------------------------------------------------------------
# clipped surrogate


@pytest.mark.parametrize("eps_low,eps_high", [(0.2, None), (0.2, 0.28), (0.1, 0.3)])
def test_clipped_surrogate_matches_formula(eps_low, eps_high):
    g = gen(0)
    logp = torch.randn(40, generator=g) * 0.3
    logp_old = torch.randn(40, generator=g) * 0.3
    adv = torch.randn(40, generator=g)
    out = clipped_surrogate(logp, logp_old, adv, eps_low, eps_high)
    hi = eps_low if eps_high is None else eps_high
    ref = []
    for lp, lo, a in zip(logp.tolist(), logp_old.tolist(), adv.tolist()):
        r = math.exp(lp - lo)
        ref.append(-min(r * a, min(max(r, 1 - eps_low), 1 + hi) * a))
    torch.testing.assert_close(out, torch.tensor(ref), rtol=1e-5, atol=1e-6)
    # the random ratios must actually reach both clipping regions for this to test anything
    ratio = torch.exp(logp - logp_old)
    assert (ratio > 1 + hi).any() and (ratio < 1 - eps_low).any()


def surrogate_grad(ratio, adv, eps_low, eps_high=None):
    logp_old = torch.tensor(-1.3)
    logp = (logp_old + math.log(ratio)).clone().requires_grad_(True)
    loss = clipped_surrogate(logp, logp_old, torch.tensor(adv), eps_low, eps_high)
    loss.backward()
    return logp.grad.item()


@pytest.mark.parametrize("eps_low,eps_high", [(0.2, None), (0.2, 0.28)])
def test_clipped_surrogate_gradient_follows_the_clipping_table(eps_low, eps_high):
    hi = eps_low if eps_high is None else eps_high
    # A > 0, r > 1 + eps_high: clipped, gradient exactly 0
    assert surrogate_grad(1 + hi + 0.05, 1.5, eps_low, eps_high) == 0.0
    # A > 0, r < 1 + eps_high (also below 1 - eps_low): unclipped, d(-r A)/dlogp = -r A
    for r in (1 + hi - 0.05, 1.0, 1 - eps_low - 0.1):
        assert surrogate_grad(r, 1.5, eps_low, eps_high) == pytest.approx(-r * 1.5, rel=1e-5)
    # A < 0, r < 1 - eps_low: clipped, gradient exactly 0
    assert surrogate_grad(1 - eps_low - 0.05, -2.0, eps_low, eps_high) == 0.0
    # A < 0, r > 1 - eps_low (also above 1 + eps_high): unclipped
    for r in (1 - eps_low + 0.05, 1.0, 1 + hi + 0.2):
        assert surrogate_grad(r, -2.0, eps_low, eps_high) == pytest.approx(-r * -2.0, rel=1e-5)


def test_clip_higher_is_asymmetric():
    # r = 1.25 lies inside [0.8, 1.28] (DAPO) but outside [0.8, 1.2] (PPO)
    assert surrogate_grad(1.25, 1.0, 0.2, 0.28) != 0.0
    assert surrogate_grad(1.25, 1.0, 0.2) == 0.0
    # and the low side is unaffected by eps_high
    assert surrogate_grad(0.75, -1.0, 0.2, 0.28) == 0.0
    loss = clipped_surrogate(torch.tensor(math.log(1.4)), torch.tensor(0.0), torch.tensor(1.0), 0.2, 0.28)
    assert loss.item() == pytest.approx(-1.28, rel=1e-6)


def test_clip_fraction_and_simple_surrogates():
    logp_old = torch.zeros(5)
    ratio = torch.tensor([0.7, 0.85, 1.0, 1.25, 1.35])
    logp = torch.log(ratio)
    torch.testing.assert_close(clip_fraction(logp, logp_old, 0.2), torch.tensor([1.0, 0, 0, 1, 1]))
    torch.testing.assert_close(clip_fraction(logp, logp_old, 0.2, 0.28), torch.tensor([1.0, 0, 0, 0, 1]))
    adv = torch.tensor([1.0, -2.0, 0.5, 3.0, -1.0])
    torch.testing.assert_close(importance_surrogate(logp, logp_old, adv), -ratio * adv)
    torch.testing.assert_close(policy_gradient(logp, adv), -logp * adv)


@pytest.mark.parametrize("eps_low,eps_high", [(0.2, None), (0.2, 0.28)])
def test_clip_fractions_per_side_match_a_loop(eps_low, eps_high):
    g = gen(5)
    logp = torch.randn(3, 50, generator=g) * 0.3
    logp_old = torch.randn(3, 50, generator=g) * 0.3
    adv = torch.randn(3, 50, generator=g)
    adv[0, :5] = 0.0   # A = 0: neither side is active
    out = clip_fractions(logp, logp_old, adv, eps_low, eps_high)
    assert out.shape == (3, 3, 50) and out.dtype == torch.float32
    hi = eps_low if eps_high is None else eps_high
    outside, low, high = [], [], []
    for lp, lo, a in zip(logp.flatten().tolist(), logp_old.flatten().tolist(), adv.flatten().tolist()):
        r = math.exp(lp - lo)
        outside.append(float(r < 1 - eps_low or r > 1 + hi))
        low.append(float(r < 1 - eps_low and a < 0))
        high.append(float(r > 1 + hi and a > 0))
    for got, expected in zip(out, (outside, low, high)):
        assert got.flatten().tolist() == expected
    assert torch.equal(out[0], clip_fraction(logp, logp_old, eps_low, eps_high))
    assert 0 < sum(low) < sum(outside) and 0 < sum(high) < sum(outside)
    # the sides are where the clipped surrogate's gradient is cut
    lp = logp.clone().requires_grad_(True)
    clipped_surrogate(lp, logp_old, adv, eps_low, eps_high).sum().backward()
    cut = (lp.grad == 0) & (adv != 0)
    assert torch.equal(cut, (out[1] + out[2]) > 0)


# --------------------------------------------------------------------------------------
# KL estimators


def test_kl_estimators_match_formulas():
    g = gen(1)
    logp = torch.randn(30, generator=g) - 1
    logp_ref = torch.randn(30, generator=g) - 1
    for kind, f in {
        "k1": lambda lp, lr: lp - lr,
        "k2": lambda lp, lr: 0.5 * (lr - lp) ** 2,
        "k3": lambda lp, lr: math.exp(lr - lp) - 1 - (lr - lp),
    }.items():
        out = kl_estimate(logp, logp_ref, kind)
        ref = torch.tensor([f(a, b) for a, b in zip(logp.tolist(), logp_ref.tolist())])
        torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-6)
    assert (kl_estimate(logp, logp_ref, "k3") >= 0).all()
    with pytest.raises(ValueError, match="k1"):
        kl_estimate(logp, logp_ref, "k4")


def test_kl_estimators_are_unbiased_for_known_categoricals():
    p = torch.tensor([0.5, 0.3, 0.15, 0.05], dtype=torch.float64)
    q = torch.tensor([0.25, 0.25, 0.25, 0.25], dtype=torch.float64)
    true_kl = float((p * (p / q).log()).sum())  # KL(p || q) ~ 0.2
    samples = torch.multinomial(p, 200_000, replacement=True, generator=gen(2))
    logp, logq = p.log()[samples], q.log()[samples]
    k1 = kl_estimate(logp, logq, "k1").mean().item()
    k3 = kl_estimate(logp, logq, "k3").mean().item()
    assert k1 == pytest.approx(true_kl, abs=0.01)
    assert k3 == pytest.approx(true_kl, abs=0.01)
    # the exact expectations under p (no sampling) equal the true KL as well
    log_r = q.log() - p.log()
    assert float((p * -log_r).sum()) == pytest.approx(true_kl, rel=1e-12)
    assert float((p * (log_r.exp() - 1 - log_r)).sum()) == pytest.approx(true_kl, rel=1e-12)


# --------------------------------------------------------------------------------------
# aggregation


MAX_LENGTH = 11   # seq-mean-token-sum-norm's constant (the others ignore it)


def aggregate_loop(x, mask, mode):
    T, N = len(x), len(x[0])
    if mode == "token-mean":
        total = sum(x[t][n] for t in range(T) for n in range(N) if mask[t][n])
        count = sum(1 for t in range(T) for n in range(N) if mask[t][n])
        return total / count
    per_seq = []
    for n in range(N):
        vals = [x[t][n] for t in range(T) if mask[t][n]]
        if not vals:
            continue
        per_seq.append(sum(vals) / len(vals) if mode == "seq-mean-token-mean"
                       else sum(vals) / MAX_LENGTH if mode == "seq-mean-token-sum-norm" else sum(vals))
    return sum(per_seq) / len(per_seq)


def random_masked(seed, T=7, N=6):
    g = gen(seed)
    x = torch.randn(T, N, generator=g)
    lengths = torch.randint(1, T + 1, (N,), generator=g)
    mask = (torch.arange(T).unsqueeze(1) < lengths.unsqueeze(0)).float()
    return x, mask


@pytest.mark.parametrize("mode", AGGREGATION_MODES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_aggregate_matches_loop(mode, seed):
    x, mask = random_masked(seed)
    x = torch.where(mask > 0, x, torch.full_like(x, 1e3))  # padding must not leak in
    out = aggregate(x, mask, mode, max_length=MAX_LENGTH)
    assert out.dim() == 0
    assert out.item() == pytest.approx(aggregate_loop(x.tolist(), mask.tolist(), mode), rel=1e-5)


def test_aggregate_modes_differ_on_ragged_masks():
    x, mask = random_masked(3)
    values = [aggregate(x, mask, m, max_length=MAX_LENGTH).item() for m in AGGREGATION_MODES]
    assert len({round(v, 6) for v in values}) == len(AGGREGATION_MODES)


def test_aggregate_unknown_mode():
    x, mask = random_masked(0)
    with pytest.raises(ValueError, match="token-mean"):
        aggregate(x, mask, "sum")


@pytest.mark.parametrize("mode", AGGREGATION_MODES)
def test_micro_batch_gradients_sum_to_the_full_batch_gradient(mode):
    x, mask = random_masked(4, T=8, N=9)
    w = torch.randn(8, 9, generator=gen(5))
    theta = torch.randn(3, generator=gen(6), requires_grad=True)

    def per_token(cols):  # a quantity depending nonlinearly on parameters
        return torch.tanh(theta[0] * x[:, cols] + theta[1]) * w[:, cols] + theta[2] ** 2 * x[:, cols]

    all_cols = torch.arange(9)
    full = aggregate(per_token(all_cols), mask, mode, max_length=MAX_LENGTH)
    (g_full,) = torch.autograd.grad(full, theta)

    normalizer = mask.sum() if mode == "token-mean" else (mask.sum(0) > 0).sum()
    g_sum = torch.zeros_like(theta)
    for cols in torch.tensor_split(torch.randperm(9, generator=gen(7)), 3):
        part = aggregate(per_token(cols), mask[:, cols], mode, normalizer=normalizer, max_length=MAX_LENGTH)
        (g,) = torch.autograd.grad(part, theta)
        g_sum += g
    torch.testing.assert_close(g_sum, g_full, rtol=1e-5, atol=1e-6)
    # without the shared normalizer the sum is not the full gradient (the test has teeth)
    g_naive = sum(torch.autograd.grad(aggregate(per_token(c), mask[:, c], mode, max_length=MAX_LENGTH), theta)[0]
                  for c in torch.tensor_split(torch.arange(9), 3))
    assert not torch.allclose(g_naive, g_full, rtol=1e-3)


def ragged(seed, T=9, N=7, scale=0.3, dtype=torch.float32):
    """Time-major logp, logp_old, per-sequence advantages broadcast over the tokens, and a mask of
    ragged lengths 1..T (padding holds garbage that must not leak in)."""
    g = gen(seed)
    lengths = torch.randint(1, T + 1, (N,), generator=g)
    lengths[0] = T                                   # one full column
    mask = (torch.arange(T).unsqueeze(1) < lengths.unsqueeze(0)).to(dtype)
    logp = (-1.0 + scale * torch.randn(T, N, generator=g)).to(dtype)
    logp_old = (logp + scale * torch.randn(T, N, generator=g)).to(dtype)
    adv_seq = torch.randn(N, generator=g).to(dtype)
    adv = adv_seq.unsqueeze(0) * mask
    junk = torch.full_like(logp, 7.0)
    logp = torch.where(mask > 0, logp, junk)
    logp_old = torch.where(mask > 0, logp_old, -junk)
    return logp, logp_old, adv, adv_seq, mask, lengths


def valid(mask, n):
    return [t for t in range(mask.shape[0]) if mask[t, n] > 0]


# --------------------------------------------------------------------------------------
# GSPO's sequence ratio and loss against loops


@pytest.mark.parametrize("seed", [0, 1])
def test_sequence_ratio_is_the_geometric_mean_of_the_token_ratios(seed):
    logp, logp_old, _, _, mask, lengths = ragged(seed)
    out = sequence_ratio(logp, logp_old, mask)
    assert out.shape == (mask.shape[1],)
    for n in range(mask.shape[1]):
        product = math.prod(math.exp(logp[t, n].item() - logp_old[t, n].item()) for t in valid(mask, n))
        assert out[n].item() == pytest.approx(product ** (1 / lengths[n].item()), rel=1e-5)
    # a stack [K, T, N] reduces each run alone
    stacked = sequence_log_ratio(torch.stack([logp, logp.flip(1)]), torch.stack([logp_old, logp_old.flip(1)]),
                                 torch.stack([mask, mask.flip(1)]))
    assert torch.equal(stacked[0], sequence_log_ratio(logp, logp_old, mask))


def gspo_loop(logp, logp_old, adv_seq, mask, eps_low, eps_high):
    """The paper's J_GSPO (negated), sequence by sequence: 1/G sum_i -min(s_i A_i, clip(s_i) A_i)."""
    losses = []
    for n in range(mask.shape[1]):
        ts = valid(mask, n)
        s = math.exp(sum(logp[t, n].item() - logp_old[t, n].item() for t in ts) / len(ts))
        a = adv_seq[n].item()
        losses.append(-min(s * a, min(max(s, 1 - eps_low), 1 + eps_high) * a))
    return sum(losses) / len(losses)


@pytest.mark.parametrize("token_level", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_gspo_loss_and_gradient_match_the_sequence_loop(seed, token_level):
    logp, logp_old, adv, adv_seq, mask, _ = ragged(seed, scale=0.02)
    eps_low, eps_high = 3e-3, 4e-3                      # some sequences inside the range, some outside
    s = sequence_ratio(logp, logp_old, mask)
    assert ((s < 1 - eps_low) | (s > 1 + eps_high)).any() and ((s > 1 - eps_low) & (s < 1 + eps_high)).any()
    lp = logp.clone().requires_grad_(True)
    loss = aggregate(gspo_surrogate(lp, logp_old, adv, mask, eps_low, eps_high, token_level=token_level),
                     mask, "seq-mean-token-mean")
    loss.backward()
    assert loss.item() == pytest.approx(gspo_loop(logp.double(), logp_old.double(), adv_seq.double(), mask,
                                                  eps_low, eps_high), rel=1e-5)
    # the gradient: d/dlogp_t of -s_i A_i / G = -s_i A_i / (G |y_i|) inside the clip, 0 where it binds
    G = mask.shape[1]
    expected = torch.zeros_like(logp)
    for n in range(G):
        ts = valid(mask, n)
        a, sn = adv_seq[n].item(), s[n].item()
        clipped = (a > 0 and sn > 1 + eps_high) or (a < 0 and sn < 1 - eps_low)
        for t in ts:
            expected[t, n] = 0.0 if clipped else -sn * a / (G * len(ts))
    torch.testing.assert_close(lp.grad, expected, rtol=1e-4, atol=1e-7)


def test_gspo_token_differs_from_gspo_only_with_per_token_advantages():
    logp, logp_old, adv, _, mask, _ = ragged(3, scale=0.02)
    per_token_adv = adv * torch.linspace(0.5, 1.5, adv.shape[0]).unsqueeze(1)
    grads = {}
    for token_level in (False, True):
        for name, a in (("sequence", adv), ("token", per_token_adv)):
            lp = logp.clone().requires_grad_(True)
            aggregate(gspo_surrogate(lp, logp_old, a, mask, 0.2, token_level=token_level), mask,
                      "seq-mean-token-mean").backward()
            grads[token_level, name] = lp.grad
    torch.testing.assert_close(grads[False, "sequence"], grads[True, "sequence"], rtol=1e-5, atol=1e-8)
    assert not torch.allclose(grads[False, "token"], grads[True, "token"], rtol=1e-3)


# --------------------------------------------------------------------------------------
# CISPO against a loop; its gradient keeps every token


@pytest.mark.parametrize("eps_low,eps_high", [(1.0, 0.2), (0.1, 0.3)])
def test_cispo_loss_and_gradient_match_the_token_loop(eps_low, eps_high):
    logp, logp_old, adv, _, mask, _ = ragged(4)
    lp = logp.clone().requires_grad_(True)
    out = cispo_loss(lp, logp_old, adv, eps_low, eps_high)
    out.sum().backward()
    expected, grad = torch.zeros_like(logp), torch.zeros_like(logp)
    for t in range(logp.shape[0]):
        for n in range(logp.shape[1]):
            w = min(max(math.exp(logp[t, n].item() - logp_old[t, n].item()), 1 - eps_low), 1 + eps_high)
            expected[t, n] = -w * adv[t, n] * logp[t, n]
            grad[t, n] = -w * adv[t, n]                  # sg(w): d/dlogp of -w A logp is -w A
    torch.testing.assert_close(out.detach(), expected, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(lp.grad, grad, rtol=1e-5, atol=1e-6)
    # where PPO's clip cuts a token's gradient, CISPO keeps it (bounded by the clipped weight)
    lp2 = logp.clone().requires_grad_(True)
    clipped_surrogate(lp2, logp_old, adv, eps_low, eps_high).sum().backward()
    cut = (lp2.grad == 0) & (adv != 0)
    assert cut.any() and (lp.grad[cut] != 0).all()


# --------------------------------------------------------------------------------------
# Dr. GRPO's aggregation


def test_seq_mean_token_sum_norm_divides_by_the_constant_not_the_length():
    x, _, _, _, mask, lengths = ragged(5)
    L = 20
    out = aggregate(x, mask, "seq-mean-token-sum-norm", max_length=L)
    per_seq = [sum(x[t, n].item() for t in valid(mask, n)) / L for n in range(mask.shape[1])]
    assert out.item() == pytest.approx(sum(per_seq) / len(per_seq), rel=1e-5)
    # against seq-mean-token-mean: the same only where every sequence is L long
    assert out.item() != pytest.approx(aggregate(x, mask, "seq-mean-token-mean").item(), rel=1e-3)
    full = torch.ones_like(mask)
    assert aggregate(x, full, "seq-mean-token-sum-norm", max_length=x.shape[0]).item() == pytest.approx(
        aggregate(x, full, "seq-mean-token-mean").item(), rel=1e-6)
    with pytest.raises(ValueError, match="max_length"):
        aggregate(x, mask, "seq-mean-token-sum-norm")


# --------------------------------------------------------------------------------------
# conjugate gradient


@pytest.mark.parametrize("n,seed", [(5, 0), (12, 1)])
def test_conjugate_gradient_solves_spd_system(n, seed):
    g = gen(seed)
    m = torch.randn(n, n, generator=g, dtype=torch.float64)
    A = m @ m.T + 0.5 * torch.eye(n, dtype=torch.float64)
    b = torch.randn(n, generator=g, dtype=torch.float64)
    calls = []

    def matvec(v):
        calls.append(1)
        return A @ v

    b_before = b.clone()
    x = conjugate_gradient(matvec, b, iters=3 * n, tol=1e-20)
    torch.testing.assert_close(x, torch.linalg.solve(A, b), rtol=1e-6, atol=1e-8)
    assert len(calls) <= 3 * n
    assert torch.equal(b, b_before)
    # the residual of the returned solution is small in the problem's own terms
    assert torch.linalg.norm(A @ x - b) < 1e-8 * torch.linalg.norm(b)


def test_conjugate_gradient_is_exact_in_n_steps_on_small_system():
    A = torch.tensor([[4.0, 1.0, 0.0], [1.0, 3.0, 0.5], [0.0, 0.5, 2.0]], dtype=torch.float64)
    b = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64)
    x = conjugate_gradient(lambda v: A @ v, b, iters=3, tol=0.0)
    torch.testing.assert_close(x, torch.linalg.solve(A, b))
    b_before = b.clone()
    conjugate_gradient(lambda v: A @ v, b, iters=3)
    assert torch.equal(b, b_before)  # the right-hand side is not modified in place
