"""Results I/O: one folder per run, every file written atomically.

``results/<suite>/<env>/<algo>[+<variant>]/seed<k>/``:
  run.json      resolved config, versions, git commit, device, times, status
  episodes.csv  global_step, episode_return, episode_length   (every training episode)
  evals.csv     global_step, eval_return_mean, eval_return_std, eval_episodes
  metrics.csv   update, global_step, wall_seconds, sps, <algorithm metrics...>
  checkpoint.pt the resume point (model, optimisers, RNG states, counters)

A file is written to a temporary name in the same folder and renamed over the old one,
so a killed run never leaves a truncated file; only ``status: done`` marks completion.
"""
from __future__ import annotations

import csv
import io
import json
import os
import platform
import subprocess
import tempfile
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

EPISODE_COLUMNS = ["global_step", "episode_return", "episode_length"]
EVAL_COLUMNS = ["global_step", "eval_return_mean", "eval_return_std", "eval_episodes"]
METRIC_LEADING = ["update", "global_step", "wall_seconds", "sps"]
STATUSES = ("running", "done", "failed")


def atomic_write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode())


def write_csv(path: Path, rows: list[dict[str, Any]], columns: list[str]) -> None:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    atomic_write_text(path, buf.getvalue())


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def read_run_json(run_dir: Path) -> dict[str, Any] | None:
    """The run's record, or None if missing or unreadable (then the run is not done)."""
    try:
        return json.loads((Path(run_dir) / "run.json").read_text())
    except (OSError, ValueError):
        return None


def is_done(run_dir: Path) -> bool:
    """Done = ``run.json`` says so and every result file it lists is present and complete."""
    record = read_run_json(run_dir)
    if not record or record.get("status") != "done":
        return False
    for name, rows in record.get("files", {}).items():
        path = Path(run_dir) / name
        try:
            with open(path) as f:
                if sum(1 for _ in f) - 1 != rows:
                    return False
        except OSError:
            return False
    return True


_VERSIONS: dict[str, str] | None = None


def package_versions() -> dict[str, str]:
    global _VERSIONS
    if _VERSIONS is None:
        _VERSIONS = {"python": platform.python_version()}
        for name in ("torch", "numpy", "gymnasium", "mujoco", "envpool", "ale-py", "transformers", "pandas"):
            try:
                _VERSIONS[name] = metadata.version(name)
            except metadata.PackageNotFoundError:
                pass
    return _VERSIONS


def git_commit() -> str | None:
    try:
        root = Path(__file__).resolve().parent.parent
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=5)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=5)
        if out.returncode != 0:
            return None
        return out.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return None
