"""``plan=true``: what a sweep (or ``compare``) would do with each run, found without doing it.

For each run it says where the run would start: done (skipped), done in the archive (skipped),
resumes from step N (from its own checkpoint, or from the one an archive carries), or new (from
step 0). A checkpoint is read and checked as the resume reads and checks it
(``harness.train.resumable_checkpoint``), so one that is corrupt or was written by another config
is named as the start from step 0 it would be. The step is the collector's ``global_step`` the
checkpoint holds: ``run.json``'s ``global_step`` is written only when an attempt ends, and
``metrics.csv`` may hold rows past the checkpoint (a failed run writes up to its failed update;
a kill between the rows and the checkpoint leaves the rows ahead). Nothing here writes a file.
"""
from __future__ import annotations

import gzip
import zlib
from pathlib import Path
from typing import TextIO

from core.results import done_problem, read_run_json
from harness.config import RunConfig
from harness.train import CHECKPOINT, CheckpointError, checkpoint_position, resumable_checkpoint


def run_start(run: RunConfig, carried: Path | None = None, archive: str | None = None) -> tuple[int | None, str]:
    """``(step, what)``: how ``run``, not done, would start if it were trained now. ``step`` is the
    global step it resumes from (None: it starts from step 0); ``carried``: the gzipped checkpoint
    an archive (``archive``) would restore into its folder (``core.archived.carried_checkpoint``)."""
    checkpoint = run.run_dir / CHECKPOINT
    if checkpoint.exists():
        where, data = "its checkpoint", None
    elif carried is not None:
        where, checkpoint = f"the checkpoint archive {archive} carries", carried
        try:
            data = gzip.decompress(carried.read_bytes())
        except (OSError, EOFError, zlib.error) as exc:
            return None, f"new: the checkpoint archive {archive} carries is unreadable ({exc}); starts from step 0"
    else:
        return None, _new(run)
    try:
        step, update = checkpoint_position(resumable_checkpoint(checkpoint, run, data))
    except (OSError, CheckpointError, KeyError, TypeError, ValueError) as exc:
        return None, f"new: {exc}, so the run drops it and starts from step 0"
    return step, f"resumes from step {step:,} (update {update}, {where})"


def _new(run: RunConfig) -> str:
    """A run with no checkpoint to resume from: why its folder holds something anyway."""
    if not (run.run_dir / "run.json").exists():
        return "new"
    record = read_run_json(run.run_dir)
    if not isinstance(record, dict):
        return "new: its run.json is unreadable; redone from step 0"
    if record.get("status") == "done":
        return f"new: its stored results are damaged ({done_problem(run.run_dir)}); redone from step 0"
    return f"new: run.json says {record.get('status')} but no checkpoint was written; starts from step 0"


def print_sweep_plan(out: TextIO, units: list[list[RunConfig]], done: list[RunConfig], in_archive: list[RunConfig],
                     archive: str | None = None, carried: dict[str, Path] | None = None) -> None:
    """The sweep's plan run by run: each process (one run or a stack) in the order it starts, where
    each of its runs would start, then the runs not run (done here, or done in the archive)."""
    carried = carried or {}
    starts = {r.run_id: run_start(r, carried.get(r.run_id), archive) for unit in units for r in unit}
    width = max((len(r.run_id) for r in [*done, *in_archive, *(r for u in units for r in u)]), default=0)
    print("\nplan (plan=true: nothing is run or written):", file=out)
    for i, unit in enumerate(units, 1):
        print(f"  process {i} of {len(units)}: " + (f"a stack of {len(unit)} runs" if len(unit) > 1 else "1 run"),
              file=out)
        for r in unit:
            print(f"    {r.run_id:<{width}}  {starts[r.run_id][1]}", file=out)
    if done or in_archive:
        print(f"  not run ({len(done) + len(in_archive)}):", file=out)
        for r in done:
            print(f"    {r.run_id:<{width}}  done (skipped)", file=out)
        for r in in_archive:
            print(f"    {r.run_id:<{width}}  done in archive {archive} (skipped)", file=out)
    resumes = sum(step is not None for step, _ in starts.values())
    print(f"  {len(starts) + len(done) + len(in_archive)} run(s): {len(done)} done, {len(in_archive)} done in the "
          f"archive, {resumes} resume from a checkpoint, {len(starts) - resumes} new, in {len(units)} process(es)",
          file=out)
