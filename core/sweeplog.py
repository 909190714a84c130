"""The wall time of a sweep, kept beside its runs: ``<results_dir>/<suite>/sweeps/<start>-<pid>.json``.

A long sweep is often run in pieces: it is killed (a laptop closed, a session ended) and the same
command resumes it from the runs' checkpoints. The wall time a user cares about is then the sum of
those pieces, which no single process sees. Every invocation that has runs to do writes one record
and refreshes it while it runs:

    {"plan_id", "command", "start", "last_seen", "end", "exit_code", "runs_planned", "runs_todo", ...}

``plan_id`` names the set of runs the command planned (the same command, resumed, plans the same
runs), so ``sweep_segments(results_dir, suite, plan_id)`` finds every piece of one sweep. A piece
that was killed has no ``end``: its ``last_seen`` (refreshed every ``HEARTBEAT_SECONDS``) bounds its
duration from below by at most that interval.
"""
from __future__ import annotations

import hashlib
import json
import os
import threading
from datetime import datetime, timezone
from pathlib import Path

from core.results import atomic_write_text

SWEEPS_DIR = "sweeps"
HEARTBEAT_SECONDS = 30.0


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def plan_id(run_ids: list[str]) -> str:
    """A short name for a set of runs, independent of their order."""
    return hashlib.sha256("\n".join(sorted(run_ids)).encode()).hexdigest()[:16]


class SweepLog:
    """``with SweepLog(root, suite, argv, run_ids, todo) as log: ...; log.exit_code = code``.

    Writing the record is best effort: a results folder that refuses it costs the sweep nothing
    (the runs' own files are what matters), so errors here are swallowed after a warning."""

    def __init__(self, results_dir: str | Path, suite: str, command: list[str], run_ids: list[str], todo: int,
                 heartbeat: float = HEARTBEAT_SECONDS):
        start = _now()
        self.path = (Path(results_dir) / suite / SWEEPS_DIR
                     / f"{start.replace(':', '').replace('+0000', 'Z')}-{os.getpid()}.json")
        self.record = {"plan_id": plan_id(run_ids), "command": command, "start": start, "last_seen": start,
                       "end": None, "exit_code": None, "runs_planned": len(run_ids), "runs_todo": todo,
                       "pid": os.getpid()}
        self.exit_code: int | None = None
        self._heartbeat = heartbeat
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._warned = False

    def _write(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(self.path, json.dumps(self.record, indent=1) + "\n")
        except OSError as exc:
            if not self._warned:
                import sys
                print(f"warning: could not record the sweep's wall time in {self.path}: {exc}", file=sys.stderr)
                self._warned = True

    def _beat(self) -> None:
        while not self._stop.wait(self._heartbeat):
            self.record["last_seen"] = _now()
            self._write()

    def __enter__(self) -> "SweepLog":
        self._write()
        self._thread = threading.Thread(target=self._beat, name="sweep-log", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.record["last_seen"] = self.record["end"] = _now()
        self.record["exit_code"] = self.exit_code if exc_type is None else f"{exc_type.__name__}"
        self._write()


def _seconds(record: dict) -> float:
    start = datetime.fromisoformat(record["start"])
    stop = datetime.fromisoformat(record.get("end") or record["last_seen"])
    return (stop - start).total_seconds()


def sweep_segments(results_dir: str | Path, suite: str, plan: str | None = None) -> list[dict]:
    """Every recorded piece of the sweeps under ``results_dir/suite`` (of one ``plan`` if given),
    oldest first, each with ``seconds`` (end or last heartbeat minus start) and ``killed``."""
    out = []
    for path in sorted((Path(results_dir) / suite / SWEEPS_DIR).glob("*.json")):
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if plan is not None and record.get("plan_id") != plan:
            continue
        out.append({**record, "seconds": _seconds(record), "killed": record.get("end") is None,
                    "file": str(path)})
    return sorted(out, key=lambda r: r["start"])
