"""Helpers of the resume, fault and Ray tests (not a test module)."""
from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
from core.results import TIMING_COLUMNS as TIMING  # noqa: E402

# A tiny ppo_clip run on InvertedPendulum: 8 updates of 256 steps, 2 epochs of 4 minibatches.
TINY_WORDS = ["suite=mujoco", "algo=ppo_clip", "env=InvertedPendulum-v5", "steps=2048", "eval_every=1024",
              "eval_episodes=1", "seeds=1", "algo.num_steps=256", "algo.minibatch_size=64", "algo.num_epochs=2"]


def tiny_words(results_dir, *extra: str, **top) -> list[str]:
    """The command line of the tiny run, with ``key=value`` words of ``extra`` and keyword
    arguments replacing its own; another algo drops ppo_clip's options."""
    words = dict(w.split("=", 1) for w in TINY_WORDS)
    words["results_dir"] = str(results_dir)
    words.update(dict(w.split("=", 1) for w in extra))
    words.update({k: str(v) for k, v in top.items()})
    if words["algo"] != "ppo_clip":
        words = {k: v for k, v in words.items() if not k.startswith("algo.") or k + "=" + v not in TINY_WORDS}
    return [f"{k}={v}" for k, v in words.items()]


def plan_tiny(results_dir, *extra: str, **top):
    """The tiny run's RunConfigs, through the command line's parsing (see ``tiny_words``)."""
    from harness.config import parse_sweep, plan_runs, split_args
    t, a, s = split_args(tiny_words(results_dir, *extra, **top))
    return plan_runs(parse_sweep(t), a, s)


def read_rows(path: Path, drop=TIMING) -> list[dict]:
    with open(path, newline="") as f:
        return [{k: v for k, v in row.items() if k not in drop and not k.endswith("_per_s")}
                for row in csv.DictReader(f)]


def same_numbers(dir_a: Path, dir_b: Path) -> None:
    """episodes.csv, evals.csv and metrics.csv (but timing) of two run folders are equal."""
    for name in ("episodes.csv", "evals.csv", "metrics.csv"):
        a, b = read_rows(Path(dir_a) / name), read_rows(Path(dir_b) / name)
        assert a, f"{dir_a / name} is empty"
        assert a == b, f"{name} differs between {dir_a} and {dir_b}"


def record(run_dir: Path) -> dict:
    return json.loads((Path(run_dir) / "run.json").read_text())


def env_for_subprocess(**extra: str) -> dict:
    return dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT), **extra)


def _interruptible() -> None:
    # Ctrl-C as a terminal delivers it, also when the tests themselves run in the background: a
    # shell starts background jobs with SIGINT ignored, and Python keeps an ignored SIGINT ignored
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def cli(args: list[str], **kwargs) -> subprocess.Popen:
    """The command line (``python -m harness.cli``) as a subprocess; output in .stdout/.stderr."""
    return subprocess.Popen([sys.executable, "-m", "harness.cli", *args], cwd=ROOT, env=env_for_subprocess(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_interruptible, **kwargs)


def wait_for(predicate, timeout: float, what: str, proc: subprocess.Popen | None = None, poll: float = 0.01):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if proc is not None and proc.poll() is not None:
            out, err = proc.communicate()
            raise AssertionError(f"process ended (rc={proc.returncode}) before {what}:\n{out[-2000:]}\n{err[-3000:]}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(poll)


def checkpointed_pid(run_dir: Path) -> int | None:
    """The pid training the run, once a checkpoint of it exists (None before)."""
    if not (Path(run_dir) / "checkpoint.pt").exists():
        return None
    try:
        rec = record(run_dir)
    except (OSError, ValueError):
        return None
    return rec.get("pid") if rec.get("status") == "running" else None


def sigkill(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (killed, not yet reaped) counts as dead
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[-1][0] != "Z"
    except OSError:
        return False
