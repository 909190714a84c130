"""The batched engine against one run per process, on the same sweep and the same cores.

    OMP_NUM_THREADS=1 .venv/bin/python bench/batched.py [--env Hopper-v5 HalfCheetah-v5]
        [--steps 100000] [--jobs 2] [--grid table1] [--results-dir results/bench_batched]

For each environment, the sweep ``./run_all.sh suite=mujoco grid=table1 env=<env> seeds=3
steps=<steps> jobs=<jobs>`` (Table 1's 11 settings x 3 seeds: 33 runs) runs twice from empty
results folders, in one invocation:

  one per process   ``batch_runs=1``: each run in its own process (the engine before this one);
  batched           the planner's default: compatible runs as stacks, one process per stack.

Each line: wall seconds of the whole sweep (planning, every run, the evaluations; no report),
total environment steps per second (33 x steps / wall), and the ratio batched / one per
process. Then the share of physics alone that the batched sweep reaches: its steps per second
per process against ``mj_step`` x frame skip with nothing else, on one core
(``bench/mujoco_stepping.py``'s physics column, measured here on the batched runs' actions).
Run it alone: a second busy process on two cores distorts every number.
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def sweep(env_id: str, steps: int, jobs: int, grid: str, results_dir: Path, batch_runs: int | None) -> float:
    """Wall seconds of one sweep from an empty folder."""
    shutil.rmtree(results_dir, ignore_errors=True)
    words = [f"suite=mujoco", f"grid={grid}", f"env={env_id}", "seeds=3", f"steps={steps}", f"jobs={jobs}",
             f"results_dir={results_dir}", "report=false"]
    if batch_runs is not None:
        words.append(f"batch_runs={batch_runs}")
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "harness.cli", *words], cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"sweep failed ({' '.join(words)}):\n{done.stderr[-2000:]}")
    plan = [line for line in done.stdout.splitlines() if line.strip().startswith(("runs:", "batched:", "estimated"))]
    print("    " + "\n    ".join(plan))
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", nargs="+", default=["Hopper-v5", "HalfCheetah-v5"])
    parser.add_argument("--steps", type=int, default=100_000, help="environment steps per run")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--grid", default="table1")
    parser.add_argument("--results-dir", default="results/bench_batched")
    args = parser.parse_args()
    root = Path(args.results_dir)
    rows = []
    for env_id in args.env:
        from harness.config import parse_sweep, plan_runs, split_args
        t, a, s = split_args([f"grid={args.grid}", f"env={env_id}", "seeds=3", f"steps={args.steps}"])
        n_runs = len(plan_runs(parse_sweep(t), a, s))
        total = n_runs * args.steps
        print(f"{env_id}: {n_runs} runs x {args.steps:,} steps, jobs={args.jobs}")
        print("  one run per process (batch_runs=1)")
        lone = sweep(env_id, args.steps, args.jobs, args.grid, root / env_id / "one_per_process", 1)
        print(f"    {lone:.0f} s, {total / lone:,.0f} steps/s")
        print("  batched (the planner's default)")
        batched = sweep(env_id, args.steps, args.jobs, args.grid, root / env_id / "batched", None)
        print(f"    {batched:.0f} s, {total / batched:,.0f} steps/s")
        from bench.mujoco_stepping import physics_sps
        physics = physics_sps(env_id)
        rows.append((env_id, n_runs, lone, batched, total, physics))
    print(f"\n| environment | runs x steps | one run per process: s, steps/s | batched: s, steps/s | "
          f"batched / one per process | physics alone, 1 core: steps/s | batched per process / physics |")
    print("|---|---|---|---|---|---|---|")
    for env_id, n_runs, lone, batched, total, physics in rows:
        per_process = total / batched / args.jobs
        print(f"| {env_id} | {n_runs} x {args.steps:,} | {lone:.0f}, {total / lone:,.0f} | {batched:.0f}, "
              f"{total / batched:,.0f} | **{lone / batched:.2f}x** | {physics:,.0f} | {per_process / physics:.2f} |")


if __name__ == "__main__":
    main()
