"""Each algorithm on small batches from a real MLPAgent: it learns in the right direction,
its first minibatch sees ratio 1, and its algorithm-specific rules (TRPO's trust region,
PPO-KL's beta, DAPO's shaping and filtering) do what the papers say."""
import copy

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch.distributions import kl_divergence

import algos
from algos.dapo import overlong_penalty
from algos.losses import importance_surrogate
from algos.ppo_kl import adapt_beta
from core.batch import Batch
from core.errors import ConfigError
from core.envs import ListVecEnv
from core.rollout import GroupCollector, HorizonCollector
from suites.mujoco import MLPAgent, MujocoConfig

ALL = ("reinforce", "trpo", "ppo_clip", "ppo_kl", "grpo", "rloo", "dapo")
HORIZON = ("reinforce", "trpo", "ppo_clip", "ppo_kl")
GROUPS = ("grpo", "rloo", "dapo")

OBS_SPACE = gym.spaces.Box(-np.inf, np.inf, (4,), np.float64)
ACT_SPACE = gym.spaces.Box(-3.0, 3.0, (1,), np.float32)


def make_agent(seed=0):
    torch.manual_seed(seed)
    return MLPAgent(OBS_SPACE, ACT_SPACE, MujocoConfig())


def make_algo(name, agent, seed=0, **overrides):
    cls = algos.get(name)
    return cls(agent, cls.Config(**overrides), total_updates=10, seed=seed)


def sample_actions(agent, obs, seed):
    rng = np.random.default_rng(seed)
    flat = obs.reshape(-1, obs.shape[-1]).numpy()
    return torch.from_numpy(agent.act(flat, rng)).reshape(*obs.shape[:-1], -1)


def horizon_batch(agent, T=64, N=2, seed=0):
    """Every step its own one-step episode (dones = 1) with reward +10 if a > 0 else -10:
    the advantage of an action is +-10 - V(s), so its sign is the sign of the action."""
    g = torch.Generator().manual_seed(seed)
    obs = torch.randn(T, N, 4, generator=g)
    actions = sample_actions(agent, obs, seed)
    rewards = torch.where(actions[..., 0] > 0, 10.0, -10.0)
    with torch.no_grad():
        logp_old = agent.dist(obs).log_prob(actions)
        values = agent.value(obs)
    batch = Batch(obs=obs, actions=actions, rewards=rewards, dones=torch.ones(T, N), mask=torch.ones(T, N),
                  logp_old=logp_old, values=values, last_value=torch.zeros(N))
    return batch, actions[..., 0] > 0


def group_batch(agent, num_groups=3, group_size=4, T=10, seed=0, length_limit=None):
    """Ragged columns (episodes of 3..T steps), scored by their mean action: within a group,
    the columns scoring above the group mean get positive advantage."""
    g = torch.Generator().manual_seed(seed)
    M = num_groups * group_size
    obs = torch.randn(T, M, 4, generator=g)
    lengths = torch.randint(3, T + 1, (M,), generator=g)
    mask = (torch.arange(T).unsqueeze(1) < lengths.unsqueeze(0)).float()
    actions = sample_actions(agent, obs, seed) * mask.unsqueeze(-1)
    obs = obs * mask.unsqueeze(-1)
    dones = torch.zeros(T, M)
    dones[lengths - 1, torch.arange(M)] = 1.0
    with torch.no_grad():
        logp_old = agent.dist(obs).log_prob(actions) * mask
    scores = (actions[..., 0] * mask).sum(0) / lengths
    groups = torch.arange(num_groups).repeat_interleave(group_size) + 100  # ids need not start at 0
    batch = Batch(obs=obs, actions=actions, rewards=torch.zeros(T, M), dones=dones, mask=mask,
                  logp_old=logp_old, last_value=torch.zeros(M), groups=groups, scores=scores,
                  lengths=lengths, truncated=torch.zeros(M), length_limit=length_limit)
    group_mean = torch.stack([scores[groups == k].mean() for k in groups])
    positive_columns = scores > group_mean
    return batch, mask.bool() & positive_columns.unsqueeze(0)


def mean_logp(agent, batch, where):
    with torch.no_grad():
        logp = agent.dist(batch.obs).log_prob(batch.actions)
    return logp[where].mean().item()


# --------------------------------------------------------------------------------------
# the registry


def test_registry_names_and_unknown_name():
    assert set(ALL) <= set(algos.names())
    for name in ALL:
        cls = algos.get(name)
        assert cls.name == name and cls.rollout in ("horizon", "groups")
    with pytest.raises(ConfigError) as err:
        algos.get("nope")
    message = str(err.value)
    assert "nope" in message
    for name in ALL:
        assert name in message


# --------------------------------------------------------------------------------------
# every algorithm: one update raises the log-probability of positive-advantage actions


@pytest.mark.parametrize("name", HORIZON)
def test_horizon_update_raises_logp_of_positive_advantage_actions(name):
    agent = make_agent(0)
    batch, positive = horizon_batch(agent, seed=1)
    assert 20 < positive.sum() < 108  # both signs well represented
    algo = make_algo(name, agent)
    before_pos, before_neg = mean_logp(agent, batch, positive), mean_logp(agent, batch, ~positive)
    metrics = algo.update(batch)
    after_pos, after_neg = mean_logp(agent, batch, positive), mean_logp(agent, batch, ~positive)
    assert after_pos > before_pos + 1e-4, (before_pos, after_pos)
    assert after_pos - after_neg > before_pos - before_neg
    assert all(np.isfinite(v) for v in metrics.values()), metrics
    assert algo.updates_done == 1


def group_update_moves_toward_positive(name: str, length_limit=None, **options) -> dict:
    """One update of group algorithm ``name`` on a batch whose positive-advantage actions are known:
    their log-probability rises, and more than the others'; the metrics are finite (returned)."""
    agent = make_agent(0)
    batch, positive = group_batch(agent, seed=2, length_limit=length_limit)
    algo = make_algo(name, agent, group_size=4, num_groups=3, **options)
    before = mean_logp(agent, batch, positive)
    before_neg = mean_logp(agent, batch, batch.mask.bool() & ~positive)
    metrics = algo.update(batch)
    after = mean_logp(agent, batch, positive)
    after_neg = mean_logp(agent, batch, batch.mask.bool() & ~positive)
    assert after > before + 1e-4, (before, after)
    assert after - after_neg > before - before_neg
    assert all(np.isfinite(v) for v in metrics.values()), metrics
    return metrics


@pytest.mark.parametrize("name", GROUPS)
def test_group_update_raises_logp_of_positive_advantage_actions(name):
    group_update_moves_toward_positive(name)


# --------------------------------------------------------------------------------------
# on real collected batches: ratio 1 at the first minibatch, finite metrics, parameters move


def collected_batch(name, seed=0):
    env_id = "InvertedPendulum-v5"
    cls = algos.get(name)
    if cls.rollout == "horizon":
        envs = [gym.make(env_id) for _ in range(2)]
        torch.manual_seed(seed)
        agent = MLPAgent(envs[0].observation_space, envs[0].action_space, MujocoConfig())
        # non-trivial observation statistics, so that a stale normalisation would show
        collector = HorizonCollector(ListVecEnv(envs), num_steps=64, gamma=0.99, seed=seed,
                                     with_values=cls.needs(cls.Config()).critic)
        agent.observe(torch.from_numpy(collector.collect(agent)[0].obs.reshape(-1, 4).numpy() * 3 + 1))
        batch, _ = collector.collect(agent)
    else:
        envs = [gym.make(env_id) for _ in range(4)]
        torch.manual_seed(seed)
        agent = MLPAgent(envs[0].observation_space, envs[0].action_space, MujocoConfig())
        collector = GroupCollector(envs, num_groups=2, seed=seed, length_limit=1000)
        batch, _ = collector.collect(agent)
    return agent, batch


@pytest.mark.parametrize("name", ALL)
def test_update_on_collected_batch(name):
    agent, batch = collected_batch(name)
    extra = {"group_size": 4, "num_groups": 2} if algos.get(name).rollout == "groups" else {}
    algo = make_algo(name, agent, **extra)
    before = [p.detach().clone() for p in agent.policy_parameters()]
    metrics = algo.update(batch)
    # every metric finite but the critic's explained variance, NaN by design on a constant target
    assert all(np.isfinite(v) for k, v in metrics.items() if k != "explained_variance"), metrics
    assert "kl" in metrics and "entropy" in metrics
    if name != "trpo":  # TRPO takes no minibatch steps
        assert metrics["first_ratio_error"] < 1e-5
    moved = any(not torch.equal(a, b) for a, b in zip(before, agent.policy_parameters()))
    assert moved, "the policy did not change"
    assert all(torch.isfinite(p).all() for p in agent.parameters())


@pytest.mark.parametrize("name", ["ppo_clip", "grpo"])
def test_first_ratio_error_detects_a_stale_logp_old(name):
    # the metric is a real check: with logp_old off by 0.1 it must read about 0.1
    agent, batch = collected_batch(name)
    batch.logp_old = batch.logp_old + 0.1 * batch.mask
    extra = {"group_size": 4, "num_groups": 2} if name == "grpo" else {}
    metrics = make_algo(name, agent, **extra).update(batch)
    assert metrics["first_ratio_error"] == pytest.approx(0.1, abs=1e-4)


# --------------------------------------------------------------------------------------
# TRPO: the accepted step lies inside the trust region


def _trpo_after_update(seed: int, **options):
    agent = make_agent(3)
    batch, _ = horizon_batch(agent, seed=seed)
    old = copy.deepcopy(agent)
    algo = make_algo("trpo", agent, **options)
    metrics = algo.update(batch)
    return old, agent, batch, algo, metrics


@pytest.mark.parametrize("seed", [4, 5, 6])
@pytest.mark.parametrize("tolerance", [1.0, 1.5])
def test_trpo_line_search_takes_the_first_fraction_within_the_tolerance(seed, tolerance):
    """The line search as a loop over the fractions 1, 1/2, 1/4, ... of the full step: the first
    whose KL (on the whole batch) is at most tolerance * max_kl and whose surrogate does not fall
    (trpo_mpi's rule, tolerance 1.5)."""
    from torch.nn.utils import parameters_to_vector, vector_to_parameters
    max_kl = 0.01
    # the full step: a line search of one fraction with no KL bound takes it whole
    old, full, batch, algo, _ = _trpo_after_update(seed, max_kl=max_kl, max_kl_tolerance=1e9, line_search_steps=1)
    theta_old = parameters_to_vector(old.policy_parameters())
    step = parameters_to_vector(full.policy_parameters()) - theta_old
    advantages = algo.advantages(batch)[0]

    def kl_and_surrogate(theta):
        probe = copy.deepcopy(old)
        vector_to_parameters(theta, probe.policy_parameters())
        with torch.no_grad():
            dist = probe.dist(batch.obs)
            kl = kl_divergence(old.dist(batch.obs), dist).mean().item()
            surrogate = -importance_surrogate(dist.log_prob(batch.actions), batch.logp_old, advantages).mean().item()
        return kl, surrogate

    _, surrogate_before = kl_and_surrogate(theta_old)
    want = None
    for k in range(10):
        kl, surrogate = kl_and_surrogate(theta_old + 0.5 ** k * step)
        if kl <= tolerance * max_kl and surrogate >= surrogate_before:
            want = (0.5 ** k, kl)
            break
    _, agent, _, _, metrics = _trpo_after_update(seed, max_kl=max_kl, max_kl_tolerance=tolerance)
    assert want is not None and metrics["step_accepted"] == 1.0
    assert metrics["step_fraction"] == want[0]
    assert metrics["kl_line_search"] == pytest.approx(want[1], rel=1e-4)
    torch.testing.assert_close(parameters_to_vector(agent.policy_parameters()), theta_old + want[0] * step,
                               rtol=1e-5, atol=1e-7)


def test_trpo_kl_tolerance_decides_some_step():
    """Where the full step's KL lies between max_kl and 1.5 max_kl (a Fisher from a fifth of the
    batch underestimates the curvature), trpo_mpi's tolerance keeps the whole step and the strict
    rule halves it: the case the tolerance exists for occurs on these batches."""
    fractions = {tol: [_trpo_after_update(seed, max_kl=0.01, max_kl_tolerance=tol)[4]["step_fraction"]
                       for seed in (4, 5, 6)] for tol in (1.0, 1.5)}
    assert any(strict < tolerant for strict, tolerant in zip(fractions[1.0], fractions[1.5])), fractions


@pytest.mark.parametrize("max_kl", [0.01, 0.001])
def test_trpo_step_respects_max_kl(max_kl):
    agent = make_agent(3)
    batch, _ = horizon_batch(agent, seed=4)
    old = copy.deepcopy(agent)
    algo = make_algo("trpo", agent, max_kl=max_kl)
    metrics = algo.update(batch)
    assert metrics["step_accepted"] == 1.0
    bound = max_kl * algo.cfg.max_kl_tolerance
    assert 0 < metrics["kl_line_search"] <= bound
    with torch.no_grad():
        kl = kl_divergence(old.dist(batch.obs), agent.dist(batch.obs)).mean().item()
    assert 0 < kl <= bound * (1 + 1e-5)
    assert metrics["kl_line_search"] == pytest.approx(kl, rel=1e-4)
    # the step uses the trust region (it is not vanishingly small): the full step is sized
    # for KL = max_kl to second order, and the line search halves it at most a few times
    assert kl > max_kl / 4 ** 4
    # the surrogate improved
    with torch.no_grad():
        adv = batch.rewards - batch.values
        ratio_new = torch.exp(agent.dist(batch.obs).log_prob(batch.actions) - batch.logp_old)
    assert (ratio_new * (adv - adv.mean())).mean() > 0


# --------------------------------------------------------------------------------------
# PPO-KL: the paper's adaptive beta


def test_adapt_beta_three_branches():
    d_targ = 0.01
    assert adapt_beta(1.0, d_targ / 1.5 * 0.99, d_targ) == 0.5
    assert adapt_beta(1.0, d_targ / 3, d_targ) == 0.5
    assert adapt_beta(1.0, d_targ * 1.5 * 1.01, d_targ) == 2.0
    assert adapt_beta(0.3, 1.0, d_targ) == pytest.approx(0.6)
    for d in (d_targ / 1.5 * 1.01, d_targ, d_targ * 1.49):
        assert adapt_beta(0.7, d, d_targ) == 0.7


def test_ppo_last_epoch_diagnostics_match_the_after_update_pass_on_one_epoch():
    # With one epoch of one minibatch, "the last epoch before its step" is the policy before the
    # update: kl ~ 0, and entropy / explained variance are the pre-update ones over the batch.
    agent, batch = collected_batch("ppo_clip")
    with torch.no_grad():
        dist = agent.dist(batch.obs)
        entropy_before = float(dist.entropy().mean())
    from algos.advantages import gae
    from algos.base import explained_variance
    _, returns = gae(batch.rewards, batch.values, batch.dones, batch.last_value, 0.99, 0.95)
    ev_before = explained_variance(batch.values, returns, batch.mask)
    cfg = dict(num_epochs=1, minibatch_size=10_000, diagnostics="last_epoch", gamma=0.99, lam=0.95)
    metrics = make_algo("ppo_clip", copy.deepcopy(agent), **cfg).update(batch)
    assert metrics["kl"] == pytest.approx(0.0, abs=1e-10)
    assert metrics["entropy"] == pytest.approx(entropy_before, rel=1e-5)
    assert metrics["explained_variance"] == pytest.approx(ev_before, rel=1e-4, abs=1e-6)
    # with more epochs the policy moves, and both modes see a positive KL of the same order
    after = make_algo("ppo_clip", copy.deepcopy(agent), num_epochs=4, minibatch_size=32).update(batch)
    last = make_algo("ppo_clip", copy.deepcopy(agent), num_epochs=4, minibatch_size=32,
                     diagnostics="last_epoch").update(batch)
    assert 0 < last["kl"] < 2 * after["kl"] and after["kl"] < 10 * last["kl"]
    assert last["policy_loss"] == after["policy_loss"]      # the diagnostics do not change learning


def test_grpo_last_epoch_diagnostics_on_one_epoch_are_the_pre_update_ones():
    agent, batch = collected_batch("grpo")
    with torch.no_grad():
        entropy = agent.dist(batch.obs).entropy()
        entropy_before = float((entropy * batch.mask).sum() / batch.mask.sum())
    cfg = dict(group_size=4, num_groups=2, num_epochs=1, num_minibatches=1)
    last = make_algo("grpo", copy.deepcopy(agent), diagnostics="last_epoch", **cfg).update(batch)
    after = make_algo("grpo", copy.deepcopy(agent), **cfg).update(batch)
    assert last["kl"] == pytest.approx(0.0, abs=1e-10) and after["kl"] > 0
    assert last["entropy"] == pytest.approx(entropy_before, rel=1e-5)
    assert last["policy_loss"] == after["policy_loss"]


@pytest.mark.parametrize("estimator", ["analytic", "k3"])
def test_ppo_kl_beta_doubles_when_kl_is_large(estimator):
    agent = make_agent(5)
    batch, _ = horizon_batch(agent, seed=6)
    old = copy.deepcopy(agent)
    algo = make_algo("ppo_kl", agent, kl_coef=1.0, kl_target=1e-6, lr=1e-2, kl_estimator=estimator)
    metrics = algo.update(batch)
    with torch.no_grad():
        kl = kl_divergence(old.dist(batch.obs), agent.dist(batch.obs)).mean().item()
    assert kl > 1.5e-6
    if estimator == "analytic":
        assert metrics["kl_measured"] == pytest.approx(kl, rel=1e-4)
    else:  # k3 from the collected actions: (r - 1) - log r with r = pi / pi_old
        with torch.no_grad():
            log_r = agent.dist(batch.obs).log_prob(batch.actions) - batch.logp_old
        assert metrics["kl_measured"] == pytest.approx((log_r.exp() - 1 - log_r).mean().item(), rel=1e-4)
    assert metrics["beta"] == 1.0  # the beta used during this update
    assert algo.beta == 2.0
    assert algo.extra_state() == {"beta": 2.0}


def test_ppo_kl_beta_halves_when_kl_is_small_and_stays_when_fixed():
    agent = make_agent(5)
    batch, _ = horizon_batch(agent, seed=6)
    algo = make_algo("ppo_kl", agent, kl_coef=1.0, kl_target=10.0)
    algo.update(batch)
    assert algo.beta == 0.5
    algo = make_algo("ppo_kl", make_agent(5), kl_coef=1.0, kl_target=1e-6, adaptive=False)
    algo.update(batch)
    assert algo.beta == 1.0


# --------------------------------------------------------------------------------------
# DAPO: overlong shaping and dynamic sampling


def test_overlong_penalty_matches_the_paper():
    L_max, L_cache = 20, 6
    lengths = torch.arange(0, L_max + 6)
    out = overlong_penalty(lengths, L_max, L_cache)
    for L, value in zip(lengths.tolist(), out.tolist()):
        if L <= L_max - L_cache:
            expected = 0.0
        elif L <= L_max:
            expected = ((L_max - L_cache) - L) / L_cache
        else:
            expected = -1.0
        assert value == pytest.approx(expected, abs=1e-6), L
    # continuous at both knots, monotone non-increasing
    assert out[L_max - L_cache].item() == 0.0 and out[L_max].item() == pytest.approx(-1.0)
    assert (out[1:] <= out[:-1]).all()


def test_dapo_select_groups_drops_constant_groups():
    agent = make_agent(0)
    batch, _ = group_batch(agent, num_groups=4, group_size=3, seed=7)
    # group 101 constant, group 103 one member differs, the others random
    batch.scores[batch.groups == 101] = 1.0
    batch.scores[batch.groups == 103] = torch.tensor([0.0, 0.0, 1e-3])
    algo = make_algo("dapo", agent, group_size=3, num_groups=4)
    keep = algo.select_groups(batch)
    assert keep.dtype == torch.bool and keep.shape == batch.groups.shape
    assert torch.equal(keep, batch.groups != 101)
    # the columns kept form a batch DAPO can update on
    kept = batch.select_columns(torch.nonzero(keep, as_tuple=True)[0])
    assert set(kept.groups.tolist()) == {100, 102, 103}
    metrics = algo.update(kept)
    assert np.isfinite(metrics["policy_loss"])


def test_dapo_shapes_scores_with_the_overlong_penalty_but_samples_on_the_outcome():
    agent = make_agent(0)
    batch, _ = group_batch(agent, num_groups=2, group_size=3, seed=8, length_limit=10)
    batch.scores = torch.ones(6)  # raw scores constant in both groups
    batch.lengths = torch.tensor([3, 4, 5, 9, 9, 9])  # group 100 short; group 101 all long
    algo = make_algo("dapo", agent, group_size=3, num_groups=2, overlong_buffer=4)
    shaped = algo.shaped_scores(batch)
    expected = torch.ones(6) + overlong_penalty(batch.lengths, 10, 4)
    torch.testing.assert_close(shaped, expected)
    assert shaped[3].item() == pytest.approx(1.0 + (6 - 9) / 4)
    # group 100: no penalty, still constant -> dropped; group 101: equal penalties -> dropped
    assert not algo.select_groups(batch).any()
    # one member of group 100 in the buffer: its shaped scores differ, its outcomes do not. DAPO's
    # eq. 11 constrains the outcome (accuracy), so the group is still dropped
    batch.lengths = torch.tensor([3, 4, 8, 9, 9, 9])
    assert algo.shaped_scores(batch)[:3].unique().numel() == 2
    assert not algo.select_groups(batch).any()
    # an outcome that differs keeps the group, whatever the lengths
    batch.scores = torch.tensor([1.0, 0.0, 1.0, 1.0, 1.0, 1.0])
    assert torch.equal(algo.select_groups(batch), torch.tensor([True, True, True, False, False, False]))
    # DAPO has no KL term and no reference policy; the clip range is asymmetric
    assert algo.reference is None and algo.cfg.kl_coef == 0.0
    assert algo.clip_range() == (0.2, 0.28)


@pytest.mark.parametrize("suite_name", ["mujoco", "atari"])
def test_dapo_has_no_length_penalty_on_control_suites(suite_name):
    """DAPO's overlong shaping is a penalty on a generated response's length (eq. 13); a control
    episode's length is not one. On the control suites an episode at its time limit scores its return."""
    import suites
    suite = suites.get(suite_name)
    cls = algos.get("dapo")
    agent = make_agent(0)
    batch, _ = group_batch(agent, num_groups=2, group_size=3, seed=8, length_limit=1000)
    batch.lengths = torch.tensor([10, 850, 1000, 990, 999, 1000])   # inside L_cache (200) and at the limit
    algo = cls(agent, cls.Config(**{**suite.defaults_for(cls), "group_size": 3, "num_groups": 2, "num_minibatches": 2}),
               total_updates=1, seed=0)
    torch.testing.assert_close(algo.shaped_scores(batch), batch.scores)


@pytest.mark.parametrize("suite_name,has_sft_model", [("mujoco", False), ("atari", False), ("llm_toy", True)])
@pytest.mark.parametrize("name", ["grpo", "rloo"])
def test_group_algorithms_pay_a_kl_only_toward_an_sft_model(suite_name, has_sft_model, name):
    """The KL penalty of GRPO (DeepSeekMath) and RLOO (TRL) is toward the SFT model. A control suite
    has none: its reference would be a frozen copy of the untrained network, so there is no KL term
    and no reference policy there; on the LLM suite both stay."""
    import suites
    cls = algos.get(name)
    cfg = cls.Config(**suites.get(suite_name).defaults_for(cls))
    assert cls.needs(cfg).reference == has_sft_model
    assert (cfg.kl_coef > 0) == has_sft_model


# --------------------------------------------------------------------------------------
# the objectives' values against the formulas (computed before any step is taken)


def test_reinforce_policy_loss_matches_formula():
    agent = make_agent(2)
    batch, _ = horizon_batch(agent, T=16, N=3, seed=9)
    batch.dones = (torch.rand(16, 3, generator=torch.Generator().manual_seed(0)) < 0.3).float()
    batch.dones[-1] = 0.0  # columns cut by the horizon: bootstrapped from last_value
    batch.last_value = torch.tensor([15.0, -20.0, 7.0])
    gamma = 0.9
    metrics = make_algo("reinforce", agent, gamma=gamma).update(batch)
    # reference: return-to-go by a loop (bootstrapped with V(s_T) at the cut), minus V, whitened
    adv = []
    for n in range(3):
        g = batch.last_value[n].item()
        column = []
        for t in reversed(range(16)):
            g = batch.rewards[t, n].item() + gamma * (1 - batch.dones[t, n].item()) * g
            column.append(g - batch.values[t, n].item())
        adv.append(column[::-1])
    adv = torch.tensor(adv).T
    adv = (adv - adv.mean()) / adv.std()
    expected = (-batch.logp_old * adv).mean().item()
    assert metrics["policy_loss"] == pytest.approx(expected, rel=1e-4, abs=1e-6)


def test_rloo_kl_in_reward_and_loss_match_formula():
    agent = make_agent(4)
    reference = copy.deepcopy(agent)
    kl_coef = 0.5
    algo = make_algo("rloo", agent, group_size=4, num_groups=3, kl_coef=kl_coef)
    with torch.no_grad():  # the policy has drifted from the reference since the start
        agent.policy_net[-1].bias.add_(0.3)
        agent.log_std.add_(-0.2)
    batch, _ = group_batch(agent, seed=10)
    with torch.no_grad():
        logp_ref = reference.dist(batch.obs).log_prob(batch.actions)
    M = batch.num_columns
    kl_seq = [sum((batch.logp_old[t, i] - logp_ref[t, i]).item() for t in range(int(batch.lengths[i])))
              for i in range(M)]
    rewards = [batch.scores[i].item() - kl_coef * kl_seq[i] for i in range(M)]
    groups = batch.groups.tolist()
    adv = []
    for i in range(M):
        others = [rewards[j] for j in range(M) if groups[j] == groups[i] and j != i]
        adv.append(rewards[i] - sum(others) / len(others))
    # REINFORCE on whole sequences: mean over sequences of -A_i * sum_t log pi(a_t|s_t)
    loss = sum(-adv[i] * sum(batch.logp_old[t, i].item() for t in range(int(batch.lengths[i])))
               for i in range(M)) / M
    metrics = algo.update(batch)
    assert sum(kl_seq) / M > 0.01  # the KL term is really exercised
    assert metrics["kl_ref"] == pytest.approx(sum(kl_seq) / M, rel=1e-4)
    assert metrics["reward_with_kl"] == pytest.approx(sum(rewards) / M, rel=1e-4, abs=1e-5)
    assert metrics["policy_loss"] == pytest.approx(loss, rel=1e-4, abs=1e-5)


@pytest.mark.parametrize("name", ["ppo_clip", "ppo_kl"])
def test_ppo_alone_is_a_stack_of_one_for_any_agent(name):
    """The lone update runs through ``update_runs`` on a stack of one (``OneRunAgent``): here
    with a categorical policy (PPO-KL's closed-form KL through ``OneRunDist``), whole-column
    minibatches (a batch whose steps do not split, as a sequence model's) and ``last_epoch``
    diagnostics. The first ratio is exactly 1, the numbers finite, the agent's own weights move."""
    torch.manual_seed(0)
    agent = MLPAgent(OBS_SPACE, gym.spaces.Discrete(3), MujocoConfig())
    g = torch.Generator().manual_seed(1)
    T, N = 16, 4
    obs = torch.randn(T, N, 4, generator=g)
    actions = torch.randint(0, 3, (T, N), generator=g)
    with torch.no_grad():
        logp_old, values = agent.dist(obs).log_prob(actions), agent.value(obs)
    batch = Batch(obs=obs, actions=actions, rewards=torch.randn(T, N, generator=g), dones=torch.zeros(T, N),
                  mask=torch.ones(T, N), logp_old=logp_old, values=values, last_value=torch.zeros(N),
                  splittable_steps=False)
    for diagnostics in ("after_update", "last_epoch"):
        trained = copy.deepcopy(agent)
        metrics = make_algo(name, trained, num_steps=T, minibatch_size=16, num_epochs=2,
                            diagnostics=diagnostics).update(batch)
        assert metrics["first_ratio_error"] == 0.0
        assert all(isinstance(v, float) and np.isfinite(v) for v in metrics.values()), metrics
        assert {"kl", "entropy", "explained_variance", "policy_loss", "value_loss"} <= set(metrics)
        if name == "ppo_kl":
            assert metrics["kl_penalty"] >= 0 and "beta" in metrics
        assert any(not torch.equal(b, p) for b, p in zip(agent.parameters(), trained.parameters()))
