"""A sweep's view of a compact archive (``analysis/archive.py``): which runs it already holds.

An archive outlives the machine that made it (it is small enough to commit), so a long sweep can
go on elsewhere: ``./run_all.sh ... archive=DIR`` does not run again what the archive holds done
(same resolved config), and resumes what it holds unfinished from the checkpoint the archive
carries (``unfinished/<suite>/<env>/<label>/seed<k>/``: the run's ``run.json`` and its
``checkpoint.pt`` gzipped, as the run left them). ``./run_all.sh report ... archive=DIR results_dir=R
save_archive=DIR`` folds the new runs in. Only the standard library here: a sweep reads this
before it loads anything heavy.
"""
from __future__ import annotations

import gzip
import io
import json
import shutil
from pathlib import Path

ARCHIVE_FILE = "archive.json"
RUNS_FILE = "runs.jsonl.gz"
UNFINISHED_DIR = "unfinished"    # the carried checkpoints of the runs not done when it was written
CARRIED = "checkpoint.pt.gz"     # a carried checkpoint: the run's checkpoint.pt, gzipped


class ArchiveError(ValueError):
    """A folder that is not a readable archive, or one of another suite."""


def archive_meta(path: str | Path) -> dict:
    meta_path = Path(path) / ARCHIVE_FILE
    try:
        return json.loads(meta_path.read_text())
    except (OSError, ValueError):
        raise ArchiveError(f"{path} is not a pg-arena archive (no readable {ARCHIVE_FILE}; write one with "
                           f"./run_all.sh report suite=<suite> save_archive=<folder>)") from None


def archived_runs(path: str | Path, suite: str) -> dict[str, dict]:
    """The archive's runs of ``suite`` by run id: ``status``, ``config`` and ``path`` (absolute)."""
    meta = archive_meta(path)
    if meta.get("suite") != suite:
        raise ArchiveError(f"archive {path} holds suite {meta.get('suite')}, not {suite}")
    try:
        with gzip.open(Path(path) / RUNS_FILE, "rt") as f:
            rows = [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError) as exc:
        raise ArchiveError(f"archive {path} is unreadable: {type(exc).__name__}: {exc}") from None
    return {row["run_id"]: {**row, "path": str(Path(path) / row["path"])} for row in rows}


def gzip_bytes(data: bytes) -> bytes:
    """``data`` gzipped with no timestamp or name inside: the same bytes give the same file."""
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0, filename="") as f:
        f.write(data)
    return buf.getvalue()


def carry_checkpoint(run_dir: Path, carried: Path) -> None:
    """Copy an unfinished run's resume point into an archive: its checkpoint gzipped (with no
    timestamp, so an unchanged checkpoint gives the same bytes) and its run.json. ``run_dir`` may
    itself be a carried folder (an archive written again)."""
    carried.mkdir(parents=True, exist_ok=True)
    if (run_dir / "checkpoint.pt").is_file():
        (carried / CARRIED).write_bytes(gzip_bytes((run_dir / "checkpoint.pt").read_bytes()))
    elif (run_dir / CARRIED).resolve() != (carried / CARRIED).resolve():
        shutil.copyfile(run_dir / CARRIED, carried / CARRIED)
    if (run_dir / "run.json").is_file() and (run_dir / "run.json").resolve() != (carried / "run.json").resolve():
        shutil.copyfile(run_dir / "run.json", carried / "run.json")


def carried_checkpoint(record: dict, run_dir: Path) -> Path | None:
    """The archive's gzipped checkpoint that ``restore_checkpoint`` would put into ``run_dir``
    (None: it would put none there). Reads nothing but the names of files."""
    carried = Path(record["path"])
    if record.get("status") == "done" or not (carried / CARRIED).is_file():
        return None
    if (run_dir / "checkpoint.pt").exists() or (run_dir / "run.json").exists():
        return None
    return carried / CARRIED


def restore_checkpoint(record: dict, run_dir: Path) -> bool:
    """Put an archived unfinished run's checkpoint (and run.json) into ``run_dir``, when the archive
    carries one and the folder has neither a checkpoint nor a run.json of its own (nothing here is
    ever overwritten). The run's own resume then checks the config and continues from it."""
    if carried_checkpoint(record, run_dir) is None:
        return False
    carried = Path(record["path"])
    from core.results import atomic_write_bytes
    run_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(run_dir / "checkpoint.pt", gzip.decompress((carried / CARRIED).read_bytes()))
    if (carried / "run.json").is_file():   # its start time; the run rewrites it when it starts
        shutil.copyfile(carried / "run.json", run_dir / "run.json")
    return True
