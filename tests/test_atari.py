"""The Atari-49 suite: the game list, the preprocessing under both backends (against raw ALE
frames), training versus scored episodes, group starts, the network, and a smoke run of every
algorithm."""
import csv
import dataclasses
import json

import cv2
import numpy as np
import pytest
import torch

import algos
import suites
from harness import cli
from core.errors import ConfigError
from suites.atari import (ATARI5_IN_49, GAMES, PAPER_GAMES, AtariAgent, AtariConfig, EnvpoolVecEnv, game_of,
                          make_gymnasium_env)
from suites.atari.agent import _frames_tensor, _sample

SUITE = suites.get("atari")
# A fixed start (exactly one no-op frame, no FIRE) makes both backends deterministic and comparable.
FIXED_START = dict(noop_max=1, fire_reset=False)


def gym_env(name, train, **options):
    cfg = AtariConfig(**options)
    return make_gymnasium_env(GAMES[name], cfg, episodic_life=cfg.episodic_life and train,
                              reward_clip=cfg.reward_clip and train, max_steps=cfg.max_episode_steps)


def read_rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


# -- the game list ------------------------------------------------------------------------

def test_the_49_games_of_the_paper():
    assert len(PAPER_GAMES) == 49 == len(set(PAPER_GAMES))
    assert "Pitfall" in GAMES and "Hero" not in GAMES          # the paper's set, not Mnih et al.'s
    assert SUITE.default_envs == PAPER_GAMES and SUITE.scales["paper"].envs == PAPER_GAMES
    assert SUITE.scales["paper"].steps == 10_000_000 and SUITE.scales["paper"].seeds == 3
    assert set(ATARI5_IN_49) <= set(PAPER_GAMES) and "Phoenix" not in GAMES
    for game in GAMES.values():
        assert game.human > game.random
        assert game.envpool_id == f"{game.name}-v5" and game.gymnasium_id == f"ALE/{game.name}-v5"
    assert GAMES["Pong"].human_normalized(GAMES["Pong"].human) == pytest.approx(1.0)


def test_games_by_name_or_envpool_id_and_unknown_ones_list_the_valid_names():
    assert game_of("Breakout").name == "Breakout"
    assert game_of("Breakout-v5").name == game_of("ALE/Breakout-v5").name == "Breakout"
    with pytest.raises(ConfigError) as err:
        SUITE.validate_env("Phoenix")
    assert "Phoenix" in str(err.value) and "Breakout" in str(err.value) and "Zaxxon" in str(err.value)


def test_every_game_makes_an_environment():
    """Each of the 49 makes an envpool environment whose actions are ale-py's minimal action set
    (the agent is sized by the gymnasium environment, trained on envpool)."""
    import ale_py
    import envpool
    ale_py.ALEInterface.setLoggerMode(ale_py.LoggerMode.Error)
    for name, game in GAMES.items():
        pool = envpool.make(game.envpool_id, env_type="gymnasium", num_envs=1, num_threads=1, seed=0)
        obs, _ = pool.reset()
        assert obs.shape == (1, 4, 84, 84) and obs.dtype == np.uint8, name
        ale = ale_py.ALEInterface()
        ale.loadROM(ale_py.roms.get_rom_path(game.ale_rom_id))
        assert pool.action_space.n == len(ale.getMinimalActionSet()) >= 3, name
        obs, *_ = pool.step(np.zeros(1, dtype=np.int32))
        assert obs.shape == (1, 4, 84, 84), name
        pool.close()


# -- preprocessing ------------------------------------------------------------------------

def test_observations_are_four_stacked_84x84_uint8_frames_under_both_backends():
    for train in (True, False):
        env = SUITE.make_env("Breakout", AtariConfig(), train=train)
        obs, _ = env.reset(seed=0)
        assert obs.shape == (4, 84, 84) and obs.dtype == np.uint8
        assert env.step(0)[0].shape == (4, 84, 84)
    for backend in ("envpool", "gymnasium"):
        vec = SUITE.make_vec_env("Breakout", AtariConfig(backend=backend), 2)
        obs = vec.reset(seed=0)
        assert obs.shape == (2, 4, 84, 84) and obs.dtype == np.uint8, backend
        step = vec.step(np.zeros(2, dtype=np.int64))
        assert step.obs.shape == (2, 4, 84, 84) and step.obs.dtype == np.uint8, backend
        vec.close()


def test_frame_skip_max_pool_and_stack_against_raw_ale_frames():
    """One agent step is 4 ALE frames; the newest stacked frame is the max of the last two,
    resized to 84x84 (INTER_AREA); the stack shifts by one each step."""
    import ale_py
    import gymnasium as gym
    gym.register_envs(ale_py)
    env = gym_env("Pong", train=False, **FIXED_START)
    raw = gym.make("ALE/Pong-v5", frameskip=1, repeat_action_probability=0.0, full_action_space=False)
    obs, _ = env.reset(seed=3)
    raw.reset(seed=3)
    raw.step(0)                                           # the one no-op of noop_max=1
    ale = raw.unwrapped.ale
    assert np.array_equal(obs[-1], cv2.resize(ale.getScreenGrayscale(), (84, 84), interpolation=cv2.INTER_AREA))
    rng = np.random.default_rng(0)
    previous = obs
    for _ in range(40):
        action = int(rng.integers(env.action_space.n))
        frame_before = env.unwrapped.ale.getEpisodeFrameNumber()
        obs, *_ = env.step(action)
        assert env.unwrapped.ale.getEpisodeFrameNumber() - frame_before == 4
        screens = []
        for _ in range(4):
            raw.step(action)
            screens.append(ale.getScreenGrayscale())
        pooled = np.maximum(screens[-2], screens[-1])
        expected = cv2.resize(pooled, (84, 84), interpolation=cv2.INTER_AREA)
        assert np.array_equal(obs[-1], expected)
        assert np.array_equal(obs[:-1], previous[1:])
        previous = obs
    # the max-pool matters: Pong's frames differ between consecutive frames
    assert not np.array_equal(screens[-2], screens[-1])


def test_both_backends_give_the_same_frames_from_a_fixed_start_and_similar_statistics():
    """With one no-op and no FIRE, envpool and gymnasium/ale-py produce identical frames; with
    the standard random no-op starts they draw their starts differently, so only the statistics
    of the frames agree."""
    for name in ("Pong", "Breakout"):
        cfg = AtariConfig(episodic_life=False, reward_clip=False, **FIXED_START)
        pool = EnvpoolVecEnv(GAMES[name], cfg, 1, train=False)
        env = gym_env(name, train=False, episodic_life=False, reward_clip=False, **FIXED_START)
        assert np.array_equal(pool.reset(seed=0)[0], env.reset(seed=0)[0]), name
        rng = np.random.default_rng(1)
        for t in range(100):
            action = int(rng.integers(env.action_space.n))
            step = pool.step(np.array([action]))
            obs, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:      # envpool's VecStep already holds the next game's start
                break
            assert np.array_equal(step.obs[0], obs), (name, t)
        pool.close()
    # standard preprocessing: the same shape, dtype and pixel statistics
    means = {}
    for backend in ("envpool", "gymnasium"):
        vec = SUITE.make_vec_env("Pong", AtariConfig(backend=backend), 4)
        obs = vec.reset(seed=0)
        rng = np.random.default_rng(0)
        frames = []
        for _ in range(60):
            obs = vec.step(rng.integers(6, size=4)).obs
            frames.append(obs)
        frames = np.stack(frames)
        assert frames.dtype == np.uint8 and frames.shape[2:] == (4, 84, 84)
        means[backend] = (frames.mean(), frames.std())
        vec.close()
    assert means["envpool"][0] == pytest.approx(means["gymnasium"][0], rel=0.05), means
    assert means["envpool"][1] == pytest.approx(means["gymnasium"][1], rel=0.05), means


def test_both_backends_stack_frames_alike_at_new_games_and_after_a_lost_life():
    """A new game starts from 4 copies of its frame after FIRE; after a lost life the stack keeps
    the frames before it (envpool's Reset pushes once; StackFrames does the same)."""
    rng = np.random.default_rng(0)
    for train in (True, False):
        obs, _ = gym_env("Breakout", train=train).reset(seed=0)
        assert all(np.array_equal(obs[0], obs[k]) for k in range(4)), train
    env = gym_env("Breakout", train=True)
    env.reset(seed=0)
    continued = 0
    while continued < 3:
        obs, _, terminated, truncated, _ = env.step(int(rng.integers(4)))
        if terminated or truncated:
            after, _ = env.reset()                    # the game goes on with one life less
            assert np.array_equal(after[:-1], obs[1:]) and not np.array_equal(after[-1], obs[-1])
            continued += 1
    vec = EnvpoolVecEnv(GAMES["Breakout"], AtariConfig(), 1)
    before = vec.reset(seed=0)
    assert all(np.array_equal(before[0, 0], before[0, k]) for k in range(4))
    continued = 0
    while continued < 3:
        step = vec.step(rng.integers(4, size=1))
        if step.terminated[0]:    # the step that lost the life pushed one frame, the reset another
            assert np.array_equal(step.obs[0, :2], before[0, 2:])
            continued += 1
        before = step.obs
    vec.close()


# -- training episodes versus scored games -------------------------------------------------

def test_envpool_a_lost_life_ends_a_training_episode_but_the_game_is_scored_whole():
    vec = EnvpoolVecEnv(GAMES["Breakout"], AtariConfig(), 1)
    vec.reset(seed=0)
    rng = np.random.default_rng(0)
    ends, steps, raw_from_rewards = 0, 0, 0.0
    while True:
        step = vec.step(rng.integers(4, size=1))
        steps += 1
        raw_from_rewards += step.rewards[0]   # clipped, but Breakout's low rows are worth 1
        ends += int(step.terminated[0])
        assert not step.truncated[0]
        if step.episodes:
            break
    (index, score, length), = step.episodes
    assert ends == 5                # Breakout's five lives: five training episodes, one game
    assert length == steps
    assert score >= 0 and index == 0
    vec.close()


def test_gymnasium_a_lost_life_ends_a_training_episode_not_an_evaluation_game():
    train = gym_env("Breakout", train=True)
    train.reset(seed=0)
    rng = np.random.default_rng(0)
    episodes, lives_at_end = [], []
    while len(episodes) < 5:
        obs, r, terminated, truncated, info = train.step(int(rng.integers(4)))
        if terminated or truncated:
            lives_at_end.append(train.unwrapped.ale.lives())
            episodes.append(info.get("episode"))
            train.reset()            # continues the game after a lost life
    assert lives_at_end == [4, 3, 2, 1, 0]
    assert episodes[:4] == [None] * 4 and episodes[4] is not None   # one scored game, at game over
    evaluation = gym_env("Breakout", train=False)
    evaluation.reset(seed=0)
    lost = 0
    lives = evaluation.unwrapped.ale.lives()
    while True:
        obs, r, terminated, truncated, info = evaluation.step(int(rng.integers(4)))
        lost += evaluation.unwrapped.ale.lives() < lives
        lives = evaluation.unwrapped.ale.lives()
        if terminated or truncated:
            break
    assert lost == 5 and lives == 0 and "episode" in info


def test_rewards_are_clipped_for_training_only_and_the_recorded_score_is_raw():
    # MsPacman: a dot is worth 10 points, so a random policy scores within a few steps
    rng = np.random.default_rng(0)
    train, evaluation = gym_env("MsPacman", train=True), gym_env("MsPacman", train=False)
    for env in (train, evaluation):
        env.reset(seed=0)
    train_rewards, eval_rewards = [], []
    for _ in range(3000):
        action = int(rng.integers(9))
        _, r, terminated, truncated, info = train.step(action)
        train_rewards.append(r)
        if "episode" in info:
            game_score = info["episode"]["r"]
            break
        if terminated or truncated:
            train.reset()
    for _ in range(200):
        eval_rewards.append(evaluation.step(int(rng.integers(9)))[1])
    assert set(train_rewards) <= {-1.0, 0.0, 1.0} and 1.0 in train_rewards
    assert game_score >= 10 * sum(train_rewards) > 0       # raw points, not the clipped count
    assert max(eval_rewards) >= 10
    # envpool: clipped training rewards, raw scores in VecStep.episodes
    vec = EnvpoolVecEnv(GAMES["MsPacman"], AtariConfig(), 2)
    vec.reset(seed=0)
    clipped, scores = [], []
    while not scores:
        step = vec.step(rng.integers(9, size=2))
        clipped.append(step.rewards.copy())
        scores += [s for _, s, _ in step.episodes]
    assert set(np.unique(np.concatenate(clipped))) <= {-1.0, 0.0, 1.0}
    assert max(scores) >= 10 and max(scores) % 10 == 0
    vec.close()


def test_envpool_resets_a_finished_game_in_the_same_step():
    """A game's end returns the next game's first observation right away (with a fixed start:
    the same as the first reset's), and the time limit truncates with the last observation kept."""
    cfg = AtariConfig(episodic_life=False, **FIXED_START)
    vec = EnvpoolVecEnv(GAMES["Qbert"], cfg, 2, train=True)
    first = vec.reset(seed=0)
    rng = np.random.default_rng(0)
    for t in range(3000):
        step = vec.step(rng.integers(6, size=2))
        if step.terminated.any():
            i = int(np.flatnonzero(step.terminated)[0])
            assert np.array_equal(step.obs[i], first[i])
            assert [e[0] for e in step.episodes] == list(np.flatnonzero(step.terminated))
            break
    else:
        pytest.fail("no game ended")
    vec.close()
    short = EnvpoolVecEnv(GAMES["Pong"], AtariConfig(max_episode_steps=20), 1)
    short.reset(seed=0)
    for t in range(20):
        step = short.step(np.zeros(1, dtype=np.int64))
    assert step.truncated[0] and not step.terminated[0] and 0 in step.final_obs
    assert step.episodes == [(0, 0.0, 20)]
    assert not np.array_equal(step.final_obs[0], step.obs[0])
    short.close()


# -- group rollouts ---------------------------------------------------------------------------

def test_group_rollout_starts_every_member_of_a_group_identically():
    cfg = AtariConfig()
    grpo = algos.get("grpo")
    algo_cfg = grpo.Config(**{**SUITE.defaults_for(grpo), "group_size": 2, "num_minibatches": 1})
    collector, _ = SUITE.make_collector("Qbert", cfg, grpo.needs(algo_cfg), algo_cfg, seed=0)
    starts = {}
    for seed in range(5):
        obs = collector.reset_group(seed)
        assert obs.shape == (2, 4, 84, 84)
        assert all(np.array_equal(obs[0], o) for o in obs[1:])
        first = [int(e.unwrapped.ale.getEpisodeFrameNumber()) for e in collector.group_env.envs]
        assert len(set(first)) == 1          # the same number of no-op frames
        starts[seed] = first[0]
    assert len(set(starts.values())) > 1     # different groups start after different no-op counts
    # a collected group: whole games with raw scores, columns that start identically
    env = SUITE.make_env("Qbert", cfg, train=False)
    agent = SUITE.make_agent(env, cfg)
    batch, episodes = collector.collect(agent)
    assert batch.obs.shape[1] == 2 and len(episodes) == 2
    assert torch.equal(batch.obs[0, 0], batch.obs[0, 1])
    assert sorted(e.length for e in episodes) == sorted(batch.lengths.tolist())
    assert all(e.ret % 25 == 0 for e in episodes)          # Qbert's raw points (25 per cube)
    assert set(batch.rewards.unique().tolist()) <= {-1.0, 0.0, 1.0}


# -- the network ---------------------------------------------------------------------------------

def test_agent_shapes_heads_and_parameter_roles():
    torch.manual_seed(0)
    agent = AtariAgent(6, AtariConfig())
    conv1 = agent.trunk[0]
    assert (conv1.in_channels, conv1.out_channels, conv1.kernel_size, conv1.stride) == (4, 32, (8, 8), (4, 4))
    assert [m.out_features for m in agent.modules() if isinstance(m, torch.nn.Linear)] == [512, 6, 1]
    obs = torch.randint(0, 256, (5, 3, 4, 84, 84), dtype=torch.uint8)
    dist = agent.dist(obs)
    assert dist.logits.shape == (5, 3, 6) and dist.log_prob(torch.zeros(5, 3, dtype=torch.long)).shape == (5, 3)
    assert agent.value(obs).shape == (5, 3)
    # observations are scaled by 1/255 inside the network
    x = obs.reshape(-1, 4, 84, 84).float() / 255
    expected = torch.softmax(agent.policy_head(agent.trunk(x)), -1).reshape(5, 3, 6)
    assert torch.allclose(expected, dist.probs, atol=1e-6)
    # roles: shared trunk until an algorithm fits the value on its own (value_network=auto)
    trunk = {id(p) for p in agent.trunk.parameters()}
    assert trunk <= {id(p) for p in agent.policy_parameters()}
    assert not {id(p) for p in agent.value_head.parameters()} & {id(p) for p in agent.policy_parameters()}
    value_params = {id(p) for p in agent.value_parameters()}
    assert agent.value_trunk is not None and not value_params & trunk
    shared = AtariAgent(6, AtariConfig(value_network="shared"))
    assert {id(p) for p in shared.trunk.parameters()} <= {id(p) for p in shared.value_parameters()}
    assert shared.value_trunk is None


def test_value_reuses_the_trunk_only_for_the_same_minibatch_and_parameters():
    torch.manual_seed(0)
    agent = AtariAgent(4, AtariConfig())
    obs = torch.randint(0, 256, (8, 1, 4, 84, 84), dtype=torch.uint8)
    fresh = agent.value(obs).detach()
    agent.dist(obs)
    assert torch.equal(agent.value(obs).detach(), fresh)            # reused: one trunk pass
    optimizer = torch.optim.Adam(agent.parameters(), lr=1e-2, fused=True)
    loss = -agent.dist(obs).entropy().mean() + agent.value(obs).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    agent.dist(obs)
    optimizer.step()                  # the parameters change between dist() and value()
    after = agent.value(obs).detach()
    assert not torch.equal(after, fresh)
    assert torch.allclose(after, agent.value(obs.clone()).detach(), atol=1e-6)


def test_chunked_and_checkpointed_forward_equal_the_plain_one(monkeypatch):
    torch.manual_seed(0)
    agent = AtariAgent(4, AtariConfig(value_network="shared"))
    obs = torch.randint(0, 256, (10, 1, 4, 84, 84), dtype=torch.uint8)
    actions = torch.randint(0, 4, (10, 1))
    plain_logp = agent.dist(obs).log_prob(actions)
    plain_logp.sum().backward()
    plain_grads = [p.grad.clone() for p in agent.policy_parameters()]
    agent.zero_grad()
    monkeypatch.setattr(AtariAgent, "CHUNK", 3)
    with torch.no_grad():
        assert torch.allclose(agent.dist(obs).log_prob(actions), plain_logp, atol=1e-5)
    agent.dist(obs).log_prob(actions).sum().backward()       # checkpointed chunks
    for g, p in zip(plain_grads, agent.policy_parameters()):
        assert torch.allclose(g, p.grad, atol=1e-4, rtol=1e-4)


def test_bf16_trunk_stays_close_to_fp32_and_consistent_between_batch_sizes():
    torch.manual_seed(0)
    fp32 = AtariAgent(4, AtariConfig())
    bf16 = AtariAgent(4, AtariConfig(precision="bf16"))
    bf16.load_state_dict(fp32.state_dict())
    obs = torch.randint(0, 256, (64, 1, 4, 84, 84), dtype=torch.uint8)
    actions = torch.randint(0, 4, (64, 1))
    with torch.no_grad():
        assert torch.allclose(bf16.dist(obs).probs, fp32.dist(obs).probs, atol=1e-2)
        whole = bf16.dist(obs).log_prob(actions)
        parts = torch.cat([bf16.dist(obs[i:i + 16]).log_prob(actions[i:i + 16]) for i in range(0, 64, 16)])
    # PPO's first ratio compares a rollout-wide pass with minibatch passes
    assert (whole - parts).abs().max() < 1e-3
    assert bf16.dist(obs).logits.dtype == torch.float32


@pytest.mark.parametrize("value_network", ["shared", "separate"])
def test_act_and_score_returns_the_log_prob_and_value_of_the_batched_pass(value_network):
    # the collector stores these as logp_old / values instead of recomputing them over the batch
    torch.manual_seed(0)
    agent = AtariAgent(4, AtariConfig(value_network=value_network))
    obs = np.random.default_rng(1).integers(0, 256, (8, 4, 84, 84), dtype=np.uint8)
    actions, logp, value = agent.act_and_score(obs, np.random.default_rng(3), with_value=True)
    assert np.array_equal(actions, agent.act(obs, np.random.default_rng(3)))   # same draw as act()
    with torch.no_grad():
        whole = torch.from_numpy(np.repeat(obs[None], 4, axis=0))             # [T=4, N=8]: a rollout-sized pass
        want_logp = agent.dist(whole).log_prob(torch.from_numpy(actions).expand(4, 8))[0]
        want_value = agent.value(whole)[0]
    assert np.allclose(logp, want_logp.numpy(), atol=1e-5)
    assert np.allclose(value, want_value.numpy(), atol=1e-5)
    assert agent.act_and_score(obs, np.random.default_rng(3), with_value=False)[2] is None


@pytest.mark.parametrize("value_network", ["shared", "separate"])
@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_act_and_score_on_the_cpu_is_the_plain_cpu_pass_bit_for_bit(value_network, precision):
    """The device-aware acting pass computes on the CPU exactly what the CPU-only one did: the
    frames as given (no copy), one trunk pass, log-softmax, the Gumbel-max draw from the rng."""
    torch.manual_seed(0)
    agent = AtariAgent(6, AtariConfig(value_network=value_network, precision=precision))
    obs = np.random.default_rng(1).integers(0, 256, (8, 4, 84, 84), dtype=np.uint8)
    for frames in (obs, torch.from_numpy(obs).contiguous(memory_format=torch.channels_last).numpy()):
        actions, logp, value = agent.act_and_score(frames, np.random.default_rng(3), with_value=True)
        with torch.inference_mode():          # the computation before the agent knew its device
            x = torch.from_numpy(frames)
            h = agent._encode(agent.trunk, x)
            want_log_probs = torch.log_softmax(agent.policy_head(h), -1).numpy()
            value_h = h if agent.value_trunk is None else agent._encode(agent.value_trunk, x)
            want_value = agent.value_head(value_h).squeeze(-1).numpy()
        want_actions = _sample(want_log_probs, np.random.default_rng(3))
        assert np.array_equal(actions, want_actions) and actions.dtype == want_actions.dtype
        assert np.array_equal(logp, want_log_probs[np.arange(8), want_actions]) and logp.dtype == np.float32
        assert np.array_equal(value, want_value) and value.dtype == np.float32
        assert isinstance(actions, np.ndarray) and isinstance(logp, np.ndarray) and isinstance(value, np.ndarray)


def test_agent_device_follows_its_parameters_and_frames_go_there_without_a_cpu_copy():
    agent = AtariAgent(4, AtariConfig())
    assert agent.device == torch.device("cpu") and isinstance(agent.device, torch.device)
    obs = np.zeros((2, 4, 84, 84), dtype=np.uint8)
    frames = _frames_tensor(obs, agent.device)
    assert frames.data_ptr() == obs.ctypes.data                      # shares the numpy frames' memory
    readonly = obs.copy()
    readonly.flags.writeable = False
    assert torch.equal(_frames_tensor(readonly, agent.device), frames)
    agent.to("meta")                                                 # a device without data: only placement
    assert agent.device == torch.device("meta")
    agent.value_parameters()                                         # value_network=auto: the value's own CNN
    assert {p.device for p in agent.parameters()} == {torch.device("meta")}


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_act_and_score_on_cuda_matches_the_cpu():
    torch.manual_seed(0)
    cpu = AtariAgent(4, AtariConfig(value_network="separate"))
    gpu = AtariAgent(4, AtariConfig(value_network="separate"))
    gpu.load_state_dict(cpu.state_dict())
    gpu.to("cuda")
    assert gpu.device.type == "cuda"
    obs = np.random.default_rng(1).integers(0, 256, (8, 4, 84, 84), dtype=np.uint8)
    want = cpu.act_and_score(obs, np.random.default_rng(3), with_value=True)
    got = gpu.act_and_score(obs, np.random.default_rng(3), with_value=True)
    assert all(isinstance(a, np.ndarray) for a in got)
    assert np.array_equal(got[0], want[0])
    assert np.allclose(got[1], want[1], atol=1e-4) and np.allclose(got[2], want[2], atol=1e-4)
    assert np.array_equal(gpu.act(obs, np.random.default_rng(3), deterministic=True),
                          cpu.act(obs, np.random.default_rng(3), deterministic=True))
    with torch.no_grad():                # dist / value take CPU tensors too (moved to the agent's device)
        assert torch.allclose(gpu.value(torch.from_numpy(obs)).cpu(), cpu.value(torch.from_numpy(obs)), atol=1e-4)


def test_horizon_collector_stores_the_acting_pass_log_probs_and_values():
    from core.rollout import HorizonCollector
    torch.manual_seed(0)
    vec = SUITE.make_vec_env("Breakout", AtariConfig(), 2)
    agent = AtariAgent(vec.action_space.n, AtariConfig())
    batch, _ = HorizonCollector(vec, num_steps=16, gamma=0.99, seed=0, with_values=True).collect(agent)
    vec.close()
    with torch.no_grad():
        assert torch.allclose(batch.logp_old, agent.dist(batch.obs).log_prob(batch.actions), atol=1e-5)
        assert torch.allclose(batch.values, agent.value(batch.obs), atol=1e-5)


def test_envpool_frames_are_channels_last_and_the_network_reads_either_layout_alike():
    """EnvpoolVecEnv hands out frames channels-last in memory (what the CNN reads; the rollout
    stores them so); the values are the pool's, and the network's outputs do not depend on layout."""
    import envpool
    from suites.atari import envpool_options
    cfg = AtariConfig()
    vec = EnvpoolVecEnv(GAMES["Breakout"], cfg, 3)
    obs = vec.reset(seed=5)
    pool = envpool.make(GAMES["Breakout"].envpool_id, env_type="gymnasium", num_envs=3, batch_size=3,
                        num_threads=1, seed=5, **envpool_options(cfg, train=True))
    reference, _ = pool.reset()
    assert np.array_equal(obs, reference) and obs.strides[1] == 1          # channels innermost
    for _ in range(5):
        obs = vec.step(np.ones(3, dtype=np.int64)).obs
        reference = pool.step(np.ones(3, dtype=np.int32))[0]
        assert np.array_equal(obs, reference) and obs.strides[1] == 1
    vec.close()
    pool.close()
    torch.manual_seed(0)
    agent = AtariAgent(4, cfg)
    frames = torch.from_numpy(obs)
    with torch.no_grad():
        assert torch.equal(agent.dist(frames).logits, agent.dist(frames.contiguous()).logits)


def test_act_samples_the_policy_and_greedy_is_its_argmax():
    torch.manual_seed(0)
    agent = AtariAgent(4, AtariConfig())
    with torch.no_grad():
        agent.policy_head.weight.mul_(300)   # a peaked policy
    obs = np.random.default_rng(0).integers(0, 256, (2, 4, 84, 84), dtype=np.uint8)
    with torch.no_grad():
        logits = agent.dist(torch.from_numpy(obs)).logits
    assert np.array_equal(agent.act(obs, np.random.default_rng(0), deterministic=True), logits.argmax(-1).numpy())
    probs = torch.softmax(logits, -1)[0].numpy()
    draws = agent.act(np.repeat(obs[:1], 1000, axis=0), np.random.default_rng(0))
    assert np.allclose(np.bincount(draws, minlength=4) / 1000, probs, atol=0.06)
    frozen = agent.frozen_copy()
    assert not any(p.requires_grad for p in frozen.parameters())


# -- configuration and runs ----------------------------------------------------------------

def test_defaults_follow_the_papers_table5():
    ppo = algos.get("ppo_clip").Config(**SUITE.defaults_for(algos.get("ppo_clip")))
    assert (ppo.num_envs, ppo.num_steps, ppo.lr, ppo.num_epochs, ppo.minibatch_size) == (8, 128, 2.5e-4, 3, 256)
    assert (ppo.gamma, ppo.lam, ppo.clip_eps, ppo.vf_coef, ppo.ent_coef) == (0.99, 0.95, 0.1, 1.0, 0.01)
    assert ppo.lr_anneal and ppo.clip_anneal and ppo.adv_norm == "minibatch" and ppo.max_grad_norm == 0.5
    for name in algos.builtin_names():         # every algorithm's defaults make a valid config
        algos.get(name).Config(**SUITE.defaults_for(algos.get(name)))


# one bad value per option, and what its error must name (the valid choices or range)
BAD_OPTIONS = [
    ("backend", "sdl", ["envpool", "gymnasium"]),
    ("value_network", "copy", ["auto", "shared", "separate"]),
    ("precision", "fp16", ["fp32", "bf16"]),
    ("eval_policy", "epsilon", ["sample", "greedy"]),
    ("episodic_life", "yes", ["true", "false"]),
    ("fire_reset", 1, ["true", "false"]),
    ("reward_clip", None, ["true", "false"]),
    ("num_threads", -1, [">= 0"]),
    ("num_threads", 2.5, [">= 0"]),
    ("noop_max", 0, [">= 1"]),
    ("frame_skip", 0, [">= 1"]),
    ("frame_skip", True, [">= 1"]),
    ("frame_stack", -4, [">= 1"]),
    ("screen_size", 35, [">= 36"]),
    ("max_episode_steps", 0, [">= 1"]),
    ("group_max_steps", "4500", [">= 1"]),
    ("repeat_action_probability", 1.0, ["[0, 1)"]),
    ("repeat_action_probability", -0.1, ["[0, 1)"]),
    ("repeat_action_probability", "0.25", ["[0, 1)"]),
]


@pytest.mark.parametrize("name, value, named", BAD_OPTIONS, ids=[f"{n}={v!r}" for n, v, _ in BAD_OPTIONS])
def test_every_bad_option_value_is_a_config_error_naming_the_valid_ones(name, value, named):
    with pytest.raises(ConfigError) as err:
        AtariConfig(**{name: value})
    message = str(err.value)
    assert f"suite.{name}=" in message and all(choice in message for choice in named), message


def test_every_option_is_validated_and_the_limits_are_valid():
    fields = {f.name for f in dataclasses.fields(AtariConfig)}
    assert fields == {name for name, _, _ in BAD_OPTIONS}
    # the least valid values make a config, and a network where the frames are involved
    AtariConfig(noop_max=1, frame_skip=1, frame_stack=1, screen_size=36, max_episode_steps=1, group_max_steps=1,
                num_threads=0, repeat_action_probability=0.0, backend="gymnasium", value_network="separate",
                precision="bf16", eval_policy="greedy", episodic_life=False, fire_reset=False, reward_clip=False)
    agent = AtariAgent(3, AtariConfig(frame_stack=1, screen_size=36))
    assert agent.dist(torch.zeros(2, 1, 36, 36, dtype=torch.uint8)).logits.shape == (2, 3)
    AtariConfig(num_threads=np.int64(2), repeat_action_probability=0.25)


def test_bad_atari_input_is_a_clear_error(tmp_path, capsys):
    assert cli.main(["suite=atari", "env=Pacman", f"results_dir={tmp_path}"]) == 2
    assert "Pacman" in capsys.readouterr().err
    assert cli.main(["suite=atari", "env=Pong", "suite.backend=sdl", f"results_dir={tmp_path}"]) == 2
    assert "envpool" in capsys.readouterr().err
    # an option no run can use fails at planning
    assert cli.main(["suite=atari", "env=Pong", "suite.screen_size=32", f"results_dir={tmp_path}"]) == 2
    assert "suite.screen_size=32" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


@pytest.mark.slow
def test_smoke_run_of_every_algorithm(tmp_path, capsys):
    """Every algorithm on Breakout through the command line, with small batches to keep the test
    short (scale=smoke runs the suite's defaults: ./run_all.sh suite=atari scale=smoke), the game
    named by its envpool id to check that results go under the game's name."""
    builtins = algos.builtin_names()
    horizon = [n for n in builtins if algos.get(n).rollout == "horizon"]
    groups = [n for n in builtins if algos.get(n).rollout == "groups"]
    assert len(horizon) + len(groups) == len(builtins) == 7
    # 2 envs x 128 steps, twice: each env finishes a random game of Breakout (120-230 steps)
    common = ["suite=atari", "scale=smoke", "env=Breakout-v5", "steps=512", "jobs=2", f"results_dir={tmp_path}"]
    for names, small in ((horizon, ["algo.num_envs=2", "algo.num_steps=128"]),
                         (groups, ["algo.group_size=2", "algo.num_minibatches=1"])):
        code = cli.main([*common, f"algo={','.join(names)}", *small])
        out, err = capsys.readouterr()
        assert code == 0, err
    run_dirs = sorted(p.parent for p in (tmp_path / "atari" / "Breakout").rglob("run.json"))
    assert len(run_dirs) == len(builtins)
    for run_dir in run_dirs:
        record = json.loads((run_dir / "run.json").read_text())
        assert record["status"] == "done", (run_dir, record.get("error"))
        episodes = read_rows(run_dir / "episodes.csv")
        evals = read_rows(run_dir / "evals.csv")
        assert episodes and len(evals) == 2, run_dir
        # whole games: Breakout's five lives take well over 100 agent steps, scores are raw points
        assert all(int(r["episode_length"]) >= 100 for r in episodes), run_dir
        assert all(float(r["episode_return"]) >= 0 for r in episodes), run_dir
        assert "eval_human_normalized" in evals[0]
        assert read_rows(run_dir / "metrics.csv"), run_dir
