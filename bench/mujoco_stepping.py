"""Environment stepping on one core: gymnasium (ListVecEnv) vs the native engine vs physics only.

    OMP_NUM_THREADS=1 .venv/bin/python bench/mujoco_stepping.py [--env Hopper-v5 HalfCheetah-v5]
        [--num-envs 1 8 32] [--steps 20000] [--repeats 3] [--threads 2]

For each environment and N, with the same seeded random float32 actions (as the collector
passes them), environment steps per second of:
  gymnasium      ListVecEnv of gym.make(env_id) (what suites/mujoco.py uses today);
  native         suites/mujoco_vec.MujocoVecEnv, backend "batch" (mujoco.batch, MuJoCo >= 4),
                 one thread;
  native-loop    the same engine on its fallback backend (a list of MjData);
  native-Tthr    (with --threads T) the batch backend on T threads;
  physics        N MjData, ``data.ctrl[:] = a; mj_step(model, data, nstep=frame_skip)`` and
                 nothing else (no observation, reward or autoreset; the episodes are reset with
                 mj_resetData at the steps where the native engine's ended, so that all
                 columns step the same kind of trajectories).
Each cell is the best of ``--repeats`` timings of about ``--steps`` environment steps, timed
by ``--clock``: ``cpu`` (default; this process's CPU seconds, which other processes on a
busy machine distort far less than wall seconds; the multi-threaded column is then total
CPU, not throughput) or ``wall``. The ratios are native / gymnasium and native / physics.
Run it alone for wall-clock numbers: a second busy process on two cores distorts them.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.envs import ListVecEnv  # noqa: E402
from suites.mujoco_vec import MujocoVecEnv, _has_batch  # noqa: E402


def _actions(env_id: str, n: int, steps: int) -> np.ndarray:
    import gymnasium as gym
    space = gym.make(env_id, disable_env_checker=True).action_space
    rng = np.random.default_rng(0)
    return rng.uniform(space.low, space.high, (steps, n, space.shape[0])).astype(np.float32)


CLOCK = time.process_time


def time_vec(vec, actions: np.ndarray) -> tuple[float, np.ndarray]:
    vec.reset(seed=0)
    dones = np.zeros(actions.shape[:2], dtype=bool)
    step = vec.step
    start = CLOCK()
    for t in range(len(actions)):
        out = step(actions[t])
        dones[t] = out.terminated | out.truncated
    elapsed = CLOCK() - start
    return actions.shape[0] * actions.shape[1] / elapsed, dones


def time_physics(env_id: str, actions: np.ndarray, dones: np.ndarray) -> float:
    import mujoco
    eng = MujocoVecEnv(env_id, 1, backend="loop")
    model, fs = eng.model, eng.frame_skip
    datas = [mujoco.MjData(model) for _ in range(actions.shape[1])]
    for d in datas:
        mujoco.mj_forward(model, d)
    mj_step, mj_reset, mj_forward = mujoco.mj_step, mujoco.mj_resetData, mujoco.mj_forward
    ends = [np.flatnonzero(row).tolist() for row in dones]
    start = CLOCK()
    for t in range(len(actions)):
        a = actions[t]
        for i, d in enumerate(datas):
            d.ctrl[:] = a[i]
            mj_step(model, d, nstep=fs)
        for i in ends[t]:
            mj_reset(model, datas[i])
            mj_forward(model, datas[i])
    elapsed = CLOCK() - start
    return actions.shape[0] * actions.shape[1] / elapsed


def physics_sps(env_id: str, num_envs: int = 16, steps: int = 20_000, repeats: int = 3) -> float:
    """The physics column alone: ``mj_step`` x frame skip on ``num_envs`` simulators, episodes reset
    where the native engine's ended on the same random actions, best of ``repeats`` (``CLOCK``)."""
    actions = _actions(env_id, num_envs, max(steps // num_envs, 100))
    _, dones = time_vec(MujocoVecEnv(env_id, num_envs), actions)
    return max(time_physics(env_id, actions, dones) for _ in range(repeats))


def gym_vec(env_id: str, n: int) -> ListVecEnv:
    import gymnasium as gym
    return ListVecEnv([gym.make(env_id, disable_env_checker=True) for _ in range(n)])


def bench(env_id: str, n: int, steps: int, repeats: int, threads: int) -> dict[str, float]:
    actions = _actions(env_id, n, max(steps // n, 100))
    cases = {"gymnasium": lambda: gym_vec(env_id, n)}
    if _has_batch():
        cases["native"] = lambda: MujocoVecEnv(env_id, n, backend="batch")
    cases["native-loop"] = lambda: MujocoVecEnv(env_id, n, backend="loop")
    if threads > 1 and _has_batch():
        cases[f"native-{threads}thr"] = lambda: MujocoVecEnv(env_id, n, backend="batch", nthread=threads)
    best: dict[str, float] = {}
    dones = None
    for _ in range(repeats):
        for name, make in cases.items():
            sps, d = time_vec(make(), actions)
            best[name] = max(best.get(name, 0.0), sps)
            dones = d if name.startswith("native") and dones is None else dones
        best["physics"] = max(best.get("physics", 0.0), time_physics(env_id, actions, dones))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", nargs="+", default=["Hopper-v5", "HalfCheetah-v5"])
    parser.add_argument("--num-envs", nargs="+", type=int, default=[1, 8, 32])
    parser.add_argument("--steps", type=int, default=20_000, help="environment steps per timing")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1, help="also time the batch backend on this many threads")
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    args = parser.parse_args()
    global CLOCK
    CLOCK = time.process_time if args.clock == "cpu" else time.perf_counter
    import mujoco
    print(f"MuJoCo {mujoco.__version__}; environment steps per {args.clock} second, best of {args.repeats} "
          f"x ~{args.steps} steps\n")
    rows = []
    for env_id in args.env:
        for n in args.num_envs:
            rows.append((env_id, n, bench(env_id, n, args.steps, args.repeats, args.threads)))
    names = list(rows[0][2])
    head = "| env | N | " + " | ".join(names) + " | native/gymnasium | native/physics |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for env_id, n, r in rows:
        native = r.get("native", r["native-loop"])
        cells = " | ".join(f"{r[k]:,.0f}" for k in names)
        print(f"| {env_id} | {n} | {cells} | {native / r['gymnasium']:.2f}x | {native / r['physics']:.2f} |")


if __name__ == "__main__":
    main()
