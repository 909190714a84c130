"""The physics floor of a MuJoCo sweep: how long MuJoCo's stepping alone takes for the paper's runs.

    OMP_NUM_THREADS=1 .venv/bin/python bench/physics_floor.py [--runs-per-env 48 3] [--steps 1000000]
        [--cores 2] [--num-envs 12] [--timing-steps 20000]

For each of the seven environments, environment steps per CPU second of physics alone (the
``physics`` column of ``bench/mujoco_stepping.py``: ``mj_step`` x frame skip on N simulators with
nothing else, the episodes reset where the native engine's ended, best of 2), then, for each
``--runs-per-env`` count, the minutes that physics alone takes for that many runs of ``--steps``
on every environment, spread over ``--cores`` cores. No engine can make those runs faster on
this machine; what a sweep takes beyond it is everything else (the networks, the updates, the
evaluations, the bookkeeping).

48 runs per environment are the paper's two sweeps (Table 1's 33 and the main job's other 15);
3 are one candidate of ``compare ... seeds=auto``'s first round at the paper's protocol.
The CPU clock is little distorted by another busy process, so this may run beside a sweep
(niced); its wall-clock numbers would not.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.mujoco_stepping import physics_sps  # noqa: E402
from suites.mujoco import PAPER_ENVS  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs-per-env", nargs="+", type=int, default=[48, 3])
    parser.add_argument("--steps", type=int, default=1_000_000, help="environment steps per run")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--num-envs", type=int, default=12, help="simulators stepped together (a stack of 12)")
    parser.add_argument("--timing-steps", type=int, default=20_000)
    args = parser.parse_args()
    rates = {}
    print(f"| environment | physics alone, steps per CPU second (N = {args.num_envs}) | "
          f"CPU seconds per {args.steps:,}-step run |")
    print("|---|---:|---:|")
    for env_id in PAPER_ENVS:
        rates[env_id] = physics_sps(env_id, args.num_envs, args.timing_steps, repeats=2)
        print(f"| {env_id} | {rates[env_id]:,.0f} | {args.steps / rates[env_id]:,.1f} |", flush=True)
    per_run_set = sum(args.steps / r for r in rates.values())   # one run on every environment
    print()
    for runs in args.runs_per_env:
        minutes = runs * per_run_set / args.cores / 60
        print(f"{runs} run(s) per environment x {len(rates)} environments x {args.steps:,} steps: "
              f"physics alone {minutes:,.1f} min on {args.cores} cores")


if __name__ == "__main__":
    main()
