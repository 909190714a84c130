"""The envpool backend: N games in one envpool pool behind the ``VecStep`` interface
(``core/envs.py``), for the training environments of fixed-horizon collection.

envpool (Weng et al. 2022, https://github.com/sail-sg/envpool) implements the preprocessing of
Mnih et al. 2015 / OpenAI baselines' ``wrap_deepmind`` in C++ (no-op starts, frame skip with
max-pooling, 84x84 grayscale, frame stacking, episodic life, FIRE reset, reward clipping);
``envpool_options`` maps the suite's config onto its options. envpool resets a finished
environment on the *next* call to ``step``; ``EnvpoolVecEnv`` steps just the finished ids once
more right away, so that the collector sees the reset observation in the same step.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np
import torch

from core.envs import VecStep
from suites.atari.games import Game

if TYPE_CHECKING:
    from suites.atari import AtariConfig


def envpool_options(cfg: AtariConfig, train: bool) -> dict[str, Any]:
    """envpool's Atari options for the suite's preprocessing (see ``suites/atari/__init__.py``;
    ``train=False``: whole games, raw rewards)."""
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
