"""Faults a sweep survives, each really caused: a killed worker, a killed driver, damaged
files in a run folder, runs that fail, an unusable results folder, two sweeps at once."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import algos
from fault_helpers import (ROOT, checkpointed_pid, cli, env_for_subprocess, pid_alive, plan_tiny,
                           read_rows, record, same_numbers, sigkill, tiny_words, wait_for)
from harness import cli as cli_mod
from core import results as results_mod
from harness.executor import RETRIES, WorkerDied, run_local, run_sweep
from harness.locks import RunLock, is_locked
from core.results import done_problem, is_done
from harness.train import train


def _updates(run_dir: Path) -> list[int]:
    return [int(r["update"]) for r in read_rows(run_dir / "metrics.csv")]


# --------------------------------------------------------------------------------------
# a worker process killed with SIGKILL mid-run (local executor)


def test_killed_worker_is_retried_and_resumes_from_its_checkpoint(tmp_path):
    runs = plan_tiny(tmp_path / "sweep", seeds=2, checkpoint_every=1)
    out: dict = {}
    sweep = threading.Thread(target=lambda: out.update(results=run_local(runs, jobs=2, show_progress=False)))
    sweep.start()
    try:
        pid = wait_for(lambda: checkpointed_pid(runs[0].run_dir), 60, "a checkpoint of seed 0")
        assert pid != os.getpid()
        sigkill(pid)
    finally:
        sweep.join(timeout=120)
    assert not sweep.is_alive()
    results = out["results"]
    assert [r["run_id"] for r in results] == [r.run_id for r in runs]  # none missing, none twice
    assert [r["status"] for r in results] == ["done", "done"], results
    killed = results[0]
    assert killed["attempts"] == 2, "the killed run was not retried"
    assert killed["resumed_from"]["global_step"] >= 256, "the retry started from step 0"
    assert record(runs[0].run_dir)["resumed_from"] == killed["resumed_from"]
    assert results[1]["attempts"] == 1
    for run in runs:
        assert is_done(run.run_dir)
        assert _updates(run.run_dir) == list(range(1, 9))
    # and the resumed run has exactly the numbers of one never killed
    (ref,) = plan_tiny(tmp_path / "ref", checkpoint_every=1)
    train(ref)
    same_numbers(ref.run_dir, runs[0].run_dir)


class _DyingBackend:
    """Every attempt's worker dies: the run is given up after the retries, marked failed."""

    def __init__(self):
        self.attempts = 0

    def attempt(self, runs):
        self.attempts += 1
        yield ("progress", 0, 10)
        raise WorkerDied("worker 1234 was killed by SIGKILL")

    def shutdown(self):
        pass


def test_a_run_whose_worker_keeps_dying_is_marked_failed(tmp_path):
    (run,) = plan_tiny(tmp_path)
    backend = _DyingBackend()
    (result,) = run_sweep([run], backend, max_in_flight=1, show_progress=False)
    assert backend.attempts == RETRIES + 1
    assert result["status"] == "failed" and "SIGKILL" in result["error"]
    rec = record(run.run_dir)
    assert rec["status"] == "failed" and "worker died" in rec["error"]
    assert not is_done(run.run_dir)


# --------------------------------------------------------------------------------------
# the driver killed mid-sweep and started again with the same arguments


def test_killed_driver_restarted_runs_only_the_unfinished_runs(tmp_path):
    args = tiny_words(tmp_path, steps=1536, seeds=3, jobs=1, checkpoint_every=1, batch_runs=1)
    runs = plan_tiny(tmp_path, steps=1536, seeds=3)
    first = cli(args)
    try:
        wait_for(lambda: is_done(runs[0].run_dir), 90, "seed 0 done", first)
        worker = wait_for(lambda: checkpointed_pid(runs[1].run_dir), 60, "a checkpoint of seed 1", first)
        sigkill(first.pid)
        first.communicate(timeout=30)
    finally:
        if first.poll() is None:
            first.kill()
            first.communicate()
    # the worker dies with its driver: no orphan keeps writing into the run folder
    wait_for(lambda: not pid_alive(worker), 10, f"worker {worker} to die with the driver")
    done_before = (runs[0].run_dir / "run.json").read_bytes()
    assert not is_done(runs[1].run_dir) and not is_done(runs[2].run_dir)

    second = cli(args)
    out, err = second.communicate(timeout=120)
    assert second.returncode == 0, err[-3000:]
    assert "runs: 3 (1 already done, 2 to run)" in out
    assert "ran 2 run(s) (1 resumed from a checkpoint)" in out
    assert (runs[0].run_dir / "run.json").read_bytes() == done_before  # not run again
    assert record(runs[1].run_dir)["resumed_from"]["global_step"] >= 256
    assert record(runs[2].run_dir)["resumed_from"] is None
    for run in runs:
        assert is_done(run.run_dir) and _updates(run.run_dir) == list(range(1, 7))


@pytest.mark.parametrize("to", ["group", "driver"])
def test_ctrl_c_is_one_line_and_leaves_each_run_at_its_checkpoint(tmp_path, to):
    """SIGINT to the process group (Ctrl-C in a terminal) or to the driver alone (issue 30: a double
    KeyboardInterrupt traceback, and workers started again after the driver had killed them): one
    line, exit 130, no attempt after the interrupt, each run as its last checkpoint left it."""
    import re
    import signal
    args = tiny_words(tmp_path, steps=51200, seeds=2, jobs=2, checkpoint_every=1, batch_runs=1, report="false")
    runs = plan_tiny(tmp_path, steps=51200, seeds=2)
    sweep = cli(args, start_new_session=True)      # its own process group, as a terminal's job
    try:
        workers = [wait_for(lambda r=r: checkpointed_pid(r.run_dir), 90, f"a checkpoint of {r.run_id}", sweep)
                   for r in runs]
        if to == "group":
            os.killpg(sweep.pid, signal.SIGINT)
        else:
            os.kill(sweep.pid, signal.SIGINT)
        out, err = sweep.communicate(timeout=60)
    finally:
        if sweep.poll() is None:
            sweep.kill()
            sweep.communicate()
    lines = [line for line in re.split(r"[\r\n]", err) if line.strip() and "step/s" not in line]
    assert sweep.returncode == 130 and lines[-1] == "error: interrupted", err[-3000:]
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err[-3000:]
    for pid in workers:
        wait_for(lambda pid=pid: not pid_alive(pid), 10, f"worker {pid} to end")
    left = {r.run_id: ((r.run_dir / "checkpoint.pt").read_bytes(), (r.run_dir / "run.json").read_bytes()) for r in runs}
    for run in runs:
        rec = record(run.run_dir)
        assert rec["status"] == "running" and not rec.get("resumes") and rec.get("resumed_from") is None, rec
        assert (run.run_dir / "checkpoint.pt").exists() and not is_done(run.run_dir)
    time.sleep(1.0)      # no worker started after the interrupt writes anything now
    assert {r.run_id: ((r.run_dir / "checkpoint.pt").read_bytes(), (r.run_dir / "run.json").read_bytes())
            for r in runs} == left


def test_a_killed_stack_resumes_every_run_to_the_numbers_of_one_never_killed(tmp_path):
    """Three seeds trained as one stack (the batched engine), the worker SIGKILLed once each run
    has a checkpoint: the retry resumes all three, and each ends with exactly the numbers of the
    same stack never killed (a stack's update is deterministic; its checkpoints are per run)."""
    runs = plan_tiny(tmp_path / "sweep", steps=2048, seeds=3, checkpoint_every=1, env="Hopper-v5")
    out: dict = {}
    sweep = threading.Thread(target=lambda: out.update(
        results=run_local(runs, jobs=1, show_progress=False, batches=[runs])))
    sweep.start()
    try:
        pids = [wait_for(lambda r=r: checkpointed_pid(r.run_dir), 60, f"a checkpoint of {r.run_id}") for r in runs]
        assert len(set(pids)) == 1 and pids[0] != os.getpid(), "the three runs are not in one process"
        sigkill(pids[0])
    finally:
        sweep.join(timeout=180)
    assert not sweep.is_alive()
    results = out["results"]
    assert [r["status"] for r in results] == ["done"] * 3, results
    assert all(r["attempts"] == 2 and r["resumed_from"]["global_step"] >= 256 for r in results), results
    refs = plan_tiny(tmp_path / "ref", steps=2048, seeds=3, checkpoint_every=1, env="Hopper-v5")
    from harness.train import train_batch
    assert [r["status"] for r in train_batch(refs)] == ["done"] * 3
    for run, ref in zip(runs, refs):
        same_numbers(ref.run_dir, run.run_dir)


# --------------------------------------------------------------------------------------
# truncated or corrupt files in a run folder: detected, never counted as done, redone


def _cut_mid_line(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:-4])


def _drop_a_row(path: Path) -> None:  # a complete file, one row short
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:2] + lines[3:]))


def _change_a_value(path: Path) -> None:  # same rows, one number different
    text = path.read_text()
    header, first, *rest = text.splitlines(keepends=True)
    cells = first.rstrip("\n").split(",")
    cells[-1] = "12345"
    path.write_text("".join([header, ",".join(cells) + "\n", *rest]))


DAMAGE = {
    "run.json garbage": lambda d: (d / "run.json").write_text('{"status": "do'),
    "csv cut mid-line": lambda d: _cut_mid_line(d / "episodes.csv"),
    "row count mismatch": lambda d: _drop_a_row(d / "metrics.csv"),
    "value changed": lambda d: _change_a_value(d / "evals.csv"),
}


def test_damaged_run_folders_are_detected_and_redone(tmp_path, capsys, monkeypatch):
    n = len(DAMAGE)
    runs = plan_tiny(tmp_path, "steps=512", seeds=n + 1, checkpoint_every=1)
    originals = []
    for run in runs[:n]:
        assert train(run)["status"] == "done"
        originals.append({f: (run.run_dir / f).read_bytes() for f in ("episodes.csv", "evals.csv", "metrics.csv")})
    for (name, damage), run in zip(DAMAGE.items(), runs):
        damage(run.run_dir)
        assert not is_done(run.run_dir), name
        assert done_problem(run.run_dir), name
    # and a killed run whose checkpoint is corrupt: not resumed from, redone from step 0
    import harness.train as train_mod
    calls = [0]
    real_save = train_mod._save

    def save_then_die(*a, **k):
        real_save(*a, **k)
        calls[0] += 1
        if calls[0] == 1:
            raise KeyboardInterrupt  # a BaseException: the folder is left as a kill leaves it

    monkeypatch.setattr(train_mod, "_save", save_then_die)
    with pytest.raises(KeyboardInterrupt):
        train(runs[n])
    monkeypatch.setattr(train_mod, "_save", real_save)
    ckpt = runs[n].run_dir / "checkpoint.pt"
    data = bytearray(ckpt.read_bytes())
    data[len(data) // 2] ^= 0xFF
    ckpt.write_bytes(bytes(data))

    # one run per process: the runs were trained alone above, and a stack is not bit-identical to that
    code = cli_mod.main(tiny_words(tmp_path, steps=512, seeds=n + 1, jobs=2, checkpoint_every=1, batch_runs=1))
    out = capsys.readouterr().out
    assert code == 0
    assert f"runs: {n + 1} (0 already done, {n + 1} to run)" in out
    assert "cut mid-line" in out and "rows, run.json says" in out and "checksum" in out  # reported
    for run, files in zip(runs, originals):
        assert is_done(run.run_dir)
        for f, data in files.items():  # redone: the same numbers as before the damage
            assert read_rows(run.run_dir / f) == read_rows_bytes(data, run.run_dir / f)
    rec = record(runs[n].run_dir)
    assert rec["resumed_from"] is None and any("corrupt" in w for w in rec["warnings"])


def read_rows_bytes(data: bytes, like: Path) -> list[dict]:
    tmp = like.with_suffix(".orig")
    tmp.write_bytes(data)
    try:
        return read_rows(tmp)
    finally:
        tmp.unlink()


# --------------------------------------------------------------------------------------
# runs that raise or produce NaN: failed with their error, the others carry on, exit code 1


def test_failing_runs_are_marked_failed_and_the_sweep_carries_on(tmp_path, capsys):
    code = cli_mod.main(tiny_words(tmp_path, "algo.lr=inf", steps=512, jobs=2))  # NaN at the first update
    assert code == 1
    err = capsys.readouterr().err
    assert "1 run(s) failed" in err and "NonFiniteError" in err and "update 1" in err
    (bad,) = plan_tiny(tmp_path, "steps=512", "algo.lr=inf")
    assert record(bad.run_dir)["status"] == "failed" and not is_done(bad.run_dir)
    # one sweep of a failing run between good ones: the good ones finish
    good = plan_tiny(tmp_path, "steps=512", seeds=2)
    results = run_local([good[0], bad, good[1]], jobs=2, show_progress=False)
    assert [r["status"] for r in results] == ["done", "failed", "done"]
    assert "NonFiniteError" in results[1]["error"]
    assert all(is_done(r.run_dir) for r in good) and not is_done(bad.run_dir)


def test_a_run_that_raises_is_failed_with_its_error(tmp_path, monkeypatch):
    cls = algos.get("ppo_clip")

    def update_runs(cls, stack):   # every run trains through it (a run alone: a stack of one)
        raise RuntimeError("simulated bug in an update")

    monkeypatch.setattr(cls, "update_runs", classmethod(update_runs))
    (run,) = plan_tiny(tmp_path, "steps=512")
    rec = train(run)
    assert rec["status"] == "failed" and rec["error"] == "RuntimeError: simulated bug in an update"
    assert "Traceback" in rec["traceback"] and record(run.run_dir)["status"] == "failed"
    assert not is_done(run.run_dir)


# --------------------------------------------------------------------------------------
# no permission / no space on the results folder: a clear error first, nothing written


def _sweep_words(results_dir) -> list[str]:
    return tiny_words(results_dir, steps=512)


def test_results_dir_under_a_regular_file_is_refused(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert cli_mod.main(_sweep_words(blocker / "results")) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "is not a folder" in err
    assert sorted(os.listdir(tmp_path)) == ["file"]


@pytest.mark.parametrize("command", [[], ["plan=true"], ["compare"], ["compare", "plan=true"], ["compare", "bare"]],
                         ids=["sweep", "sweep plan", "compare", "compare plan", "compare without sweep keys"])
def test_a_results_dir_that_is_a_file_is_refused_before_any_plan(tmp_path, capsys, command):
    # issue 30: compare printed its whole plan before refusing a results_dir that is a file
    blocker = tmp_path / "file"
    blocker.write_text("x")
    if "compare" in command:
        keys = [] if "bare" in command else [f"env=InvertedPendulum-v5", "steps=512", "seeds=1"]
        argv = ["compare", "candidate=ppo_clip+clip_eps=0.3", "baseline=ppo_clip", *keys,
                *(w for w in command if w == "plan=true"), f"results_dir={blocker}"]
    else:
        argv = [*_sweep_words(blocker), *command]
    assert cli_mod.main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.splitlines() == [f"error: results_dir={blocker}: {blocker} is not a folder"]
    assert sorted(os.listdir(tmp_path)) == ["file"] and blocker.read_text() == "x"


def test_results_dir_without_permission_is_refused(tmp_path, capsys, monkeypatch):
    target = tmp_path / "results"
    # root ignores permission bits, so deny as the kernel would for a normal user
    real_access = os.access
    monkeypatch.setattr(results_mod.os, "access",
                        lambda p, mode, **kw: False if Path(p) == tmp_path else real_access(p, mode, **kw))
    assert cli_mod.main(_sweep_words(target)) == 2
    err = capsys.readouterr().err
    assert "no permission to write" in err and str(tmp_path) in err
    assert os.listdir(tmp_path) == []


def test_results_dir_on_a_read_only_filesystem_is_refused(tmp_path, capsys, monkeypatch):
    # os.access can say yes (root) where the write still fails: the probe tries a real write
    import errno
    import tempfile

    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(tempfile, "TemporaryFile", read_only)
    assert cli_mod.main(_sweep_words(tmp_path / "results")) == 2
    assert "Read-only file system" in capsys.readouterr().err
    assert os.listdir(tmp_path) == []


def test_results_dir_without_space_is_refused(tmp_path, capsys, monkeypatch):
    import shutil
    real = shutil.disk_usage
    monkeypatch.setattr(results_mod.shutil, "disk_usage",
                        lambda p: real(p)._replace(free=50 * 2 ** 20))
    assert cli_mod.main(_sweep_words(tmp_path / "results")) == 2
    err = capsys.readouterr().err
    assert "only 50 MiB free" in err and "need at least" in err
    assert os.listdir(tmp_path) == []


# --------------------------------------------------------------------------------------
# concurrency: one lock per run


LOCK_HOLDER = """
import sys, time
from harness.locks import RunLock
lock = RunLock(sys.argv[1])
assert lock.acquire()
print("locked", flush=True)
time.sleep(60)
"""


def test_run_lock_is_exclusive_and_freed_when_its_holder_is_killed(tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", LOCK_HOLDER, str(tmp_path / "run")], cwd=ROOT,
                              env=env_for_subprocess(), stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        assert is_locked(tmp_path / "run")
        assert not RunLock(tmp_path / "run").acquire()
        sigkill(holder.pid)
        holder.wait(timeout=10)
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
    lock = RunLock(tmp_path / "run")
    assert lock.acquire()  # the kernel released it: no stale lock after a crash
    assert not RunLock(tmp_path / "run").acquire()  # and it excludes within one process too
    lock.release()
    assert not is_locked(tmp_path / "run")


def test_a_run_locked_by_another_sweep_is_skipped_as_running_elsewhere(tmp_path, capsys):
    runs = plan_tiny(tmp_path, "steps=512", seeds=2)
    lock = RunLock(runs[0].run_dir)
    assert lock.acquire()
    try:
        code = cli_mod.main(tiny_words(tmp_path, steps=512, seeds=2, jobs=2))
    finally:
        lock.release()
    captured = capsys.readouterr()
    assert code == 3
    assert "running elsewhere" in captured.err and runs[0].run_id in captured.err
    assert not (runs[0].run_dir / "run.json").exists()  # untouched
    assert is_done(runs[1].run_dir)


def test_two_sweeps_at_once_run_each_run_once(tmp_path):
    args = tiny_words(tmp_path, steps=1024, seeds=3, jobs=1)
    procs = [cli(args), cli(args)]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=180)
        outs.append((p.returncode, out, err))
    ran = 0
    for code, out, err in outs:
        assert code in (0, 3), err[-3000:]
        line = next(ln for ln in out.splitlines() if ln.startswith("this sweep: ran "))
        ran += int(line.split()[3])
    assert ran == 3, outs  # each run ran exactly once, in one of the two sweeps
    for run in plan_tiny(tmp_path, steps=1024, seeds=3):
        assert is_done(run.run_dir)
        assert _updates(run.run_dir) == list(range(1, 5))
        assert record(run.run_dir)["resumed_from"] is None
