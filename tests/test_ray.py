"""The Ray executor against a real Ray head: a smoke sweep through the command line, a failed
run, results written straight to a shared path, a stack of runs as one task, and a Ray worker
killed with SIGKILL.

They need a running Ray head; ``scripts/ci_ray.sh`` starts one on loopback and sets
``PG_ARENA_RAY_ADDRESS``. Without it they are skipped.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from fault_helpers import checkpointed_pid, cli, plan_tiny, read_rows, record, same_numbers, sigkill, tiny_words, wait_for
from harness.ray_executor import WORK_PREFIX
from core.results import is_done
from harness.train import train

ADDRESS = os.environ.get("PG_ARENA_RAY_ADDRESS")
pytestmark = pytest.mark.skipif(
    not ADDRESS, reason="needs a Ray head: set PG_ARENA_RAY_ADDRESS=host:port (scripts/ci_ray.sh starts one)")


def test_ray_sweep_through_the_command_line_gives_the_local_numbers(tmp_path):
    args = tiny_words(tmp_path / "ray", "env=InvertedPendulum-v5,Hopper-v5", steps=1024, checkpoint_every=2,
                      executor="ray", ray_address=ADDRESS)
    proc = cli(args)
    out, err = proc.communicate(timeout=240)
    assert proc.returncode == 0, err[-4000:]
    assert "ran 2 run(s)" in out
    runs = plan_tiny(tmp_path / "ray", "env=InvertedPendulum-v5,Hopper-v5", steps=1024)
    for run in runs:
        assert is_done(run.run_dir)
        assert not (run.run_dir / "checkpoint.pt").exists()
        rec = record(run.run_dir)
        assert rec["config"]["results_dir"] == str(tmp_path / "ray")  # not the worker's temporary folder
        # the same numbers as the same run trained here
        (local,) = plan_tiny(tmp_path / "local", f"env={run.env}", steps=1024)
        train(local)
        same_numbers(local.run_dir, run.run_dir)


def test_ray_failed_run_and_results_on_a_shared_path(tmp_path):
    from harness.ray_executor import run_ray
    (good,) = plan_tiny(tmp_path / "shared", steps=512)
    (bad,) = plan_tiny(tmp_path / "shared", "algo.lr=inf", steps=512)
    results = run_ray([bad, good], address=ADDRESS, jobs=2, shared=True, show_progress=False)
    assert [r["status"] for r in results] == ["failed", "done"], results
    assert "NonFiniteError" in results[0]["error"] and "update 1" in results[0]["error"]
    assert record(bad.run_dir)["status"] == "failed" and not is_done(bad.run_dir)
    assert is_done(good.run_dir)


def test_a_stack_ships_as_one_ray_task_with_the_numbers_of_the_same_stack_here(tmp_path):
    """executor=ray ships a stack (the batched engine) as one task; each run's folder comes back
    with the numbers the same stack gets when trained here."""
    from harness.ray_executor import run_ray
    from harness.train import train_batch
    runs = plan_tiny(tmp_path / "ray", "env=Hopper-v5", steps=1024, seeds=3, checkpoint_every=2)
    results = run_ray(runs, address=ADDRESS, jobs=1, show_progress=False, batches=[runs])
    assert [r["status"] for r in results] == ["done"] * 3, results
    local = plan_tiny(tmp_path / "local", "env=Hopper-v5", steps=1024, seeds=3, checkpoint_every=2)
    train_batch(local)
    for a, b in zip(local, runs):
        assert record(b.run_dir)["config"]["results_dir"] == str(tmp_path / "ray")
        same_numbers(a.run_dir, b.run_dir)


def test_killed_ray_worker_is_retried_and_resumes_from_its_checkpoint(tmp_path):
    args = tiny_words(tmp_path, steps=3072, checkpoint_every=1, executor="ray", ray_address=ADDRESS)
    (run,) = plan_tiny(tmp_path, steps=3072, checkpoint_every=1)
    proc = cli(args)
    try:
        # the checkpoint has travelled back to the driver's results folder
        pid = wait_for(lambda: checkpointed_pid(run.run_dir), 180, "a checkpoint streamed back", proc)
        sigkill(pid)  # the Ray worker process running the task
        out, err = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err[-4000:]
    assert "ran 1 run(s) (1 resumed from a checkpoint)" in out
    rec = record(run.run_dir)
    assert rec["status"] == "done" and rec["pid"] != pid
    assert rec["resumed_from"]["global_step"] >= 256, "the retry started from step 0"
    assert [int(r["update"]) for r in read_rows(run.run_dir / "metrics.csv")] == list(range(1, 13))
    # the killed worker's temporary run folder was removed by the retry on this node
    assert not list(Path(tempfile.gettempdir()).glob(f"{WORK_PREFIX}{pid}-*"))
    (ref,) = plan_tiny(tmp_path / "ref", steps=3072)
    train(ref)
    same_numbers(ref.run_dir, run.run_dir)
