"""Advantage estimators against naive references (plain Python loops, the formulas)."""
import math

import pytest
import torch

from algos.advantages import (discounted_returns, gae, group_baseline_normalized, group_relative, leave_one_out,
                              normalize, reinforce_pp)


# --------------------------------------------------------------------------------------
# naive references


def gae_loop(rewards, values, dones, last_value, gamma, lam):
    """The reference backward loop of the PPO literature, one column at a time, in floats."""
    T = len(rewards)
    adv = [0.0] * T
    running = 0.0
    for t in reversed(range(T)):
        next_value = last_value if t == T - 1 else values[t + 1]
        nonterminal = 1.0 - dones[t]
        delta = rewards[t] + gamma * next_value * nonterminal - values[t]
        running = delta + gamma * lam * nonterminal * running
        adv[t] = running
    return adv


def returns_loop(rewards, dones, last_value, gamma):
    T = len(rewards)
    out = [0.0] * T
    g = last_value
    for t in reversed(range(T)):
        g = rewards[t] + gamma * (1.0 - dones[t]) * g
        out[t] = g
    return out


def random_horizon(T, N, seed, p_done=0.2):
    g = torch.Generator().manual_seed(seed)
    shape = (T,) if N is None else (T, N)
    rewards = torch.randn(shape, generator=g)
    values = torch.randn(shape, generator=g)
    dones = (torch.rand(shape, generator=g) < p_done).float()
    last_value = torch.randn(() if N is None else (N,), generator=g)
    return rewards, values, dones, last_value


# --------------------------------------------------------------------------------------
# GAE


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("gamma,lam", [(0.99, 0.95), (0.9, 1.0), (0.5, 0.0)])
def test_gae_1d_matches_loop(seed, gamma, lam):
    rewards, values, dones, last_value = random_horizon(23, None, seed)
    assert dones.sum() > 0  # the loop must be exercised across episode ends
    adv, ret = gae(rewards, values, dones, last_value, gamma, lam)
    assert adv.shape == rewards.shape and ret.shape == rewards.shape
    ref = gae_loop(rewards.tolist(), values.tolist(), dones.tolist(), float(last_value), gamma, lam)
    torch.testing.assert_close(adv, torch.tensor(ref), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(ret, adv + values)


@pytest.mark.parametrize("seed", [0, 1])
def test_gae_2d_matches_loop_per_column(seed):
    gamma, lam = 0.97, 0.9
    rewards, values, dones, last_value = random_horizon(17, 5, seed, p_done=0.25)
    adv, ret = gae(rewards, values, dones, last_value, gamma, lam)
    assert adv.shape == (17, 5)
    for n in range(5):
        ref = gae_loop(rewards[:, n].tolist(), values[:, n].tolist(), dones[:, n].tolist(),
                       float(last_value[n]), gamma, lam)
        torch.testing.assert_close(adv[:, n], torch.tensor(ref), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(ret, adv + values)


def test_gae_does_not_bootstrap_across_done():
    # An episode ending at the last step: last_value must not leak into the advantage.
    rewards = torch.tensor([1.0, 2.0, 3.0])
    values = torch.tensor([0.5, 0.25, 0.125])
    dones = torch.tensor([0.0, 0.0, 1.0])
    adv_a, _ = gae(rewards, values, dones, torch.tensor(100.0), 0.9, 0.8)
    adv_b, _ = gae(rewards, values, dones, torch.tensor(-100.0), 0.9, 0.8)
    torch.testing.assert_close(adv_a, adv_b)
    # and the last step's advantage is r - V
    assert adv_a[2].item() == pytest.approx(3.0 - 0.125)
    # an episode end in the middle cuts the recursion: step 1 sees only its own delta
    dones = torch.tensor([0.0, 1.0, 0.0])
    adv, _ = gae(rewards, values, dones, torch.tensor(7.0), 0.9, 0.8)
    assert adv[1].item() == pytest.approx(2.0 - 0.25)


def test_gae_lambda_one_is_discounted_return_minus_value():
    rewards, values, dones, last_value = random_horizon(20, 3, 5)
    adv, ret = gae(rewards, values, dones, last_value, 0.95, 1.0)
    torch.testing.assert_close(ret, discounted_returns(rewards, dones, last_value, 0.95), rtol=1e-5, atol=1e-5)


def test_gae_does_not_modify_inputs():
    rewards, values, dones, last_value = random_horizon(10, 2, 3)
    copies = [x.clone() for x in (rewards, values, dones, last_value)]
    gae(rewards, values, dones, last_value, 0.99, 0.95)
    for a, b in zip((rewards, values, dones, last_value), copies):
        assert torch.equal(a, b)


# --------------------------------------------------------------------------------------
# discounted returns


@pytest.mark.parametrize("seed", [0, 1])
def test_discounted_returns_1d_matches_loop(seed):
    rewards, _, dones, last_value = random_horizon(31, None, seed)
    out = discounted_returns(rewards, dones, last_value, 0.93)
    ref = returns_loop(rewards.tolist(), dones.tolist(), float(last_value), 0.93)
    torch.testing.assert_close(out, torch.tensor(ref), rtol=1e-5, atol=1e-5)


def test_discounted_returns_2d_matches_loop():
    rewards, _, dones, last_value = random_horizon(19, 4, 7, p_done=0.3)
    out = discounted_returns(rewards, dones, last_value, 0.8)
    for n in range(4):
        ref = returns_loop(rewards[:, n].tolist(), dones[:, n].tolist(), float(last_value[n]), 0.8)
        torch.testing.assert_close(out[:, n], torch.tensor(ref), rtol=1e-5, atol=1e-5)


def test_discounted_returns_monte_carlo_with_zero_last_value():
    rewards = torch.tensor([1.0, 1.0, 1.0, 1.0])
    out = discounted_returns(rewards, torch.zeros(4), torch.tensor(0.0), 0.5)
    torch.testing.assert_close(out, torch.tensor([1 + 0.5 + 0.25 + 0.125, 1 + 0.5 + 0.25, 1.5, 1.0]))


# --------------------------------------------------------------------------------------
# group-relative (GRPO / Dr. GRPO)


def group_relative_loop(scores, groups, scale=True, eps=1e-6):
    out = []
    for i, g in enumerate(groups):
        members = [scores[j] for j in range(len(scores)) if groups[j] == g]
        mean = sum(members) / len(members)
        if max(members) == min(members):
            out.append(0.0)
            continue
        if scale:
            std = math.sqrt(sum((m - mean) ** 2 for m in members) / (len(members) - 1))
            out.append((scores[i] - mean) / (std + eps))
        else:
            out.append(scores[i] - mean)
    return out


def shuffled_groups(seed, sizes=(4, 3, 5, 2), ids=(17, 3, 42, 8)):
    g = torch.Generator().manual_seed(seed)
    groups = torch.tensor([gid for gid, k in zip(ids, sizes) for _ in range(k)])
    perm = torch.randperm(len(groups), generator=g)
    scores = torch.randn(len(groups), generator=g) * 3 + 1
    return scores, groups[perm]


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("scale", [True, False])
def test_group_relative_matches_loop(seed, scale):
    scores, groups = shuffled_groups(seed)
    out = group_relative(scores, groups, scale=scale)
    ref = group_relative_loop(scores.tolist(), groups.tolist(), scale=scale)
    torch.testing.assert_close(out, torch.tensor(ref), rtol=1e-5, atol=1e-5)


def test_group_relative_eps_is_added_to_the_std():
    scores, groups = shuffled_groups(3)
    eps = 0.5  # large enough that forgetting it (or putting it under the sqrt) is visible
    out = group_relative(scores, groups, eps=eps)
    ref = group_relative_loop(scores.tolist(), groups.tolist(), eps=eps)
    torch.testing.assert_close(out, torch.tensor(ref), rtol=1e-5, atol=1e-5)


def test_group_relative_constant_group_is_exactly_zero():
    scores = torch.tensor([2.0, 5.0, 2.0, 1.0, 2.0, 3.0, 7.0])
    groups = torch.tensor([9, 4, 9, 4, 9, 6, 6])  # group 9 is constant
    for scale in (True, False):
        out = group_relative(scores, groups, scale=scale)
        assert torch.all(out[groups == 9] == 0.0)
        assert torch.all(out[groups != 9] != 0.0)
        assert torch.isfinite(out).all()
        ref = group_relative_loop(scores.tolist(), groups.tolist(), scale=scale)
        torch.testing.assert_close(out, torch.tensor(ref), rtol=1e-5, atol=1e-5)


def test_group_relative_single_member_group_is_zero():
    out = group_relative(torch.tensor([3.0, 1.0, 2.0]), torch.tensor([0, 1, 1]))
    assert out[0] == 0.0 and torch.isfinite(out).all()


def test_group_relative_does_not_depend_on_order_or_id_values():
    scores, groups = shuffled_groups(4)
    out = group_relative(scores, groups)
    perm = torch.randperm(len(scores), generator=torch.Generator().manual_seed(1))
    relabelled = groups * 1000 - 7
    out_perm = group_relative(scores[perm], relabelled[perm])
    torch.testing.assert_close(out_perm, out[perm])


# --------------------------------------------------------------------------------------
# leave-one-out (RLOO)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_leave_one_out_matches_formula(seed):
    scores, groups = shuffled_groups(seed)
    out = leave_one_out(scores, groups)
    s, gr = scores.tolist(), groups.tolist()
    ref = []
    for i in range(len(s)):
        others = [s[j] for j in range(len(s)) if gr[j] == gr[i] and j != i]
        ref.append(s[i] - sum(others) / len(others))
    torch.testing.assert_close(out, torch.tensor(ref), rtol=1e-5, atol=1e-5)


def test_leave_one_out_equals_scaled_group_centring():
    # k/(k-1) * (s_i - mean_g): an identity that ties RLOO to Dr. GRPO
    scores, groups = shuffled_groups(5)
    out = leave_one_out(scores, groups)
    centred = group_relative(scores, groups, scale=False)
    counts = torch.tensor([(groups == g).sum().item() for g in groups], dtype=torch.float32)
    torch.testing.assert_close(out, centred * counts / (counts - 1), rtol=1e-5, atol=1e-5)


def test_leave_one_out_single_member_group_is_zero():
    out = leave_one_out(torch.tensor([3.0, 1.0, 2.0]), torch.tensor([5, 1, 1]))
    assert out[0] == 0.0
    torch.testing.assert_close(out[1:], torch.tensor([-1.0, 1.0]))


# --------------------------------------------------------------------------------------
# normalize


def test_normalize_without_mask():
    x = torch.randn(50, generator=torch.Generator().manual_seed(0)) * 4 + 2
    y = normalize(x)
    xs = x.tolist()
    mean = sum(xs) / len(xs)
    std = math.sqrt(sum((v - mean) ** 2 for v in xs) / (len(xs) - 1))
    torch.testing.assert_close(y, torch.tensor([(v - mean) / (std + 1e-8) for v in xs]), rtol=1e-5, atol=1e-5)


def test_normalize_with_mask_uses_valid_entries_only():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(6, 4, generator=g) * 3 + 1
    mask = (torch.rand(6, 4, generator=g) < 0.6).float()
    x_garbage = torch.where(mask > 0, x, torch.full_like(x, 1e6))  # padding must not matter
    y = normalize(x_garbage, mask)
    valid = [v for v, m in zip(x.flatten().tolist(), mask.flatten().tolist()) if m]
    mean = sum(valid) / len(valid)
    std = math.sqrt(sum((v - mean) ** 2 for v in valid) / (len(valid) - 1))
    expected = torch.where(mask > 0, (x - mean) / (std + 1e-8), torch.zeros_like(x))
    torch.testing.assert_close(y, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("masked", [False, True])
def test_normalize_without_centring_only_divides_by_the_std(masked):
    # REINFORCE without a baseline: subtracting the mean would be a baseline
    g = torch.Generator().manual_seed(2)
    x = torch.randn(6, 4, generator=g) * 3 + 5
    mask = (torch.rand(6, 4, generator=g) < 0.6).float() if masked else torch.ones(6, 4)
    y = normalize(x, mask if masked else None, center=False)
    valid = [v for v, m in zip(x.flatten().tolist(), mask.flatten().tolist()) if m]
    mean = sum(valid) / len(valid)
    std = math.sqrt(sum((v - mean) ** 2 for v in valid) / (len(valid) - 1))
    expected = torch.where(mask > 0, x / (std + 1e-8), torch.zeros_like(x))
    torch.testing.assert_close(y, expected, rtol=1e-5, atol=1e-5)
    assert (y * mask).sum() / mask.sum() > 1.0   # not centred


def ragged_mask(seed, T=9, N=7):
    """A mask of ragged lengths 1..T (one column full) and the lengths."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, T + 1, (N,), generator=g)
    lengths[0] = T
    return (torch.arange(T).unsqueeze(1) < lengths.unsqueeze(0)).float(), lengths


# --------------------------------------------------------------------------------------
# REINFORCE++'s advantages against loops


def whiten_loop(values):
    n = len(values)
    mean = sum(values) / n
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    return [(v - mean) / (std + 1e-8) for v in values]


@pytest.mark.parametrize("gamma,kl_coef", [(1.0, 0.0), (1.0, 0.05), (0.9, 0.05)])
def test_reinforce_pp_advantage_matches_the_token_loop(gamma, kl_coef):
    mask, lengths = ragged_mask(11)
    T, N = mask.shape
    scores = torch.randn(N, generator=torch.Generator().manual_seed(12))
    kl = torch.randn(T, N, generator=torch.Generator().manual_seed(13)) * mask
    out = reinforce_pp(scores, mask, kl if kl_coef else None, kl_coef, gamma)
    returns, where = [], []
    for n in range(N):
        L = lengths[n].item()
        rewards = [-kl_coef * kl[t, n].item() + (scores[n].item() if t == L - 1 else 0.0) for t in range(L)]
        g = 0.0
        column = []
        for t in reversed(range(L)):
            g = rewards[t] + gamma * g
            column.append(g)
        returns += column[::-1]
        where += [(t, n) for t in range(L)]
    expected = torch.zeros(T, N)
    for (t, n), a in zip(where, whiten_loop(returns)):
        expected[t, n] = a
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-5)


def test_group_baseline_normalized_matches_the_loop():
    mask, lengths = ragged_mask(14, N=8)
    scores = torch.randn(8, generator=torch.Generator().manual_seed(15))
    groups = torch.tensor([5, 5, 9, 9, 9, 2, 2, 2])
    scores[2:5] = 0.5                                     # a constant group: no signal
    out = group_baseline_normalized(scores, groups, mask)
    centred = []
    for n in range(8):
        members = [scores[k].item() for k in range(8) if groups[k] == groups[n]]
        centred.append(scores[n].item() - sum(members) / len(members))
    tokens = [centred[n] for n in range(8) for _ in range(lengths[n].item())]
    mean = sum(tokens) / len(tokens)
    std = math.sqrt(sum((v - mean) ** 2 for v in tokens) / (len(tokens) - 1))
    for n in range(8):
        for t in range(mask.shape[0]):
            want = (centred[n] - mean) / (std + 1e-8) if t < lengths[n] else 0.0
            assert out[t, n].item() == pytest.approx(want, rel=1e-5, abs=1e-6)
    # the global std, not the group's: the group-mean advantage of two groups keeps their scale
    assert not torch.allclose(out[0, :2].abs(), out[0, 5:7].abs()[:2])


@pytest.mark.parametrize("seed", range(3))
def test_explained_variance_matches_the_formula_over_valid_steps(seed):
    """``1 - Var[R - V] / Var[R]`` (unbiased variances) over the valid steps only, as a loop."""
    from algos.base import explained_variance
    g = torch.Generator().manual_seed(seed)
    target = torch.randn(12, 5, generator=g) * 3
    pred = target + torch.randn(12, 5, generator=g)
    mask = (torch.rand(12, 5, generator=g) > 0.3).float()
    t = [float(x) for x, m in zip(target.flatten(), mask.flatten()) if m > 0]
    d = [float(x - y) for x, y, m in zip(target.flatten(), pred.flatten(), mask.flatten()) if m > 0]

    def var(xs):
        mean = sum(xs) / len(xs)
        return sum((x - mean) ** 2 for x in xs) / (len(xs) - 1)
    assert explained_variance(pred, target, mask) == pytest.approx(1 - var(d) / var(t), rel=1e-5)
    assert math.isnan(explained_variance(pred, torch.full_like(target, 2.0), mask))   # constant target
