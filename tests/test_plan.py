"""``plan=true``: a sweep's (and compare's) plan run by run, where each run would start, and the time
estimate, checked as a real sweep checks its input, with nothing run or written."""
from __future__ import annotations

import io
import json
import re
import shutil
from pathlib import Path

import pytest

from analysis.load import AnalysisError
from core.results import is_done
from harness import cli
from helpers import TINY, plan

LABEL = "ppo_clip+num_epochs=2+num_steps=256"   # the tiny run's label (TINY)
ENV = "InvertedPendulum-v5"


def words(root, *extra, seeds=3):
    """The tiny sweep: 4 updates of 256 steps per run, a checkpoint after each."""
    return ["suite=mujoco", "algo=ppo_clip", f"env={ENV}", f"seeds={seeds}", "steps=1024", "eval_episodes=1",
            "eval_every=1024", "checkpoint_every=1", "report=false", f"results_dir={root}", *TINY, *extra]


def run_id(seed: int) -> str:
    return f"mujoco/{ENV}/{LABEL}/seed{seed}"


def tree(root: Path) -> dict:
    """Every folder and file under ``root``, with each file's bytes and modification time."""
    return {str(p.relative_to(root)): None if p.is_dir() else (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(root.rglob("*"))}


def statuses(out: str) -> dict[str, str]:
    """run id -> what the plan says of it (its lines ``    <run id>  <status>``)."""
    return {m.group(1): m.group(2) for m in re.finditer(r"^ {4}(\S+/seed\d+)(?::| {2,})\s*(.*)$", out, re.M)}


def estimate(out: str) -> str:
    (line,) = [line for line in out.splitlines() if "estimated time:" in line]
    return line.strip()


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """A results folder with seed 0 done and seed 1 interrupted at its second update (its checkpoint:
    update 1, step 256; the kill comes before update 2's checkpoint). Tests copy it."""
    from harness.train import train_batch
    root = tmp_path_factory.mktemp("template") / "results"
    assert cli.main(words(root, seeds=1)) == 0
    [run1] = [r for r in plan(root, *TINY, seeds=2, eval_episodes=1, eval_every=1024, checkpoint_every=1)
              if r.seed == 1]
    calls = []

    def stop_at_the_second_update(i, step):
        calls.append(step)
        if len(calls) == 2:
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        train_batch([run1], progress=stop_at_the_second_update)
    assert (run1.run_dir / "checkpoint.pt").exists() and not is_done(run1.run_dir)
    return root


def test_a_sweep_plan_says_where_each_run_starts_writes_nothing_and_the_sweep_then_does_so(template, tmp_path,
                                                                                            capsys):
    root = tmp_path / "results"
    shutil.copytree(template, root)
    broken = root / run_id(3)   # a checkpoint the resume would drop
    broken.mkdir(parents=True)
    (broken / "checkpoint.pt").write_bytes(b"not a checkpoint")
    before = tree(tmp_path)
    capsys.readouterr()
    assert cli.main(words(root, "plan=true", seeds=4)) == 0
    out = capsys.readouterr().out
    assert tree(tmp_path) == before   # no run folder, sweep log, random-score cache, lock or report
    got = statuses(out)
    assert got[run_id(0)] == "done (skipped)"
    assert got[run_id(1)] == "resumes from step 256 (update 1, its checkpoint)"
    assert got[run_id(2)] == "new"
    assert got[run_id(3)].startswith("new: checkpoint.pt is not a pg-arena checkpoint") and "step 0" in got[run_id(3)]
    assert "runs: 4 (1 already done, 3 to run), 1,024 steps each" in out
    assert re.search(r"^  process 1 of \d+: (1 run|a stack of \d runs)$", out, re.M)
    assert "4 run(s): 1 done, 0 done in the archive, 1 resume from a checkpoint, 2 new" in out
    planned = estimate(out)
    assert re.fullmatch(r"estimated time: ~\d+ min with jobs=\d+, 1 torch thread per process", planned)

    # the sweep itself: the same estimate, and each run starts where the plan said
    assert cli.main(words(root, seeds=4)) == 0
    assert estimate(capsys.readouterr().out) == planned
    resumed = json.loads((root / run_id(1) / "run.json").read_text())
    assert [(r["update"], r["global_step"]) for r in resumed["resumes"]] == [(1, 256)]
    dropped = json.loads((root / run_id(3) / "run.json").read_text())
    assert dropped["resumes"] == [] and any("started from step 0" in w for w in dropped["warnings"])
    assert all(is_done(root / run_id(s)) for s in range(4))


def test_a_plan_writes_nothing_where_results_dir_does_not_exist_yet(tmp_path, capsys):
    root = tmp_path / "not" / "yet"
    assert cli.main(["suite=mujoco", "scale=smoke", f"results_dir={root}", "plan=true"]) == 0   # report=true too
    out = capsys.readouterr().out
    assert list(tmp_path.iterdir()) == []
    assert "estimated time: ~" in out and "plan (plan=true: nothing is run or written)" in out
    assert set(statuses(out).values()) == {"new"} and len(statuses(out)) == 14   # 7 algorithms x 2 environments


@pytest.mark.parametrize("bad", [["algo.nope=1"], ["plan=maybe"], ["jobs=0"], ["env=Nope-v5"]])
def test_a_plan_checks_its_input_as_a_sweep_does(tmp_path, capsys, bad):
    assert cli.main(["suite=mujoco", "algo=ppo_clip", "plan=true", f"results_dir={tmp_path / 'r'}", *bad]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_a_plan_with_an_archive_names_what_it_holds_and_what_resumes_from_it(template, tmp_path, capsys):
    first = tmp_path / "first"
    shutil.copytree(template, first)
    archive = tmp_path / "archive"
    assert cli.main(["report", "suite=mujoco", f"results_dir={first}", f"save_archive={archive}",
                     f"out_dir={tmp_path / 'report'}", "reps=200"]) == 0
    second = tmp_path / "second"
    before = tree(tmp_path)
    capsys.readouterr()
    assert cli.main(words(second, f"archive={archive}", "plan=true")) == 0
    out = capsys.readouterr().out
    assert tree(tmp_path) == before and not second.exists()
    got = statuses(out)
    assert got[run_id(0)] == f"done in archive {archive} (skipped)"
    assert got[run_id(1)] == f"resumes from step 256 (update 1, the checkpoint archive {archive} carries)"
    assert got[run_id(2)] == "new"
    assert "1 run(s) resume from the checkpoints archive" in out


def test_compare_plan_says_which_runs_exist_resume_or_are_new_and_writes_nothing(template, tmp_path, capsys):
    root = tmp_path / "results"
    shutil.copytree(template, root)
    # the sweep's seed 0 is done at compare's protocol: used as it is. Compare resumes only its own
    # runs (its folder), never a sweep's: here its seed 1 was interrupted as the sweep's was.
    home = root / "compare" / "steps=1024+eval_every=1024+eval_episodes=1+device=cpu"
    shutil.copytree(root / run_id(1), home / run_id(1))
    candidate = "ppo_clip+clip_eps=0.3+num_epochs=2+num_steps=256"
    args = ["compare", f"candidate={candidate}", f"baseline={LABEL}", f"env={ENV}", "steps=1024", "eval_every=1024",
            "eval_episodes=1", "seeds=3", "plan=true"]
    before = tree(tmp_path)
    capsys.readouterr()
    assert cli.main([*args, f"results_dir={root}"]) == 0
    out = capsys.readouterr().out
    assert tree(tmp_path) == before
    assert f"compare's runs: {home}" in out
    assert f"X = {candidate}: 0 of 3 run(s) exist, 0 resume, 3 new" in out
    assert f"Y = {LABEL}: 1 of 3 run(s) exist, 1 resume (from step 256), 1 new" in out
    assert "1,024 steps; evaluated at step 0 and at the end only, 1 episode(s) each; device cpu" in out
    got = statuses(out)
    assert [got[f"mujoco/{ENV}/{candidate}/seed{s}"] for s in range(3)] == ["new"] * 3
    assert [got[run_id(s)] for s in range(3)] == [
        "done (exists in results_dir)", "resumes from step 256 (update 1, its checkpoint)", "new"]
    assert re.search(r"5 run\(s\) to run in \d+ process\(es\).*; estimated time: ~\d+ min with jobs=\d+", out)
    assert "plan=true: nothing was run or written" in out
    # where results_dir does not exist yet, nothing is made; bad input is still exit 2
    assert cli.main([*args, f"results_dir={tmp_path / 'none'}"]) == 0
    assert not (tmp_path / "none").exists()
    assert cli.main([*args, f"results_dir={tmp_path / 'none'}", "jobs=abc"]) == 2
    assert tree(tmp_path) == before

    # without plan=true the same counts (issue 30: it said "0 of 3 exist, 3 to run" of runs that resume)
    from harness.compare import run_compare
    ran = []

    def executor(runs, jobs):        # stands in for run_local: the plan is what is checked here
        ran.extend(runs)
        return [{"run_id": r.run_id, "status": "failed", "error": "not run in this test"} for r in runs]
    out = io.StringIO()
    with pytest.raises(AnalysisError, match="failed"):
        run_compare(candidate, LABEL, "mujoco", root, seeds=3, out=out, err=io.StringIO(), executor=executor,
                    protocol={"env": ENV, "steps": 1024, "eval_every": 1024, "eval_episodes": 1})
    text = out.getvalue()
    assert f"Y = {LABEL}: 1 of 3 run(s) exist, 1 resume (from step 256), 1 new" in text
    assert f"    run {run_id(1)}: resumes from step 256 (update 1, its checkpoint)" in text
    assert f"    run {run_id(2)}: new" in text and len(ran) == 5


def test_compare_says_what_evaluations_its_runs_will_do(tmp_path, capsys):
    # issue 30: "evaluation every 100,000 steps" for a 50,000-step budget (the paper scale's eval_every)
    args = ["compare", "candidate=ppo_clip+clip_eps=0.3", "baseline=ppo_clip", f"env={ENV}", "seeds=1",
            f"results_dir={tmp_path / 'r'}", "plan=true"]
    assert cli.main([*args, "steps=50000"]) == 0
    out = capsys.readouterr().out
    assert ("50,000 steps; evaluated at step 0 and at the end only (eval_every=100,000 is past the budget), "
            "10 episode(s) each") in out and "every 100,000" not in out
    assert cli.main([*args, "scale=quick"]) == 0
    assert ("50,000 steps; evaluated at step 0, after every 25,000 steps and at the end, 5 episode(s) each"
            in capsys.readouterr().out)
    assert list(tmp_path.iterdir()) == []
