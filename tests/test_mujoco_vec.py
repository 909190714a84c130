"""suites/mujoco_vec.py: the native engine against a ListVecEnv of gymnasium -v5 environments,
step by step, bit for bit (np.array_equal, exact floats), on the same seeds and actions."""
import copy
import pickle

import gymnasium as gym
import numpy as np
import pytest

from core.envs import ListVecEnv
from core.results import learning_rows
from suites.mujoco_vec import SUPPORTED_ENVS, MujocoVecEnv, _has_batch

BACKENDS = ["loop"] + (["batch"] if _has_batch() else [])


def gym_vec(env_id, n, limit=None):
    kwargs = {} if limit is None else {"max_episode_steps": limit}
    return ListVecEnv([gym.make(env_id, disable_env_checker=True, **kwargs) for _ in range(n)])


def actions_for(env_id, n, steps, seed, scale=1.0):
    space = gym.make(env_id, disable_env_checker=True).action_space
    rng = np.random.default_rng(seed)
    a = rng.uniform(space.low, space.high, (steps, n, space.shape[0])) * scale
    return a.astype(np.float32)   # as the collector passes them (agent.env_action: float32)


def assert_same_step(t, ref, got):
    assert np.array_equal(ref.obs, got.obs), f"step {t}: obs differ by {np.abs(ref.obs - got.obs).max()}"
    assert got.obs.dtype == ref.obs.dtype == np.float64
    assert np.array_equal(ref.rewards, got.rewards), f"step {t}: rewards {ref.rewards} vs {got.rewards}"
    assert np.array_equal(ref.terminated, got.terminated), f"step {t}: terminated"
    assert np.array_equal(ref.truncated, got.truncated), f"step {t}: truncated"
    assert ref.final_obs.keys() == got.final_obs.keys(), f"step {t}: final_obs keys"
    for i in ref.final_obs:
        assert np.array_equal(ref.final_obs[i], got.final_obs[i]), f"step {t}: final_obs[{i}]"
    assert ref.episodes == got.episodes, f"step {t}: episodes {ref.episodes} vs {got.episodes}"


def run_both(env_id, n, steps, limit, seed, backend, scale=1.0):
    ref, eng = gym_vec(env_id, n, limit), MujocoVecEnv(env_id, n, max_episode_steps=limit, backend=backend)
    assert np.array_equal(ref.reset(seed=seed), eng.reset(seed=seed))
    counts = {"terminated": 0, "truncated": 0}
    for t, a in enumerate(actions_for(env_id, n, steps, seed, scale)):
        r, g = ref.step(a), eng.step(a)
        assert_same_step(t, r, g)
        counts["terminated"] += int(r.terminated.sum())
        counts["truncated"] += int((r.truncated & ~r.terminated).sum())
    return counts


# Time limits short enough to see truncations in a few hundred steps (Reacher's own is 50).
LIMITS = {"Reacher-v5": None}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("env_id", SUPPORTED_ENVS)
def test_matches_gymnasium(env_id, backend):
    counts = run_both(env_id, n=3, steps=300, limit=LIMITS.get(env_id, 60), seed=7, backend=backend)
    if env_id in ("Hopper-v5", "Walker2d-v5", "InvertedPendulum-v5", "InvertedDoublePendulum-v5"):
        assert counts["terminated"] > 0   # truncations of these: test_long_episodes_truncate_and_terminate
    else:
        assert counts["truncated"] > 0


@pytest.mark.parametrize("env_id,limit", [("Hopper-v5", 40), ("Walker2d-v5", 25),
                                           ("InvertedPendulum-v5", 4), ("InvertedDoublePendulum-v5", 4)])
def test_terminating_envs_also_truncate(env_id, limit):
    # small actions and short limits: the walkers and pendulums reach the time limit too
    counts = run_both(env_id, n=3, steps=200, limit=limit, seed=3, backend=BACKENDS[-1], scale=0.05)
    assert counts["truncated"] > 0


def test_default_time_limit_1000():
    eng = MujocoVecEnv("Swimmer-v5", 2)
    assert eng.max_episode_steps == gym.spec("Swimmer-v5").max_episode_steps == 1000
    assert MujocoVecEnv("Reacher-v5", 1).max_episode_steps == 50
    counts = run_both("Swimmer-v5", n=1, steps=1003, limit=None, seed=11, backend=BACKENDS[-1])
    assert counts == {"terminated": 0, "truncated": 1}


@pytest.mark.skipif(not _has_batch(), reason="mujoco.batch needs MuJoCo >= 4")
def test_batch_threads_bit_identical():
    a = actions_for("Hopper-v5", 4, 80, 0)
    one, two = MujocoVecEnv("Hopper-v5", 4, nthread=1), MujocoVecEnv("Hopper-v5", 4, nthread=2)
    assert np.array_equal(one.reset(seed=5), two.reset(seed=5))
    for x in a:
        assert_same_step(0, one.step(x), two.step(x))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("env_id", ["Hopper-v5", "Reacher-v5", "InvertedDoublePendulum-v5"])
def test_state_dict_round_trip(env_id, backend):
    a = actions_for(env_id, 3, 200, 1)
    eng = MujocoVecEnv(env_id, 3, max_episode_steps=40, backend=backend)
    obs = eng.reset(seed=2)
    for x in a[:70]:
        obs = eng.step(x).obs
    state = pickle.loads(pickle.dumps(eng.state_dict()))
    expected = [eng.step(x) for x in a[70:]]
    other = MujocoVecEnv(env_id, 3, max_episode_steps=40, backend=backend)
    other.reset(seed=99)
    for x in a[:5]:
        other.step(x)
    restored, exact = other.load_state_dict(state, obs)
    assert exact and np.array_equal(restored, obs)
    for t, x in enumerate(a[70:]):
        assert_same_step(t, expected[t], other.step(x))


@pytest.mark.parametrize("env_id", ["Hopper-v5", "Reacher-v5"])
def test_loads_list_vec_env_checkpoint(env_id):
    # a run checkpointed under the gymnasium engine resumes exactly under the native one
    a = actions_for(env_id, 3, 150, 4)
    ref = gym_vec(env_id, 3, limit=40)
    obs = ref.reset(seed=8)
    for x in a[:50]:
        obs = ref.step(x).obs
    state = copy.deepcopy(ref.state_dict())
    eng = MujocoVecEnv(env_id, 3, max_episode_steps=40)
    eng.reset(seed=0)
    restored, exact = eng.load_state_dict(state, obs)
    assert exact and np.array_equal(restored, obs)
    for t, x in enumerate(a[50:]):
        assert_same_step(t, ref.step(x), eng.step(x))


def test_list_vec_env_reads_native_checkpoint_as_unrestorable():
    eng = MujocoVecEnv("Hopper-v5", 2)
    obs = eng.reset(seed=0)
    ref = gym_vec("Hopper-v5", 2)
    ref.reset(seed=1)
    restored, exact = ref.load_state_dict(eng.state_dict(), obs)
    assert not exact and restored.shape == obs.shape


def test_unfit_state_resets_reproducibly():
    eng = MujocoVecEnv("Hopper-v5", 2)
    obs0 = eng.reset(seed=0)
    bad = MujocoVecEnv("Walker2d-v5", 2)
    bad.reset(seed=0)
    obs, exact = eng.load_state_dict(bad.state_dict(), np.zeros((2, 17)))
    assert not exact and obs.shape == obs0.shape and (eng.episode_length == 0).all()
    again = MujocoVecEnv("Hopper-v5", 2)
    again.reset(seed=0)
    assert np.array_equal(again.load_state_dict(bad.state_dict(), np.zeros((2, 17)))[0], obs)


def test_rejects_other_envs_and_bad_actions():
    with pytest.raises(ValueError):
        MujocoVecEnv("Ant-v5", 2)
    eng = MujocoVecEnv("Hopper-v5", 2)
    eng.reset(seed=0)
    with pytest.raises(ValueError):
        eng.step(np.zeros((3, 3), dtype=np.float32))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("env_id", SUPPORTED_ENVS)
def test_group_collection_matches_gymnasium(env_id, backend):
    """GroupCollector (grpo, rloo, dapo) on G gymnasium environments and on one MujocoVecEnv of G
    gives the same batch and episodes, bit for bit: each group's shared reset, its episodes of
    different lengths (the ended ones no longer stepped), terminations and truncations."""
    import torch

    from core.envs import ListGroupEnv
    from core.rollout import GroupCollector
    from suites.mujoco import MLPAgent, MujocoConfig
    G, limit = 4, LIMITS.get(env_id, 40)
    kwargs = {} if limit is None else {"max_episode_steps": limit}
    gym_group = ListGroupEnv([gym.make(env_id, disable_env_checker=True, **kwargs) for _ in range(G)])
    native = MujocoVecEnv(env_id, G, max_episode_steps=limit, backend=backend)
    assert native.max_episode_steps == gym_group.max_episode_steps
    torch.manual_seed(0)
    agent = MLPAgent(gym_group.envs[0].observation_space, gym_group.envs[0].action_space, MujocoConfig())
    ref, got = (GroupCollector(e, num_groups=3, seed=11, length_limit=limit) for e in (gym_group, native))
    lengths, truncations = set(), 0
    for _ in range(2):
        (b_ref, e_ref), (b_got, e_got) = ref.collect(agent), got.collect(agent)
        assert e_ref == e_got
        for name in ("obs", "actions", "rewards", "dones", "mask", "logp_old", "groups", "scores", "lengths",
                     "truncated"):
            assert torch.equal(getattr(b_ref, name), getattr(b_got, name)), name
        lengths |= set(b_ref.lengths.tolist())
        truncations += int(b_ref.truncated.sum())
    assert ref.state_dict() == got.state_dict()
    assert len(lengths) > 1 or env_id in ("HalfCheetah-v5", "Swimmer-v5", "Reacher-v5")  # never terminate
    assert truncations > 0 or env_id in ("Hopper-v5", "Walker2d-v5", "InvertedPendulum-v5",
                                                 "InvertedDoublePendulum-v5")


def test_a_training_run_is_the_same_on_either_engine(tmp_path, monkeypatch):
    """The suite steps the paper's environments natively; a run gives the same numbers as with
    gymnasium's environments (monkeypatched back in), truncations and resets included. The runs
    train in this process (a sweep's worker processes would not see the patch)."""
    import suites.mujoco_vec as native
    from harness.config import parse_sweep, plan_batches, plan_runs, split_args
    from harness.train import train_batch

    def run(results_dir):
        common = ["suite=mujoco", "env=Hopper-v5", "seeds=1", "steps=1536", "eval_every=1536", "eval_episodes=1",
                  "threads=1", f"results_dir={results_dir}"]
        for algo in (["algo=ppo_clip,reinforce", "algo.num_steps=512", "algo.num_envs=2"],
                     ["algo=grpo", "algo.group_size=4"]):                         # group collection
            top, algo_options, suite_options = split_args([*common, *algo])
            for unit in plan_batches(plan_runs(parse_sweep(top), algo_options, suite_options), None, jobs=1):
                assert [r["status"] for r in train_batch(unit)] == ["done"] * len(unit)
        return {p.relative_to(results_dir).as_posix(): learning_rows(p)
                for p in sorted(results_dir.rglob("*.csv"))}

    with_native = run(tmp_path / "native")
    asked = []

    def gymnasium_instead(env_id, num_envs, **kw):
        asked.append(env_id)
        return None                      # the suite then builds gymnasium's environments

    monkeypatch.setattr(native, "make_mujoco_vec_env", gymnasium_instead)
    with_gymnasium = run(tmp_path / "gymnasium")
    assert asked                         # the patch was in force
    assert with_native == with_gymnasium and len(with_native) == 9


def _agent_with_spread(env_id, seed, activation="tanh"):
    """A random agent whose deterministic policy acts strongly and differs between episodes (its
    output layer scaled up, its observation statistics far from (0, 1)): episodes of different
    lengths, terminations, and actions past the bounds (clipped by ``env_action``)."""
    import torch

    from suites.mujoco import MLPAgent, MujocoConfig
    env = gym.make(env_id, disable_env_checker=True)
    torch.manual_seed(seed)
    agent = MLPAgent(env.observation_space, env.action_space, MujocoConfig(activation=activation))
    with torch.no_grad():
        agent.policy_net[-1].weight.mul_(100.0)
        agent.obs_norm.update(torch.randn(64, env.observation_space.shape[0]) * 3 + 1)
    return env, agent


@pytest.mark.parametrize("activation", ["tanh", "relu"])
def test_act_rowwise_is_act_row_by_row(activation):
    """``act_rowwise`` gives each row the bits of ``act`` on that row alone, on random inputs of 1 to
    40 rows; the plain product of many rows is another BLAS kernel and would not (checked here on
    the same inputs, so the test shows the difference it guards against where there is one)."""
    rng = np.random.default_rng(0)
    for env_id in ("HalfCheetah-v5", "Hopper-v5", "Reacher-v5"):
        _, agent = _agent_with_spread(env_id, 1, activation)
        for n in (1, 2, 7, 10, 40):
            obs = rng.standard_normal((n, agent.obs_norm.mean.shape[0])) * 4
            alone = np.concatenate([agent.act(obs[j:j + 1], rng, deterministic=True) for j in range(n)])
            got = agent.act_rowwise(obs)
            assert got.dtype == alone.dtype and np.array_equal(got, alone), (env_id, n)


@pytest.mark.parametrize("env_id", SUPPORTED_ENVS)
def test_evaluation_side_by_side_is_one_after_another(env_id):
    """The suite's evaluation (the episodes as rows of one MujocoVecEnv) returns, bit for bit, the
    returns of ``core.rollout.evaluate`` on a gymnasium environment, one episode after another,
    episode i seeded seed + i; episodes of different lengths included."""
    from core.rollout import evaluate
    from suites.mujoco import MujocoConfig, MujocoSuite
    env, agent = _agent_with_spread(env_id, 3)
    suite = MujocoSuite()
    ref = evaluate(agent, env, 4, seed=17)
    got = suite.evaluation_returns(agent, suite.make_env(env_id, MujocoConfig(), train=False), 4, seed=17)
    assert got == ref
    assert len(set(ref)) > 1    # the episodes differ (other seeds): the rows are not one episode repeated
    row = suite.evaluate(agent, env, 4, seed=17)
    assert row["eval_return_mean"] == float(np.mean(ref)) and row["eval_episodes"] == 4
