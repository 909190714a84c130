"""The compact archive: a report rendered from it equals the report rendered from the results."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.archive import load_archive, summarize, write_archive
from analysis.load import load_results
from analysis.report import build_report, summarized_results
from analysis.synthetic import write_random_cache, write_run, write_setting
from harness.cli import main as harness_main

REPS = 200
ENVS = {"Hopper-v5": 1000.0, "Swimmer-v5": 40.0, "InvertedPendulum-v5": 900.0}
RANDOM = {"Hopper-v5": 20.0, "Swimmer-v5": 0.0, "InvertedPendulum-v5": 5.0}
COMMITTED = Path(__file__).resolve().parent.parent / "docs" / "paper_mujoco" / "archive"


def _results(root: Path) -> Path:
    for k, (label, scale) in enumerate([("ppo_clip", 1.0), ("ppo_clip+clip_eps=0.1", 0.9),
                                        ("ppo_kl+adaptive=false+kl_coef=0.0", 0.3), ("trpo", 0.8)]):
        # irrational-looking returns: a float that did not round-trip would show
        write_setting(root, label, {env: m * scale + np.pi for env, m in ENVS.items()}, seeds=3, spread=7.3,
                      rng_seed=k)
    write_run(root, "Hopper-v5", "reinforce", 0, [1.0] * 3, status="failed")   # listed, not analysed
    write_random_cache(root, RANDOM)
    # the sweep that made them, in two pieces: one killed after 10 minutes, one that ended
    sweeps = root / "mujoco" / "sweeps"
    sweeps.mkdir()
    piece = {"plan_id": "p1", "command": ["suite=mujoco", "grid=table1"], "runs_planned": 36, "runs_todo": 36,
             "start": "2026-01-01T00:00:00+00:00", "last_seen": "2026-01-01T00:10:00+00:00", "end": None,
             "exit_code": None}
    (sweeps / "a.json").write_text(json.dumps(piece))
    (sweeps / "b.json").write_text(json.dumps({**piece, "start": "2026-01-02T00:00:00+00:00", "runs_todo": 30,
                                               "last_seen": "2026-01-02T00:50:00+00:00",
                                               "end": "2026-01-02T00:50:00+00:00", "exit_code": 0}))
    return root


def _tables(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.suffix in (".csv", ".png", ".svg")}


def _body(md: Path) -> list[str]:
    """report.md without its first meta line (generation time and source differ by design)."""
    return [line for line in md.read_text().splitlines() if "**generated:**" not in line]


def test_report_from_archive_equals_report_from_results(tmp_path, capsys):
    root = _results(tmp_path / "results")
    direct, via = tmp_path / "direct", tmp_path / "via"
    assert harness_main(["report", "suite=mujoco", f"results_dir={root}", f"reps={REPS}", f"out_dir={direct}"]) == 0
    archive = tmp_path / "docs" / "archive"
    assert harness_main(["report", "suite=mujoco", f"results_dir={root}", f"reps={REPS}", f"out_dir={tmp_path / 'saved'}",
                         f"save_archive={archive}"]) == 0
    # from the archive alone: the results folder is gone
    import shutil
    shutil.rmtree(root)
    assert harness_main(["report", f"archive={archive}", f"reps={REPS}", f"out_dir={via}"]) == 0
    capsys.readouterr()
    a, b = _tables(direct), _tables(via)
    assert set(a) == set(b) and {"table1.csv", "env_scores.csv", "learning_curves.png"} <= set(a)
    assert [name for name in a if a[name] != b[name]] == []          # every table and figure, byte for byte
    assert _body(direct / "report.md") == _body(via / "report.md")
    md = (via / "report.md").read_text()
    assert "archive " in md                                           # says where its numbers came from
    # the sweep's wall time, summed over its pieces, travels with the archive
    assert "| ./run_all.sh suite=mujoco grid=table1 | 36 | 2 (1 killed) | 60 |" in md
    # the default output of archive=: the archive's parent folder
    assert harness_main(["report", f"archive={archive}", f"reps={REPS}"]) == 0
    assert (archive.parent / "report.md").exists()
    assert _tables(archive.parent) == b


def test_archive_round_trip_is_exact_and_small(tmp_path):
    root = _results(tmp_path / "results")
    summary = summarized_results(root, "mujoco")
    path = write_archive(summary, "mujoco", tmp_path / "archive")
    back = load_archive(path)
    pd.testing.assert_frame_equal(back.scores["last100"], summary.scores["last100"], check_exact=True)
    pd.testing.assert_frame_equal(back.curves, summary.curves, check_exact=True)
    pd.testing.assert_frame_equal(back.wall_curves, summary.wall_curves, check_exact=True)
    assert back.budgets == summary.budgets and back.warnings == summary.warnings
    assert len(back.runs) == len(summary.runs) == 37 and back.runs["analysed"].sum() == 36
    cfg = back.runs.set_index("run_id").loc["mujoco/Hopper-v5/ppo_clip/seed1"]
    assert cfg["config"]["algo_cfg"]["clip_eps"] == 0.2 and isinstance(cfg["versions"], dict)
    assert json.loads((path / "mujoco" / "random_scores.json").read_text())["Hopper-v5"]["score"] == 20.0
    # the scores are the raw runs' own: the mean of each run's last 100 episode returns
    raw = load_results(root, "mujoco", sources=("episodes.csv",)).metric("episode_return")
    run = raw[(raw["label"] == "trpo") & (raw["env"] == "Swimmer-v5") & (raw["seed"] == 2)]
    mine = back.scores["last100"].query("label == 'trpo' and env == 'Swimmer-v5' and seed == 2")["score"].item()
    assert mine == float(np.mean(run["value"].to_numpy()[-100:]))
    # the same summary writes the same bytes (no timestamps inside the gzip streams)
    again = write_archive(summary, "mujoco", tmp_path / "again")
    for name in ("runs.jsonl.gz", "scores.csv.gz", "curves.csv.gz", "frame.csv.gz"):
        assert (path / name).read_bytes() == (again / name).read_bytes()
    # a few kB a run (the paper's 400 runs: about a MB), most of it the two 100-point curves
    assert sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) < 36 * 3_500
    with gzip.open(path / "curves.csv.gz", "rt") as f:
        assert sum(1 for _ in f) == 36 * 100 + 1         # 100 points a run: what the figures read


def test_bad_archive_input_is_one_line_and_exit_2(tmp_path, capsys):
    assert harness_main(["report", f"archive={tmp_path}"]) == 2
    assert "not a pg-arena archive" in capsys.readouterr().err
    root = _results(tmp_path / "results")
    assert harness_main(["report", f"results_dir={root}", f"save_archive={tmp_path / 'a'}"]) == 2
    assert "suite=" in capsys.readouterr().err and not (tmp_path / "a").exists()
    summary = summarized_results(root, "mujoco")
    write_archive(summary, "mujoco", tmp_path / "b")
    assert harness_main(["report", f"archive={tmp_path / 'b'}", f"results_dir={root}", "steps=10000"]) == 2
    assert "drop steps=" in capsys.readouterr().err
    assert harness_main(["report", f"archive={tmp_path / 'b'}", f"save_archive={tmp_path / 'c'}"]) == 2
    assert "drop save_archive=" in capsys.readouterr().err and not (tmp_path / "c").exists()
    assert harness_main(["suite=mujoco", "algo=ppo_clip", f"archive={tmp_path}", f"results_dir={tmp_path / 'r'}"]) == 2
    assert "not a pg-arena archive" in capsys.readouterr().err and not (tmp_path / "r").exists()
    assert harness_main(["suite=llm_toy", f"archive={tmp_path / 'b'}", f"results_dir={tmp_path / 'r'}"]) == 2
    assert "holds suite mujoco, not llm_toy" in capsys.readouterr().err and not (tmp_path / "r").exists()


def test_an_archive_and_a_results_folder_merge_into_the_summary_of_one_folder(tmp_path, capsys):
    """A sweep split over machines: what one machine archived and what the next one ran, merged,
    summarise as the union of their runs in one folder would (every table and figure equal)."""
    import shutil
    whole = _results(tmp_path / "whole")
    first, second = tmp_path / "first", tmp_path / "second"
    for folder in (first, second):
        write_random_cache(folder, RANDOM)
    runs = sorted(p.parent for p in (whole / "mujoco").rglob("run.json"))
    for k, run in enumerate(runs):   # every other run on each machine: settings split across them
        shutil.copytree(run, (first if k % 2 else second) / run.relative_to(whole))
    shutil.copytree(whole / "mujoco" / "sweeps", first / "mujoco" / "sweeps")
    # the second machine also has an unfinished copy of a run the first archived done: the done one counts
    done_there = next(p for k, p in enumerate(runs) if k % 2 and (p / "episodes.csv").exists())
    write_run(second, done_there.parts[-3], done_there.parts[-2], int(done_there.name[4:]), [0.0] * 5,
              status="running")
    archive = tmp_path / "archive"
    assert harness_main(["report", "suite=mujoco", f"results_dir={first}", f"save_archive={archive}",
                         f"reps={REPS}", f"out_dir={tmp_path / 'r1'}"]) == 0
    assert harness_main(["report", f"archive={archive}", f"results_dir={second}", f"save_archive={archive}",
                         f"reps={REPS}", f"out_dir={tmp_path / 'merged'}"]) == 0
    assert harness_main(["report", "suite=mujoco", f"results_dir={whole}", f"reps={REPS}",
                         f"out_dir={tmp_path / 'one'}"]) == 0
    capsys.readouterr()
    a, b = _tables(tmp_path / "one"), _tables(tmp_path / "merged")
    assert set(a) == set(b) and {"table1.csv", "env_scores.csv", "learning_curves.png",
                                 "learning_curves_wall.png"} <= set(a)
    assert [name for name in a if a[name] != b[name]] == []
    merged, one = load_archive(archive), summarized_results(whole, "mujoco")
    assert len(merged.runs) == len(one.runs) and merged.runs["analysed"].sum() == one.runs["analysed"].sum()
    assert sorted(merged.warnings) == sorted(one.warnings)
    assert [p["start"] for p in merged.sweeps] == [p["start"] for p in one.sweeps]
    # the archive names both folds, oldest first, in one flat line (not one inside the other)
    assert [f["from"] for f in merged.folds] == [str(first.resolve()), str(second.resolve())]
    assert merged.source.count("(") == 1 and all(f["made"] in merged.source for f in merged.folds)
    # every run's stored place is its place in a results layout, however often it was folded
    with gzip.open(archive / "runs.jsonl.gz", "rt") as f:
        stored = [json.loads(line) for line in f]
    assert stored and all(r["path"] == r["run_id"] for r in stored if r["status"] == "done")


def test_a_sweep_skips_what_an_archive_holds_done_and_resumes_what_it_carries(tmp_path, capsys):
    """archive= on a sweep: a done run of the same config is not run again, one of another config
    is; an unfinished run resumes from the checkpoint the archive carries, and ends equal to a run
    that was never interrupted."""
    from harness.train import train_batch
    from helpers import TINY, plan
    words = lambda root, *extra, seeds=2: ["suite=mujoco", "algo=ppo_clip", "env=InvertedPendulum-v5", f"seeds={seeds}",   # noqa: E731
                                  "steps=1024", "eval_episodes=1", "eval_every=1024", "checkpoint_every=1",
                                  "report=false", f"results_dir={root}", *TINY, *extra]
    first = tmp_path / "first"
    assert harness_main(words(first, seeds=1)) == 0          # seed 0 done on the first machine
    # seed 1 interrupted there after two updates: its checkpoint, as a killed run leaves it
    [run1] = [r for r in plan(first, *TINY, seeds=2, eval_episodes=1, eval_every=1024, checkpoint_every=1) if r.seed == 1]
    calls = []

    def stop_after_two(i, step):
        calls.append(step)
        if len(calls) == 2:
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        train_batch([run1], progress=stop_after_two)
    assert (run1.run_dir / "checkpoint.pt").exists()
    archive = tmp_path / "archive"
    assert harness_main(["report", "suite=mujoco", f"results_dir={first}", f"save_archive={archive}",
                         f"out_dir={tmp_path / 'rep'}", f"reps={REPS}"]) == 0
    assert (archive / "unfinished" / run1.run_id / "checkpoint.pt.gz").is_file()
    # written again with another machine's runs, the archive still carries it, byte for byte
    carried = (archive / "unfinished" / run1.run_id / "checkpoint.pt.gz").read_bytes()
    other = tmp_path / "other"
    write_run(other, "InvertedPendulum-v5", "ppo_clip+clip_eps=0.1", 0, [1.0] * 5, steps=1024)
    assert harness_main(["report", f"archive={archive}", f"results_dir={other}", f"save_archive={archive}",
                         f"out_dir={tmp_path / 'rep2'}", f"reps={REPS}"]) == 0
    assert (archive / "unfinished" / run1.run_id / "checkpoint.pt.gz").read_bytes() == carried
    assert not (archive / "unfinished.new").exists()
    second = tmp_path / "second"
    capsys.readouterr()
    assert harness_main(words(second, f"archive={archive}")) == 0
    out = capsys.readouterr().out
    assert "1 of the done runs are in archive" in out and "1 run(s) resume from the checkpoints" in out
    assert not (second / "mujoco" / "InvertedPendulum-v5" / "ppo_clip" / "seed0").exists()
    record = json.loads((second / run1.run_id / "run.json").read_text())
    assert record["status"] == "done" and 0 < record["resumes"][0]["global_step"] < 1024
    # the same run, never interrupted, in a third folder: the same episodes
    third = tmp_path / "third"
    assert harness_main(words(third)) == 0
    mine = pd.read_csv(second / run1.run_id / "episodes.csv")
    pd.testing.assert_frame_equal(mine, pd.read_csv(third / run1.run_id / "episodes.csv"))
    # another config is another run: the archive's seed 0 does not count for it
    capsys.readouterr()
    assert harness_main(words(tmp_path / "fourth", f"archive={archive}", "algo.clip_eps=0.3", seeds=1)) == 0
    assert "in archive" not in capsys.readouterr().out


@pytest.mark.skipif(not (COMMITTED / "archive.json").exists(), reason="no committed archive")
def test_committed_archive_renders_a_sample(tmp_path):
    """A small sample of the committed archive of the paper's runs: two environments, the
    settings with runs on both, rendered; its per-environment table equals the scores it holds."""
    full = load_archive(COMMITTED)
    scores = full.scores["last100"]
    envs = sorted(scores["env"].unique())[:2]
    labels = [lab for lab, g in scores[scores["env"].isin(envs)].groupby("label") if g["env"].nunique() == 2][:4]
    assert labels, "the committed archive has no setting on two environments"
    keep = lambda f: f[f["env"].isin(envs) & f["label"].isin(labels)].reset_index(drop=True)   # noqa: E731
    sample = type(full)(root=full.root, runs=keep(full.runs), frame=full.frame, warnings=[], budgets=full.budgets,
                        scores={k: keep(v) for k, v in full.scores.items()}, curves=keep(full.curves),
                        source=full.source)
    report = build_report(COMMITTED, "mujoco", reps=REPS, out_dir=tmp_path, summary=sample)
    assert report.failures == []
    table = pd.read_csv(tmp_path / "env_scores.csv")
    for r in table.itertuples():
        runs = scores[(scores["label"] == r.label) & (scores["env"] == r.env)]["score"]
        assert r.mean == pytest.approx(runs.mean(), rel=1e-12)
    assert (tmp_path / "learning_curves.png").stat().st_size > 1000


def test_dropping_settings_from_an_archive_keeps_the_rest_and_its_carried_checkpoints(tmp_path, capsys):
    """scripts/drop_from_archive.py (runs a fixed bug made): the dropped labels' runs leave every table
    of the archive and its canaries, the others stay as they were, a carried checkpoint of a kept run
    stays byte for byte, and a sweep with archive= would plan the dropped runs again."""
    import importlib.util
    from core.archived import archived_runs
    spec = importlib.util.spec_from_file_location("drop", Path(__file__).resolve().parent.parent / "scripts" /
                                                  "drop_from_archive.py")
    drop = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(drop)
    root = _results(tmp_path / "r")
    unfinished = write_run(root, "Hopper-v5", "trpo", 5, [1.0] * 3, status="running")
    (unfinished / "checkpoint.pt").write_bytes(b"a checkpoint")
    archive = tmp_path / "archive"
    write_archive(summarize(load_results(root, "mujoco"), "mujoco"), "mujoco", archive)
    carried = archive / "unfinished" / "mujoco" / "Hopper-v5" / "trpo" / "seed5" / "checkpoint.pt.gz"
    before_bytes = carried.read_bytes()
    (archive / "canary.json").write_text(json.dumps({"canaries": {"ppo_clip": {}, "trpo": {}}, "steps": 4096}))
    before = load_archive(archive)

    assert drop.main([str(archive), "ppo_clip", "nothing_such"]) == 2       # refused, nothing written
    assert "holds no run of nothing_such" in capsys.readouterr().err
    assert set(load_archive(archive).runs["label"]) == set(before.runs["label"])

    assert drop.main([str(archive), "ppo_clip", "ppo_clip+clip_eps=0.1", "--why", "a test"]) == 0
    after = load_archive(archive)
    kept = set(before.runs["label"]) - {"ppo_clip", "ppo_clip+clip_eps=0.1"}
    assert set(after.runs["label"]) == kept
    for table in (after.frame, after.curves, *after.scores.values()):
        assert set(table["label"]) <= kept
    pd.testing.assert_frame_equal(after.scores["last100"],
                                  before.scores["last100"][before.scores["last100"]["label"].isin(kept)]
                                  .reset_index(drop=True))
    assert carried.read_bytes() == before_bytes
    assert json.loads((archive / "canary.json").read_text())["canaries"] == {"trpo": {}}
    assert after.folds[-1]["dropped"] == ["ppo_clip", "ppo_clip+clip_eps=0.1"] and after.folds[-1]["why"] == "a test"
    assert len(after.folds) == len(before.folds) + 1
    assert not any(r["label"].startswith("ppo_clip") for r in archived_runs(archive, "mujoco").values())
