"""Write the canaries of an archive's settings (``harness/canary.py``): the update metrics of a
short run of each setting on each of the archive's environments, made by the code checked out now.
Run it with the code that made the archive's runs, right after the archive is written:

    .venv/bin/python scripts/write_canaries.py ARCHIVE [LABEL ...]

Without labels: every plain algorithm the archive holds done runs of (the baselines ``compare
... archive=`` takes). ``compare`` later reruns a baseline's canaries with its own code and refuses
the archive's runs of that baseline where the numbers moved."""
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
    from core.archived import ArchiveError, archive_meta, archived_runs
    from core.results import git_commit
    from harness.canary import write_canaries
    from harness.compare import plan_label
    torch.set_num_threads(1)
    archive = Path(argv[0])
    try:
        suite = archive_meta(archive)["suite"]
        runs = archived_runs(archive, suite)
    except ArchiveError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    done = [r for r in runs.values() if r.get("status") == "done"]
    labels = argv[1:] or sorted({r["label"] for r in done if "+" not in r["label"]})
    known = {r["label"] for r in done}
    unknown = [label for label in labels if label not in known]
    if unknown:
        print(f"error: the archive holds no done run of {', '.join(unknown)}; it holds {', '.join(sorted(known))}",
              file=sys.stderr)
        return 2
    envs = sorted({r["env"] for r in done})
    path = write_canaries(archive, suite, labels, envs, git_commit(), plan_label)
    print(f"{path}: canaries of {', '.join(labels)} on {len(envs)} environment(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
