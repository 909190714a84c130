"""Take settings out of an archive, so that a sweep with ``archive=`` makes their runs again.

    .venv/bin/python scripts/drop_from_archive.py ARCHIVE LABEL [LABEL ...] [--why "..."]

For runs that a fixed bug made: the archive's summary (runs, scores, curves, metrics) loses every
run of the given labels (``ppo_clip``, ``ppo_kl+kl_target=0.003``, ...), done or unfinished with
its carried checkpoint; the rest, the sweeps' wall-time records and the folds stay as they were,
and the fold that drops them is recorded with ``--why``. Their canaries go too (a canary checks
runs the archive no longer holds). Refused, nothing written, for a label the archive does not hold.
Git keeps what was dropped.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from analysis.archive import load_archive, write_archive  # noqa: E402
from analysis.load import AnalysisError  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("archive", type=Path)
    parser.add_argument("labels", nargs="+")
    parser.add_argument("--why", default="", help="recorded in the archive's folds")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        # read from a copy: the archive is rewritten in place, carried checkpoints and all
        copy = Path(tmp) / "archive"
        try:
            shutil.copytree(args.archive, copy)
            summary = load_archive(copy)
        except (OSError, AnalysisError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        return drop(summary, args)


def drop(summary, args) -> int:
    suite = next(iter(summary.budgets), None) or str(summary.runs["suite"].iloc[0])
    held = set(summary.runs["label"].astype(str))
    unknown = [label for label in args.labels if label not in held]
    if unknown:
        print(f"error: archive {args.archive} holds no run of {', '.join(unknown)}; it holds {', '.join(sorted(held))}",
              file=sys.stderr)
        return 2
    labels = set(args.labels)

    def keep(table):
        return None if table is None else table[~table["label"].astype(str).isin(labels)].reset_index(drop=True)

    before = len(summary.runs)
    summary.runs = keep(summary.runs)
    summary.frame = keep(summary.frame)
    summary.scores = {kind: keep(table) for kind, table in summary.scores.items()}
    summary.curves, summary.wall_curves = keep(summary.curves), keep(summary.wall_curves)
    summary.folds = [*summary.folds, {"made": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                                      "from": str(args.archive), "dropped": sorted(labels), "why": args.why}]
    write_archive(summary, suite, args.archive)
    meta_path = args.archive / "archive.json"     # write_archive recorded the temporary copy as a fold: not one
    meta = json.loads(meta_path.read_text())
    meta["folds"] = meta["folds"][:-1]
    meta_path.write_text(json.dumps(meta, indent=1) + "\n")
    canary_path = args.archive / "canary.json"
    if canary_path.exists():
        canaries = json.loads(canary_path.read_text())
        canaries["canaries"] = {k: v for k, v in canaries["canaries"].items() if k not in labels}
        canary_path.write_text(json.dumps(canaries, indent=1) + "\n")
    print(f"{args.archive}: dropped {before - len(summary.runs)} run(s) of {', '.join(sorted(labels))}; "
          f"{len(summary.runs)} left")
    return 0


if __name__ == "__main__":
    sys.exit(main())
