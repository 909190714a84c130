"""The Slurm executor against a real Slurm (slurmctld + slurmd): a sweep through the command
line, a task requeued mid-run (``scontrol requeue``, and by itself on the time-limit signal) that
resumes from its checkpoint and ends with the numbers of an uninterrupted run, a detached driver
re-attaching to its array, a second sweep on the same results folder, and the checks that refuse
bad input before ``sbatch``.

They need a cluster; ``scripts/ci_slurm.sh`` starts a one-node one (scripts/slurm_cluster.sh)
and sets ``PG_ARENA_SLURM=1``. Without it they are skipped, except the check that needs no
Slurm at all (no sbatch on the PATH).
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from fault_helpers import ROOT, cli, env_for_subprocess, plan_tiny, read_rows, record, same_numbers, tiny_words, wait_for
from core.results import is_done
from harness.train import train

CLUSTER = os.environ.get("PG_ARENA_SLURM") == "1"
needs_slurm = pytest.mark.skipif(not CLUSTER, reason="needs a Slurm cluster: scripts/ci_slurm.sh starts one "
                                                     "and sets PG_ARENA_SLURM=1")


def _submissions(results_dir: Path) -> list[Path]:
    return sorted(p for p in (Path(results_dir) / ".slurm").glob("*/") if (p / "job").exists())


def _squeue(job: str) -> str:
    return subprocess.run(["squeue", "--noheader", "--array", "--jobs", job, "--format=%K %T"],
                          capture_output=True, text=True).stdout


def test_no_sbatch_on_the_path_is_a_one_line_error_before_anything_is_written(tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    proc = subprocess.run([sys.executable, "-m", "harness.cli", *tiny_words(tmp_path / "r", executor="slurm")],
                          cwd=ROOT, env=env_for_subprocess(PATH=str(empty)), capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().count("\n") == 0 and "sbatch" in proc.stderr and "PATH" in proc.stderr
    assert not (tmp_path / "r").exists()


def test_slurm_keys_need_executor_slurm_and_a_valid_time(tmp_path):
    for words, message in ((["slurm_time=10"], "slurm_time= needs executor=slurm"),
                           (["executor=slurm", "slurm_time=1:2:3:4"], "valid forms")):
        proc = subprocess.run([sys.executable, "-m", "harness.cli", *tiny_words(tmp_path / "r"), *words], cwd=ROOT,
                              env=env_for_subprocess(), capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2 and message in proc.stderr, proc.stderr
        assert not (tmp_path / "r").exists()


@needs_slurm
def test_unknown_partition_and_a_time_limit_below_a_checkpoint_interval_are_refused_before_sbatch(tmp_path):
    cases = ((["slurm_partition=nosuch"], "unknown slurm_partition 'nosuch'; valid: debug, short"),
             # 5 s of a task's time cannot reach one checkpoint of 200 updates x 256 steps (~17 s estimated)
             (["slurm_time=0:05", "steps=100000", "checkpoint_every=200"], "less than one checkpoint interval"),
             # the partition's own limit (2 minutes) is checked too (2000 updates x 256 steps: ~170 s)
             (["slurm_partition=short", "steps=2000000", "checkpoint_every=2000"], "partition short's MaxTime"),
             (["slurm_extra=--no-such-option"], "unrecognized option '--no-such-option'"),
             (["slurm_mem=999999G"], "sbatch refuses the array"))
    for words, message in cases:
        proc = subprocess.run([sys.executable, "-m", "harness.cli", *tiny_words(tmp_path / "r", *words,
                                                                               executor="slurm")], cwd=ROOT, env=env_for_subprocess(), capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2 and message in proc.stderr, (words, proc.stderr)
        assert proc.stderr.strip().count("\n") == 0, proc.stderr
        assert not (tmp_path / "r").exists()


@needs_slurm
def test_slurm_sweep_through_the_command_line_gives_the_local_numbers(tmp_path):
    """Two runs, two array tasks; each run equals the same run trained here. Run again, nothing
    is submitted (every run is done)."""
    args = tiny_words(tmp_path / "slurm", "env=InvertedPendulum-v5,Hopper-v5", steps=1024, checkpoint_every=2,
                      executor="slurm", report="false")
    proc = cli(args)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-4000:]
    assert "ran 2 run(s)" in out and "submitted job" in err
    (sub,) = _submissions(tmp_path / "slurm")
    assert len(json.loads((sub / "units.json").read_text())["units"]) == 2
    for run in plan_tiny(tmp_path / "slurm", "env=InvertedPendulum-v5,Hopper-v5", steps=1024):
        assert is_done(run.run_dir) and not (run.run_dir / "checkpoint.pt").exists()
        assert record(run.run_dir)["config"]["results_dir"] == str(tmp_path / "slurm")
        (local,) = plan_tiny(tmp_path / "local", f"env={run.env}", steps=1024)
        train(local)
        same_numbers(local.run_dir, run.run_dir)
    again = cli(args)
    out, err = again.communicate(timeout=120)
    assert again.returncode == 0 and "2 already done, 0 to run" in out and "submitted" not in err
    assert len(_submissions(tmp_path / "slurm")) == 1


def _progress_after_checkpoint(run) -> bool:
    return (run.run_dir / "checkpoint.pt").exists() and record(run.run_dir).get("status") == "running"


@needs_slurm
def test_a_task_requeued_mid_run_resumes_and_ends_with_the_uninterrupted_numbers(tmp_path):
    """``scontrol requeue`` (what a preemption does) kills the task mid-run and puts it back in the
    queue; its next attempt resumes from the checkpoint; the run is complete, once, and equal to
    the run trained here without interruption."""
    args = tiny_words(tmp_path, steps=8192, checkpoint_every=1, executor="slurm", report="false")
    (run,) = plan_tiny(tmp_path, steps=8192, checkpoint_every=1)
    proc = cli(args)
    try:
        wait_for(lambda: _submissions(tmp_path), 60, "the submission", proc, poll=0.1)
        job = (_submissions(tmp_path)[0] / "job").read_text().strip()
        wait_for(lambda: _progress_after_checkpoint(run), 240, "a checkpoint", proc, poll=0.05)
        first_pid = record(run.run_dir)["pid"]
        subprocess.run(["scontrol", "requeue", f"{job}_0"], check=True)
        out, err = proc.communicate(timeout=400)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err[-4000:]
    assert "ran 1 run(s) (1 resumed from a checkpoint)" in out, out
    rec = record(run.run_dir)
    assert rec["status"] == "done" and rec["pid"] != first_pid
    assert rec["resumed_from"]["global_step"] >= 256 and len(rec["resumes"]) == 1
    assert [int(r["update"]) for r in read_rows(run.run_dir / "metrics.csv")] == list(range(1, 33))
    log = next(_submissions(tmp_path)[0].glob("slurm-*_0.out")).read_text()
    assert "DUE TO JOB REQUEUE" in log   # Slurm's own word that it was this task it requeued
    assert len(_submissions(tmp_path)) == 1   # requeued by Slurm, not submitted again
    (ref,) = plan_tiny(tmp_path / "ref", steps=8192)
    train(ref)
    same_numbers(ref.run_dir, run.run_dir)


@needs_slurm
def test_a_detached_driver_re_attaches_and_a_second_sweep_does_not_submit_twice(tmp_path):
    """Ctrl-C detaches (the array goes on); the same command attaches to the array instead of
    submitting it again; so does a second sweep sharing the results folder while the first runs."""
    args = tiny_words(tmp_path, "env=InvertedPendulum-v5,Hopper-v5", steps=20480, checkpoint_every=4,
                      executor="slurm", report="false")
    first = cli(args)
    wait_for(lambda: _submissions(tmp_path), 60, "the submission", first, poll=0.1)
    (sub,) = _submissions(tmp_path)
    job = sub.joinpath("job").read_text().strip()
    wait_for(lambda: "RUNNING" in _squeue(job), 60, "a running task", first, poll=0.2)
    first.send_signal(signal.SIGINT)
    out, err = first.communicate(timeout=60)
    assert first.returncode == 130 and f"detached; job {job} keeps running" in err, err[-2000:]
    assert _squeue(job).strip(), "detaching cancelled the array"
    second, third = cli(args), cli(args)   # the same command again, and another sweep beside it
    out2, err2 = second.communicate(timeout=400)
    out3, err3 = third.communicate(timeout=400)
    for proc, out, err in ((second, out2, err2), (third, out3, err3)):
        assert proc.returncode == 0, err[-3000:]
        assert f"attached to job {job}" in err and "submitted" not in err, err[-2000:]
    assert len(_submissions(tmp_path)) == 1
    for run in plan_tiny(tmp_path, "env=InvertedPendulum-v5,Hopper-v5", steps=20480):
        rec = record(run.run_dir)
        assert is_done(run.run_dir) and rec["resumed_from"] is None   # each trained once, straight through
        assert [int(r["update"]) for r in read_rows(run.run_dir / "metrics.csv")] == list(range(1, 81))


@needs_slurm
def test_a_task_signalled_before_its_time_limit_requeues_itself_and_resumes(tmp_path):
    """Shortly before a task's time limit Slurm sends it the signal asked for with
    ``--signal=B:USR1@<grace>``; the task asks Slurm to requeue it, and its next attempt resumes.
    Sent here at once with ``scancel --batch --signal=USR1``: the same signal to the same process."""
    args = tiny_words(tmp_path, steps=8192, checkpoint_every=1, executor="slurm", report="false",
                      slurm_time="1:00:00")
    (run,) = plan_tiny(tmp_path, steps=8192, checkpoint_every=1)
    proc = cli(args)
    try:
        wait_for(lambda: _submissions(tmp_path), 60, "the submission", proc, poll=0.1)
        sub = _submissions(tmp_path)[0]
        assert "#SBATCH --signal=B:USR1@90" in (sub / "submit.sh").read_text()
        job = (sub / "job").read_text().strip()
        wait_for(lambda: _progress_after_checkpoint(run), 240, "a checkpoint", proc, poll=0.05)
        subprocess.run(["scancel", "--batch", "--signal=USR1", f"{job}_0"], check=True)
        out, err = proc.communicate(timeout=400)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err[-4000:]
    assert "ran 1 run(s) (1 resumed from a checkpoint)" in out, out
    log = next(sub.glob("slurm-*_0.out")).read_text()
    assert "requeueing job" in log and "DUE TO JOB REQUEUE" in log, log[-2000:]
    assert [int(r["update"]) for r in read_rows(run.run_dir / "metrics.csv")] == list(range(1, 33))
    (ref,) = plan_tiny(tmp_path / "ref", steps=8192)
    train(ref)
    same_numbers(ref.run_dir, run.run_dir)
