"""Atari-49 suite: the 49 games of the PPO paper's Atari experiment (Appendix B, Table 6).

Environments, with the preprocessing of the paper's era (Mnih et al. 2015; OpenAI baselines'
``wrap_deepmind``, which the paper's code used), the same under both backends:

- up to 30 no-op frames at the start of a game (random count, drawn from the environment's seed);
- frame skip 4, the observation the pixel-wise max of the last two frames (flicker);
- 84x84 grayscale, the last 4 observations stacked: ``uint8 [4, 84, 84]``;
- no sticky actions (``repeat_action_probability=0``, as the paper; ALE v5's default is 0.25);
- FIRE after every reset where the game has a FIRE action (baselines' FireResetEnv);
- for training: the loss of a life ends the episode (not the game: the next reset continues it)
  and rewards are clipped to their sign;
- games are cut at 27,000 agent steps (108,000 frames).

Every training episode recorded (``VecStep.episodes``, ``episodes.csv``) is a whole game with its
raw, unclipped score, so the paper's metrics (mean over all of training, last 100 episodes) and
human-normalised scores come straight from the stored runs. Evaluation plays whole games with raw
rewards.

Backends (``suite.backend``):

- ``envpool`` (default) for the training environments of fixed-horizon collection: envpool's C++
  thread pool steps all N games in parallel. envpool resets a finished environment on the *next*
  call to ``step``; ``EnvpoolVecEnv`` steps just the finished ids once more right away, so that the
  collector sees the reset observation in the same step (as ``core/envs.py`` specifies).
- ``gymnasium``: ale-py's ``ALE/<Game>-v5`` with gymnasium's ``AtariPreprocessing`` and the
  wrappers below. Always used for evaluation and for group rollouts (G games reset with one seed:
  the same no-op count, hence the same start), and the reference in the tests.

The backends stack frames alike (a new game starts from 4 copies of its first frame after FIRE; a
game continued after a lost life keeps its earlier frames) but draw their no-ops differently: at a
new game gymnasium takes 1-30 no-op frames and envpool 0-29 before its FIRE frame, and after a lost
life gymnasium takes one no-op agent step (4 frames) where envpool takes 0-29 no-op frames again.

Network: the Nature-DQN CNN (Mnih et al. 2015; the default of the paper's released code) with a
policy and a value head on one shared trunk, orthogonal initialisation as baselines / CleanRL.
Parameters by role (``policy_parameters`` / ``value_parameters``): see ``AtariAgent``.
"""
from __future__ import annotations

import csv
import importlib.util
import itertools
import os
from copy import deepcopy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn
from torch.distributions import Categorical
from torch.optim.optimizer import register_optimizer_step_post_hook
from torch.utils.checkpoint import checkpoint

from core.errors import ConfigError
from core.envs import VecStep
from suites.base import Scale, Suite

DATA = Path(__file__).resolve().parent / "data" / "atari49.csv"


@dataclass(frozen=True)
class Game:
    """One row of ``suites/data/atari49.csv`` (its header has the sources)."""
    name: str              # the paper's name, e.g. "Breakout"
    random: float          # DQN Zoo random score (no-op starts)
    human: float           # DQN Zoo human score
    ppo_last100: float     # the paper's Table 6: PPO, mean of the last 100 episodes at 10M steps
    envpool_id: str        # "Breakout-v5"
    gymnasium_id: str      # "ALE/Breakout-v5"
    ale_rom_id: str        # "breakout"

    def human_normalized(self, score: float) -> float:
        return (score - self.random) / (self.human - self.random)


def _load_games() -> dict[str, Game]:
    with open(DATA, newline="") as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    return {r["game"]: Game(r["game"], float(r["random"]), float(r["human"]), float(r["ppo_last100"]),
                            r["envpool_id"], r["gymnasium_id"], r["ale_rom_id"]) for r in rows}


GAMES: dict[str, Game] = _load_games()
PAPER_GAMES: tuple[str, ...] = tuple(GAMES)
# Atari-5 (Aitchison et al. 2022, "Atari-5: Distilling the Arcade Learning Environment down to Five
# Games"): BattleZone, DoubleDunk, NameThisGame, Phoenix, Qbert, whose scores predict the median over
# the 57 games. Phoenix is not one of the paper's 49, so the quick scale plays the other four.
ATARI5_IN_49: tuple[str, ...] = ("BattleZone", "DoubleDunk", "NameThisGame", "Qbert")
# Short random-play games for the smoke scale: a random policy ends a game of either in ~100-250 steps.
SMOKE_GAMES: tuple[str, ...] = ("Breakout", "Qbert")


def game_of(env_id: str) -> Game:
    """The game an environment id names: the paper's name (``Breakout``), envpool's id
    (``Breakout-v5``) or gymnasium's (``ALE/Breakout-v5``); a ``ConfigError`` lists the 49."""
    for game in GAMES.values():
        if env_id in (game.name, game.envpool_id, game.gymnasium_id):
            return game
    raise ConfigError(f"unknown Atari game {env_id!r}; the suite's 49 games (by name, or as envpool's "
                      f"<Game>-v5): {', '.join(PAPER_GAMES)}")


@dataclass
class AtariConfig:
    """Environment-side and network options shared by every algorithm on this suite."""
    backend: str = "envpool"                 # training envs of fixed-horizon collection: envpool | gymnasium
    num_threads: int = 0                     # envpool worker threads; 0: min(num_envs, CPU cores)
    noop_max: int = 30                       # Mnih et al. 2015 / baselines NoopResetEnv: up to 30 no-ops at the start
    frame_skip: int = 4                      # baselines MaxAndSkipEnv: repeat each action 4 frames, max of the last 2
    frame_stack: int = 4                     # Mnih et al. 2015: the last 4 frames are the state
    screen_size: int = 84                    # Mnih et al. 2015: 84x84 grayscale
    episodic_life: bool = True               # baselines EpisodicLifeEnv: a lost life ends a *training* episode
    fire_reset: bool = True                  # baselines FireResetEnv: press FIRE after reset where the game has it
    reward_clip: bool = True                 # baselines ClipRewardEnv: training rewards clipped to their sign
    repeat_action_probability: float = 0.0   # the paper: no sticky actions (Machado et al. 2018 suggest 0.25)
    max_episode_steps: int = 27000           # 108,000 frames (Machado et al. 2018; envpool's default)
    group_max_steps: int = 4500              # group rollouts: games cut here (8 x 4500 frames ~ 1 GB per batch)
    value_network: str = "auto"              # shared | separate | auto (see AtariAgent)
    precision: str = "fp32"                  # the CNN trunk's arithmetic: fp32 | bf16 (autocast; fast only on
                                             # CPUs with AMX / AVX512-BF16; weights, heads and losses stay fp32)
    eval_policy: str = "sample"              # evaluation actions: sample from the policy | greedy (argmax)

    def __post_init__(self):
        for name, choices in (("backend", ("envpool", "gymnasium")),
                              ("value_network", ("auto", "shared", "separate")),
                              ("precision", ("fp32", "bf16")),
                              ("eval_policy", ("sample", "greedy"))):
            if getattr(self, name) not in choices:
                raise ConfigError(f"suite.{name}={getattr(self, name)!r} is not valid; valid: {', '.join(choices)}")
        for name in ("noop_max", "frame_skip", "frame_stack", "screen_size", "max_episode_steps", "group_max_steps"):
            if not getattr(self, name) > 0:
                raise ConfigError(f"suite.{name}={getattr(self, name)} must be positive")
        if self.num_threads < 0:
            raise ConfigError(f"suite.num_threads={self.num_threads} must be 0 (automatic) or positive")
        if not 0.0 <= self.repeat_action_probability < 1.0:
            raise ConfigError(f"suite.repeat_action_probability={self.repeat_action_probability} must lie in [0, 1)")
        missing = [m for m in ("ale_py", "cv2") + (("envpool",) if self.backend == "envpool" else ())
                   if importlib.util.find_spec(m) is None]
        if missing:
            hint = " (envpool has Linux wheels only; elsewhere use suite.backend=gymnasium)" if "envpool" in missing else ""
            raise ConfigError(f"the atari suite needs {', '.join(missing)}: .venv/bin/pip install -e '.[atari]'{hint}")


# ---------------------------------------------------------------------------------------
# envpool backend


def envpool_options(cfg: AtariConfig, train: bool) -> dict[str, Any]:
    """envpool's Atari options for the preprocessing above (``train=False``: whole games, raw rewards)."""
    return dict(noop_max=cfg.noop_max, frame_skip=cfg.frame_skip, stack_num=cfg.frame_stack,
                img_height=cfg.screen_size, img_width=cfg.screen_size, gray_scale=True,
                episodic_life=cfg.episodic_life and train, reward_clip=cfg.reward_clip and train,
                use_fire_reset=cfg.fire_reset, repeat_action_probability=cfg.repeat_action_probability,
                max_episode_steps=cfg.max_episode_steps, full_action_space=False)


def _frames_channels_last(obs: np.ndarray) -> np.ndarray:
    """``obs`` ``[N, C, H, W]`` with the channels innermost in memory (a copy): ~10 ms of a ~60 ms
    update step went into transposing each minibatch of 256 frames for the channels-last CNN;
    transposing 8 frames as they arrive costs ~0.03 ms (torch's copy; numpy's took 0.2 ms)."""
    return torch.from_numpy(obs).contiguous(memory_format=torch.channels_last).numpy()


class EnvpoolVecEnv:
    """N games in one envpool pool (synchronous), behind the ``VecStep`` interface.

    envpool semantics (checked against envpool 1.2): ``step`` returns the last observation of a
    finished episode and resets that environment on the *next* ``step`` (ignoring its action);
    ``step(actions, env_id)`` steps a subset. Here the finished ids are stepped again at once, so
    ``VecStep.obs`` holds their reset observation (same-step semantics). With ``episodic_life`` a lost
    life is a training episode's end (``terminated``) and the reset continues the game; the raw
    score (``info["reward"]``) is summed over the whole game, which ``VecStep.episodes`` reports when
    the game is over or cut at ``max_episode_steps`` (``truncated``, bootstrapped from ``final_obs``).
    envpool fixes seeds at construction: ``reset(seed)`` builds the pool (environment i gets seed + i).
    Observations leave in channels-last memory order (shape ``[N, 4, 84, 84]`` unchanged), the
    order the CNN reads: the rollout stores them so, and a minibatch needs no transposition (see
    ``_frames_channels_last``).
    """

    def __init__(self, game: Game, cfg: AtariConfig, num_envs: int, train: bool = True):
        self.game, self.cfg, self.num_envs, self.train = game, cfg, num_envs, train
        self.pool, self.seed = None, None
        self.score = np.zeros(num_envs)
        self.length = np.zeros(num_envs, dtype=np.int64)
        self._ids = np.arange(num_envs, dtype=np.int32)

    def _make_pool(self, seed: int):
        import envpool
        threads = self.cfg.num_threads or min(self.num_envs, os.cpu_count() or 1)
        return envpool.make(self.game.envpool_id, env_type="gymnasium", num_envs=self.num_envs,
                            batch_size=self.num_envs, num_threads=threads, seed=int(seed),
                            **envpool_options(self.cfg, self.train))

    @property
    def action_space(self) -> gym.spaces.Discrete:
        if self.pool is None:
            self.reset(0)
        return self.pool.action_space

    def reset(self, seed: int) -> np.ndarray:
        if self.pool is None or seed != self.seed:
            self.close()
            self.pool, self.seed = self._make_pool(seed), seed
        obs, info = self.pool.reset()
        self.score[:] = 0.0
        self.length[:] = 0
        return _frames_channels_last(self._in_order(info, obs))

    def _in_order(self, info, *arrays):
        """Rows by environment id (synchronous pools return them in order; this makes sure)."""
        ids = info["env_id"]
        if len(ids) == self.num_envs and np.array_equal(ids, self._ids):
            return arrays[0] if len(arrays) == 1 else arrays
        order = np.argsort(ids)
        out = tuple(a[order] for a in arrays)
        return out[0] if len(out) == 1 else out

    def step(self, actions: np.ndarray) -> VecStep:
        obs, rewards, terminated, truncated, info = self.pool.step(np.asarray(actions, dtype=np.int32))
        game_over = info["terminated"].astype(bool)
        raw = info["reward"]
        obs, rewards, terminated, truncated, game_over, raw = self._in_order(
            info, obs, rewards, terminated, truncated, game_over, raw)
        obs = _frames_channels_last(obs)              # a fresh, writable array
        terminated = terminated | game_over          # a game that ends at the time limit still ended
        truncated = truncated & ~game_over
        self.score += raw
        self.length += 1
        out = VecStep(obs=obs, rewards=np.asarray(rewards, dtype=np.float32), terminated=terminated,
                      truncated=truncated)
        for i in np.flatnonzero(game_over | truncated):
            out.episodes.append((int(i), float(self.score[i]), int(self.length[i])))
            self.score[i] = 0.0
            self.length[i] = 0
        done = terminated | truncated
        if done.any():
            ids = np.flatnonzero(done).astype(np.int32)
            for i in np.flatnonzero(truncated):
                out.final_obs[int(i)] = obs[i].copy()
            reset_obs, _, _, _, reset_info = self.pool.step(np.zeros(len(ids), dtype=np.int32), ids)
            obs[reset_info["env_id"]] = reset_obs
        return out

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()
            self.pool = None


# ---------------------------------------------------------------------------------------
# gymnasium / ale-py backend


class RecordScore(gym.Wrapper):
    """Sums the raw reward and counts the steps of a whole game; reports them as
    ``info["episode"] = {"r": score, "l": length}`` at the step the game ends (or is cut)."""

    def __init__(self, env):
        super().__init__(env)
        self.score, self.length = 0.0, 0

    def reset(self, **kwargs):
        self.score, self.length = 0.0, 0
        return self.env.reset(**kwargs)

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.score += float(reward)
        self.length += 1
        if terminated or truncated:
            info = {**info, "episode": {"r": self.score, "l": self.length}}
        return obs, reward, terminated, truncated, info


# reset info key: this reset continued a game after a lost life (EpisodicLife), not a new game
CONTINUED_GAME = "continued_game"


class EpisodicLife(gym.Wrapper):
    """A lost life ends the (training) episode; the next ``reset()`` continues the game with one
    no-op step, and only a game over, a time limit or an explicit seed resets the game
    (baselines' EpisodicLifeEnv; a seeded reset is a new game, so group rollouts start fresh)."""

    def __init__(self, env):
        super().__init__(env)
        self.lives, self.game_over = 0, True

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.game_over = terminated or truncated
        lives = self.env.unwrapped.ale.lives()
        if 0 < lives < self.lives:
            terminated = True
        self.lives = lives
        return obs, reward, terminated, truncated, info

    def reset(self, *, seed=None, options=None):
        if self.game_over or seed is not None:
            obs, info = self.env.reset(seed=seed, options=options)
        else:
            obs, _, terminated, truncated, info = self.env.step(0)
            if terminated or truncated:  # the game ended during the no-op
                obs, info = self.env.reset()
            else:
                info = {**info, CONTINUED_GAME: True}
        self.game_over = False
        self.lives = self.env.unwrapped.ale.lives()
        return obs, info


class FireReset(gym.Wrapper):
    """Press FIRE after every reset (baselines' FireResetEnv), for games that wait for it."""

    def reset(self, **kwargs):
        _, reset_info = self.env.reset(**kwargs)
        obs, _, terminated, truncated, info = self.env.step(1)
        if terminated or truncated:
            return self.env.reset()
        return obs, {**info, CONTINUED_GAME: reset_info.get(CONTINUED_GAME, False)}


class StackFrames(gym.Wrapper):
    """The last ``k`` observations, stacked: ``[k, H, W]``, oldest first. A new game fills all k
    with its first frame; a game continued after a lost life (EpisodicLife) pushes its first frame
    onto the frames before. That is envpool's stacking (its Reset pushes the frame after the no-ops
    and FIRE once, onto the whole stack at a new game), so the two backends' stacks agree at resets.
    Each observation is a new array, so a kept one (a truncated episode's last) never changes."""

    def __init__(self, env, k: int):
        super().__init__(env)
        box = env.observation_space
        self.observation_space = gym.spaces.Box(np.repeat(box.low[None], k, axis=0),
                                                np.repeat(box.high[None], k, axis=0), dtype=box.dtype)
        self.k, self.frames = k, None

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        if info.get(CONTINUED_GAME) and self.frames is not None:
            self.frames = np.concatenate([self.frames[1:], obs[None]])
        else:
            self.frames = np.repeat(obs[None], self.k, axis=0)
        return self.frames, info

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.frames = np.concatenate([self.frames[1:], obs[None]])
        return self.frames, reward, terminated, truncated, info


class ClipReward(gym.RewardWrapper):
    """Training rewards clipped to their sign (baselines' ClipRewardEnv)."""

    def reward(self, reward):
        return float(np.sign(reward))


def make_gymnasium_env(game: Game, cfg: AtariConfig, *, episodic_life: bool, reward_clip: bool,
                       max_steps: int) -> gym.Env:
    """``ALE/<Game>-v5`` without frame skip or sticky actions, then (inner to outer) gymnasium's
    AtariPreprocessing (no-ops, skip + max-pool, 84x84 grayscale), a time limit of ``max_steps``
    agent steps, RecordScore (the whole game's raw score), EpisodicLife, FireReset and ClipReward as
    asked, and StackFrames. FireReset sits outside EpisodicLife, so that every life starts with FIRE;
    StackFrames outside FireReset, so that a game's first stack is its frame after FIRE, 4 times."""
    import ale_py
    gym.register_envs(ale_py)
    env = gym.make(game.gymnasium_id, frameskip=1, repeat_action_probability=cfg.repeat_action_probability,
                   full_action_space=False, disable_env_checker=True,
                   # ALE's own frame cap only as a backstop behind the step limit below
                   max_num_frames_per_episode=(max_steps + 2) * cfg.frame_skip + cfg.noop_max)
    env = gym.wrappers.AtariPreprocessing(env, noop_max=cfg.noop_max, frame_skip=cfg.frame_skip,
                                          screen_size=cfg.screen_size, terminal_on_life_loss=False,
                                          grayscale_obs=True, scale_obs=False)
    env = gym.wrappers.TimeLimit(env, max_episode_steps=max_steps)
    env = RecordScore(env)
    if episodic_life:
        env = EpisodicLife(env)
    if cfg.fire_reset and "FIRE" in env.unwrapped.get_action_meanings():
        env = FireReset(env)
    if reward_clip:
        env = ClipReward(env)
    env = StackFrames(env, cfg.frame_stack)
    env.atari_game, env.atari_cfg = game, cfg  # for AtariSuite.evaluate (more copies of this env)
    return env


# ---------------------------------------------------------------------------------------
# network

# Optimiser steps so far, in this process. A fused Adam step changes parameters in place without
# bumping their version counters, so the agent's feature cache counts steps here as well.
_optimizer_steps = [0]


def _count_optimizer_step(optimizer, args, kwargs) -> None:
    _optimizer_steps[0] += 1


register_optimizer_step_post_hook(_count_optimizer_step)


def _orthogonal(layer: nn.Module, gain: float) -> nn.Module:
    # baselines ortho_init / CleanRL layer_init: orthogonal weights with the given gain, zero biases
    nn.init.orthogonal_(layer.weight, gain)
    nn.init.zeros_(layer.bias)
    return layer


def nature_cnn(in_channels: int, screen_size: int) -> nn.Sequential:
    """Mnih et al. 2015: conv 32 8x8/4, conv 64 4x4/2, conv 64 3x3/1, fc 512, ReLU after each."""
    g = float(np.sqrt(2))
    convs = nn.Sequential(_orthogonal(nn.Conv2d(in_channels, 32, 8, 4), g), nn.ReLU(),
                          _orthogonal(nn.Conv2d(32, 64, 4, 2), g), nn.ReLU(),
                          _orthogonal(nn.Conv2d(64, 64, 3, 1), g), nn.ReLU(), nn.Flatten())
    with torch.no_grad():
        flat = convs(torch.zeros(1, in_channels, screen_size, screen_size)).shape[1]   # 3136 at 84x84
    return nn.Sequential(*convs, _orthogonal(nn.Linear(flat, 512), g), nn.ReLU())


def _trunk_on_raw_frames(trunk: nn.Sequential, frames: torch.Tensor) -> torch.Tensor:
    """``trunk(frames / 255)``, the 1/255 applied to the first convolution's weights (8k numbers)
    instead of to the frames (7M numbers per minibatch of 256): the same function, and one
    full pass over the input less, forward and backward."""
    first = trunk[0]
    h = nn.functional.conv2d(frames, first.weight * (1.0 / 255.0), first.bias, first.stride, first.padding)
    for layer in itertools.islice(trunk, 1, None):
        h = layer(h)
    return h


def _frames_tensor(obs: np.ndarray) -> torch.Tensor:
    """The frames as a tensor sharing their memory and layout (a copy, in the same layout, only
    where numpy marks them read-only or they are not a plain array)."""
    obs = np.asarray(obs)
    return torch.from_numpy(obs if obs.flags.writeable else obs.copy(order="K"))


def _sample(logits: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Gumbel-max: an exact sample of the categorical from the collector's generator."""
    return (logits - np.log(-np.log(rng.random(logits.shape)))).argmax(-1)


class AtariAgent(nn.Module):
    """Categorical policy and value on the Nature-DQN CNN; observations ``uint8 [..., 4, 84, 84]``
    are scaled by 1/255 inside the network.

    Parameters by role (``suite.value_network``):

    - ``shared``: one trunk for both heads. ``policy_parameters()`` = trunk + policy head,
      ``value_parameters()`` = trunk + value head: an algorithm that fits the value on its own
      (TRPO, REINFORCE) then also moves the policy's features outside the policy step.
    - ``separate``: the value has its own copy of the CNN (a fresh initialisation).
    - ``auto`` (default): shared, as the paper's PPO (one loss over all parameters, ``parameters()``),
      until an algorithm asks for ``value_parameters()`` to fit the value separately; then the value
      gets its own CNN, as baselines' TRPO (``value_network='copy'``), so TRPO's step stays the only
      change of the policy and its KL bound holds. ``policy_parameters()`` is always trunk + policy head.
    """

    has_critic = True
    # Forward passes over more frames than this go in chunks: without autograd (rollout log-probs,
    # metrics) to bound memory, with autograd (whole-episode columns of group rollouts) recomputed
    # in the backward pass (activation checkpointing): ~250 KB per frame otherwise.
    CHUNK = 1024

    def __init__(self, num_actions: int, cfg: AtariConfig):
        super().__init__()
        self.value_network = cfg.value_network
        self.bf16 = cfg.precision == "bf16"
        self._in_channels, self._screen = cfg.frame_stack, cfg.screen_size
        self.trunk = nature_cnn(cfg.frame_stack, cfg.screen_size)
        self.policy_head = _orthogonal(nn.Linear(512, num_actions), 0.01)   # baselines / CleanRL: gain 0.01
        self.value_head = _orthogonal(nn.Linear(512, 1), 1.0)               # baselines / CleanRL: gain 1
        self.value_trunk: nn.Sequential | None = None
        if cfg.value_network == "separate":
            self.value_trunk = nature_cnn(cfg.frame_stack, cfg.screen_size)
        self._cache = None   # (obs, grad mode, weights' fingerprint, features) of the last dist()

    # -- forward ------------------------------------------------------------------------

    def _encode(self, trunk: nn.Sequential, frames: torch.Tensor) -> torch.Tensor:
        # channels-last input: oneDNN's convolutions run ~1.4x faster on one core (forward and
        # backward); the weights keep the default layout (TRPO flattens them with view(-1)).
        # 0..255 is exact in bf16 too, so bf16 frames go straight in. Layout first, in uint8 (a no-op
        # for frames stored channels-last, EnvpoolVecEnv's), then the type: ~2.5x faster than one
        # .to(dtype, memory_format) that transposes and converts at once.
        x = frames.contiguous(memory_format=torch.channels_last).to(torch.bfloat16 if self.bf16 else torch.float32)
        if self.bf16:
            with torch.autocast(x.device.type, dtype=torch.bfloat16):
                return _trunk_on_raw_frames(trunk, x).float()
        return _trunk_on_raw_frames(trunk, x)

    def _features(self, trunk: nn.Sequential, obs: torch.Tensor) -> torch.Tensor:
        lead = obs.shape[:-3]
        frames = obs.reshape(-1, *obs.shape[-3:])
        n = frames.shape[0]
        if n <= self.CHUNK:
            h = self._encode(trunk, frames)
        elif not torch.is_grad_enabled():
            h = torch.cat([self._encode(trunk, frames[i:i + self.CHUNK]) for i in range(0, n, self.CHUNK)])
        else:
            h = torch.cat([checkpoint(self._encode, trunk, frames[i:i + self.CHUNK], use_reentrant=False)
                           for i in range(0, n, self.CHUNK)])
        return h.reshape(*lead, h.shape[-1])

    def _fingerprint(self) -> tuple:
        """Changes whenever the trunk's weights may have: an optimiser step, an in-place change
        (version counter), new storage (``.data =``, as TRPO's line search does)."""
        return (_optimizer_steps[0], *((p.data_ptr(), p._version) for p in self.trunk.parameters()))

    def dist(self, obs: torch.Tensor) -> Categorical:
        h = self._features(self.trunk, obs)
        # PPO asks for dist(obs) and then value(obs) of the same minibatch: keep the trunk's output
        # for that one value() call (a shared trunk then costs one forward pass, not two).
        self._cache = (obs, torch.is_grad_enabled(), self._fingerprint(), h) if self.value_trunk is None else None
        return Categorical(logits=self.policy_head(h))

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        cache, self._cache = self._cache, None
        if self.value_trunk is not None:
            h = self._features(self.value_trunk, obs)
        elif (cache is not None and cache[0] is obs and cache[1] == torch.is_grad_enabled()
              and cache[2] == self._fingerprint()):
            h = cache[3]
        else:
            h = self._features(self.trunk, obs)
        return self.value_head(h).squeeze(-1)

    # -- parameters by role -------------------------------------------------------------

    def policy_parameters(self) -> list[nn.Parameter]:
        return [*self.trunk.parameters(), *self.policy_head.parameters()]

    def value_parameters(self) -> list[nn.Parameter]:
        if self.value_network == "auto" and self.value_trunk is None:
            device = self.value_head.weight.device
            self.value_trunk = nature_cnn(self._in_channels, self._screen).to(device)
            self._cache = None
        trunk = self.value_trunk if self.value_trunk is not None else self.trunk
        return [*trunk.parameters(), *self.value_head.parameters()]

    def frozen_copy(self) -> "AtariAgent":
        self._cache = None
        copy = deepcopy(self)
        copy.requires_grad_(False)
        return copy

    # -- collection ---------------------------------------------------------------------

    def observe(self, obs: torch.Tensor) -> None:
        """No input statistics: frames are scaled by the fixed 1/255."""

    def env_action(self, actions: np.ndarray) -> np.ndarray:
        return actions

    def act(self, obs: np.ndarray, rng: np.random.Generator, deterministic: bool = False) -> np.ndarray:
        with torch.inference_mode():
            h = self._encode(self.trunk, _frames_tensor(obs))
            logits = self.policy_head(h).numpy()
        return logits.argmax(-1) if deterministic else _sample(logits, rng)

    def act_and_score(self, obs: np.ndarray, rng: np.random.Generator, with_value: bool):
        """``act`` plus log pi(a|s) and V(s) from the same trunk pass (core/agent.py): the
        collector then needs no second pass over the batch, a quarter of an update's CNN work."""
        with torch.inference_mode():
            frames = _frames_tensor(obs)
            h = self._encode(self.trunk, frames)
            log_probs = torch.log_softmax(self.policy_head(h), -1).numpy()
            value = None
            if with_value:
                value_h = h if self.value_trunk is None else self._encode(self.value_trunk, frames)
                value = self.value_head(value_h).squeeze(-1).numpy()
        actions = _sample(log_probs, rng)
        return actions, log_probs[np.arange(len(actions)), actions], value

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        # a checkpoint taken after the value was split off (value_network=auto) has value_trunk.*
        if self.value_trunk is None and any(k.startswith("value_trunk.") for k in state_dict):
            self.value_trunk = nature_cnn(self._in_channels, self._screen).to(self.value_head.weight.device)
        self._cache = None
        return super().load_state_dict(state_dict, strict=strict, assign=assign)


# ---------------------------------------------------------------------------------------
# the suite


class AtariSuite(Suite):
    name = "atari"
    Config = AtariConfig
    default_envs = PAPER_GAMES
    scales = {
        # every algorithm on 2 short games for seconds: a first look, and CI
        "smoke": Scale(envs=SMOKE_GAMES, steps=1024, seeds=1, eval_every=1024, eval_episodes=1),
        # Atari-5 less Phoenix (not among the 49), 1 seed, 32k steps (131k frames): about an hour for all
        # seven algorithms with jobs=2 on 2 cores (measured per-algorithm speeds: ppo_clip ~250 steps/s
        # per core, group methods ~170, TRPO ~40 (its Fisher-vector products through the CNN) takes
        # half of the hour); ppo_clip alone takes ~5 minutes, so steps=250000 algo=ppo_clip ~35 minutes.
        "quick": Scale(envs=ATARI5_IN_49, steps=32_768, seeds=1, eval_every=16_384, eval_episodes=2),
        # the paper's protocol: 49 games x 3 seeds x 10M steps (40M frames)
        "paper": Scale(envs=PAPER_GAMES, steps=10_000_000, seeds=3, eval_every=1_000_000, eval_episodes=10),
    }

    # The paper's Table 5 for PPO; baselines' Atari settings for TRPO; the others as stated.
    _TABLE5 = {
        "num_envs": 8,            # Table 5: 8 actors
        "num_steps": 128,         # Table 5: horizon T = 128
        "lr": 2.5e-4,             # Table 5: Adam step size 2.5e-4 x alpha
        "lr_anneal": True,        # Table 5: alpha annealed linearly from 1 to 0
        "num_epochs": 3,          # Table 5: 3 epochs
        "minibatch_size": 256,    # Table 5: minibatch 32 x 8
        "gamma": 0.99,            # Table 5
        "lam": 0.95,              # Table 5: GAE lambda 0.95
        "vf_coef": 1.0,           # Table 5: c1 = 1
        "ent_coef": 0.01,         # Table 5: c2 = 0.01
        "adv_norm": "minibatch",  # baselines ppo2 (the paper's Atari code) normalises per minibatch
        "max_grad_norm": 0.5,     # baselines ppo2: gradient norm clipped at 0.5
        # kl / entropy / explained variance logged from the last epoch's minibatches, as ppo2's
        # approxkl: the exact after-update pass is one more CNN forward over the batch (~15% of a run)
        "diagnostics": "last_epoch",
    }
    algo_defaults = {
        "ppo_clip": {**_TABLE5,
                     "clip_eps": 0.1,          # Table 5: epsilon 0.1 x alpha
                     "clip_anneal": True},     # Table 5: alpha annealed linearly from 1 to 0
        # PPO-KL on Table 5's settings with the paper's best adaptive-KL setting of Table 1
        "ppo_kl": {**_TABLE5,
                   "kl_target": 0.01,          # Table 1: d_targ 0.01 (adaptive), beta initialised at 1
                   "kl_coef": 1.0},
        # baselines trpo_mpi/run_atari.py: timesteps_per_batch=512, max_kl=0.001, cg_iters=10,
        # cg_damping=1e-3, gamma=0.98, lam=1.0, vf_iters=3, vf_stepsize=1e-4 (value fitted in minibatches of 64)
        "trpo": {"num_envs": 8, "num_steps": 64, "max_kl": 0.001, "cg_iters": 10, "cg_damping": 1e-3,
                 "gamma": 0.98, "lam": 1.0, "vf_epochs": 3, "vf_lr": 1e-4, "vf_minibatch_size": 64},
        # No published Atari setting for REINFORCE with Adam: Table 5's batch (8 x 128) and step size,
        # one step per batch; the value baseline fitted as PPO's critic (3 epochs, minibatch 256).
        "reinforce": {"num_envs": 8, "num_steps": 128, "gamma": 0.99, "lr": 2.5e-4, "max_grad_norm": 0.5,
                      "vf_lr": 2.5e-4, "vf_epochs": 3, "vf_minibatch_size": 256},
        # Group methods: G whole games from one start (same seed, same no-op count), rewards clipped as
        # for the others; Table 5's step size and epochs, epsilon 0.1, gradient clipping as ppo2.
        "grpo": {"group_size": 8,           # G = 8
                 "num_groups": 1,
                 "gamma": 0.99,
                 "lr": 2.5e-4,              # Table 5
                 "num_epochs": 3,           # Table 5
                 "num_minibatches": 8,      # one game per minibatch
                 "clip_eps": 0.1,           # Table 5
                 "max_grad_norm": 0.5},     # ppo2
        "dapo": {"group_size": 8, "num_groups": 1, "gamma": 0.99,
                 "lr": 2.5e-4, "num_epochs": 3, "num_minibatches": 8, "max_grad_norm": 0.5,  # as grpo above
                 # DAPO's clip_eps_low 0.2 / clip_eps_high 0.28 kept (its defining asymmetry). Overlong
                 # shaping off: it penalises long LLM responses, but a long game is not a defect.
                 "overlong_coef": 0.0},
        "rloo": {"group_size": 4,           # k = 4 (Ahmadian et al. 2024)
                 "num_groups": 2,           # 8 games per batch, as grpo
                 "gamma": 0.99,
                 "lr": 2.5e-4,              # Table 5
                 "max_grad_norm": 0.5},     # ppo2
    }
    # The code-level options of CleanRL's ppo_atari_envpool.py (its defaults), behind the published
    # Atari numbers in shared/reference: 4 epochs, value clipping, no clip annealing, value loss
    # 0.5 * MSE with vf_coef 0.5, i.e. 0.25 on our plain MSE.
    presets = {
        "cleanrl": {"algo.num_epochs": 4, "algo.value_clip": True, "algo.clip_anneal": False,
                    "algo.vf_coef": 0.25},
    }

    def validate_env(self, env_id: str) -> None:
        game_of(env_id)

    def canonical_env(self, env_id: str) -> str:
        """Results go under the paper's game name, whichever id named it."""
        return game_of(env_id).name

    def make_env(self, env_id: str, cfg: AtariConfig, train: bool = True) -> gym.Env:
        """One gymnasium/ale-py game: ``train=True`` with episodic life and clipped rewards (as
        configured), ``train=False`` whole games with raw rewards (evaluation)."""
        return make_gymnasium_env(game_of(env_id), cfg, episodic_life=cfg.episodic_life and train,
                                  reward_clip=cfg.reward_clip and train, max_steps=cfg.max_episode_steps)

    def make_vec_env(self, env_id: str, cfg: AtariConfig, num_envs: int):
        if cfg.backend == "envpool":
            return EnvpoolVecEnv(game_of(env_id), cfg, num_envs)
        from core.envs import ListVecEnv
        return ListVecEnv([self.make_env(env_id, cfg) for _ in range(num_envs)], episode_stats="info")

    def make_agent(self, env, cfg: AtariConfig) -> AtariAgent:
        return AtariAgent(int(env.action_space.n), cfg)

    def make_collector(self, env_id: str, cfg: AtariConfig, needs: Any, algo_cfg: Any, seed: int):
        if needs.rollout == "horizon":
            return super().make_collector(env_id, cfg, needs, algo_cfg, seed)
        from core.rollout import GroupCollector
        # Whole games (a group member's score is its game's), clipped rewards for the update, cut at
        # group_max_steps; reset with one seed per group, so every member starts identically.
        game = game_of(env_id)
        envs = [make_gymnasium_env(game, cfg, episodic_life=False, reward_clip=cfg.reward_clip,
                                   max_steps=cfg.group_max_steps) for _ in range(algo_cfg.group_size)]
        collector = GroupCollector(envs, algo_cfg.num_groups, seed, cfg.group_max_steps)
        return collector, algo_cfg.group_size * algo_cfg.num_groups * cfg.group_max_steps

    def evaluate(self, agent, env, episodes: int, seed: int) -> dict[str, float]:
        """``episodes`` whole games with raw scores, played side by side (one batched forward pass
        per step), game k from seed ``seed + k``. ``suite.eval_policy=sample`` (default) samples
        the policy's actions: a greedy policy can stall a game for its 27,000 steps (Breakout
        never serving again after a lost life)."""
        envs = self._eval_envs(env, episodes)
        cfg: AtariConfig = env.atari_cfg
        rng = np.random.default_rng(seed)
        obs = np.stack([e.reset(seed=seed + k)[0] for k, e in enumerate(envs)])
        scores = np.zeros(episodes)
        lengths = np.zeros(episodes, dtype=np.int64)
        active = np.ones(episodes, dtype=bool)
        while active.any():
            idx = np.flatnonzero(active)
            actions = agent.act(obs[idx], rng, deterministic=cfg.eval_policy == "greedy")
            for a, i in zip(actions, idx):
                o, r, terminated, truncated, _ = envs[i].step(int(a))
                scores[i] += r
                lengths[i] += 1
                obs[i] = o
                if terminated or truncated:
                    active[i] = False
        mean = float(scores.mean())
        return {"eval_return_mean": mean, "eval_return_std": float(scores.std()), "eval_episodes": episodes,
                "eval_length_mean": float(lengths.mean()),
                "eval_human_normalized": env.atari_game.human_normalized(mean)}

    @staticmethod
    def _eval_envs(env, n: int) -> list:
        """``env`` and n - 1 more like it, built once and kept with it."""
        copies = env.__dict__.setdefault("atari_eval_copies", [])
        while len(copies) < n - 1:
            copies.append(make_gymnasium_env(env.atari_game, env.atari_cfg, episodic_life=False,
                                             reward_clip=False, max_steps=env.atari_cfg.max_episode_steps))
        return [env, *copies[: n - 1]]
