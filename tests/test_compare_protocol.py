"""compare is fair by construction: one protocol on both sides (or a refusal that names the
settings), both sides planned as a sweep would, identical runs called identical, and run.json
recording the algorithm's own source."""
from __future__ import annotations

import ast
import dataclasses
import hashlib
import importlib.util
import io
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import algos
from algos.ppo_clip import PPOClip, PPOClipConfig
from analysis.synthetic import write_random_cache, write_run
from core.results import REPO_ROOT, algorithm_source, is_done
from harness.compare import main as compare_main, plan_label, run_compare

REPS = 300
ENV = "InvertedPendulum-v5"


def snapshot(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def planned(root, label, seeds=2, steps=4096, envs=(ENV,)):
    """``label``'s runs as a sweep plans them (the runs' resolved configs)."""
    return plan_label(label, {"suite": "mujoco", "env": ",".join(envs), "seeds": str(seeds), "steps": str(steps),
                              "eval_every": str(steps), "eval_episodes": "5", "results_dir": str(root)})


def store(run, returns, config_change=None, **kw):
    """A finished run of ``run`` (its run.json holds the resolved config, optionally changed)."""
    run_dir = write_run(run.results_dir, run.env, run.label, run.seed, returns, steps=run.steps, suite=run.suite,
                        algo_cfg=run.algo_cfg, **kw)
    record = json.loads((run_dir / "run.json").read_text())
    config = dataclasses.asdict(run)
    for key, value in (config_change or {}).items():
        if "." in key:
            outer, inner = key.split(".", 1)
            config[outer][inner] = value
        else:
            config[key] = value
    record["config"] = config
    (run_dir / "run.json").write_text(json.dumps(record, indent=2))
    return run_dir


def store_side(root, label, offset, config_change=None, seeds=2, **kw):
    for run in planned(root, label, seeds):
        store(run, [100.0 + offset + run.seed] * 110, config_change, **kw)


def error_line(capsys) -> tuple[str, str]:
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0], captured.out


@pytest.fixture
def root(tmp_path):
    write_random_cache(tmp_path, {ENV: 5.0})
    return tmp_path


# ---------------------------------------------------------------------------------------
# A: one protocol, or a refusal naming the settings

def test_an_algorithm_option_the_candidate_does_not_ask_for_is_refused(root, capsys):
    # the label asks for clip_eps; lr differs too (e.g. a default changed between the two sets of runs)
    store_side(root, "ppo_clip", 0.0)
    store_side(root, "ppo_clip+clip_eps=0.3", 50.0, {"algo_cfg.lr": 1e-4})
    before = snapshot(root)
    args = ["compare", "candidate=ppo_clip+clip_eps=0.3", "baseline=ppo_clip", f"results_dir={root}", f"reps={REPS}"]
    assert compare_main(args) == 2
    err, out = error_line(capsys)
    assert "algo.lr" in err and "algo.clip_eps" not in err and "allow_protocol_diff=true" in err
    lines = {line.split()[0]: line for line in out.splitlines() if line.startswith("  algo.")}
    assert "0.0001" in lines["algo.lr"] and "0.0003" in lines["algo.lr"] and "NOT ASKED FOR" in lines["algo.lr"]
    assert "asked for: set by the candidate's label" in lines["algo.clip_eps"]
    assert snapshot(root) == before
    # allowed: compared, and said plainly
    assert compare_main(args + ["allow_protocol_diff=true"]) == 0
    out = capsys.readouterr().out
    assert "NOT ONE PROTOCOL" in out and "allow_protocol_diff=true" in out and "verdict: better" in out


@pytest.mark.parametrize("change, setting", [({"eval_episodes": 10}, "eval_episodes"),
                                             ({"device": "cuda"}, "device"),
                                             ({"suite_cfg.obs_norm": False}, "suite.obs_norm")])
def test_settings_outside_the_algorithm_must_match(root, capsys, change, setting):
    store_side(root, "ppo_clip", 0.0)
    store_side(root, "ppo_clip+clip_eps=0.3", 50.0, change)
    assert compare_main(["compare", "candidate=ppo_clip+clip_eps=0.3", "baseline=ppo_clip",
                         f"results_dir={root}", f"reps={REPS}"]) == 2
    err, out = error_line(capsys)
    assert f"differ in {setting}, which" in err
    assert any(line.startswith(f"  {setting} ") and "NOT ASKED FOR" in line for line in out.splitlines())


def test_a_suite_option_the_label_sets_is_asked_for(root, capsys):
    store_side(root, "ppo_clip", 0.0)
    store_side(root, "ppo_clip+suite.obs_norm=false", 50.0)
    assert compare_main(["compare", "candidate=ppo_clip+suite.obs_norm=false", "baseline=ppo_clip",
                         f"results_dir={root}", f"reps={REPS}"]) == 0
    out = capsys.readouterr().out
    assert any(line.startswith("  suite.obs_norm ") and "asked for: set by the candidate's label" in line
               for line in out.splitlines())
    assert "NOT ONE PROTOCOL" not in out


@dataclass
class EntropyConfig(PPOClipConfig):
    ent_coef: float = 0.01          # the variant's one change of a default
    ent_floor: float = 0.0          # an option only the variant has


class PPOClipEntropyTest(PPOClip):
    name = "ppo_clip_entropy_test"
    Config = EntropyConfig


@pytest.fixture
def variant(monkeypatch):
    algos.names()   # load the registry first, then add the test's variant to it for this test only
    monkeypatch.setitem(algos._REGISTRY, PPOClipEntropyTest.name, PPOClipEntropyTest)
    return PPOClipEntropyTest.name


def test_a_variant_class_default_and_its_own_options_are_its_change(root, capsys, variant):
    store_side(root, "ppo_clip", 0.0)
    store_side(root, variant, 50.0)
    assert compare_main(["compare", f"candidate={variant}", "baseline=ppo_clip", f"results_dir={root}",
                         f"reps={REPS}"]) == 0
    out = capsys.readouterr().out
    lines = {line.split()[0]: line for line in out.splitlines() if line.startswith("  algo.")}
    assert set(lines) == {"algo.ent_coef", "algo.ent_floor"}
    assert "asked for: ppo_clip_entropy_test's definition defaults to 0.01" in lines["algo.ent_coef"]
    assert "only the candidate's algorithm" in lines["algo.ent_floor"]
    # a shared option the variant's definition does not change must match
    for run_dir in (root / "mujoco" / ENV / variant).iterdir():
        record = json.loads((run_dir / "run.json").read_text())
        record["config"]["algo_cfg"]["num_epochs"] = 3
        (run_dir / "run.json").write_text(json.dumps(record))
    assert compare_main(["compare", f"candidate={variant}", "baseline=ppo_clip", f"results_dir={root}"]) == 2
    err, _ = error_line(capsys)
    assert "differ in algo.num_epochs, which" in err


def test_a_class_default_counts_only_where_the_stored_runs_used_it(root, capsys, variant):
    # the variant's file now says ent_coef=0.01, but its runs were made when it said 0.05
    store_side(root, "ppo_clip", 0.0)
    store_side(root, variant, 50.0, {"algo_cfg.ent_coef": 0.05})
    assert compare_main(["compare", f"candidate={variant}", "baseline=ppo_clip", f"results_dir={root}",
                         f"reps={REPS}"]) == 2
    err, out = error_line(capsys)
    assert "differ in algo.ent_coef, which" in err
    assert any(line.startswith("  algo.ent_coef ") and "the stored runs used other values" in line
               for line in out.splitlines())


# ---------------------------------------------------------------------------------------
# B: both sides planned as a sweep with the same keys plans them

def fake_executor(log):
    def executor(runs, jobs):       # stands in for harness.executor.run_local
        log.extend(runs)
        for r in runs:
            store(r, [100.0 + (50.0 if "+" in r.label else 0.0) + r.seed] * 110)
        return [{"run_id": r.run_id, "status": "done", "error": None} for r in runs]
    return executor


def test_sweep_keys_plan_both_sides_as_a_sweep(root):
    from harness.config import parse_sweep, plan_runs, split_args
    log, out, err = [], io.StringIO(), io.StringIO()
    keys = {"scale": "smoke", "env": ENV, "steps": "2048"}
    c = run_compare("ppo_clip+clip_eps=.3", "ppo_clip", "mujoco", root, jobs=1, seeds=2, reps=REPS, out=out, err=err,
                    executor=fake_executor(log), protocol=keys)
    # exactly the runs of ./run_all.sh suite=mujoco algo=ppo_clip scale=smoke env=... steps=2048 seeds=2 (+ algo.clip_eps),
    # kept in compare's own folder for that protocol
    home = root / "compare" / "steps=2048+eval_every=2048+eval_episodes=2+device=cpu"
    for label, extra in (("ppo_clip+clip_eps=0.3", ["algo.clip_eps=.3"]), ("ppo_clip", [])):
        top, a, s = split_args(["suite=mujoco", "algo=ppo_clip", "scale=smoke", f"env={ENV}", "steps=2048", "seeds=2",
                                f"results_dir={root}"] + extra)
        sweep = plan_runs(parse_sweep(top), a, s)
        mine = [r for r in log if r.label == label]
        assert [dataclasses.replace(r, threads=1) for r in mine] == [dataclasses.replace(r, results_dir=str(home))
                                                                     for r in sweep]
    text = out.getvalue()
    assert "protocol from the sweep keys scale=smoke" in text and "2,048 steps" in text
    assert f"compare's runs: {home}" in text
    assert text.count("0 of 2 run(s) exist, 0 resume, 2 new") == 2
    assert f"run mujoco/{ENV}/ppo_clip+clip_eps=0.3/seed0" in text and f"run mujoco/{ENV}/ppo_clip/seed1" in text
    assert c.verdict == "better" and c.candidate == "ppo_clip+clip_eps=0.3" and c.steps == 2048
    assert not (root / "mujoco" / ENV).exists()          # nothing in a sweep's folder
    # again, through the command line: everything exists, nothing runs
    log.clear()
    assert compare_main(["compare", "candidate=ppo_clip+clip_eps=0.3", "baseline=ppo_clip", "scale=smoke",
                         f"env={ENV}", "steps=2048", "seeds=2", f"results_dir={root}", f"reps={REPS}"]) == 0
    assert log == []
    # at another budget: another folder of compare's own; the runs at 2048 are left as they are
    before = snapshot(root)
    c = run_compare("ppo_clip+clip_eps=0.3", "ppo_clip", "mujoco", root, seeds=2, reps=REPS, out=out, err=err,
                    executor=fake_executor(log), protocol={**keys, "steps": "4096"})
    assert c.steps == 4096 and len(log) == 4
    assert {Path(r.results_dir).name for r in log} == {"steps=4096+eval_every=2048+eval_episodes=2+device=cpu"}
    assert {k: v for k, v in snapshot(root).items() if k in before} == before


def test_the_readmes_order_a_smoke_sweep_then_compare_at_another_budget_and_at_its_own(tmp_path, capsys):
    # issue 30: after the README's smoke sweep, its compare command exited 2 ("ppo_clip already has a
    # done run at another budget ... use another results_dir"). compare keeps its runs in
    # <results_dir>/compare/<protocol>/ and uses a sweep's done runs where they are its protocol.
    from harness import cli
    from tests.helpers import TINY
    root = tmp_path / "results"
    base, cand = "ppo_clip+num_epochs=2+num_steps=256", "ppo_clip+clip_eps=0.3+num_epochs=2+num_steps=256"
    assert cli.main(["suite=mujoco", "algo=ppo_clip", "scale=smoke", f"env={ENV}", "seeds=2", "steps=512", "jobs=1",
                     "report=false", f"results_dir={root}", *TINY]) == 0
    write_random_cache(root, {ENV: 5.0})
    swept = snapshot(root / "mujoco")
    compare = ["compare", f"candidate={cand}", f"baseline={base}", f"env={ENV}", f"results_dir={root}", "jobs=1",
               f"reps={REPS}"]
    capsys.readouterr()
    # the README's compare at another budget (scale=quick): planned, not refused
    assert cli.main([*compare, "scale=quick", "seeds=2", "plan=true"]) == 0
    out = capsys.readouterr().out
    assert f"compare's runs: {root / 'compare' / 'steps=50000+eval_every=25000+eval_episodes=5+device=cpu'}" in out
    assert out.count("0 of 2 run(s) exist") == 2 and not (root / "compare").exists()
    # at the smoke sweep's protocol: the sweep's baseline runs are used as they are; the candidate runs
    assert cli.main([*compare, "scale=smoke", "steps=512", "seeds=2"]) in (0, 1, 3, 4)
    out = capsys.readouterr().out
    assert f"Y = {base}: 2 of 2 run(s) exist" in out and "verdict:" in out
    home = root / "compare" / "steps=512+eval_every=2048+eval_episodes=2+device=cpu"
    assert sorted(p.parent.name for p in home.rglob("run.json")) == ["seed0", "seed1"]
    assert all(is_done(p.parent) for p in home.rglob("run.json"))
    # and at another budget, run for real: both sides in a folder of their own
    assert cli.main([*compare, "scale=smoke", "steps=256", "seeds=1"]) in (0, 1, 3, 4)
    assert "verdict:" in capsys.readouterr().out
    other = root / "compare" / "steps=256+eval_every=2048+eval_episodes=2+device=cpu" / "mujoco" / ENV
    assert is_done(other / base / "seed0") and is_done(other / cand / "seed0")
    assert snapshot(root / "mujoco") == swept            # the sweep's folder: not a byte changed
    # a report of the folder reads the sweep's runs only (compare's folder is not a suite)
    from analysis.load import load_results
    assert set(load_results(root).runs["path"]) == {str(root / "mujoco" / ENV / base / f"seed{k}") for k in (0, 1)}


def test_without_sweep_keys_the_baseline_runs_fix_the_protocol(root, capsys):
    assert compare_main(["compare", "candidate=ppo_clip+clip_eps=0.3", "baseline=ppo_clip",
                         f"results_dir={root}"]) == 2
    err, _ = error_line(capsys)
    assert "baseline ppo_clip has no done runs" in err and "sweep keys" in err


def test_llm_toy_is_compared_on_its_evaluation_score(root):
    # issue 30: llm_toy scores the last evaluation (evals.csv); compare read only episodes.csv and
    # found "no environment in common with done runs" although all four runs were done
    def executor(runs, jobs):
        for r in runs:      # the same training episodes on both sides; the candidate evaluates better
            gold = 0.9 if "+" in r.label else 0.4
            store(r, [0.5] * 20, evals=[0.2, gold + 0.01 * r.seed])
        return [{"run_id": r.run_id, "status": "done", "error": None} for r in runs]
    out = io.StringIO()
    c = run_compare("ppo_clip+clip_eps=0.3", "ppo_clip", "llm_toy", root, jobs=1, seeds=2, reps=REPS, out=out,
                    err=io.StringIO(), executor=executor, protocol={"scale": "smoke"})
    assert c.verdict == "better" and [e.env for e in c.envs] == ["sort"]
    assert c.envs[0].mean_x == pytest.approx(0.905) and c.envs[0].mean_y == pytest.approx(0.405)
    assert "score: held-out gold score of the last evaluation" in out.getvalue()


# ---------------------------------------------------------------------------------------
# C: identical runs

def test_identical_runs_are_called_identical(root, capsys):
    for run in planned(root, "ppo_clip"):
        store(run, [100.0 + run.seed] * 110, metrics={"policy_loss": [-0.1, -0.2], "update_seconds": [0.1, 0.2]})
    for run in planned(root, "ppo_clip+clip_eps=0.3"):   # the same rows; only a timing column differs
        store(run, [100.0 + run.seed] * 110, metrics={"policy_loss": [-0.1, -0.2], "update_seconds": [0.7, 0.9]})
    assert compare_main(["compare", "candidate=ppo_clip+clip_eps=0.3", "baseline=ppo_clip", f"results_dir={root}",
                         f"reps={REPS}"]) == 4
    out = capsys.readouterr().out
    assert ("verdict: identical — the candidate's runs are identical to the baseline's on every environment and "
            "seed") in out and "the change never acted at this budget" in out
    assert "seeds per environment would be needed" not in out
    # one run that learned differently: an ordinary verdict, with the identical runs noted
    run = planned(root, "ppo_clip+clip_eps=0.3")[1]
    store(run, [100.0 + run.seed] * 110, metrics={"policy_loss": [-0.1, -0.3], "update_seconds": [0.7, 0.9]})
    assert compare_main(["compare", "candidate=ppo_clip+clip_eps=0.3", "baseline=ppo_clip", f"results_dir={root}",
                         f"reps={REPS}"]) == 3
    out = capsys.readouterr().out
    assert "verdict: inconclusive" in out and f"1 of the 2 paired run(s) are identical to the baseline's" in out


def test_identical_on_the_shared_columns_when_the_candidate_logs_a_metric_of_its_own(root, capsys):
    # a dual-clip variant that logs how often its clip acted, and never acted
    for run in planned(root, "ppo_clip"):
        store(run, [100.0 + run.seed] * 110, metrics={"policy_loss": [-0.1, -0.2]})
    for run in planned(root, "ppo_clip+clip_eps=0.3"):
        store(run, [100.0 + run.seed] * 110, metrics={"policy_loss": [-0.1, -0.2], "dual_clip_fraction": [0.0, 0.0]})
    assert compare_main(["compare", "candidate=ppo_clip+clip_eps=0.3", "baseline=ppo_clip", f"results_dir={root}",
                         f"reps={REPS}"]) == 4
    assert "verdict: identical" in capsys.readouterr().out


# ---------------------------------------------------------------------------------------
# D: the algorithm's own source in run.json

def _git_clean(rel: str) -> bool:
    listed = subprocess.run(["git", "ls-files", "--error-unmatch", "--", rel], cwd=REPO_ROOT, capture_output=True)
    status = subprocess.run(["git", "status", "--porcelain", "--", rel], cwd=REPO_ROOT, capture_output=True, text=True)
    return listed.returncode == 0 and not status.stdout.strip()


def test_a_builtin_algorithm_source_is_its_tracked_files():
    entries = algorithm_source(algos.get("ppo_clip"))
    by_path = {e["path"]: e for e in entries}
    assert [e["class"] for e in entries] == ["algos.ppo_clip.PPOClip", "algos.base.Algorithm"]
    for rel in ("algos/ppo_clip.py", "algos/base.py"):
        e = by_path[rel]
        assert e["sha256"] == hashlib.sha256((REPO_ROOT / rel).read_bytes()).hexdigest()
        # other people edit algos/ in this tree: a built-in is tracked unless its file is modified right now
        assert e["tracked"] is _git_clean(rel)
        assert ("text" in e) is (not e["tracked"])


def test_a_variant_in_an_untracked_file_records_its_text(tmp_path, monkeypatch):
    source = ("from dataclasses import dataclass\nfrom algos.ppo_clip import PPOClip, PPOClipConfig\n\n"
              "@dataclass\nclass Config(PPOClipConfig):\n    ent_coef: float = 0.01\n\n"
              "class MyVariant(PPOClip):\n    name = 'my_variant'\n    Config = Config\n")
    path = tmp_path / "my_variant.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("my_variant_for_test", path)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "my_variant_for_test", module)   # as an import of algos/my_variant.py does
    spec.loader.exec_module(module)
    entries = algorithm_source(module.MyVariant)
    mine = entries[0]
    assert mine["class"] == "my_variant_for_test.MyVariant" and mine["tracked"] is False
    assert mine["text"] == source and mine["sha256"] == hashlib.sha256(source.encode()).hexdigest()
    assert [e.get("path") for e in entries[1:]] == ["algos/ppo_clip.py", "algos/base.py"]


def test_run_json_records_the_algorithm_source(tmp_path):
    from harness.train import train
    from tests.helpers import TINY, plan
    (run,) = plan(tmp_path, *TINY, steps=256, eval_episodes=1)
    record = train(run)
    assert record["status"] == "done"
    stored = json.loads((run.run_dir / "run.json").read_text())
    assert stored["algo_source"] == algorithm_source(algos.get("ppo_clip"))
    assert stored["algo_source"][0]["path"] == "algos/ppo_clip.py"


# ---------------------------------------------------------------------------------------
# layering: analysis reads stored results; it never imports the harness

def test_analysis_never_imports_the_harness():
    for path in sorted((REPO_ROOT / "analysis").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not any(n == "harness" or n.startswith("harness.") for n in names), f"{path.name} imports {names}"
