"""The vectorised-environment interface the fixed-horizon collector steps.

A suite returns one from ``make_vec_env``; the default, ``ListVecEnv``, steps plain
gymnasium environments in turn (for MuJoCo with one or a few environments this is the
fastest option: no inter-process traffic). A suite with a faster batched simulator (envpool
for Atari) implements the same three methods.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class VecStep:
    obs: np.ndarray                    # [N, ...] next observations (the reset one where an episode ended)
    rewards: np.ndarray                # [N] training rewards
    terminated: np.ndarray             # [N] bool: the MDP ended (no bootstrap)
    truncated: np.ndarray              # [N] bool: cut by a time limit (bootstrap from final_obs)
    final_obs: dict[int, np.ndarray] = field(default_factory=dict)  # env index -> last obs of a truncated episode
    episodes: list[tuple[int, float, int]] = field(default_factory=list)  # (env index, score, length) finished


class ListVecEnv:
    """Gymnasium environments in a list, reset in the same step as they end.

    ``episode_stats="accumulate"`` scores an episode as the sum of its rewards;
    ``"info"`` takes ``info["episode"] = {"r": score, "l": length}`` when the environment
    reports it (as gymnasium's RecordEpisodeStatistics does), for suites whose training
    episodes differ from scored ones (Atari: a life versus a game, clipped rewards).
    """

    def __init__(self, envs: list, episode_stats: str = "accumulate"):
        if episode_stats not in ("accumulate", "info"):
            raise ValueError(f"episode_stats={episode_stats!r}; valid: accumulate, info")
        self.envs, self.episode_stats = envs, episode_stats
        self.num_envs = len(envs)
        self.episode_return = np.zeros(self.num_envs)
        self.episode_length = np.zeros(self.num_envs, dtype=np.int64)

    def reset(self, seed: int) -> np.ndarray:
        self.episode_return[:] = 0.0
        self.episode_length[:] = 0
        return np.asarray([env.reset(seed=seed + i)[0] for i, env in enumerate(self.envs)])

    def step(self, actions: np.ndarray) -> VecStep:
        N = self.num_envs
        obs, rewards = [None] * N, np.zeros(N)
        terminated, truncated = np.zeros(N, dtype=bool), np.zeros(N, dtype=bool)
        out = VecStep(obs=None, rewards=rewards, terminated=terminated, truncated=truncated)
        for i, env in enumerate(self.envs):
            o, r, term, trunc, info = env.step(actions[i])
            rewards[i], terminated[i], truncated[i] = r, term, trunc
            self.episode_return[i] += r
            self.episode_length[i] += 1
            if self.episode_stats == "info" and "episode" in info:
                out.episodes.append((i, float(info["episode"]["r"]), int(info["episode"]["l"])))
            if term or trunc:
                if self.episode_stats == "accumulate":
                    out.episodes.append((i, float(self.episode_return[i]), int(self.episode_length[i])))
                self.episode_return[i] = 0.0
                self.episode_length[i] = 0
                if trunc and not term:
                    out.final_obs[i] = np.asarray(o)
                o, _ = env.reset()
            obs[i] = o
        out.obs = np.asarray(obs)
        return out

    def close(self) -> None:
        for env in self.envs:
            env.close()
