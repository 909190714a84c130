"""Native vectorised stepping of the PPO paper's seven MuJoCo environments (gymnasium -v5).

``MujocoVecEnv(env_id, num_envs)`` has ``ListVecEnv``'s interface (``reset(seed)``,
``step(actions) -> VecStep``, ``state_dict``/``load_state_dict``, ``close``) and gives, on
the same seeds and actions, exactly (bit for bit) the observations, rewards, terminations,
truncations, final observations and episode records of a ``ListVecEnv`` of
``gym.make(env_id)`` environments with default keyword arguments: the same autoreset (an
environment that ends is reset within the step; a truncated, not terminated, episode's last
observation goes to ``final_obs``), the same ``TimeLimit`` (``gym.spec(env_id)
.max_episode_steps``) and the same reset noise, drawn from each environment's own
``gymnasium.utils.seeding.np_random(seed + i)`` generator in the -v5 environment's order.

How it is fast: one ``MjModel`` and N simulations. With MuJoCo >= 4 the N simulations are a
``mujoco.batch.Batch`` (their integration state as the rows of one array, stepped by one C
call per step, ``nthread`` threads; MuJoCo guarantees results bit-identical to a loop over
one ``MjData`` each at any thread count); older MuJoCo steps a list of ``MjData`` with
``mj_step(model, data, nstep=frame_skip)`` (backend ``"loop"``). Observations, rewards and
terminations are computed with NumPy over all N environments at once, in the same floating
point operations as the -v5 source (``gymnasium/envs/mujoco/*_v5.py``), including the
places where that is not the obvious vectorisation:

* control costs: ``w * np.sum(np.square(a))`` sums float32 actions in float32 and multiplies
  by ``w`` in the dtype NumPy gives a Python float times a NumPy scalar (float32 under
  NumPy 2, float64 under NumPy 1), as the scalar code does;
* InvertedDoublePendulum's ``x ** 2`` on a NumPy scalar is libm's ``pow(x, 2.0)``, which
  differs from ``x * x`` in the last bit for ~0.1% of inputs: computed here with
  ``np.float_power`` (the same ``pow`` per element), checked against the scalar at start;
* Reacher's ``np.linalg.norm`` of a 3-vector is BLAS ``ddot`` (FMA, its own order), which
  differs from ``sqrt(x0*x0 + x1*x1 + x2*x2)`` for ~10% of inputs: computed with a stacked
  ``np.matmul`` (the same ``ddot`` per row), checked against ``np.linalg.norm`` at start,
  with a per-row fallback.

Group collection (grpo, rloo, dapo; ``core.rollout.GroupCollector``) uses the same simulations
through ``reset_same(seed)`` (every environment reset to one state) and ``step_rows(ids,
actions)`` (only the episodes still running stepped, no autoreset): the interface of
``core.envs.ListGroupEnv``, with the same numbers.

Not reproduced: the ``info`` dicts (the collector does not read them) and
``mj_rnePostConstraint`` after each step (it fills ``cacc``/``cfrc_*``, which none of these
seven environments reads and which the next step recomputes).

Checkpoints: ``state_dict`` holds each simulation's ``mjSTATE_INTEGRATION`` state (qpos,
qvel, warm start, time, ...: everything a step reads), each environment's generator and
its episode statistics; ``load_state_dict`` also accepts a ``ListVecEnv`` state of the same
environments (pickled ``MjData`` per environment), so a run checkpointed under the gymnasium
engine resumes exactly under this one. The other way round is not exact: ``ListVecEnv``
reads this state as environments it cannot restore and starts each on a new episode.
"""
from __future__ import annotations

import copy
import pickle
import zlib

import numpy as np

from core.envs import VecStep

SUPPORTED_ENVS = ("HalfCheetah-v5", "Hopper-v5", "InvertedDoublePendulum-v5", "InvertedPendulum-v5",
                  "Reacher-v5", "Swimmer-v5", "Walker2d-v5")

# env id -> (model file, frame skip, derived MjData fields the observation or reward reads)
_MODELS = {
    "HalfCheetah-v5": ("half_cheetah.xml", 5, ()),
    "Hopper-v5": ("hopper.xml", 4, ()),
    "InvertedDoublePendulum-v5": ("inverted_double_pendulum.xml", 5, ("site_xpos", "qfrc_constraint")),
    "InvertedPendulum-v5": ("inverted_pendulum.xml", 2, ()),
    "Reacher-v5": ("reacher.xml", 2, ("xpos",)),
    "Swimmer-v5": ("swimmer.xml", 4, ()),
    "Walker2d-v5": ("walker2d_v5.xml", 4, ()),
}


def _model_path(filename: str) -> str:
    from gymnasium.envs.mujoco.mujoco_env import expand_model_path
    return expand_model_path(filename)


# ---------------------------------------------------------------------------------------
# exact vectorised forms of the scalar operations (see the module docstring)

_COST_DTYPES: dict = {}


def _ctrl_cost(weight: float, actions: np.ndarray) -> np.ndarray:
    """``weight * np.sum(np.square(a))`` per row, in the dtype the scalar expression has."""
    sums = np.square(actions).sum(axis=1)   # the per-row reduction np.sum does (same order)
    key = (weight, sums.dtype)
    w = _COST_DTYPES.get(key)
    if w is None:  # a Python float times a NumPy scalar: float32 under NumPy 2, float64 under 1.x
        w = _COST_DTYPES[key] = (weight * sums.dtype.type(1)).dtype.type(weight)
    return w * sums if w.dtype == sums.dtype else w * sums.astype(w.dtype)


def _clip10(x: np.ndarray, out: np.ndarray) -> None:
    """``np.clip(x, -10, 10)`` into ``out`` (the same values, NaN included; np.clip costs ~7 us)."""
    np.maximum(x, -10.0, out=out)
    np.minimum(out, 10.0, out=out)


def _check(candidate, reference, probe: np.ndarray) -> bool:
    try:
        return bool(np.array_equal(candidate(probe), np.array([reference(row) for row in probe])))
    except Exception:
        return False


_POW2 = None
_NORM3 = None


def _pow2():
    """Elementwise ``np.float64(x) ** 2`` as a NumPy scalar computes it."""
    global _POW2
    if _POW2 is None:
        probe = np.random.default_rng(0).normal(0.0, 1.0, 20_000) * np.repeat([1e-3, 1.0, 30.0], [6000, 7000, 7000])
        fast = lambda x: np.float_power(x, 2)  # noqa: E731  (libm pow per element, no SIMD)
        slow = np.frompyfunc(lambda v: np.float64(v) ** 2, 1, 1)
        _POW2 = fast if _check(fast, lambda v: np.float64(v) ** 2, probe) else (
            lambda x: slow(x).astype(np.float64))
    return _POW2


def _norm3():
    """``np.linalg.norm`` of each row of an [N, 3] float64 array, as gymnasium computes it."""
    global _NORM3
    if _NORM3 is None:
        probe = np.random.default_rng(1).normal(0.0, 0.2, (20_000, 3))
        fast = lambda v: np.sqrt(np.matmul(v[:, None, :], v[:, :, None])[:, 0, 0])  # noqa: E731
        _NORM3 = fast if _check(fast, np.linalg.norm, probe) else (
            lambda v: np.array([np.linalg.norm(row) for row in v]))
    return _NORM3


# ---------------------------------------------------------------------------------------
# the simulations: N states of one model

class _BatchSim:
    """MuJoCo >= 4: ``mujoco.batch.Batch``; qpos/qvel/ctrl are views of its state rows."""

    def __init__(self, model, n: int, derived: tuple[str, ...], nthread: int):
        import mujoco
        from mujoco.batch import Batch
        self.mujoco = mujoco
        self.batch = Batch(model, n, nthread=nthread)
        self.qpos, self.qvel, self.ctrl = (self.batch.bind(k) for k in ("qpos", "qvel", "ctrl"))
        # qpos and qvel side by side in the state rows: one [N, nq + nv] view of both
        (p0, np_), (v0, nv_) = (self.batch._component(c) for c in (mujoco.mjtState.mjSTATE_QPOS,
                                                                   mujoco.mjtState.mjSTATE_QVEL))
        assert (np_, nv_, v0) == (model.nq, model.nv, p0 + model.nq)
        self.qv = self.batch.state[:, p0:p0 + model.nq + model.nv]
        self.derived = {name: self.batch.bind(name) for name in derived}
        self.state_spec = int(mujoco.mjtState.mjSTATE_INTEGRATION)
        assert self.batch.nstate == mujoco.mj_stateSize(model, self.state_spec)

    def step(self, nstep: int, ids: np.ndarray | None = None) -> None:
        self.batch.step(ids=ids, nstep=nstep)   # ids: sorted, unique; None: all

    def reset(self, ids: np.ndarray, qpos: np.ndarray, qvel: np.ndarray) -> None:
        # gymnasium: mj_resetData, then qpos/qvel, then mj_forward
        self.batch.reset(ids, stage=self.mujoco.mjtStage.mjSTAGE_NONE)
        self.qpos[ids] = qpos
        self.qvel[ids] = qvel
        self.batch.forward(ids)

    def get_state(self, rows: slice = slice(None)) -> np.ndarray:
        return self.batch.state[rows].copy()

    def set_state(self, state: np.ndarray, rows: slice = slice(None)) -> None:
        self.batch.state[rows] = state


class _LoopSim:
    """Any MuJoCo: one ``MjData`` per environment, stepped in turn; fields gathered after."""

    def __init__(self, model, n: int, derived: tuple[str, ...], nthread: int = 1):
        import mujoco
        self.mujoco, self.model = mujoco, model
        self.datas = [mujoco.MjData(model) for _ in range(n)]
        d0 = self.datas[0]
        self.qv = np.zeros((n, model.nq + model.nv))
        self.qpos, self.qvel = self.qv[:, :model.nq], self.qv[:, model.nq:]
        self.ctrl = np.zeros((n, model.nu))
        self.derived = {name: np.zeros((n, *getattr(d0, name).shape)) for name in derived}
        self.state_spec = int(mujoco.mjtState.mjSTATE_INTEGRATION)
        self._nstate = mujoco.mj_stateSize(model, self.state_spec)
        for i in range(n):
            self._gather(i)

    def _gather(self, i: int) -> None:
        d = self.datas[i]
        self.qpos[i] = d.qpos
        self.qvel[i] = d.qvel
        for name, arr in self.derived.items():
            arr[i] = getattr(d, name)

    def step(self, nstep: int, ids: np.ndarray | None = None) -> None:
        mj_step, model, ctrl = self.mujoco.mj_step, self.model, self.ctrl
        for i in (range(len(self.datas)) if ids is None else ids.tolist()):
            d = self.datas[i]
            d.ctrl[:] = ctrl[i]
            mj_step(model, d, nstep=nstep)
            self._gather(i)

    def reset(self, ids: np.ndarray, qpos: np.ndarray, qvel: np.ndarray) -> None:
        for k, i in enumerate(ids):
            d = self.datas[i]
            self.mujoco.mj_resetData(self.model, d)
            d.qpos[:] = qpos[k]
            d.qvel[:] = qvel[k]
            self.mujoco.mj_forward(self.model, d)
            self.ctrl[i] = d.ctrl
            self._gather(i)

    def get_state(self, rows: slice = slice(None)) -> np.ndarray:
        ids = range(len(self.datas))[rows]
        out = np.empty((len(ids), self._nstate))
        for k, i in enumerate(ids):
            self.mujoco.mj_getState(self.model, self.datas[i], out[k], self.state_spec)
        return out

    def set_state(self, state: np.ndarray, rows: slice = slice(None)) -> None:
        for k, i in enumerate(range(len(self.datas))[rows]):
            d = self.datas[i]
            self.mujoco.mj_setState(self.model, d, np.ascontiguousarray(state[k]), self.state_spec)
            self.qpos[i], self.qvel[i], self.ctrl[i] = d.qpos, d.qvel, d.ctrl


def _has_batch() -> bool:
    try:
        from mujoco.batch import Batch  # noqa: F401
        return True
    except ImportError:
        return False


# ---------------------------------------------------------------------------------------
# the vectorised environment

class MujocoVecEnv:
    """N copies of one of ``SUPPORTED_ENVS``, stepped together; see the module docstring.

    ``max_episode_steps``: the TimeLimit (default: the registered one, 50 for Reacher, 1000
    for the others). ``backend``: ``"batch"`` (MuJoCo >= 4), ``"loop"``, or ``"auto"``.
    ``nthread``: threads of the batch backend (1: the calling thread only).
    """

    def __init__(self, env_id: str, num_envs: int, max_episode_steps: int | None = None,
                 backend: str = "auto", nthread: int = 1):
        if env_id not in _MODELS:
            raise ValueError(f"MujocoVecEnv supports {', '.join(SUPPORTED_ENVS)}; not {env_id!r}")
        if backend not in ("auto", "batch", "loop"):
            raise ValueError(f"backend={backend!r}; valid: auto, batch, loop")
        import gymnasium as gym
        import mujoco
        filename, self.frame_skip, derived = _MODELS[env_id]
        self.env_id, self.num_envs = env_id, int(num_envs)
        self.max_episode_steps = int(max_episode_steps if max_episode_steps is not None
                                     else gym.spec(env_id).max_episode_steps)
        self.model = mujoco.MjModel.from_xml_path(_model_path(filename))
        data = mujoco.MjData(self.model)
        self.init_qpos, self.init_qvel = data.qpos.ravel().copy(), data.qvel.ravel().copy()
        self.dt = self.model.opt.timestep * self.frame_skip
        if backend == "auto":
            backend = "batch" if _has_batch() else "loop"
        self.backend = backend
        sim_cls = _BatchSim if backend == "batch" else _LoopSim
        self.sim = sim_cls(self.model, self.num_envs, derived, nthread)
        kind = env_id.split("-")[0]
        self._obs_fn = getattr(self, f"_obs_{kind}")
        self._step_fn = getattr(self, f"_step_{kind}")
        self._reset_fn = getattr(self, f"_reset_{kind}")
        if kind in ("Hopper", "Walker2d"):
            nq, nv = self.model.nq, self.model.nv
            self._obs_low = np.r_[np.full(nq - 1, -np.inf), np.full(nv, -10.0)]
            self._obs_high = -self._obs_low
            if kind == "Hopper":   # columns 1.. of [qpos, qvel]: z, angle, the rest of state_vector()[2:]
                self._healthy_cols = slice(1, nq + nv)
                self._healthy_low = np.r_[0.7, -0.2, np.full(nq + nv - 3, -100.0)]
                self._healthy_high = np.r_[np.inf, 0.2, np.full(nq + nv - 3, 100.0)]
            else:
                self._healthy_cols = slice(1, 3)
                self._healthy_low, self._healthy_high = np.array([0.8, -1.0]), np.array([2.0, 1.0])
        if kind == "InvertedDoublePendulum":
            self._pow2 = _pow2()
        if kind == "Reacher":
            self._norm3 = _norm3()
            self._fingertip, self._target = self.model.body("fingertip").id, self.model.body("target").id
        self.rngs: list[np.random.Generator | None] = [None] * self.num_envs
        self.episode_return = np.zeros(self.num_envs)
        self.episode_length = np.zeros(self.num_envs, dtype=np.int64)  # also TimeLimit's elapsed steps
        self.obs_dim = self._obs_fn(slice(None)).shape[1]

    # -- the interface of core/envs.py ----------------------------------------------------

    def reset(self, seed: int | None = None, rows: slice = slice(None)) -> np.ndarray:
        """Reset environments ``rows`` (default all), the i-th of them seeded ``seed + i``;
        returns their observations. Rows are how the runs of a stack share one vectorised
        environment (``core.envs.EnvRows``): each resets as if it were alone."""
        from gymnasium.utils import seeding
        ids = np.arange(self.num_envs)[rows]
        self.episode_return[ids] = 0.0
        self.episode_length[ids] = 0
        for k, i in enumerate(ids.tolist()):
            self.rngs[i] = seeding.np_random(None if seed is None else seed + k)[0]
        self._reset_envs(ids)
        return self._obs_fn(rows)

    def step(self, actions: np.ndarray) -> VecStep:
        actions = np.asarray(actions)
        if actions.shape != (self.num_envs, self.model.nu):
            raise ValueError(f"actions of shape {actions.shape}; expected {(self.num_envs, self.model.nu)}")
        obs, rewards, terminated = self._advance(actions)
        self.episode_return += rewards
        self.episode_length += 1
        truncated = self.episode_length >= self.max_episode_steps
        out = VecStep(obs=obs, rewards=rewards, terminated=terminated, truncated=truncated)
        done = terminated | truncated
        if done.any():
            ids = np.flatnonzero(done)
            for i in ids.tolist():
                out.episodes.append((i, float(self.episode_return[i]), int(self.episode_length[i])))
                if not terminated[i]:
                    out.final_obs[i] = obs[i].copy()
            self.episode_return[ids] = 0.0
            self.episode_length[ids] = 0
            self._reset_envs(ids)
            obs[ids] = self._obs_fn(ids)
        return out

    def _advance(self, actions: np.ndarray, ids: np.ndarray | None = None):
        """Step simulations ``ids`` (sorted, unique; None: all) with their rows of ``actions`` [N, nu];
        returns every row's observation, reward and termination (``step`` and ``step_rows``)."""
        sim = self.sim
        before = sim.qpos[:, 0].copy()
        if ids is None:
            sim.ctrl[...] = actions
        else:
            sim.ctrl[ids] = actions[ids]
        sim.step(self.frame_skip, ids)
        obs = self._obs_fn(slice(None))
        rewards, terminated = self._step_fn(actions, before, obs)
        return obs, rewards, terminated

    def close(self) -> None:
        pass

    # -- groups (core.envs.ListGroupEnv's interface, for core.rollout.GroupCollector) -------------

    def reset_same(self, seed: int) -> np.ndarray:
        """Reset every environment seeded ``seed``: one shared initial state, as G gymnasium
        environments each given ``reset(seed=seed)``; returns their observations."""
        from gymnasium.utils import seeding
        for i in range(self.num_envs):
            self.rngs[i] = seeding.np_random(seed)[0]
        self.episode_return[:] = 0.0
        self.episode_length[:] = 0
        self._reset_envs(np.arange(self.num_envs))
        return self._obs_fn(slice(None))

    def step_rows(self, ids: np.ndarray, actions: np.ndarray) -> VecStep:
        """Step environments ``ids`` (sorted, unique) with ``actions`` [len(ids), nu]; the others
        hold still. No autoreset: an ended episode stays ended until ``reset_same``. Returns the
        stepped rows' ``VecStep`` (numbered as in ``ids``; no ``episodes``: a score is the sum of
        the rewards). The rewards and terminations are computed for every row, as ``step`` does
        (the same per-row arithmetic), and the stepped rows' taken."""
        ids = np.asarray(ids, dtype=np.int64)
        full = np.zeros((self.num_envs, self.model.nu), dtype=np.asarray(actions).dtype)
        full[ids] = actions
        obs, rewards, terminated = self._advance(full, None if len(ids) == self.num_envs else ids)
        self.episode_length[ids] += 1
        return VecStep(obs=obs[ids], rewards=rewards[ids], terminated=terminated[ids],
                       truncated=self.episode_length[ids] >= self.max_episode_steps)

    # -- checkpointing (as ListVecEnv) ------------------------------------------------------

    def state_dict(self, rows: slice = slice(None)) -> dict:
        """The state of environments ``rows`` (default all): a vectorised environment of that
        many, whichever rows of which environment it came from."""
        ids = range(self.num_envs)[rows]
        return {"kind": "mujoco_vec", "env_id": self.env_id, "state_spec": self.sim.state_spec,
                "sim_state": self.sim.get_state(rows), "episode_return": self.episode_return[rows].copy(),
                "episode_length": self.episode_length[rows].copy(),
                "rngs": [None if self.rngs[i] is None else copy.deepcopy(self.rngs[i].bit_generator.state)
                         for i in ids],
                # read by ListVecEnv.load_state_dict if the run resumes under the gymnasium engine:
                # it cannot restore these, so each environment there starts a new episode
                "envs": [None] * len(ids)}

    def load_state_dict(self, state: dict, obs: np.ndarray, rows: slice = slice(None)) -> tuple[np.ndarray, bool]:
        """Restore a ``state_dict`` of this class, or of a ``ListVecEnv`` of the same
        environments, into environments ``rows`` (default all); returns the observations to
        continue from and whether it is exact. A state that does not fit is not loaded: every
        environment starts a fresh episode, seeded as ``ListVecEnv`` seeds the environments it
        cannot restore."""
        ids = np.arange(self.num_envs)[rows]
        restored = (self._restore_own(state, rows) if state.get("kind") == "mujoco_vec"
                    else self._restore_list(state, rows))
        if restored:
            return np.array(obs, copy=True), True
        from gymnasium.utils import seeding
        lengths = np.asarray(state.get("episode_length", np.zeros(len(ids))), dtype=np.int64)
        if lengths.shape != (len(ids),):
            lengths = np.zeros(len(ids), dtype=np.int64)
        for k, i in enumerate(ids.tolist()):
            self.rngs[i] = seeding.np_random(int(1_000_003 * (k + 1) + lengths[k]))[0]
        self.episode_return[ids] = 0.0
        self.episode_length[ids] = 0
        self._reset_envs(ids)
        return self._obs_fn(rows), False

    def _restore_own(self, state: dict, rows: slice) -> bool:
        sim_state = np.asarray(state["sim_state"])
        if (state["env_id"] != self.env_id or state["state_spec"] != self.sim.state_spec
                or sim_state.shape != self.sim.get_state(rows).shape
                or len(state["rngs"]) != len(range(self.num_envs)[rows])):
            return False
        self.sim.set_state(sim_state, rows)
        for i, saved in zip(range(self.num_envs)[rows], state["rngs"]):
            self.rngs[i] = _generator(saved)
        self.episode_return[rows] = state["episode_return"]
        self.episode_length[rows] = state["episode_length"]
        return True

    def _restore_list(self, state: dict, rows: slice) -> bool:
        """A ``ListVecEnv.state_dict()`` (core/envs.py) of gym.make(env_id) environments."""
        import mujoco
        envs = state.get("envs")
        if not isinstance(envs, list) or len(envs) != len(range(self.num_envs)[rows]):
            return False
        states, rngs, elapsed = [], [], []
        try:
            for saved in envs:
                if saved is None or saved.get("kind") != "mujoco":
                    return False
                data = pickle.loads(zlib.decompress(saved["data"]))
                if data.qpos.shape != (self.model.nq,) or data.qvel.shape != (self.model.nv,):
                    return False
                row = np.empty(mujoco.mj_stateSize(self.model, self.sim.state_spec))
                mujoco.mj_getState(self.model, data, row, self.sim.state_spec)
                states.append(row)
                rngs.append(_generator(saved["np_random"]))
                steps = [w["_elapsed_steps"] for w in saved["wrappers"] if "_elapsed_steps" in w]
                elapsed.append(steps[0] if steps else None)
        except Exception:  # another MuJoCo version, another model
            return False
        self.sim.set_state(np.stack(states), rows)
        for i, rng in zip(range(self.num_envs)[rows], rngs):
            self.rngs[i] = rng
        self.episode_return[rows] = state["episode_return"]
        self.episode_length[rows] = [e if e is not None else n for e, n in zip(elapsed, state["episode_length"])]
        return True

    # -- resets -------------------------------------------------------------------------------

    def _reset_envs(self, ids: np.ndarray) -> None:
        qpos = np.empty((len(ids), self.model.nq))
        qvel = np.empty((len(ids), self.model.nv))
        for k, i in enumerate(ids.tolist()):
            qpos[k], qvel[k] = self._reset_fn(self.rngs[i])
        self.sim.reset(ids, qpos, qvel)

    def _uniform_reset(self, rng, scale: float):
        qpos = self.init_qpos + rng.uniform(low=-scale, high=scale, size=self.model.nq)
        qvel = self.init_qvel + rng.uniform(low=-scale, high=scale, size=self.model.nv)
        return qpos, qvel

    def _reset_HalfCheetah(self, rng):
        qpos = self.init_qpos + rng.uniform(low=-0.1, high=0.1, size=self.model.nq)
        qvel = self.init_qvel + 0.1 * rng.standard_normal(self.model.nv)
        return qpos, qvel

    def _reset_Hopper(self, rng):
        return self._uniform_reset(rng, 5e-3)

    _reset_Walker2d = _reset_Hopper

    def _reset_Swimmer(self, rng):
        return self._uniform_reset(rng, 0.1)

    def _reset_InvertedPendulum(self, rng):
        return self._uniform_reset(rng, 0.01)

    def _reset_InvertedDoublePendulum(self, rng):
        qpos = self.init_qpos + rng.uniform(low=-0.1, high=0.1, size=self.model.nq)
        qvel = self.init_qvel + rng.standard_normal(self.model.nv) * 0.1
        return qpos, qvel

    def _reset_Reacher(self, rng):
        qpos = rng.uniform(low=-0.1, high=0.1, size=self.model.nq) + self.init_qpos
        while True:
            goal = rng.uniform(low=-0.2, high=0.2, size=2)
            if np.linalg.norm(goal) < 0.2:
                break
        qpos[-2:] = goal
        qvel = self.init_qvel + rng.uniform(low=-0.005, high=0.005, size=self.model.nv)
        qvel[-2:] = 0
        return qpos, qvel

    # -- observations (rows ``ids`` of the simulations' current fields) --------------------------
    # Each writes a new [n, obs_dim] array; NumPy calls are few, since each costs ~1 us.

    def _obs_HalfCheetah(self, ids):
        return self.sim.qv[ids, 1:].copy()          # qpos[1:], qvel

    def _obs_Hopper(self, ids):                      # also Walker2d
        # qpos[1:], np.clip(qvel, -10, 10): clipping with [-inf, inf] bounds leaves qpos as it is
        return np.minimum(np.maximum(self.sim.qv[ids, 1:], self._obs_low), self._obs_high)

    _obs_Walker2d = _obs_Hopper

    def _obs_Swimmer(self, ids):
        return self.sim.qv[ids, 2:].copy()          # qpos[2:], qvel

    def _obs_InvertedPendulum(self, ids):
        return self.sim.qv[ids].copy()              # qpos, qvel

    def _obs_InvertedDoublePendulum(self, ids):
        qpos, qvel = self.sim.qpos[ids], self.sim.qvel[ids]
        angles = np.ascontiguousarray(qpos[:, 1:])   # contiguous, as gymnasium's np.sin input
        obs = np.empty((len(angles), 9))
        obs[:, 0] = qpos[:, 0]
        obs[:, 1:3] = np.sin(angles)   # into contiguous temporaries: NumPy's SIMD sin/cos
        obs[:, 3:5] = np.cos(angles)   # may take another path for strided outputs
        _clip10(qvel, out=obs[:, 5:8])
        _clip10(self.sim.derived["qfrc_constraint"][ids, :1], out=obs[:, 8:9])
        return obs

    def _obs_Reacher(self, ids):
        qpos, qvel, xpos = self.sim.qpos[ids], self.sim.qvel[ids], self.sim.derived["xpos"]
        theta = np.ascontiguousarray(qpos[:, :2])
        obs = np.empty((len(theta), 10))
        obs[:, 0:2] = np.cos(theta)
        obs[:, 2:4] = np.sin(theta)
        obs[:, 4:6] = qpos[:, 2:]
        obs[:, 6:8] = qvel[:, :2]
        np.subtract(xpos[ids, self._fingertip, :2], xpos[ids, self._target, :2], out=obs[:, 8:10])
        return obs

    # -- rewards and terminations ------------------------------------------------------------------
    # ``1.0 * x`` (forward_reward_weight) is x exactly and is left out; booleans add as 1.0 / 0.0.

    def _step_HalfCheetah(self, actions, x_before, obs):
        x_velocity = (self.sim.qpos[:, 0] - x_before) / self.dt
        return x_velocity - _ctrl_cost(0.1, actions), np.zeros(len(obs), dtype=bool)

    def _step_Swimmer(self, actions, x_before, obs):
        x_velocity = (self.sim.qpos[:, 0] - x_before) / self.dt
        return x_velocity - _ctrl_cost(1e-4, actions), np.zeros(len(obs), dtype=bool)

    def _step_Hopper(self, actions, x_before, obs):  # also Walker2d
        qv = self.sim.qv
        x_velocity = (qv[:, 0] - x_before) / self.dt
        # is_healthy: every strict bound of the -v5 source at once (Hopper: 0.7 < z < inf,
        # -0.2 < angle < 0.2, -100 < state_vector()[2:] < 100; Walker2d: z and angle only)
        h = self._healthy_cols
        healthy = ((self._healthy_low < qv[:, h]) & (qv[:, h] < self._healthy_high)).all(axis=1)
        return (x_velocity + healthy) - _ctrl_cost(1e-3, actions), ~healthy

    _step_Walker2d = _step_Hopper

    def _step_InvertedPendulum(self, actions, x_before, obs):
        terminated = ~np.isfinite(obs).all(axis=1) | (np.abs(obs[:, 1]) > 0.2)
        return (~terminated).astype(np.float64), terminated

    def _step_InvertedDoublePendulum(self, actions, x_before, obs):
        site = self.sim.derived["site_xpos"]
        x, y = site[:, 0, 0], site[:, 0, 2]
        qvel = self.sim.qvel
        terminated = y <= 1
        pow2 = self._pow2
        dist_penalty = 0.01 * pow2(x) + pow2(y - 2)
        vel_penalty = 1e-3 * pow2(qvel[:, 1]) + 5e-3 * pow2(qvel[:, 2])
        alive_bonus = 10.0 * (~terminated)
        return alive_bonus - dist_penalty - vel_penalty, terminated

    def _step_Reacher(self, actions, x_before, obs):
        xpos = self.sim.derived["xpos"]
        vec = xpos[:, self._fingertip] - xpos[:, self._target]
        # -norm * 1 + -sum(a^2) * 1: both products are exact
        return -self._norm3(vec) - np.square(actions).sum(axis=1), np.zeros(len(obs), dtype=bool)




def _generator(bit_generator_state: dict) -> np.random.Generator:
    """A generator in a saved state (gymnasium's np_random: a PCG64 Generator)."""
    cls = getattr(np.random, bit_generator_state["bit_generator"])
    rng = np.random.Generator(cls())
    rng.bit_generator.state = copy.deepcopy(bit_generator_state)
    return rng


def make_mujoco_vec_env(env_id: str, num_envs: int, **kwargs):
    """``MujocoVecEnv`` for the supported environments, else None (use ``ListVecEnv``)."""
    return MujocoVecEnv(env_id, num_envs, **kwargs) if env_id in _MODELS else None
