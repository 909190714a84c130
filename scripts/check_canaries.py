"""Recompute an archive's canaries with the code checked out now (``harness/canary.py``): after a
change that should not move any number (a faster kernel, a refactor), does every archived setting
still make the runs the archive holds?

    .venv/bin/python scripts/check_canaries.py ARCHIVE [LABEL ...]

Without labels: every setting the archive has canaries of. One line per setting and environment:
whether the fresh canary is the stored one bit for bit, else within ``CANARY_RTOL`` (compare
takes the archive) or not (compare refuses it; the first numbers that moved). Exit 0 when every
canary is within the tolerance, 1 when one is not, 2 on bad input. Nothing is written.
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    import torch
    from core.archived import ArchiveError, archive_meta
    from harness.canary import CanaryError, canary_run, differences, read_canaries
    from harness.compare import plan_label
    torch.set_num_threads(1)
    archive = Path(argv[0])
    try:
        suite = archive_meta(archive)["suite"]
        canaries = read_canaries(archive)
    except (ArchiveError, CanaryError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    labels = argv[1:] or sorted(canaries)
    unknown = [label for label in labels if label not in canaries]
    if unknown or not labels:
        print(f"error: the archive holds no canary of {', '.join(unknown) or 'any setting'}; it holds "
              f"{', '.join(sorted(canaries)) or 'none'}", file=sys.stderr)
        return 2
    moved = 0
    for label in labels:
        for env, stored in sorted(canaries[label].items()):
            fresh = canary_run(label, suite, env, plan_label)
            diff = differences(stored, fresh)
            verdict = ("identical" if fresh == stored else "within the tolerance") if not diff else \
                "MOVED: " + "; ".join(diff[:3])
            print(f"{label} on {env}: {verdict}", flush=True)
            moved += bool(diff)
    print(f"{moved} of {sum(len(canaries[label]) for label in labels)} canaries moved beyond the tolerance")
    return 1 if moved else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
