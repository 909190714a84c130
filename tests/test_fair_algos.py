"""Fair by construction: what an algorithm asks of the harness follows its resolved config
(no untrained critic touches a return, no reference policy is kept for a KL that is off),
REINFORCE's three baselines are three different estimators, and the clip fractions per side
are what their formulas say. Numbers are checked against direct loops."""
import copy
import dataclasses
import math

import gymnasium as gym
import numpy as np
import pytest
import torch

import algos
from algos.reinforce import Reinforce, ReinforceConfig
from core.batch import Batch
from core.envs import ListVecEnv
from core.rollout import HorizonCollector
from suites.mujoco import MLPAgent, MujocoConfig
from test_algorithms import group_batch as ragged_group_batch, sample_actions

OBS_SPACE = gym.spaces.Box(-np.inf, np.inf, (4,), np.float64)
ACT_SPACE = gym.spaces.Box(-3.0, 3.0, (1,), np.float32)


def make_agent(seed=0, **agent_cfg):
    torch.manual_seed(seed)
    return MLPAgent(OBS_SPACE, ACT_SPACE, MujocoConfig(**agent_cfg))


def make_algo(name, agent, **overrides):
    cls = algos.get(name)
    return cls(agent, cls.Config(**overrides), total_updates=10, seed=0)


def horizon_batch_without_critic(agent, T=16, N=3, seed=0):
    """What a collector without a critic hands over: no values, last_value 0; random rewards
    with a mean far from 0 (so that a mean baseline is not a no-op) and random episode ends."""
    g = torch.Generator().manual_seed(seed)
    obs = torch.randn(T, N, 4, generator=g)
    actions = sample_actions(agent, obs, seed)
    with torch.no_grad():
        logp_old = agent.dist(obs).log_prob(actions)
    return Batch(obs=obs, actions=actions, rewards=torch.randn(T, N, generator=g) + 2.0,
                 dones=(torch.rand(T, N, generator=g) < 0.2).float(), mask=torch.ones(T, N),
                 logp_old=logp_old, values=None, last_value=torch.zeros(N))


def group_batch(agent, seed=0):
    """Ragged columns (test_algorithms' batch) with random scores instead of its action-based ones."""
    batch, _ = ragged_group_batch(agent, seed=seed)
    return dataclasses.replace(batch, scores=torch.randn(batch.scores.shape, generator=torch.Generator().manual_seed(seed)))


def naive_group_relative(scores, groups, eps=1e-6):
    out = []
    for i, s in enumerate(scores):
        members = [scores[j] for j in range(len(scores)) if groups[j] == groups[i]]
        mean = sum(members) / len(members)
        std = math.sqrt(sum((x - mean) ** 2 for x in members) / (len(members) - 1))
        out.append((s - mean) / (std + eps))
    return out


# --------------------------------------------------------------------------------------
# REINFORCE's baselines: none is no baseline, mean subtracts the batch mean


def naive_reinforce_advantages(batch, gamma, baseline, adv_norm):
    """Return-to-go by a loop (no critic: nothing bootstrapped at the horizon cut), minus the
    baseline; whitening divides by the std, and centres only where there is a baseline."""
    T, N = batch.rewards.shape
    returns = [[0.0] * N for _ in range(T)]
    for n in range(N):
        g = 0.0
        for t in reversed(range(T)):
            g = batch.rewards[t, n].item() + gamma * (1.0 - batch.dones[t, n].item()) * g
            returns[t][n] = g
    flat = [returns[t][n] for t in range(T) for n in range(N)]
    mean = sum(flat) / len(flat)
    adv = [[returns[t][n] - (mean if baseline == "mean" else 0.0) for n in range(N)] for t in range(T)]
    if adv_norm:
        std = math.sqrt(sum((x - mean) ** 2 for x in flat) / (len(flat) - 1))   # std(G) = std(G - mean)
        centre = sum(a for row in adv for a in row) / len(flat) if baseline == "mean" else 0.0
        adv = [[(a - centre) / std for a in row] for row in adv]
    return adv


@pytest.mark.parametrize("adv_norm", [True, False])
@pytest.mark.parametrize("baseline", ["none", "mean"])
def test_reinforce_gradient_matches_a_direct_loop(baseline, adv_norm):
    agent = make_agent(2)
    reference = copy.deepcopy(agent)
    batch = horizon_batch_without_critic(agent, seed=3)
    gamma = 0.9
    algo = make_algo("reinforce", agent, baseline=baseline, adv_norm=adv_norm, gamma=gamma)
    metrics = algo.update(batch)
    got = [p.grad.clone() for p in agent.policy_parameters()]   # the gradient of the step just taken

    adv = naive_reinforce_advantages(batch, gamma, baseline, adv_norm)
    T, N = batch.rewards.shape
    loss = 0.0
    for t in range(T):
        for n in range(N):
            logp = reference.dist(batch.obs[t, n].unsqueeze(0)).log_prob(batch.actions[t, n].unsqueeze(0))[0]
            loss = loss - adv[t][n] * logp / (T * N)
    expected = torch.autograd.grad(loss, reference.policy_parameters())
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e, rtol=1e-4, atol=1e-6)
    assert metrics["policy_loss"] == pytest.approx(loss.item(), rel=1e-4, abs=1e-6)


def test_reinforce_none_and_mean_baselines_are_different_updates():
    # advantage whitening used to centre the advantages, which made none the mean baseline
    params = {}
    for baseline in ("none", "mean"):
        agent = make_agent(2)
        batch = horizon_batch_without_critic(agent, seed=3)
        algo = make_algo("reinforce", agent, baseline=baseline, adv_norm=True)
        for _ in range(3):
            algo.update(batch)
        params[baseline] = torch.cat([p.detach().flatten() for p in agent.policy_parameters()])
    assert (params["none"] - params["mean"]).abs().max() > 1e-3


class CountingEnv(gym.Env):
    """Observation [k, 1, 0, 0] at the k-th step of an episode, reward 1 every step; never ends
    by itself (a TimeLimit truncates it)."""

    observation_space = OBS_SPACE
    action_space = ACT_SPACE

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.k = 0
        return np.array([0.0, 1.0, 0.0, 0.0]), {}

    def step(self, action):
        self.k += 1
        return np.array([float(self.k), 1.0, 0.0, 0.0]), 1.0, False, False, {}


@pytest.mark.parametrize("baseline", ["none", "mean", "value"])
def test_reinforce_collects_with_a_critic_only_for_the_value_baseline(baseline):
    needs = Reinforce.needs(ReinforceConfig(baseline=baseline))
    assert needs.critic == (baseline == "value") and not needs.reference
    gamma, limit, T = 0.9, 5, 12
    envs = [gym.wrappers.TimeLimit(CountingEnv(), max_episode_steps=limit) for _ in range(2)]
    agent = make_agent(0, obs_norm=False)
    collector = HorizonCollector(ListVecEnv(envs), num_steps=T, gamma=gamma, seed=0, with_values=needs.critic)
    batch, _ = collector.collect(agent)
    truncated_steps = [t for t in range(T) if (t + 1) % limit == 0]
    assert batch.dones[truncated_steps].eq(1.0).all()
    if baseline == "value":   # V(s_final) of the critic that is trained on these returns
        with torch.no_grad():
            v_final = agent.value(torch.tensor([[float(limit), 1.0, 0.0, 0.0]])).item()
        assert abs(v_final) > 1e-3
        assert batch.rewards[truncated_steps] == pytest.approx(1.0 + gamma * v_final, rel=1e-5)
    else:                     # no critic: the truncation step's reward is the environment's
        assert batch.values is None and torch.equal(batch.rewards, torch.ones(T, 2))
        algo = make_algo("reinforce", agent, baseline=baseline, gamma=gamma, num_steps=T, num_envs=2)
        value_before = [p.detach().clone() for p in agent.value_parameters()]
        metrics = algo.update(batch)
        assert "vf_optimizer" not in algo.optimizers() and "value_loss" not in metrics
        assert "explained_variance" not in metrics and np.isfinite(metrics["policy_loss"])
        assert all(torch.equal(a, b) for a, b in zip(value_before, agent.value_parameters()))


# --------------------------------------------------------------------------------------
# every algorithm: Needs follow the resolved config, and a critic is trained iff it is needed


@pytest.mark.parametrize("name,options,critic,reference", [
    ("reinforce", {"baseline": "none"}, False, False),
    ("reinforce", {"baseline": "mean"}, False, False),
    ("reinforce", {"baseline": "value"}, True, False),
    ("trpo", {}, True, False),
    ("ppo_clip", {}, True, False),
    ("ppo_kl", {}, True, False),
    ("grpo", {}, False, True),
    ("grpo", {"kl_coef": 0.0}, False, False),
    ("dapo", {}, False, False),
    ("dapo", {"kl_coef": 0.01}, False, True),
    ("rloo", {}, False, True),
    ("rloo", {"kl_coef": 0.0}, False, False),
])
def test_needs_follow_the_resolved_config(name, options, critic, reference):
    cls = algos.get(name)
    cfg = cls.Config(**options)
    needs = cls.needs(cfg)
    assert (needs.rollout, needs.critic, needs.reference) == (cls.rollout, critic, reference)
    agent = make_agent(0)
    algo = cls(agent, cfg, total_updates=10, seed=0)
    assert algo.resolved_needs == needs
    assert (algo.reference is not None) == reference
    value_params = {id(p) for p in agent.value_parameters()}
    optimised = {id(p) for opt in algo.optimizers().values() for group in opt.param_groups for p in group["params"]}
    assert bool(value_params & optimised) == critic     # a critic is trained iff the collector computes V(s)


@pytest.mark.parametrize("name", ["grpo", "rloo"])
def test_negative_kl_coef_is_a_config_error(name):
    from core.errors import ConfigError
    with pytest.raises(ConfigError, match="kl_coef"):
        algos.get(name).Config(kl_coef=-0.1)


def test_dapo_with_kl_coef_keeps_pi_ref_and_its_loss_includes_the_kl_term():
    agent = make_agent(4)
    reference = copy.deepcopy(agent)
    beta = 0.01
    algo = make_algo("dapo", agent, kl_coef=beta, group_size=4, num_groups=3, num_epochs=1, num_minibatches=1)
    assert algo.reference is not None
    with torch.no_grad():  # the policy has drifted from pi_ref since the start
        agent.policy_net[-1].bias.add_(0.3)
        agent.log_std.add_(-0.2)
    batch = group_batch(agent, seed=5)
    with torch.no_grad():
        logp_ref = reference.dist(batch.obs).log_prob(batch.actions)
    adv = naive_group_relative(batch.scores.tolist(), batch.groups.tolist())
    # one minibatch at ratio 1: per token -A_i + beta * k3, token-mean over valid tokens (DAPO)
    tokens, kl_sum, loss_sum = 0, 0.0, 0.0
    for i in range(batch.num_columns):
        for t in range(int(batch.lengths[i])):
            log_r = logp_ref[t, i].item() - batch.logp_old[t, i].item()
            k3 = math.exp(log_r) - 1 - log_r
            tokens, kl_sum, loss_sum = tokens + 1, kl_sum + k3, loss_sum - adv[i] + beta * k3
    metrics = algo.update(batch)
    assert kl_sum / tokens > 0.01   # the KL term is really exercised
    assert metrics["kl_ref"] == pytest.approx(kl_sum / tokens, rel=1e-4)
    assert metrics["policy_loss"] == pytest.approx(loss_sum / tokens, rel=1e-4, abs=1e-6)


def test_rloo_without_kl_keeps_no_reference_and_uses_the_raw_scores():
    agent = make_agent(4)
    algo = make_algo("rloo", agent, kl_coef=0.0, group_size=4, num_groups=3)
    assert algo.reference is None
    batch = group_batch(agent, seed=6)
    scores, groups = batch.scores.tolist(), batch.groups.tolist()
    M = len(scores)
    adv = []
    for i in range(M):
        others = [scores[j] for j in range(M) if groups[j] == groups[i] and j != i]
        adv.append(scores[i] - sum(others) / len(others))
    loss = sum(-adv[i] * sum(batch.logp_old[t, i].item() for t in range(int(batch.lengths[i]))) for i in range(M)) / M
    metrics = algo.update(batch)
    assert "kl_ref" not in metrics
    assert metrics["reward_with_kl"] == pytest.approx(sum(scores) / M, rel=1e-5, abs=1e-6)
    assert metrics["policy_loss"] == pytest.approx(loss, rel=1e-4, abs=1e-5)


# --------------------------------------------------------------------------------------
# clip fractions per side, as logged by the shared epochs


def naive_clip_fractions(logp, logp_old, adv, valid, eps_low, eps_high):
    n = outside = low = high = 0
    for lp, lo, a, v in zip(logp.flatten().tolist(), logp_old.flatten().tolist(), adv.flatten().tolist(),
                            valid.flatten().tolist()):
        if not v:
            continue
        r = math.exp(lp - lo)
        n += 1
        outside += r < 1 - eps_low or r > 1 + eps_high
        low += r < 1 - eps_low and a < 0
        high += r > 1 + eps_high and a > 0
    return outside / n, low / n, high / n


@pytest.mark.parametrize("name", ["grpo", "dapo"])
def test_group_algorithms_log_clip_fractions_per_side(name):
    agent = make_agent(7)
    batch = group_batch(agent, seed=8)
    # a stale logp_old: the first (and only) minibatch sees ratios on both sides of the clip
    noise = torch.randn(batch.mask.shape, generator=torch.Generator().manual_seed(9)) * 0.4
    batch.logp_old = (batch.logp_old + noise) * batch.mask
    algo = make_algo(name, agent, group_size=4, num_groups=3, num_epochs=1, num_minibatches=1)
    eps_low, eps_high = algo.clip_range()
    with torch.no_grad():
        logp = agent.dist(batch.obs).log_prob(batch.actions)
    adv = torch.tensor(naive_group_relative(batch.scores.tolist(), batch.groups.tolist())).expand_as(logp)
    expected = naive_clip_fractions(logp, batch.logp_old, adv, batch.mask > 0, eps_low, eps_high)
    metrics = algo.update(batch)
    got = (metrics["clip_fraction"], metrics["clip_fraction_low"], metrics["clip_fraction_high"])
    assert got == pytest.approx(expected, abs=1e-6)
    assert expected[1] > 0.05 and expected[2] > 0.05


def test_ppo_clip_logs_clip_fractions_per_side():
    from algos.advantages import gae, normalize
    agent = make_agent(7)
    g = torch.Generator().manual_seed(10)
    T, N = 64, 2
    obs = torch.randn(T, N, 4, generator=g)
    actions = sample_actions(agent, obs, 10)
    with torch.no_grad():
        logp, values = agent.dist(obs).log_prob(actions), agent.value(obs)
    batch = Batch(obs=obs, actions=actions, rewards=torch.randn(T, N, generator=g),
                  dones=(torch.rand(T, N, generator=g) < 0.1).float(), mask=torch.ones(T, N),
                  logp_old=logp + torch.randn(T, N, generator=g) * 0.4, values=values, last_value=torch.zeros(N))
    adv, _ = gae(batch.rewards, batch.values, batch.dones, batch.last_value, 0.99, 0.95)
    adv = normalize(adv, batch.mask)
    expected = naive_clip_fractions(logp, batch.logp_old, adv, batch.mask > 0, 0.2, 0.2)
    # one epoch of one minibatch: every step seen once, before the step
    metrics = make_algo("ppo_clip", agent, num_epochs=1, minibatch_size=10_000).update(batch)
    got = (metrics["clip_fraction"], metrics["clip_fraction_low"], metrics["clip_fraction_high"])
    assert got == pytest.approx(expected, abs=1e-6)
    assert expected[1] > 0.05 and expected[2] > 0.05


# --------------------------------------------------------------------------------------
# every option of every algorithm is validated when its config is built

from algos.base import clipped_epochs  # noqa: E402
from core.errors import ConfigError  # noqa: E402

NAN, INF = float("nan"), float("inf")
# Values no run can use, per option name (NaN and infinities everywhere a number is read).
BAD_NUMBERS = {
    "num_envs": [0, -1], "num_steps": [0], "num_groups": [0], "group_size": [1, 0],
    "gamma": [0.0, 1.5, -0.5, NAN], "lam": [-0.1, 1.1, NAN],
    "lr": [0.0, -1e-3, NAN],                    # lr=inf stays valid: the fault tests' diverging run
    "vf_lr": [0.0, NAN], "vf_epochs": [0], "vf_minibatch_size": [0],
    "max_grad_norm": [-0.5, 0.0, NAN, INF],     # negative: clip_grad_norm_ would reverse the gradient
    "max_kl": [0.0, NAN], "cg_iters": [0], "cg_damping": [-0.1, NAN], "line_search_steps": [0],
    "line_search_shrink": [0.0, 1.0, NAN], "max_kl_tolerance": [0.5, NAN], "fvp_fraction": [0.0, 1.5, NAN],
    "num_epochs": [0], "minibatch_size": [0], "num_minibatches": [0, "too_many"],
    "clip_eps": [0.0, -0.2, NAN], "vf_coef": [-1.0, NAN, INF], "ent_coef": [-0.01, NAN, INF],
    "kl_coef": [-0.1, NAN, INF], "kl_target": [0.0, -0.01, NAN],
    "clip_eps_low": [0.0, 1.0, NAN], "clip_eps_high": [0.0, NAN], "max_sample_batches": [0],
    "overlong_buffer": [0, -4], "overlong_coef": [-1.0, NAN],
}


def _bad_options():
    for name in algos.builtin_names():
        cfg = algos.get(name).Config()
        for f in dataclasses.fields(cfg):
            default = getattr(cfg, f.name)
            if isinstance(default, bool):
                continue                     # parsed as a boolean: nothing to validate
            if isinstance(default, str):     # a choice
                yield pytest.param(name, f.name, "bogus", id=f"{name}-{f.name}-bogus")
                continue
            for value in BAD_NUMBERS[f.name]:   # KeyError: a new numeric option needs bad values here
                if value == "too_many":
                    value = cfg.num_groups * cfg.group_size + 1
                yield pytest.param(name, f.name, value, id=f"{name}-{f.name}-{value}")


@pytest.mark.parametrize("name,option,value", list(_bad_options()))
def test_every_bad_option_value_is_a_config_error_naming_the_option(name, option, value):
    with pytest.raises(ConfigError, match=rf"^{option}=.*valid: "):
        algos.get(name).Config(**{option: value})


def test_every_builtin_default_and_grid_row_builds():
    """The checks only reject bad input: each algorithm's own defaults, each suite's defaults for
    it, each suite preset's algorithm options and each grid row still build."""
    import suites
    for name in algos.builtin_names():
        algos.get(name).Config()
    for suite_name in suites.names():
        suite = suites.get(suite_name)
        for name in algos.builtin_names():
            cls = algos.get(name)
            base = suite.defaults_for(cls)
            cls.Config(**base)
            for preset in suite.presets.values():
                options = {k.removeprefix("algo."): v for k, v in preset.items() if k.startswith("algo.")}
                if options and set(options) <= set(base) | {f.name for f in dataclasses.fields(cls.Config)}:
                    cls.Config(**{**base, **options})
        for grid in suite.grids.values():
            for name, options in grid:
                cls = algos.get(name)
                cls.Config(**{**suite.defaults_for(cls), **options})


@pytest.mark.parametrize("name", ["grpo", "dapo", "rloo"])
def test_more_minibatches_than_columns_is_refused(name):
    # algo=grpo algo.num_minibatches=32 with 2 groups x 8: empty minibatches, NaN in every run
    with pytest.raises(ConfigError, match=r"num_minibatches=32 .*num_groups x group_size = 2 x 8"):
        algos.get(name).Config(group_size=8, num_groups=2, num_minibatches=32)
    algos.get(name).Config(group_size=8, num_groups=2, num_minibatches=16)   # one column each: fine


def test_a_dapo_batch_with_fewer_columns_than_minibatches_stays_finite():
    # dynamic sampling can keep fewer groups than num_groups: the minibatches are capped at the
    # columns there are, none is empty
    agent = make_agent(3)
    algo = make_algo("dapo", agent, group_size=4, num_groups=3, num_epochs=2, num_minibatches=12)
    batch = group_batch(agent, seed=2).select_columns(torch.arange(4))   # one group kept
    metrics = algo.update(batch)
    assert all(math.isfinite(v) for v in metrics.values()), metrics
    assert all(torch.isfinite(p).all() for p in agent.parameters())


def test_a_negative_max_grad_norm_cannot_reverse_the_gradient():
    for name in ("reinforce", "ppo_clip", "ppo_kl", "grpo", "rloo", "dapo"):
        with pytest.raises(ConfigError, match=r"max_grad_norm=-1.0 is not valid; valid: None or > 0"):
            algos.get(name).Config(max_grad_norm=-1.0)
        algos.get(name).Config(max_grad_norm=None)


def test_ppo_kl_rejects_a_negative_beta_and_a_zero_target():
    from algos.ppo_kl import PPOKLConfig
    with pytest.raises(ConfigError, match=r"kl_coef=-1.0 is not valid; valid: >= 0"):
        PPOKLConfig(kl_coef=-1.0)
    with pytest.raises(ConfigError, match=r"kl_target=0.0 is not valid; valid: > 0"):
        PPOKLConfig(kl_target=0.0)
    PPOKLConfig(kl_coef=0.0, adaptive=False)   # Table 1's "no clipping or penalty" row


# --------------------------------------------------------------------------------------
# needs() derives from the base class's, so a subclass's class attributes still count


@pytest.mark.parametrize("name,options", [
    ("reinforce", {"baseline": "mean"}), ("grpo", {}), ("grpo", {"kl_coef": 0.0}), ("rloo", {}), ("dapo", {}),
])
def test_needs_of_a_subclass_keep_its_class_attributes(name, options):
    parent = algos.get(name)
    cfg = parent.Config(**options)
    child = type("Child", (parent,), {"uses_critic": True, "uses_reference": True})   # not registered
    needs, own = child.needs(cfg), parent.needs(cfg)
    if name == "reinforce":   # critic follows the baseline, the rest the class
        assert (needs.rollout, needs.critic, needs.reference) == (parent.rollout, own.critic, True)
    else:                     # reference follows kl_coef, the rest the class
        assert (needs.rollout, needs.critic, needs.reference) == (parent.rollout, True, own.reference)


# --------------------------------------------------------------------------------------
# names


def test_shared_update_takes_by_and_value_clip_eps_and_algorithms_keep_resolved_needs():
    import inspect
    params = inspect.signature(clipped_epochs).parameters
    assert "by" in params and "value_clip_eps" in params            # as Batch.minibatches(by=)
    assert "split" not in params and "value_clip" not in params     # value_clip is PPOClipConfig's bool
    algo = make_algo("ppo_clip", make_agent(0))
    assert algo.resolved_needs == algos.get("ppo_clip").needs(algo.cfg)


# --------------------------------------------------------------------------------------
# the registry: a variant neither inherits a name nor replaces another algorithm


@pytest.fixture
def registry():
    algos.names()   # load the built-ins and the variant files first
    saved = dict(algos._REGISTRY)
    yield algos._REGISTRY
    algos._REGISTRY.clear()
    algos._REGISTRY.update(saved)


def test_register_refuses_a_class_without_its_own_name(registry):
    from algos.ppo_clip import PPOClip
    before = dict(registry)
    Forgetful = type("Forgetful", (PPOClip,), {"__module__": __name__})
    with pytest.raises(ConfigError, match=r"Forgetful does not set its own name \(it would inherit 'ppo_clip'\)"):
        algos.register(Forgetful)
    assert registry == before and algos.get("ppo_clip") is PPOClip


def test_register_refuses_a_taken_name_and_accepts_a_new_one(registry):
    from algos.ppo_clip import PPOClip
    Clash = type("Clash", (PPOClip,), {"name": "ppo_clip", "__module__": __name__})
    with pytest.raises(ConfigError, match=r"algorithm name 'ppo_clip' of .*Clash is taken by algos\.ppo_clip\.PPOClip"):
        algos.register(Clash)
    assert algos.get("ppo_clip") is PPOClip
    Fresh = type("Fresh", (PPOClip,), {"name": "ppo_clip_fresh_test", "__module__": __name__})
    assert algos.register(Fresh) is Fresh and algos.register(Fresh) is Fresh   # again: a no-op
    assert algos.get("ppo_clip_fresh_test") is Fresh
    Other = type("Other", (PPOClip,), {"name": "ppo_clip_fresh_test", "__module__": __name__})
    with pytest.raises(ConfigError, match="is taken by"):
        algos.register(Other)


# --------------------------------------------------------------------------------------
# the LLM collector runs the value model only for an algorithm with a critic


def test_llm_collector_computes_values_only_for_a_critic(tmp_path, monkeypatch):
    pytest.importorskip("transformers")
    from suites.llm_toy import LLMToyConfig, LLMToySuite
    monkeypatch.setenv("PG_ARENA_CACHE", str(tmp_path))
    suite, cfg = LLMToySuite(), LLMToyConfig(sft_steps=0)   # an untrained tiny model: cheap
    env = suite.make_env("sort", cfg)
    for name, options, critic in [("reinforce", {"baseline": "mean"}, False),
                                  ("reinforce", {"baseline": "none"}, False),
                                  ("reinforce", {"baseline": "value"}, True),
                                  ("ppo_clip", {}, True), ("grpo", {}, False)]:
        cls = algos.get(name)
        small = {"num_groups": 2, "group_size": 2, "num_minibatches": 1} if cls.rollout == "groups" else {"num_envs": 4}
        algo_cfg = cls.Config(**{**suite.defaults_for(cls), **small, **options})
        needs = cls.needs(algo_cfg)
        assert needs.critic == critic
        agent = suite.make_agent(env, cfg)
        calls = []
        value = agent.value
        monkeypatch.setattr(agent, "value", lambda obs, _v=value: calls.append(1) or _v(obs))
        collector, _ = suite.make_collector("sort", cfg, needs, algo_cfg, seed=0)
        batch, _ = collector.collect(agent)
        if critic:
            assert calls and batch.values is not None and batch.values.shape == batch.mask.shape
            assert torch.equal(batch.values, batch.values * batch.mask)
        else:
            assert not calls and batch.values is None, name
        if cls.rollout == "horizon":   # the suite's KL-shaped reward is there either way
            assert "kl_ref" in collector.metrics()
        metrics = cls(agent, algo_cfg, total_updates=2, seed=0).update(batch)
        assert all(math.isfinite(v) for k, v in metrics.items() if k != "explained_variance"), (name, metrics)
