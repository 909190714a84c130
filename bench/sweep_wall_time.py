"""The measured wall time of a sweep, summed over the pieces it ran in.

    .venv/bin/python bench/sweep_wall_time.py suite=mujoco grid=table1 results_dir=results

Takes the sweep's own arguments (the ones given to ./run_all.sh), plans it as the command would, and
reads the records every invocation of that plan left in <results_dir>/<suite>/sweeps/
(core/sweeplog.py), and with archive=DIR also those the archive recorded (pieces run on machines
gone since; a piece in both is read from the results folder): one line per piece (start, duration, runs to do, how it ended), the total,
and the planner's estimate for the whole sweep at the reference speed. A piece without an end was
killed (or is still running): it counts up to its last heartbeat.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness.config import estimated_minutes, parse_sweep, plan_batches, plan_runs, split_args  # noqa: E402
from core.archived import archive_meta  # noqa: E402
from core.sweeplog import plan_id, sweep_segments  # noqa: E402


def main(argv: list[str]) -> int:
    top, algo_overrides, suite_overrides = split_args(argv)
    sweep = parse_sweep(top)
    runs = plan_runs(sweep, algo_overrides, suite_overrides)
    plan = plan_id([r.run_id for r in runs])
    pieces = sweep_segments(sweep.results_dir, sweep.suite, plan) if Path(sweep.results_dir).exists() else []
    if sweep.archive:   # the pieces that ran on machines gone since, as the archive recorded them
        seen = {(p["start"], p.get("pid")): p for p in pieces}
        for p in archive_meta(sweep.archive).get("sweeps", []):
            if p.get("plan_id") == plan and (p["start"], p.get("pid")) not in seen:
                seen[(p["start"], p.get("pid"))] = p
        pieces = sorted(seen.values(), key=lambda p: p["start"])
    units = plan_batches(runs, sweep.batch_runs, sweep.jobs)
    print(f"sweep {' '.join(argv)}: {len(runs)} runs, plan {plan}; planned from nothing done: "
          f"~{estimated_minutes(units, sweep.jobs):.0f} min by the planner's estimate")
    if not pieces:
        print("no recorded pieces (sweeps record their wall time from core/sweeplog.py on)")
        return 1
    for p in pieces:
        ended = f"exit {p['exit_code']}" if not p["killed"] else "killed (or running): up to its last heartbeat"
        print(f"  {p['start']}  {p['seconds'] / 60:7.1f} min  {p['runs_todo']:4d} runs to do  {ended}")
    total = sum(p["seconds"] for p in pieces)
    print(f"measured: {total / 60:.1f} min ({total / 3600:.2f} h) in {len(pieces)} piece(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
