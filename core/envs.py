"""The vectorised-environment interface the fixed-horizon collector steps.

A suite returns one from ``make_vec_env``; the default, ``ListVecEnv``, steps plain
gymnasium environments in turn (for MuJoCo with one or a few environments this is the
fastest option: no inter-process traffic). A suite with a faster batched simulator (envpool
for Atari) implements the same three methods (and, to be resumed exactly,
``state_dict``/``load_state_dict``).

Saving environment state (the resume point of a killed run): ``env_state`` /
``load_env_state`` save and restore one gymnasium environment exactly when it is a
MuJoCo environment (``gymnasium.envs.mujoco.MujocoEnv``) under the wrappers ``gym.make``
adds (TimeLimit's elapsed steps, OrderEnforcing, PassiveEnvChecker,
RecordEpisodeStatistics), with its ``np_random`` generator. The simulator is saved as its
whole ``MjData`` (pickled and compressed, ~30-60 kB): qpos/qvel alone are not enough (the
constraint solver's warm start changes the next step), and neither is MuJoCo's
integration state (Ant and Humanoid read body positions computed during the previous
step before stepping).
Any other environment (Atari/ALE, a custom simulator, an unknown wrapper that may hold
state) cannot be saved exactly: ``env_state`` returns None, and on resume that
environment starts a fresh episode (its unfinished episode is dropped from
``episodes.csv``), so the resumed run follows a different trajectory from that point.
This is a documented limitation, not an error.
"""
from __future__ import annotations

import copy
import pickle
import zlib
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


    def rows(self, lo: int, hi: int) -> "VecStep":
        """The step of environments ``lo..hi-1`` alone, numbered from 0 (one run's share of a
        shared environment, ``EnvRows``)."""
        return VecStep(obs=self.obs[lo:hi], rewards=self.rewards[lo:hi], terminated=self.terminated[lo:hi],
                       truncated=self.truncated[lo:hi],
                       final_obs={i - lo: o for i, o in self.final_obs.items() if lo <= i < hi},
                       episodes=[(i - lo, r, n) for i, r, n in self.episodes if lo <= i < hi])


class EnvRows:
    """Environments ``lo..hi-1`` of a vectorised environment shared by the runs of a stack (the
    batched engine): one run's ``vec_env``. It resets, saves and restores only its rows (its
    checkpoint is that of a vectorised environment of ``hi - lo`` environments, so a run resumes
    alone or stacked); all rows step together, through ``step_together``.

    ``shared`` implements ``reset(seed, rows=)``, ``state_dict(rows=)`` and
    ``load_state_dict(state, obs, rows=)`` (``suites/mujoco_vec.py``)."""

    def __init__(self, shared, lo: int, hi: int):
        self.shared, self.lo, self.hi = shared, lo, hi
        self.rows = slice(lo, hi)
        self.num_envs = hi - lo

    def reset(self, seed: int) -> np.ndarray:
        return self.shared.reset(seed, rows=self.rows)

    def step(self, actions: np.ndarray) -> VecStep:
        return step_together([self], [actions])[0]

    def state_dict(self) -> dict:
        return self.shared.state_dict(rows=self.rows)

    def load_state_dict(self, state: dict, obs: np.ndarray) -> tuple[np.ndarray, bool]:
        return self.shared.load_state_dict(state, obs, rows=self.rows)

    def close(self) -> None:
        pass


def split_rows(shared, counts: list[int]) -> list[EnvRows]:
    """``shared``'s environments as consecutive rows of ``counts[k]`` environments each."""
    if sum(counts) != shared.num_envs:
        raise ValueError(f"{sum(counts)} rows asked of a vectorised environment of {shared.num_envs}")
    bounds = np.cumsum([0, *counts])
    return [EnvRows(shared, int(lo), int(hi)) for lo, hi in zip(bounds[:-1], bounds[1:])]


def step_together(envs: list, actions: list[np.ndarray]) -> list[VecStep]:
    """Step each run's environments with its actions: one call of the shared environment for
    runs that are rows of one (rows of no listed run step with zero actions: a run that stopped
    early in a stack), else one call each."""
    first = envs[0]
    if isinstance(first, EnvRows) and all(isinstance(e, EnvRows) and e.shared is first.shared for e in envs):
        shared = first.shared
        if len(envs) == 1 and first.num_envs == shared.num_envs:
            return [shared.step(actions[0])]
        full = np.zeros((shared.num_envs, *np.shape(actions[0])[1:]), dtype=np.asarray(actions[0]).dtype)
        for e, a in zip(envs, actions):
            full[e.rows] = a
        step = shared.step(full)
        return [step.rows(e.lo, e.hi) for e in envs]
    return [e.step(a) for e, a in zip(envs, actions)]


class ListGroupEnv:
    """The G environments of group collection (``core.rollout.GroupCollector``): every one reset
    with one seed (one shared initial state), then the environments ``ids`` whose episodes go on
    stepped, without autoreset. Gymnasium environments in a list, stepped in turn; a suite with
    a batched simulator implements the same ``reset_same`` / ``step_rows``
    (``suites/mujoco_vec.py``), giving the same numbers.

    ``step_rows`` returns a ``VecStep`` of the stepped rows only (numbered as in ``ids``): its
    ``episodes`` hold ``(k, score, length)`` where the environment reports a raw score of its own
    (``info["episode"]``, e.g. Atari's unclipped game score); otherwise an episode's score is the
    sum of its rewards, which the collector keeps."""

    def __init__(self, envs: list):
        self.envs = envs
        self.num_envs = len(envs)
        self.max_episode_steps = getattr(getattr(envs[0], "spec", None), "max_episode_steps", None)

    def reset_same(self, seed: int) -> np.ndarray:
        return np.asarray([env.reset(seed=seed)[0] for env in self.envs])

    def step_rows(self, ids: np.ndarray, actions: np.ndarray) -> VecStep:
        n = len(ids)
        obs, rewards = [None] * n, np.zeros(n)
        terminated, truncated = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
        out = VecStep(obs=None, rewards=rewards, terminated=terminated, truncated=truncated)
        for k, i in enumerate(ids):
            obs[k], rewards[k], terminated[k], truncated[k], info = self.envs[i].step(actions[k])
            if (terminated[k] or truncated[k]) and "episode" in info:
                out.episodes.append((k, float(info["episode"]["r"]), int(info["episode"]["l"])))
        out.obs = np.asarray(obs)
        return out

    def close(self) -> None:
        for env in self.envs:
            env.close()


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

    # -- checkpointing ------------------------------------------------------------------

    def state_dict(self) -> dict:
        """Episode statistics so far and each environment's state (None where it cannot be saved)."""
        return {"episode_return": self.episode_return.copy(), "episode_length": self.episode_length.copy(),
                "envs": [env_state(env) for env in self.envs]}

    def load_state_dict(self, state: dict, obs: np.ndarray) -> tuple[np.ndarray, bool]:
        """Restore a ``state_dict``; ``obs`` are the observations the collector had then.

        Returns the observations to continue from and whether every environment was
        restored exactly. An environment whose state was not saved is reset (seeded from
        its index and the saved episode length, so a resume is still reproducible) and its
        unfinished episode is forgotten.
        """
        self.episode_return[:] = state["episode_return"]
        self.episode_length[:] = state["episode_length"]
        obs = np.array(obs, copy=True)
        exact = True
        for i, (env, saved) in enumerate(zip(self.envs, state["envs"])):
            if saved is not None and load_env_state(env, saved):
                continue
            exact = False
            obs[i] = env.reset(seed=int(1_000_003 * (i + 1) + self.episode_length[i]))[0]
            self.episode_return[i] = 0.0
            self.episode_length[i] = 0
        return obs, exact


# ---------------------------------------------------------------------------------------
# one environment's state

# Wrappers whose state is known: attribute names to save (others are stateless).
_WRAPPER_STATE = {
    "TimeLimit": ("_elapsed_steps",),
    "OrderEnforcing": ("_has_reset",),
    "PassiveEnvChecker": (),
    "RecordEpisodeStatistics": ("episode_returns", "episode_lengths", "episode_count"),
}


def _wrapper_chain(env) -> list:
    chain = []
    while hasattr(env, "env") and env is not getattr(env, "unwrapped", env):
        chain.append(env)
        env = env.env
    return chain


def env_state(env) -> dict | None:
    """Everything needed to continue ``env`` bit-for-bit, or None when that cannot be saved
    (see the module docstring for which environments can)."""
    try:
        from gymnasium.envs.mujoco.mujoco_env import MujocoEnv
    except ImportError:  # mujoco not installed: nothing here is a MuJoCo environment
        return None
    base = getattr(env, "unwrapped", env)
    if not isinstance(base, MujocoEnv):
        return None
    wrappers = []
    for w in _wrapper_chain(env):
        names = _WRAPPER_STATE.get(type(w).__name__)
        if names is None:
            return None  # an unknown wrapper may hold state we would silently lose
        wrappers.append({n: copy.deepcopy(getattr(w, n)) for n in names if hasattr(w, n)})
    return {"kind": "mujoco", "data": zlib.compress(pickle.dumps(base.data), 1), "wrappers": wrappers,
            "np_random": copy.deepcopy(base.np_random.bit_generator.state)}


def load_env_state(env, state: dict) -> bool:
    """Restore ``env_state(env)``'s output into an environment of the same kind; False
    (the environment untouched) if it does not fit this environment or MuJoCo version."""
    if state.get("kind") != "mujoco" or env_state(env) is None:
        return False
    chain = _wrapper_chain(env)
    if len(chain) != len(state["wrappers"]):
        return False
    import mujoco
    base = env.unwrapped
    try:
        data = pickle.loads(zlib.decompress(state["data"]))
        if (data.qpos.shape, data.qvel.shape, data.act.shape) != (base.data.qpos.shape, base.data.qvel.shape,
                                                                  base.data.act.shape):
            return False
        mujoco.mj_copyData(base.data, base.model, data)
    except Exception:  # another MuJoCo version, another model
        return False
    for w, saved in zip(chain, state["wrappers"]):
        for name, value in saved.items():
            setattr(w, name, copy.deepcopy(value))
    base.np_random.bit_generator.state = copy.deepcopy(state["np_random"])
    return True
