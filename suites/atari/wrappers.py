"""The gymnasium / ale-py backend: ``ALE/<Game>-v5`` (ale-py; Bellemare et al. 2013, Machado et
al. 2018) with gymnasium's ``AtariPreprocessing`` and the wrappers of OpenAI baselines'
``wrap_deepmind`` (the preprocessing of Mnih et al. 2015 that the paper's code used):
``RecordScore`` (the whole game's raw score), ``EpisodicLife`` (EpisodicLifeEnv), ``FireReset``
(FireResetEnv), ``ClipReward`` (ClipRewardEnv) and ``StackFrames`` (FrameStack, stacking as
envpool does); ``make_gymnasium_env`` puts them together. Used for evaluation, group rollouts and
``suite.backend=gymnasium``, and the reference in the tests.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import gymnasium as gym
import numpy as np

from suites.atari.games import Game

if TYPE_CHECKING:
    from suites.atari import AtariConfig


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
