"""Group collection (grpo, rloo, dapo) on MuJoCo: the G episodes of a group stepped as G gymnasium
environments in turn against one native ``MujocoVecEnv`` (``suites/mujoco_vec.py``: one call per
step for the episodes still running, the same numbers bit for bit, tests/test_mujoco_vec.py).

    OMP_NUM_THREADS=1 .venv/bin/python bench/group_collection.py [--steps 50000] [--rounds 2] [--env Hopper-v5 ...]

Each measurement is a fresh process with one torch thread: a whole ``algo=grpo`` run of ``--steps``
environment steps (set-up, updates and evaluations included), once with the gymnasium
environments and once natively, alternated over ``--rounds`` rounds; it prints a Markdown table of
the steps/s (median over rounds) and their ratio. Run it alone: two busy processes on two cores
distort every number.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENGINES = ("gymnasium", "native")


def one_run(env_id: str, steps: int, engine: str) -> float:
    """Steps/s of one grpo run (called in a fresh process)."""
    import torch
    torch.set_num_threads(1)
    from harness.cli import parse_sweep, plan_runs, split_args
    from harness.train import train
    if engine == "gymnasium":   # the suite's group environments as before: G gymnasium environments
        from suites.base import Suite
        from suites.mujoco import MujocoSuite
        MujocoSuite.make_group_env = Suite.make_group_env
    with tempfile.TemporaryDirectory() as tmp:
        top, algo_args, suite_args = split_args(["suite=mujoco", "algo=grpo", f"env={env_id}", "seeds=1",
                                                 f"steps={steps}", "threads=1", f"results_dir={tmp}"])
        (run,) = plan_runs(parse_sweep(top), algo_args, suite_args)
        start = time.perf_counter()
        train(run)
        return steps / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--env", nargs="+", default=["Hopper-v5", "HalfCheetah-v5", "Walker2d-v5"])
    parser.add_argument("--one", nargs=2, metavar=("ENV", "ENGINE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps({"sps": one_run(args.one[0], args.steps, args.one[1])}))
        return
    env = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"}
    rows = []
    for env_id in args.env:
        sps = {e: [] for e in ENGINES}
        for _ in range(args.rounds):
            for engine in ENGINES:
                out = subprocess.run([sys.executable, __file__, "--steps", str(args.steps), "--one", env_id, engine],
                                     cwd=ROOT, env=env, capture_output=True, text=True, check=True)
                sps[engine].append(json.loads(out.stdout.strip().splitlines()[-1])["sps"])
        med = {e: statistics.median(v) for e, v in sps.items()}
        rows.append((env_id, med["gymnasium"], med["native"], med["native"] / med["gymnasium"]))
        print(f"{env_id}: {sps}", file=sys.stderr)
    print(f"\ngrpo, {args.steps:,} steps per run, median of {args.rounds} round(s), one thread each\n")
    print("| environment | gymnasium environments (steps/s) | native MujocoVecEnv (steps/s) | native / gymnasium |")
    print("|---|---:|---:|---:|")
    for env_id, gym_sps, native_sps, ratio in rows:
        print(f"| {env_id} | {gym_sps:,.0f} | {native_sps:,.0f} | {ratio:.2f}x |")


if __name__ == "__main__":
    main()
