"""``./run_all.sh key=value ...``: plan, run what is missing, summarise.

Exit codes: 0 all runs done; 1 some run failed; 2 bad input (nothing written).
"""
from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

from harness.config import ConfigError, parse_sweep, plan_runs, split_args
from harness.results import is_done

USAGE = """usage: ./run_all.sh [key=value ...]

  suite=mujoco            the suite to run
  algo=ppo_clip,trpo      algorithms (default: all seven)
  env=Hopper-v5           environments (default: the scale's list)
  scale=smoke|quick|paper budget preset (default: paper)
  seeds=3 steps=1000000   override the scale's seeds and steps per run
  jobs=2                  runs in parallel, one torch thread each (default: cores)
  results_dir=results     where results go
  preset=cleanrl          a named bundle of code-level options of the suite
  algo.<option>=value     an algorithm option, e.g. algo.clip_eps=0.1 (stored as a variant)
  suite.<option>=value    a suite option, e.g. suite.obs_norm=false
"""

# Rough training speed of one run on one core of the development machine, for the plan's
# time estimate only (docs/BENCHMARKS.md has the measured numbers).
ESTIMATED_SPS = {"mujoco": 3000, "atari": 150}   # atari: ~250 ppo, ~40 trpo (CNN-bound), ~170 groups


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in ("-h", "--help", "help"):
        print(USAGE)
        return 0
    if argv and argv[0] in ("report", "compare"):
        from analysis.cli import main as analysis_main
        return analysis_main(argv)
    try:
        top, algo_overrides, suite_overrides = split_args(argv)
        sweep = parse_sweep(top)
        runs = plan_runs(sweep, algo_overrides, suite_overrides)
        results_root = Path(sweep.results_dir)
        _check_writable(results_root)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    todo = [r for r in runs if not is_done(r.run_dir)]
    _print_plan(sweep, runs, todo)
    if todo:
        from harness.executor import run_local
        results = run_local(todo, min(sweep.jobs, len(todo)))
    else:
        results = []
    failed = [r for r in results if r["status"] != "done"]
    from harness.summary import summary_table
    print()
    print(summary_table(runs))
    print(f"\nresults: {results_root.resolve()}")
    if failed:
        print(f"\n{len(failed)} run(s) failed:", file=sys.stderr)
        for r in failed:
            print(f"  {r['run_id']}: {r['error']}", file=sys.stderr)
        return 1
    return 0


def _check_writable(root: Path) -> None:
    """Fail before the sweep starts if results cannot be written there."""
    probe_dir = root
    while not probe_dir.exists():
        probe_dir = probe_dir.parent
    if not probe_dir.is_dir():
        raise ConfigError(f"results_dir={root}: {probe_dir} is not a folder")
    import os
    if not os.access(probe_dir, os.W_OK | os.X_OK):
        raise ConfigError(f"results_dir={root}: no permission to write in {probe_dir}")


def _print_plan(sweep, runs, todo) -> None:
    per_algo = Counter(r.label for r in runs)
    envs = sorted({r.env for r in runs})
    steps = sum(r.steps for r in todo)
    sps = ESTIMATED_SPS.get(sweep.suite, 3000)
    eta_min = steps / sps / max(1, min(sweep.jobs, len(todo) or 1)) / 60
    print(f"pg-arena: suite={sweep.suite} scale={sweep.scale}")
    print(f"  algorithms: {', '.join(per_algo)}")
    print(f"  environments: {', '.join(envs)}")
    print(f"  runs: {len(runs)} ({len(runs) - len(todo)} already done, {len(todo)} to run), "
          f"{runs[0].steps:,} steps each" if runs else "  runs: 0")
    if todo:
        print(f"  estimated time: ~{eta_min:.0f} min with jobs={min(sweep.jobs, len(todo))} "
              f"(at ~{sps} steps/s per run)")


if __name__ == "__main__":
    sys.exit(main())
