"""One lock per run folder, so that two sweeps on one results folder never run a run twice.

A sweep takes a run's lock (``<run_dir>/.lock``, an ``fcntl.flock``) just before it starts
the run and releases it when the run has ended; a run whose lock another sweep holds is
skipped and reported as "running elsewhere". The lock is non-blocking and belongs to the
open file, so the kernel releases it when its holder dies (even by SIGKILL): a crashed
sweep never leaves a stale lock behind. The lock file itself stays (removing it would
race with a sweep opening it). On NFS, Linux maps ``flock`` to NFS byte-range locks, so
sweeps on different machines sharing a results folder exclude each other too.
"""
from __future__ import annotations

import fcntl
import os
from pathlib import Path

LOCK_NAME = ".lock"


class RunLock:
    """A non-blocking exclusive lock on one run folder."""

    def __init__(self, run_dir: Path):
        self.path = Path(run_dir) / LOCK_NAME
        self._fd: int | None = None

    def acquire(self) -> bool:
        """Take the lock; False (at once) if another process holds it."""
        if self._fd is not None:
            return True
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        return True

    def release(self) -> None:
        if self._fd is not None:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            finally:
                os.close(self._fd)
                self._fd = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def __enter__(self) -> "RunLock":
        if not self.acquire():
            raise BlockingIOError(f"{self.path.parent} is locked by another sweep")
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def is_locked(run_dir: Path) -> bool:
    """Whether another process holds the run's lock now (a snapshot; for reports)."""
    lock = RunLock(run_dir)
    if not lock.path.exists():
        return False
    if lock.acquire():
        lock.release()
        return False
    return True
