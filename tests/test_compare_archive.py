"""compare with the baseline from an archive (issue 30): only the candidate runs, the baseline's
canaries guard against an archive whose code no longer computes what today's code computes, the
verdict is also written as JSON, and bad input is refused in one line before anything is written.

A tiny archive made here (ppo_clip on Hopper-v5, 2 seeds, 4,096 steps), its canaries written with
this code, as ``scripts/write_canaries.py`` writes them."""
from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from algos.ppo_clip import PPOClip
from harness.compare import main as compare_main

ENV = "Hopper-v5"
SMALL = ["steps=4096", "eval_every=2048", "eval_episodes=1"]


@pytest.fixture(scope="module")
def archive(tmp_path_factory) -> Path:
    from analysis.cli import main as analysis_main
    from harness.cli import main as cli_main
    import scripts.write_canaries as write_canaries
    root = tmp_path_factory.mktemp("archive")
    assert cli_main(["suite=mujoco", "algo=ppo_clip", f"env={ENV}", "seeds=2", *SMALL, "jobs=1",
                     f"results_dir={root / 'results'}", "report=false"]) == 0
    assert analysis_main(["report", "suite=mujoco", f"results_dir={root / 'results'}",
                          f"save_archive={root / 'archive'}", f"out_dir={root / 'report'}"]) == 0
    assert write_canaries.main([str(root / "archive")]) == 0
    return root / "archive"


def compare(*words: str) -> int:
    return compare_main(["compare", "suite=mujoco", *words])


def test_only_the_candidate_runs_and_the_verdict_is_written_as_json(archive, tmp_path):
    verdict = tmp_path / "verdict.json"
    code = compare("candidate=ppo_clip+lr=0.001", "baseline=ppo_clip", f"archive={archive}",
                   f"results_dir={tmp_path / 'r'}", f"json={verdict}", "jobs=1")
    assert code in (0, 1, 3)
    made = sorted(p.parent.parent.name for p in (tmp_path / "r").rglob("run.json"))
    assert made == ["ppo_clip+lr=0.001"] * 2           # the baseline's runs are the archive's
    doc = json.loads(verdict.read_text())
    assert doc["exit_code"] == code and doc["verdict"] in ("better", "worse", "inconclusive")
    assert doc["baseline_source"] == str(archive) and doc["seeds"] == {"candidate": 2, "baseline": 2}
    assert [e["env"] for e in doc["environments"]] == [ENV] and doc["environments"][0]["n_y"] == 2
    assert doc["protocol"]["differences"][0]["setting"] == "algo.lr" and not doc["protocol"]["overridden"]


def test_a_changed_loss_is_refused_by_the_canary_and_allowed_only_when_asked(archive, tmp_path, monkeypatch, capsys):
    original = PPOClip.objective

    def doubled(self, *args, **kwargs):     # a deliberately changed loss: today's code is not the archive's
        return 2 * original(self, *args, **kwargs)
    monkeypatch.setattr(PPOClip, "objective", doubled)
    words = ["candidate=ppo_clip+lr=0.001", "baseline=ppo_clip", f"archive={archive}", "jobs=1"]
    assert compare(*words, f"results_dir={tmp_path / 'r'}") == 2
    line = capsys.readouterr().err.strip()
    assert line.startswith("error: the archive's ppo_clip runs are not what today's code makes: ppo_clip on Hopper-v5")
    assert "allow_protocol_diff=true" in line and "\n" not in line
    assert not (tmp_path / "r").exists()                 # refused before anything was written
    verdict = tmp_path / "v.json"
    assert compare(*words, f"results_dir={tmp_path / 'r'}", "allow_protocol_diff=true", f"json={verdict}") in (0, 1, 3)
    doc = json.loads(verdict.read_text())
    assert doc["protocol"]["overridden"] and any("NOT what today's code makes" in n for n in doc["notes"])


def test_check_canaries_says_identical_and_names_what_a_changed_loss_moved(archive, monkeypatch, capsys):
    import scripts.check_canaries as check_canaries
    assert check_canaries.main([str(archive)]) == 0
    out = capsys.readouterr().out
    assert f"ppo_clip on {ENV}: identical" in out and "0 of 1 canaries moved" in out
    original = PPOClip.objective
    monkeypatch.setattr(PPOClip, "objective", lambda self, *a, **k: 2 * original(self, *a, **k))
    assert check_canaries.main([str(archive), "ppo_clip"]) == 1
    assert f"ppo_clip on {ENV}: MOVED: " in capsys.readouterr().out
    assert check_canaries.main([str(archive), "trpo"]) == 2
    assert "holds no canary of trpo; it holds ppo_clip" in capsys.readouterr().err


def test_bad_input_is_one_line_exit_2_and_nothing_written(archive, tmp_path, capsys):
    corrupt = tmp_path / "corrupt"
    shutil.copytree(archive, corrupt)
    (corrupt / "runs.jsonl.gz").write_bytes(b"not gzip")
    other = tmp_path / "other"
    shutil.copytree(archive, other)
    meta = json.loads((other / "archive.json").read_text())
    (other / "archive.json").write_text(json.dumps({**meta, "suite": "llm_toy"}))
    results = tmp_path / "r"
    cases = {
        "missing": ([f"archive={tmp_path / 'nowhere'}"], "does not exist"),
        "corrupt": ([f"archive={corrupt}"], "unreadable"),
        "another suite": ([f"archive={other}"], "holds suite llm_toy, not mujoco"),
        "same setting": ([f"archive={archive}", "candidate=ppo_clip"], "same setting"),
        "same setting, spelled otherwise": ([f"archive={archive}", "candidate=ppo_clip+lr=0.0003"], "same setting"),
        "baseline not archived": ([f"archive={archive}", "baseline=trpo"], "holds no done run of baseline trpo"),
        "a protocol key": ([f"archive={archive}", "steps=2048"], "cannot change it"),
        "json into a folder": ([f"archive={archive}", f"json={tmp_path}"], "is a folder"),
        "max_seeds below 2": ([f"archive={archive}", "seeds=auto", "max_seeds=1"], "max_seeds=1 is not valid"),
        "alpha outside (0, 0.5)": ([f"archive={archive}", "seeds=auto", "alpha=0.7"], "alpha=0.7 is not valid"),
        "alpha without seeds=auto": ([f"archive={archive}", "alpha=0.01"], "go with seeds=auto"),
        "seeds neither a number nor auto": ([f"archive={archive}", "seeds=many"], "seeds=many is not valid"),
        "round_seeds neither a number nor auto": ([f"archive={archive}", "seeds=auto", "round_seeds=few"],
                                                  "round_seeds=few is not valid; valid: auto"),
    }
    # the archive's refusals as seeds=auto meets them too: the one line, and nothing of the rounds said
    cases.update({f"{name}, seeds=auto": ([*words, "seeds=auto"], message) for name, (words, message) in cases.items()
                  if not any(w.startswith(("seeds=", "alpha=", "max_seeds=")) for w in words)})
    for name, (words, message) in cases.items():
        given = {w.split("=")[0] for w in words}
        base = [w for w in ("candidate=ppo_clip+lr=0.001", "baseline=ppo_clip") if w.split("=")[0] not in given]
        for plan in ([], ["plan=true"]):
            assert compare(*base, *words, *plan, f"results_dir={results}") == 2, name
            said = capsys.readouterr()
            errors = [line for line in said.err.splitlines() if line.startswith("error:")]
            assert len(errors) == 1 and message in errors[0], (name, plan, errors)
            assert said.out == "", (name, plan, said.out)
            assert not results.exists(), name
    with gzip.open(archive / "runs.jsonl.gz", "rt") as f:   # the archive itself is untouched
        assert sum(1 for _ in f) == 2


def test_seeds_past_the_archive_run_the_baseline_too(archive, tmp_path, capsys):
    """The archive holds seeds 0-1: seeds=3 plans seed 2 of both sides, at the archive's protocol."""
    assert compare("candidate=ppo_clip+lr=0.001", "baseline=ppo_clip", f"archive={archive}", "seeds=3", "plan=true",
                   f"results_dir={tmp_path / 'r'}") == 0
    text = capsys.readouterr().out
    assert "X = ppo_clip+lr=0.001: 0 of 3 run(s) exist, 0 resume, 3 new" in text
    assert "Y = ppo_clip: 2 of 3 run(s) exist, 0 resume, 1 new" in text
    assert f"{ENV}/ppo_clip/seed2: new" in text and f"{ENV}/ppo_clip/seed0: done (exists in the archive)" in text
    assert not (tmp_path / "r").exists()


def test_seeds_auto_decides_with_the_sequential_test(archive, tmp_path, capsys):
    """One round of the archive's two seeds (max_seeds=2): only the candidate runs, the verdict is
    the sequential test's, and the JSON names the test, alpha and each round."""
    verdict = tmp_path / "v.json"
    code = compare("candidate=ppo_clip+lr=0.001", "baseline=ppo_clip", f"archive={archive}", "seeds=auto",
                   "round_seeds=2", "max_seeds=2", "alpha=0.1", f"json={verdict}", f"results_dir={tmp_path / 'r'}",
                   "jobs=1")
    text = capsys.readouterr().out
    assert "round 1 of 1: seeds 0-1 per side" in text and "sequential test: S = " in text
    assert "sequential verdict: " in text and "\nverdict: " not in text   # the bootstrap verdict gives way
    doc = json.loads(verdict.read_text())
    assert code == doc["exit_code"] and doc["verdict"] in ("better", "worse", "inconclusive")
    assert doc["alpha"] == 0.1 and len(doc["rounds"]) == 1 and doc["test"].startswith("group-sequential")
    assert sorted(p.parent.parent.name for p in (tmp_path / "r").rglob("run.json")) == ["ppo_clip+lr=0.001"] * 2


def test_round_seeds_auto_takes_the_fewest_seeds_that_can_decide_on_the_environments_compared(archive, tmp_path,
                                                                                               capsys):
    """The default round size follows the environments the archive's baseline has: one environment
    needs rounds of 5 (a round of 3 has 20 splits, none rarer than 1 in 10); the plan says why."""
    assert compare("candidate=ppo_clip+lr=0.001", "baseline=ppo_clip", f"archive={archive}", "seeds=auto",
                   "plan=true", f"results_dir={tmp_path / 'r'}") == 0
    text = capsys.readouterr().out
    assert "up to 3 round(s) of 5 seed(s)" in text and "can decide on 1 environment(s)" in text
    assert "X = ppo_clip+lr=0.001: 0 of 5 run(s) exist" in text and not (tmp_path / "r").exists()


def test_a_canary_keeps_what_a_run_computed_not_how_fast(tmp_path):
    """Timing columns (the LLM suite's ``gen_tokens_per_s`` as much as ``sps``) move from one machine
    or load to the next: a canary holding them refused every archive (found on llm_toy)."""
    from harness.canary import canary_of, differences
    def metrics(speed: float, loss: float) -> dict:
        path = tmp_path / f"metrics_{speed}_{loss}.csv"
        path.write_text("update,policy_loss,gen_tokens_per_s,sps,update_seconds\n"
                        f"1,{loss},{speed},{speed * 2},{1 / speed}\n")
        return canary_of(path)
    slow, fast = metrics(437.5, 0.25), metrics(497.6, 0.25)
    assert slow["columns"] == ["update", "policy_loss"]
    assert differences(slow, fast) == []
    moved = differences(slow, metrics(497.6, 0.26))
    assert len(moved) == 1 and moved[0].startswith("policy_loss at update 1")


def test_seeds_auto_prints_each_rounds_plan_as_it_comes_and_holds_the_table_back():
    """The plan reaches the terminal before the round's runs start (not after the round), and the
    round's bootstrap table is kept for the end; later rounds show only their X/Y and canary lines."""
    import io
    from harness.compare import _RoundOutput
    out = io.StringIO()
    stream = _RoundOutput(out, whole_plan=True)
    print("compare plan: suite mujoco\n  X = a: 0 of 3 run(s) exist", file=stream, end="")
    assert out.getvalue() == "compare plan: suite mujoco\n"           # a whole line goes through at once
    print("\n\ncompare: X = a  vs  Y = b\nverdict: worse", file=stream)
    assert out.getvalue() == "compare plan: suite mujoco\n  X = a: 0 of 3 run(s) exist\n\n"
    assert stream.table.getvalue() == "compare: X = a  vs  Y = b\nverdict: worse\n"
    later = io.StringIO()
    stream = _RoundOutput(later, whole_plan=False)
    print("compare plan: suite mujoco\n  X = a: 3 of 6\n  Y = b: 6 of 6\n  canaries: ok\n  other", file=stream)
    assert later.getvalue() == "  X = a: 3 of 6\n  Y = b: 6 of 6\n  canaries: ok\n"


def test_a_change_that_never_acts_is_identical_to_the_archive_after_one_round(archive, tmp_path, capsys):
    """An A/A copy against the archive: a gradient-norm bound no gradient reaches multiplies every
    gradient by exactly 1, so the candidate trains on the archive's very episodes; compare says
    `identical` (exit 4) after the first round instead of running every round."""
    verdict = tmp_path / "v.json"
    code = compare("candidate=ppo_clip+max_grad_norm=1e9", "baseline=ppo_clip", f"archive={archive}", "seeds=auto",
                   "round_seeds=2", "max_seeds=4", f"json={verdict}", f"results_dir={tmp_path / 'r'}", "jobs=1")
    text = capsys.readouterr().out
    assert code == 4 and "round 2 of 2" not in text and "identical" in text
    assert json.loads(verdict.read_text())["verdict"] == "identical"
    # a change that acts is not identical
    assert compare("candidate=ppo_clip+lr=0.001", "baseline=ppo_clip", f"archive={archive}",
                   f"results_dir={tmp_path / 'r2'}", "jobs=1") != 4


def test_seeds_auto_plans_only_the_rounds_seeds_where_the_baseline_has_more(tmp_path, capsys):
    """A baseline with 3 stored seeds: a round of 2 seeds runs the candidate on seeds 0-1 only,
    and its table and JSON count 2 seeds, as the test does."""
    from harness.cli import main as cli_main
    root = tmp_path / "results"
    assert cli_main(["suite=mujoco", "algo=ppo_clip", f"env={ENV}", "seeds=3", *SMALL, "jobs=1",
                     f"results_dir={root}", "report=false"]) == 0
    verdict = tmp_path / "v.json"
    compare("candidate=ppo_clip+lr=0.001", "baseline=ppo_clip", "seeds=auto", "round_seeds=2", "max_seeds=2",
            f"results_dir={root}", f"json={verdict}", "jobs=1")
    made = sorted(p.name for p in (root / "compare").rglob("ppo_clip+lr=0.001/seed*"))
    assert made == ["seed0", "seed1"]
    doc = json.loads(verdict.read_text())
    assert doc["seeds"]["candidate"] == 2 and [(e["n_x"], e["n_y"]) for e in doc["environments"]] == [(2, 2)]


@pytest.mark.parametrize("shift,verdict,code", [(+10.0, "better", 0), (-10.0, "worse", 1)])
def test_seeds_auto_decides_and_exits_with_the_sequential_verdict(monkeypatch, capsys, shift, verdict, code):
    """The rounds loop on planted scores (two environments, the candidate `shift` spreads away): the
    test decides within the rounds, the verdict and the exit code are its own."""
    import numpy as np
    import pandas as pd
    import harness.compare as hc
    from analysis.compare import Comparison
    rng = np.random.default_rng(0)
    noise = {(label, env, seed): rng.normal() for label in "XY" for env in ("A", "B") for seed in range(15)}
    calls = []

    def fake_compare(candidate, baseline, seeds, out, **kwargs):
        calls.append(seeds)
        rows = [{"env": env, "label": label, "seed": s,
                 "score": noise[(side, env, s)] + (shift if side == "X" else 0.0)}
                for side, label in (("X", candidate), ("Y", baseline)) for env in ("A", "B") for s in range(seeds)]
        print("compare: X = table\nverdict: inconclusive", file=out)
        return Comparison(candidate, baseline, "mujoco", 1000, [], None, None, None, (0.5, 0.0, 1.0), seeds,
                          "inconclusive", "planted", None, scores=pd.DataFrame(rows))
    monkeypatch.setattr(hc, "run_compare", fake_compare)
    result = hc.run_sequential("x", "y", alpha=0.05, max_seeds=15, round_seeds=3)
    assert result.verdict == verdict and result.exit_code == code
    assert calls == [3 * (k + 1) for k in range(len(calls))] and len(calls) < 5   # decided before the cap
    assert f"sequential verdict: {verdict}" in capsys.readouterr().out


def test_the_json_counts_each_sides_seeds(tmp_path):
    """A baseline with more seeds than the candidate's: each side's count, not the smaller one twice."""
    import pandas as pd
    from analysis.compare import Comparison
    from harness.compare import write_verdict_json
    scores = pd.DataFrame([{"env": env, "label": label, "seed": seed, "score": 1.0}
                           for env in ("A", "B") for label, n in (("x", 2), ("y", 3)) for seed in range(n)]
                          + [{"env": "A", "label": "x", "seed": 7, "score": 1.0}])   # on one environment only
    c = Comparison(candidate="x", baseline="y", suite="mujoco", steps=10, envs=[], aggregate_diff=None,
                   aggregate_mean_x=None, aggregate_mean_y=None, poi=(0.5, 0.4, 0.6), seeds=2,
                   verdict="inconclusive", reason="", seeds_needed=None, scores=scores)
    write_verdict_json(tmp_path / "v.json", c, alpha=None)
    assert json.loads((tmp_path / "v.json").read_text())["seeds"] == {"candidate": 2, "baseline": 3}


def test_compare_gives_a_process_the_threads_a_sweep_gives_it():
    """compare's processes on a suite without MuJoCo's one-thread cap get the sweep's share of the cores."""
    from harness.compare import _processes, plan_label
    from harness.config import SweepConfig, threads_per_run
    for suite, env in (("llm_toy", "sort"), ("mujoco", ENV)):
        todo = plan_label("grpo", {"suite": suite, "env": env, "seeds": "1", "steps": "128", "results_dir": "unused"})
        units, jobs = _processes(todo, jobs=1, threads=None)
        assert units[0][0].threads == threads_per_run(SweepConfig(suite=suite, jobs=1), 1), suite
