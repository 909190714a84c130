"""The analysis on synthetic results with known answers, written in the real layout."""
from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from rliable import library as rly
from rliable import metrics as rlm

from analysis import stats
from analysis.cli import main as analysis_main
from analysis.compare import compare_scores, verdict_from_poi
from analysis.load import AnalysisError, ResultsWarning, load_results, order_labels, split_label
from analysis.reference import TABLE1, TABLE2, atari49, atari_game
from analysis.report import build_report
from analysis.scores import (human_normalise, normalise_random_best, published_atari_scores, random_scores,
                             run_scores, score_dict, win_counts)
from analysis.synthetic import write_random_cache, write_run, write_setting
from harness.compare import main as compare_main, run_compare
from analysis.tables import table1, table2

REPS = 300       # bootstrap resamples in tests (the report's default is 2000)
ENVS = ["Hopper-v5", "InvertedPendulum-v5", "Swimmer-v5"]
RANDOM = {"Hopper-v5": 10.0, "InvertedPendulum-v5": 5.0, "Swimmer-v5": 0.0}


def snapshot(root: Path) -> dict[str, str]:
    """Every file under root with its content hash: to check that nothing was deleted or changed."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def constant_setting(root, label, scores_by_env, seeds=3, steps=10_000, noise=None, **kw):
    """Runs whose last-100 score is exactly ``scores_by_env[env] + noise[seed]``."""
    noise = noise if noise is not None else [0.0] * seeds
    for env, base in scores_by_env.items():
        for seed in range(seeds):
            write_run(root, env, label, seed, [base + noise[seed]] * 110, steps=steps, **kw)


# ---------------------------------------------------------------------------------------
# loading

def test_load_tidy_frame_excludes_runs_not_done(tmp_path):
    constant_setting(tmp_path, "ppo_clip", {"Hopper-v5": 100.0, "Swimmer-v5": 30.0}, seeds=2)
    write_run(tmp_path, "Hopper-v5", "trpo", 0, [1.0] * 5, status="failed")
    write_run(tmp_path, "Hopper-v5", "trpo", 1, [1.0] * 5, status="running")
    with pytest.warns(ResultsWarning, match="2 run\\(s\\) not done were excluded \\(1 failed, 1 running\\)"):
        results = load_results(tmp_path)
    frame = results.frame
    assert list(frame.columns) == ["suite", "env", "algo", "variant", "label", "seed", "step", "metric", "value"]
    assert set(frame["label"]) == {"ppo_clip"}
    assert {"episode_return", "episode_length", "eval_return_mean", "kl", "policy_loss", "sps"} <= set(frame["metric"])
    ret = results.metric("episode_return")
    assert len(ret) == 2 * 2 * 110
    assert len(results.runs) == 6 and results.runs["done"].sum() == 4
    # rows keep their written order within a run
    one = ret[(ret["env"] == "Hopper-v5") & (ret["seed"] == 0)]
    assert one["step"].is_monotonic_increasing


def test_a_done_run_whose_files_lost_rows_is_corrupt(tmp_path):
    run = write_run(tmp_path, "Hopper-v5", "ppo_clip", 0, [1.0] * 20)
    write_run(tmp_path, "Hopper-v5", "ppo_clip", 1, [1.0] * 20)
    lines = (run / "episodes.csv").read_text().splitlines()
    (run / "episodes.csv").write_text("\n".join(lines[:-3]) + "\n")     # truncated after the run finished
    with pytest.raises(AnalysisError, match="seed0: run.json says done but episodes.csv has 17"):
        load_results(tmp_path)


def test_mixed_budgets_are_reported_not_averaged(tmp_path):
    constant_setting(tmp_path, "ppo_clip", {"Hopper-v5": 100.0}, seeds=3, steps=5000)
    write_run(tmp_path, "Swimmer-v5", "ppo_clip", 0, [7.0] * 110, steps=9000)
    with pytest.warns(ResultsWarning, match="mixes budgets"):
        results = load_results(tmp_path)
    assert results.budgets == {"mujoco": 5000}
    assert set(results.analysed["steps"]) == {5000}
    assert any("1 run(s) at steps=9,000" in w for w in results.warnings)
    with pytest.warns(ResultsWarning):
        other = load_results(tmp_path, steps=9000)
    assert other.analysed["env"].tolist() == ["Swimmer-v5"]
    with pytest.raises(AnalysisError, match="no done runs with steps=1234"):
        load_results(tmp_path, steps=1234)


def test_missing_seeds_and_envs_are_reported(tmp_path):
    constant_setting(tmp_path, "ppo_clip", {"Hopper-v5": 100.0, "Swimmer-v5": 30.0}, seeds=3)
    constant_setting(tmp_path, "trpo", {"Hopper-v5": 90.0}, seeds=3)
    write_run(tmp_path, "Swimmer-v5", "trpo", 0, [20.0] * 110)
    write_run(tmp_path, "Swimmer-v5", "trpo", 2, [20.0] * 110)
    constant_setting(tmp_path, "reinforce", {"Hopper-v5": 50.0}, seeds=3)
    with pytest.warns(ResultsWarning):
        results = load_results(tmp_path)
    text = "\n".join(results.warnings)
    assert "trpo: missing Swimmer-v5 seed 1" in text
    assert "reinforce: missing Swimmer-v5 (no runs)" in text
    scores = run_scores(results)
    sd, notes = score_dict(scores, ["Hopper-v5", "Swimmer-v5"])
    assert set(sd) == {"ppo_clip", "trpo"}                      # reinforce lacks an env: not aggregated
    assert sd["trpo"].shape == (2, 2)                           # seeds 0 and 2, present on both envs
    assert any("trpo: aggregates use the 2 seed(s)" in n for n in notes)
    assert any("reinforce: no runs on Swimmer-v5" in n for n in notes)


def test_label_order_and_split():
    labels = ["ppo_kl+adaptive=false+kl_coef=10.0", "trpo", "ppo_kl+adaptive=false+kl_coef=3.0", "ppo_kl", "reinforce"]
    assert order_labels(labels) == ["reinforce", "trpo", "ppo_kl", "ppo_kl+adaptive=false+kl_coef=3.0",
                                    "ppo_kl+adaptive=false+kl_coef=10.0"]
    assert split_label("ppo_clip+clip_eps=0.1") == ("ppo_clip", "+clip_eps=0.1")


# ---------------------------------------------------------------------------------------
# scores

def test_paper_scores_last100_all_and_final_eval(tmp_path):
    write_run(tmp_path, "Hopper-v5", "ppo_clip", 0, list(range(150)), evals=[3.0, 8.0, 42.0])
    write_run(tmp_path, "Hopper-v5", "ppo_clip", 1, [4.0, 6.0])          # fewer than 100 episodes
    results = load_results(tmp_path)
    last = run_scores(results, "last100").set_index("seed")["score"]
    assert last[0] == pytest.approx(np.mean(np.arange(50, 150)))
    assert last[1] == pytest.approx(5.0)
    assert any("fewer than 100 training episodes" in w for w in results.warnings)
    assert run_scores(results, "all").set_index("seed")["score"][0] == pytest.approx(74.5)
    assert run_scores(results, "final_eval").set_index("seed")["score"][0] == pytest.approx(42.0)


def test_normalisation_of_a_known_table():
    scores = pd.DataFrame({
        "env": ["A"] * 4 + ["B"] * 4 + ["C"] * 2,
        "label": ["x", "x", "y", "y"] * 2 + ["x", "y"],
        "seed": [0, 1] * 4 + [0, 0],
        "score": [20.0, 40.0, 60.0, 100.0,      # A: random 10, best mean y = 80
                  -5.0, -3.0, -9.0, -7.0,       # B: random -10, best mean x = -4
                  1.0, 2.0],                    # C: best 2 <= random 5: not normalised
    })
    out, constants, problems = normalise_random_best(scores, {"A": 10.0, "B": -10.0, "C": 5.0})
    a = out[out["env"] == "A"]["normalised"].to_numpy()
    np.testing.assert_allclose(a, [10 / 70, 30 / 70, 50 / 70, 90 / 70])
    b = out[out["env"] == "B"]["normalised"].to_numpy()
    np.testing.assert_allclose(b, [5 / 6, 7 / 6, 1 / 6, 3 / 6])
    assert out[out["env"] == "C"]["normalised"].isna().all()
    assert any("C: no setting beats the random policy" in p for p in problems)
    c = constants.set_index("env")
    assert c.loc["A", "best_label"] == "y" and c.loc["A", "best"] == 80.0 and c.loc["B", "best_label"] == "x"
    # the best setting averages exactly 1 on its environment, the random policy 0
    assert out[(out["env"] == "A") & (out["label"] == "y")]["normalised"].mean() == pytest.approx(1.0)


def test_random_scores_are_measured_once_and_cached(tmp_path):
    calls = []

    def fake(env):
        calls.append(env)
        return {"score": {"A": 1.5, "B": -2.0}[env], "episodes": 100}
    scores, problems = random_scores(tmp_path, "mujoco", ["A", "B"], fake)
    assert scores == {"A": 1.5, "B": -2.0} and not problems and calls == ["A", "B"]
    cache = json.loads((tmp_path / "mujoco" / "random_scores.json").read_text())
    assert cache["A"]["score"] == 1.5
    again, _ = random_scores(tmp_path, "mujoco", ["A", "B"], fake)
    assert again == scores and calls == ["A", "B"]           # from the cache
    (tmp_path / "mujoco" / "random_scores.json").write_text("{not json")
    with pytest.raises(AnalysisError, match="corrupt random-policy cache"):
        random_scores(tmp_path, "mujoco", ["A"], fake)


def test_random_policy_is_measured_on_the_real_environment(tmp_path):
    from analysis.scores import measure_random_score
    entry = measure_random_score("InvertedPendulum-v5", episodes=5)
    assert entry["episodes"] == 5 and entry["policy"] == "uniform random actions"
    assert 1.0 <= entry["score"] < 60.0                      # a random policy drops the pole within a few steps
    assert measure_random_score("InvertedPendulum-v5", episodes=5)["score"] == entry["score"]   # seeded
    with pytest.raises(AnalysisError, match="cannot measure the random policy on NoSuchEnv-v0"):
        measure_random_score("NoSuchEnv-v0")


# ---------------------------------------------------------------------------------------
# CIs against rliable called directly

def test_ci_wrappers_equal_rliable_called_directly():
    rng = np.random.default_rng(3)
    x = rng.normal(0.6, 0.2, size=(3, 5))
    y = rng.normal(0.5, 0.2, size=(4, 5))
    y[0, 0] = x[0, 0]                                       # a tie
    for func, index in ((rlm.aggregate_median, 0), (rlm.aggregate_iqm, 1), (rlm.aggregate_mean, 2),
                        (lambda s: rlm.aggregate_optimality_gap(s, 1.0), 3)):
        np.random.seed(stats.BOOTSTRAP_SEED)
        point, ci = rly.get_interval_estimates({"x": x}, func, reps=REPS)
        est = stats.aggregate_estimates({"x": x}, REPS)["x"][stats.AGGREGATES[index]]
        assert est[0] == pytest.approx(float(point["x"]))
        np.testing.assert_allclose([est[1], est[2]], np.ravel(ci["x"]), rtol=1e-12, atol=1e-12)
    np.random.seed(stats.BOOTSTRAP_SEED)
    point, ci = rly.get_interval_estimates({"xy": [x, y]}, rlm.probability_of_improvement, reps=100)
    est = stats.poi_estimate(x, y, reps=100)
    assert est[0] == pytest.approx(float(point["xy"]))
    np.testing.assert_allclose(est[1:], np.ravel(ci["xy"]), atol=1e-12)
    # the matrix of two is the same bootstrap
    labels, p, lo, hi = stats.poi_matrix({"x": x, "y": y}, reps=100)
    assert (p[0, 1], lo[0, 1], hi[0, 1]) == pytest.approx(est)
    assert p[1, 0] == pytest.approx(1 - est[0])
    # reproducible, and the caller's global NumPy state is left alone
    np.random.seed(5)
    before = np.random.random()
    np.random.seed(5)
    stats.task_means(x, REPS)
    assert np.random.random() == before
    np.testing.assert_array_equal(stats.task_means(x, REPS)[1], stats.task_means(x, REPS)[1])


def test_probability_of_improvement_equals_rliable():
    rng = np.random.default_rng(0)
    for _ in range(20):
        x = rng.integers(0, 4, size=(rng.integers(1, 6), 3)).astype(float)   # many ties
        y = rng.integers(0, 4, size=(rng.integers(1, 6), 3)).astype(float)
        assert stats.probability_of_improvement(x, y) == pytest.approx(rlm.probability_of_improvement(x, y))
    x = rng.normal(size=(3, 4))
    assert stats.probability_of_improvement(x, x.copy()) == pytest.approx(0.5)


def test_table1_rows_scores_and_cis(tmp_path):
    # ppo_clip (default clip_eps=0.2), ppo_clip+clip_eps=0.1, the "no penalty" row and a plain algorithm
    constant_setting(tmp_path, "ppo_clip", {"Hopper-v5": 110.0, "Swimmer-v5": 50.0}, noise=[0, 2, -2])
    constant_setting(tmp_path, "ppo_clip+clip_eps=0.1", {"Hopper-v5": 60.0, "Swimmer-v5": 25.0}, noise=[0, 1, -1])
    constant_setting(tmp_path, "ppo_kl+adaptive=false+kl_coef=0.0", {"Hopper-v5": 0.0, "Swimmer-v5": -10.0})
    constant_setting(tmp_path, "ppo_kl+adaptive=false+kl_coef=3.0+num_epochs=5", {"Hopper-v5": 80.0, "Swimmer-v5": 30.0})
    constant_setting(tmp_path, "trpo", {"Hopper-v5": 70.0, "Swimmer-v5": 40.0})
    results = load_results(tmp_path)
    scores = run_scores(results)
    normed, constants, problems = normalise_random_best(scores, {"Hopper-v5": 10.0, "Swimmer-v5": 0.0})
    assert not problems
    t = table1(results, "mujoco", normed, ["Hopper-v5", "Swimmer-v5"], reps=REPS)
    rows = t.set_index("setting")
    assert rows.loc["Clipping, ε = 0.2", "label"] == "ppo_clip"
    assert rows.loc["Clipping, ε = 0.1", "label"] == "ppo_clip+clip_eps=0.1"
    assert rows.loc["No clipping or penalty", "label"] == "ppo_kl+adaptive=false+kl_coef=0.0"
    assert rows.loc["Fixed KL, β = 3", "label"] is None        # that label also changes num_epochs
    assert rows.loc["Clipping, ε = 0.2", "mean"] == pytest.approx(1.0)   # the best setting on both envs
    # ε = 0.1: Hopper (60-10)/100 = 0.5, Swimmer 25/50 = 0.5
    assert rows.loc["Clipping, ε = 0.1", "mean"] == pytest.approx(0.5)
    assert rows.loc["No clipping or penalty", "mean"] == pytest.approx(np.mean([-0.1, -0.2]))
    assert rows.loc["Clipping, ε = 0.1", "paper"] == 0.76
    assert len(t) == len(TABLE1) + 2                                 # + trpo, + the num_epochs variant
    assert t.iloc[len(TABLE1)]["label"] == "trpo" and t.iloc[len(TABLE1)]["section"] == "algorithms"
    # the CI is stats.small_sample_interval's (tested against loops below), on the runs x envs matrix of
    # normalised scores, from the setting's own fixed generator (the Table 1 verdicts' draws)
    matrix = np.array([[(60.0 + n - 10) / 100, (25.0 + n) / 50] for n in (0, 1, -1)])
    rng = stats.label_rng(stats.BOOTSTRAP_SEED, "table1", "Clipping, ε = 0.1")
    np.testing.assert_allclose(rows.loc["Clipping, ε = 0.1", ["low", "high"]].to_numpy(dtype=float),
                               stats.small_sample_interval(matrix, REPS, rng)[1:], atol=1e-12)
    assert rows.loc["Clipping, ε = 0.1", "low"] < 0.5 < rows.loc["Clipping, ε = 0.1", "high"]


# ---------------------------------------------------------------------------------------
# Atari (Table 2) on hand-made frames

def test_atari_game_names():
    assert atari_game("Pong-v5") == atari_game("ALE/Pong-v5") == atari_game("PongNoFrameskip-v4") == "Pong"
    assert atari_game("ALE_MontezumaRevenge-v5") == atari_game("montezuma_revenge") == "MontezumaRevenge"
    assert atari_game("CartPole-v1") is None
    assert len(atari49()) == 49


def test_win_counts_on_a_hand_made_frame():
    rows = []
    means = {  # game: {label: per-seed scores}
        "Pong": {"a2c": [1, 3], "acer": [5, 5], "ppo": [4, 4]},              # acer
        "Breakout": {"a2c": [10, 10], "acer": [9, 9], "ppo": [30, 10]},      # ppo (mean 20)
        "Qbert": {"a2c": [7, 7], "acer": [6, 8], "ppo": [2, 2]},             # a2c 7 = acer 7: tie
        "Venture": {"a2c": [0, 0], "acer": [0, 0], "ppo": [0, 0]},           # tie
        "Alien": {"a2c": [1, 1], "acer": [2, 2]},                            # ppo has no runs: not counted
    }
    for game, per in means.items():
        for label, vals in per.items():
            rows += [{"env": f"ALE/{game}-v5", "label": label, "seed": s, "score": v} for s, v in enumerate(vals)]
    counts = win_counts(pd.DataFrame(rows), labels=["a2c", "acer", "ppo"])
    assert counts.to_dict() == {"a2c": 0, "acer": 1, "ppo": 1, "Tie": 2}


def test_win_counts_on_the_papers_table():
    # the paper's per-game last-100 numbers (rounded to 0.1) reproduce its Table 2 row, except Pong,
    # where ACER and PPO both print 20.7 (the paper counted it for ACER)
    counts = win_counts(published_atari_scores(), labels=["A2C", "ACER", "PPO"])
    assert counts.to_dict() == {"A2C": 1, "ACER": 27, "PPO": 19, "Tie": 2}
    assert TABLE2["last100"] == {"A2C": 1, "ACER": 28, "PPO": 19, "Tie": 1}


def test_table2_and_human_normalised_aggregates(tmp_path):
    games = {"Pong": (-20.7, 14.6), "Breakout": (1.7, 30.5), "Boxing": (0.1, 12.1)}
    for g, (rnd, human) in games.items():
        for seed in range(2):
            # ppo: learns late (wins on the last 100), a2c: good early, flat (wins over all of training)
            write_run(tmp_path, f"{g}-v5", "ppo", seed, [rnd] * 100 + [human] * 100, suite="atari")
            write_run(tmp_path, f"{g}-v5", "a2c", seed, [(rnd + human) / 2 + 0.1 * seed] * 200, suite="atari")
    results = load_results(tmp_path, "atari")
    last = human_normalise(run_scores(results, "last100"))[0]
    every = human_normalise(run_scores(results, "all"))[0]
    assert last[last["label"] == "ppo"]["normalised"].to_numpy() == pytest.approx(1.0)
    assert every[every["label"] == "ppo"]["normalised"].to_numpy() == pytest.approx(0.5)
    t = table2(every, last, ["a2c", "ppo"]).set_index("metric")
    assert t.loc["last100", "ppo"] == 3 and t.loc["last100", "a2c"] == 0
    assert t.loc["all", "a2c"] == 3 and t.loc["all", "Tie"] == 0 and t.loc["all", "games"] == 3
    envs = sorted(last["env"].unique())
    sd, _ = score_dict(last, envs, value="normalised")
    agg = stats.aggregate_estimates(sd, REPS)
    assert agg["ppo"]["median"][0] == pytest.approx(1.0) and agg["ppo"]["optimality_gap"][0] == pytest.approx(0.0)
    np.random.seed(stats.BOOTSTRAP_SEED)
    _, ci = rly.get_interval_estimates({"a": sd["a2c"]}, rlm.aggregate_iqm, reps=REPS)
    np.testing.assert_allclose(agg["a2c"]["iqm"][1:], np.ravel(ci["a"]), atol=1e-12)
    report = build_report(tmp_path, "atari", reps=REPS)
    assert not report.failures
    page = report.path.read_text()
    assert 'id="table2"' in page and "paper A2C" in page and "<img src=\"data:image/png;base64," in page


# ---------------------------------------------------------------------------------------
# compare

def three_envs(root, label, offset=0.0, rng_seed=0, seeds=3):
    write_setting(root, label, {"Hopper-v5": 500.0 + offset, "InvertedPendulum-v5": 300.0 + offset / 2,
                                "Swimmer-v5": 40.0 + offset / 10}, seeds=seeds, spread=2.0, rng_seed=rng_seed)


@pytest.fixture
def compare_dir(tmp_path):
    three_envs(tmp_path, "ppo_clip", 0.0, rng_seed=1)
    three_envs(tmp_path, "ppo_clip+clip_eps=0.3", 200.0, rng_seed=2)      # better by construction
    three_envs(tmp_path, "ppo_clip+clip_eps=0.1", -200.0, rng_seed=3)     # worse by construction
    three_envs(tmp_path, "ppo_clip+clip_eps=0.25", 0.0, rng_seed=1)       # identical to the baseline
    write_setting(tmp_path, "ppo_clip+clip_eps=0.22", {"Hopper-v5": 500.0, "InvertedPendulum-v5": 300.0,   # the same
                  "Swimmer-v5": 40.0}, seeds=3, spread=2.0, rng_seed=1,    # scores, other update metrics
                  metrics={"policy_loss": [-0.03, -0.04], "kl": [0.02, 0.03]})
    write_random_cache(tmp_path, RANDOM)
    return tmp_path


@pytest.mark.parametrize("candidate, verdict, code", [("ppo_clip+clip_eps=0.3", "better", 0),
                                                      ("ppo_clip+clip_eps=0.1", "worse", 1),
                                                      ("ppo_clip+clip_eps=0.22", "inconclusive", 3),
                                                      ("ppo_clip+clip_eps=0.25", "identical", 4)])
def test_compare_verdicts_and_exit_codes(compare_dir, capsys, candidate, verdict, code):
    before = snapshot(compare_dir)
    assert compare_main(["compare", f"candidate={candidate}", "baseline=ppo_clip",
                          f"results_dir={compare_dir}", f"reps={REPS}"]) == code
    out = capsys.readouterr().out
    assert f"verdict: {verdict}" in out
    for env in ("Hopper-v5", "InvertedPendulum-v5", "Swimmer-v5", "aggregate (normalised)"):
        assert env in out
    if verdict == "better":
        assert "P(X > Y) 95% CI [1.00, 1.00] lies entirely above 0.5" in out
    if verdict == "inconclusive":
        assert "no difference detected" in out
    if verdict == "identical":
        assert "identical to the baseline's on every environment and seed" in out and "more than" not in out
    assert snapshot(compare_dir) == before                  # nothing to run: nothing written


def test_compare_numbers(compare_dir):
    results = load_results(compare_dir, sources=("episodes.csv",))
    scores = run_scores(results)
    c = compare_scores(scores, "ppo_clip+clip_eps=0.3", "ppo_clip", RANDOM, reps=REPS)
    hopper = next(e for e in c.envs if e.env == "Hopper-v5")
    assert hopper.n_x == hopper.n_y == 3
    assert hopper.diff[0] == pytest.approx(hopper.mean_x - hopper.mean_y)
    assert 150 < hopper.diff[1] <= hopper.diff[0] <= hopper.diff[2] < 250
    assert hopper.poi == (1.0, 1.0, 1.0)
    assert c.aggregate_diff[0] > 0 and c.aggregate_mean_x == pytest.approx(1.0, abs=0.02)
    assert c.verdict == "better" and c.exit_code == 0


@pytest.mark.parametrize("seed", range(4))
def test_stratified_welch_interval_against_scipy_and_the_formula(seed):
    """One task: scipy's Welch interval. Several: the mean over tasks of the differences, its
    variance the sum of each task's s2/n over T^2, Satterthwaite's degrees of freedom, as a loop."""
    from scipy.stats import t as student_t, ttest_ind
    from analysis.stats import stratified_welch_interval
    rng = np.random.default_rng(seed)
    x, y = rng.normal(1, 2, 3), rng.normal(0, 1, 4)
    ci = ttest_ind(x, y, equal_var=False).confidence_interval(0.95)
    got = stratified_welch_interval(x, y)
    assert got[0] == pytest.approx(x.mean() - y.mean()) and (got[1], got[2]) == pytest.approx((ci.low, ci.high))
    X, Y = rng.normal(0, rng.uniform(0.5, 3, 5), (3, 5)), rng.normal(0, rng.uniform(0.5, 3, 5), (4, 5))
    terms, dfs = [], []
    for t in range(5):
        for m in (X, Y):
            col = [float(v) for v in m[:, t]]
            mean = sum(col) / len(col)
            terms.append(sum((v - mean) ** 2 for v in col) / (len(col) - 1) / len(col) / 25)
            dfs.append(len(col) - 1)
    var = sum(terms)
    df = var ** 2 / sum(v ** 2 / d for v, d in zip(terms, dfs))
    point = float(np.mean([X[:, t].mean() - Y[:, t].mean() for t in range(5)]))
    half = student_t.ppf(0.975, df) * var ** 0.5
    assert stratified_welch_interval(X, Y) == pytest.approx((point, point - half, point + half))


def test_inconclusive_verdict_estimates_the_seeds_needed():
    verdict, reason, needed = verdict_from_poi((0.6, 0.45, 0.75), seeds=3)
    assert verdict == "inconclusive" and needed == 7           # 3 * (0.15 / 0.1)^2 = 6.75
    assert "about 7 seeds per environment (now 3)" in reason
    assert verdict_from_poi((0.5, 0.3, 0.7), 3)[2] is None
    assert "more than 100" in verdict_from_poi((0.51, 0.2, 0.8), 3)[1]
    assert verdict_from_poi((0.9, 0.8, 1.0), 1)[0] == "inconclusive"   # one seed: no spread to resample
    assert verdict_from_poi((0.9, 0.8, 1.0), 2)[0] == "better"
    assert verdict_from_poi((0.1, 0.0, 0.2), 2)[0] == "worse"


def write_resolved_run(run, returns):
    """A finished run whose run.json holds ``run``'s resolved config, as training would record it."""
    run_dir = write_run(run.results_dir, run.env, run.label, run.seed, returns, steps=run.steps, suite=run.suite,
                        algo_cfg=run.algo_cfg)
    record = json.loads((run_dir / "run.json").read_text())
    record["config"] = dataclasses.asdict(run)
    (run_dir / "run.json").write_text(json.dumps(record, indent=2))
    return run_dir


def resolved_runs(root, label, envs, seeds, steps, **words):
    """The RunConfigs of ``label`` as a sweep plans them (eval_every = steps, 5 eval episodes)."""
    from harness.compare import plan_label
    return plan_label(label, {"suite": "mujoco", "env": ",".join(envs), "seeds": str(seeds), "steps": str(steps),
                              "eval_every": str(steps), "eval_episodes": "5", "results_dir": str(root), **words})


def test_compare_runs_the_missing_candidate_runs_with_the_baselines_protocol(tmp_path, capsys):
    base = {"InvertedPendulum-v5": 50.0, "Hopper-v5": 80.0}
    for run in resolved_runs(tmp_path, "ppo_clip", list(base), 2, 4096):
        write_resolved_run(run, [base[run.env] + run.seed] * 110)
    write_run(tmp_path, "Hopper-v5", "ppo_clip", 5, [1.0] * 110, steps=999)   # another budget: not the protocol
    write_random_cache(tmp_path, {"InvertedPendulum-v5": 5.0, "Hopper-v5": 15.0})
    planned = []

    def executor(runs, jobs):           # stands in for harness.executor.run_local: writes finished runs
        planned.extend(runs)
        for r in runs:
            write_resolved_run(r, [200.0 + r.seed] * 110)
        return [{"run_id": r.run_id, "status": "done", "error": None} for r in runs]
    out, err = io.StringIO(), io.StringIO()
    c = run_compare("ppo_clip+clip_eps=.3", "ppo_clip", "mujoco", tmp_path, jobs=1, reps=REPS, out=out, err=err,
                    executor=executor)
    assert "stored as ppo_clip+clip_eps=0.3" in err.getvalue()
    home = tmp_path / "compare" / "steps=4096+eval_every=4096+eval_episodes=5+device=cpu"   # compare's own runs
    assert {r.results_dir for r in planned} == {str(home)}
    assert sorted((r.env, r.seed, r.steps, r.label) for r in planned) == [
        ("Hopper-v5", 0, 4096, "ppo_clip+clip_eps=0.3"), ("Hopper-v5", 1, 4096, "ppo_clip+clip_eps=0.3"),
        ("InvertedPendulum-v5", 0, 4096, "ppo_clip+clip_eps=0.3"), ("InvertedPendulum-v5", 1, 4096, "ppo_clip+clip_eps=0.3")]
    assert planned[0].algo_cfg["clip_eps"] == 0.3 and planned[0].eval_every == 4096
    assert c.verdict == "better" and c.seeds == 2
    # a second compare finds everything done and runs nothing
    planned.clear()
    run_compare("ppo_clip+clip_eps=0.3", "ppo_clip", "mujoco", tmp_path, reps=REPS, out=out, err=err, executor=executor)
    assert planned == []
    # seeds=3 extends both candidate and baseline
    c = run_compare("ppo_clip+clip_eps=0.3", "ppo_clip", "mujoco", tmp_path, seeds=3, reps=REPS, out=out, err=err,
                    executor=executor)
    assert sorted((r.label, r.env, r.seed) for r in planned) == [
        ("ppo_clip", "Hopper-v5", 2), ("ppo_clip", "InvertedPendulum-v5", 2),
        ("ppo_clip+clip_eps=0.3", "Hopper-v5", 2), ("ppo_clip+clip_eps=0.3", "InvertedPendulum-v5", 2)]
    assert c.seeds == 3
    # extending to seed 5 runs compare's own seed 5 and leaves the run of another budget where it is
    other = tmp_path / "mujoco" / "Hopper-v5" / "ppo_clip" / "seed5"
    before = snapshot(other)
    planned.clear()
    c = run_compare("ppo_clip+clip_eps=0.3", "ppo_clip", "mujoco", tmp_path, seeds=6, reps=REPS, out=out, err=err,
                    executor=executor)
    assert sorted({r.seed for r in planned}) == [3, 4, 5] and len(planned) == 12 and c.seeds == 6
    assert {r.results_dir for r in planned} == {str(home)} and snapshot(other) == before


# ---------------------------------------------------------------------------------------
# bad input: a clear one-line error, exit 2, nothing deleted

def _error(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


def test_bad_input(tmp_path, capsys):
    assert analysis_main(["report", f"results_dir={tmp_path / 'nope'}"]) == 2
    assert "does not exist" in _error(capsys)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert analysis_main(["report", f"results_dir={empty}"]) == 2
    assert "no runs under" in _error(capsys)
    assert compare_main(["compare", "candidate=ppo_clip+clip_eps=0.3", "baseline=ppo_clip",
                          f"results_dir={empty}"]) == 2
    assert "no results for suite 'mujoco'" in _error(capsys)
    assert analysis_main(["report", "suite"]) == 2 and "not key=value" in _error(capsys)
    assert analysis_main(["report", "colour=red"]) == 2 and "unknown key 'colour'" in _error(capsys)
    assert compare_main(["compare", "baseline=ppo_clip"]) == 2 and "candidate= is required" in _error(capsys)

    root = tmp_path / "results"
    constant_setting(root, "ppo_clip", {"Hopper-v5": 100.0}, seeds=2)
    write_random_cache(root, RANDOM)
    before = snapshot(root)
    # a candidate with no runs and nothing that can run it
    assert compare_main(["compare", "candidate=no_such_algo", "baseline=ppo_clip", f"results_dir={root}"]) == 2
    assert "unknown algorithm 'no_such_algo'" in _error(capsys)
    assert compare_main(["compare", "candidate=ppo_clip+clip_eps=0.3", "baseline=trpo", f"results_dir={root}"]) == 2
    assert "baseline trpo has no done runs" in _error(capsys)
    assert compare_main(["compare", "candidate=ppo_clip", "baseline=ppo_clip", f"results_dir={root}"]) == 2
    assert "the same setting" in _error(capsys)
    assert snapshot(root) == before

    # a corrupt CSV in a run that says done (a run of before checksums: the value itself is checked)
    run_dir = root / "mujoco" / "Hopper-v5" / "ppo_clip" / "seed1"
    record = json.loads((run_dir / "run.json").read_text())
    record.pop("checksums")
    (run_dir / "run.json").write_text(json.dumps(record))
    bad = run_dir / "episodes.csv"
    original = bad.read_text()
    lines = original.splitlines()
    bad.write_text("\n".join(lines[:5] + ["12,not-a-number,3"] + lines[6:]) + "\n")
    before = snapshot(root)
    assert analysis_main(["report", f"results_dir={root}"]) == 2
    message = _error(capsys)
    assert "corrupt results file" in message and "'episode_return' has the non-numeric value 'not-a-number'" in message
    assert "seed1" in message
    assert compare_main(["compare", "candidate=ppo_clip+clip_eps=0.3", "baseline=ppo_clip",
                          f"results_dir={root}"]) == 2
    assert "corrupt results file" in _error(capsys)
    assert snapshot(root) == before
    # garbage, and a file that differs from its checksum
    bad.write_bytes(b"\x00\xff\xfe garbage")
    assert analysis_main(["report", f"results_dir={root}"]) == 2
    assert "corrupt results in" in (message := _error(capsys)) and "seed1" in message
    bad.write_text(original)                     # seed1 whole again: only seed0's checksum can fail now
    run0 = root / "mujoco" / "Hopper-v5" / "ppo_clip" / "seed0" / "episodes.csv"
    run0.write_text(run0.read_text().replace("100.0", "100.5", 1))
    assert analysis_main(["report", f"results_dir={root}"]) == 2
    message = _error(capsys)
    assert "corrupt results in" in message and "seed0" in message and "(checksum)" in message
    assert "seed1" not in message

    # only runs that are not done
    failed = tmp_path / "failed"
    write_run(failed, "Hopper-v5", "ppo_clip", 0, [1.0], status="failed")
    assert analysis_main(["report", f"results_dir={failed}"]) == 2
    assert "no completed runs" in _error(capsys)


def test_compare_refuses_to_overwrite_a_done_run_of_another_protocol_in_its_folder(tmp_path, capsys):
    for run in resolved_runs(tmp_path, "ppo_clip", ["Hopper-v5"], 2, 4096):
        write_resolved_run(run, [100.0] * 110)
    # the candidate's run of another budget in the sweep's folder is not compare's: left alone
    write_run(tmp_path, "Hopper-v5", "ppo_clip+clip_eps=0.3", 0, [5.0] * 110, steps=2048)
    # compare's own run of the candidate, made before a default changed (lr): not overwritten
    home = tmp_path / "compare" / "steps=4096+eval_every=4096+eval_episodes=5+device=cpu"
    (run, _) = resolved_runs(home, "ppo_clip+clip_eps=0.3", ["Hopper-v5"], 2, 4096)
    write_resolved_run(dataclasses.replace(run, algo_cfg={**run.algo_cfg, "lr": 1e-4}), [5.0] * 110)
    before = snapshot(tmp_path)
    assert compare_main(["compare", "candidate=ppo_clip+clip_eps=0.3", "baseline=ppo_clip", "env=Hopper-v5",
                         "seeds=2", "steps=4096", "eval_every=4096", "eval_episodes=5", f"results_dir={tmp_path}"]) == 2
    message = _error(capsys)
    assert "already has a done run at another protocol" in message and str(home) in message
    assert "algo.lr 0.0001, not 0.0003" in message and "compare never overwrites a done run" in message
    assert snapshot(tmp_path) == before


# ---------------------------------------------------------------------------------------
# the report

def test_report_on_partial_results(tmp_path, capsys):
    three_envs(tmp_path, "ppo_clip", 0.0, rng_seed=1)
    three_envs(tmp_path, "ppo_clip+clip_eps=0.1", -50.0, rng_seed=2)
    three_envs(tmp_path, "ppo_kl+adaptive=false+kl_coef=0.0", -400.0, rng_seed=3)
    write_setting(tmp_path, "trpo", {"Hopper-v5": 450.0, "Swimmer-v5": 35.0}, seeds=2, rng_seed=4)   # partial
    write_run(tmp_path, "Hopper-v5", "reinforce", 0, [1.0] * 3, status="failed")
    write_random_cache(tmp_path, RANDOM)
    # through the command line, as ./run_all.sh report does
    from harness.cli import main as harness_main
    assert harness_main(["report", f"results_dir={tmp_path}", f"reps={REPS}"]) == 0
    captured = capsys.readouterr()
    assert "index.html" in captured.out and "warning: 1 run(s) not done" in captured.err
    assert "section failed" not in captured.err
    out = tmp_path / "reports" / "mujoco"
    for name in ("learning_curves", "aggregates", "performance_profiles", "probability_of_improvement"):
        assert (out / f"{name}.png").stat().st_size > 1000 and (out / f"{name}.svg").exists()
    page = (out / "index.html").read_text()
    for anchor in ("table1", "scores", "aggregates", "poi", "runs-table", "versions", "config-ppo_clip"):
        assert f'id="{anchor}"' in page
    assert "<script" not in page and "http://" not in page and "https://" not in page   # self-contained
    # the four above and the learning curves against wall-clock time
    assert page.count('<img src="data:image/png;base64,') == 5 and (out / "learning_curves_wall.png").exists()
    assert "1 run(s) not done were excluded (1 failed)" in page
    assert "trpo: missing Hopper-v5 seed 2; InvertedPendulum-v5 (no runs)" in page
    assert "generated:" in page and "torch" in page
    md = (out / "report.md").read_text()
    assert "| No clipping or penalty | ppo_kl+adaptive=false+kl_coef=0.0 |" in md and "![Learning curves](learning_curves.png)" in md
    t1 = pd.read_csv(out / "table1.csv").set_index("setting")
    assert t1.loc["Clipping, ε = 0.2", "mean"] == pytest.approx(1.0, abs=0.02)
    assert np.isnan(t1.loc["trpo", "mean"]) and t1.loc["trpo", "envs"] == 2


def _trained(root, steps):
    """Two Table 1 settings (ppo_clip, ppo_kl) and trpo on Hopper and InvertedPendulum, 3 seeds, far above
    the random policy (sd 5 and 4): every anchor is trained; ``steps``: the budget of every run."""
    for label, hopper, pendulum in (("ppo_clip", 110.0, 900.0), ("ppo_kl", 90.0, 800.0), ("trpo", 100.0, 850.0)):
        constant_setting(root, label, {"Hopper-v5": hopper, "InvertedPendulum-v5": pendulum}, steps=steps,
                         noise=[0.0, 2.0, -2.0])
    write_random_cache(root, {"Hopper-v5": 10.0, "InvertedPendulum-v5": 5.0},
                       std={"Hopper-v5": 5.0, "InvertedPendulum-v5": 4.0})


def test_report_grades_nothing_against_a_published_number_at_another_budget(tmp_path):
    """Issue 28, item 8 (a): the paper's Table 1 and Figure 3 and CleanRL's PPO are 1M-step numbers. At
    1,000,000 steps the report grades against each; the same runs at 4,096 steps get no grade, no CSV
    of grades, and a sentence with both budgets (1,000,000 / 4,096 = 244.1 times fewer steps)."""
    _trained(tmp_path / "small", 4096)
    _trained(tmp_path / "full", 1_000_000)
    graded = {"paper_table1", "paper_verdicts", "paper_kendall_tau", "paper_figure3_aggregate", "paper_cleanrl"}
    grades = ("ours ≥ bar", "paper inside CI", "The paper's Table 1 conclusions, here",
              "Over all 2 environments at once", "ppo_clip per environment, against the top", "| runs | paper |")
    full = build_report(tmp_path / "full", "mujoco", reps=REPS)
    full_md = (full.out_dir / "report.md").read_text()
    assert not full.failures and graded <= set(full.csv) and all(g in full_md for g in grades)
    assert "Not compared" not in full_md
    small = build_report(tmp_path / "small", "mujoco", reps=REPS)
    md = (small.out_dir / "report.md").read_text()
    assert not small.failures and not graded & set(small.csv)
    assert [g for g in grades if g in md] == []
    for what in ("CleanRL's results", "the paper's Table 1 numbers", "the paper's Figure 3 results"):
        assert (f"Not compared: these runs have 4,096 steps, {what} are at 1,000,000 steps "
                f"(244 times fewer steps).") in md
    # what is not a published number stays: the runs ranked, Table 1's normalised scores (trained anchors)
    assert "paper_figure3_ranking" in small.csv
    t1 = small.csv["table1"].set_index("setting")
    assert t1.loc["Clipping, ε = 0.2", "mean"] == pytest.approx(1.0)            # ppo_clip is the anchor on both
    assert t1.loc["Adaptive KL, d_targ = 0.01", "mean"] == pytest.approx(np.mean([80 / 100, 795 / 895]))


def test_an_untrained_or_absent_anchor_gives_no_normalised_score(tmp_path):
    """Issue 28, item 8 (b). Hopper: the anchor (ppo_clip, 110) is 100 above the random policy (10, sd 5):
    trained, so 1 = 110. InvertedPendulum: the anchor (ppo_clip, 14) is 9 above random (5), within 3 sd
    (3 x 4 = 12): untrained. Swimmer: no Table 1 setting ran there, the anchor is absent. Before, grpo
    "scored" (50 - 5) / (14 - 5) = 5 on InvertedPendulum and 1 on Swimmer (scaled by itself): a mean
    of (0.75 + 5 + 1) / 3 = 2.25."""
    constant_setting(tmp_path, "ppo_clip", {"Hopper-v5": 110.0, "InvertedPendulum-v5": 14.0})
    constant_setting(tmp_path, "ppo_kl", {"Hopper-v5": 60.0, "InvertedPendulum-v5": 10.0})
    constant_setting(tmp_path, "grpo", {"Hopper-v5": 85.0, "InvertedPendulum-v5": 50.0, "Swimmer-v5": 30.0})
    scores = {"Hopper-v5": 10.0, "InvertedPendulum-v5": 5.0, "Swimmer-v5": 0.0}
    write_random_cache(tmp_path, scores, std={"Hopper-v5": 5.0, "InvertedPendulum-v5": 4.0, "Swimmer-v5": 2.0})
    report = build_report(tmp_path, "mujoco", reps=REPS)
    assert not report.failures
    normed = report.csv["run_scores"]
    hopper = normed[normed["env"] == "Hopper-v5"].groupby("label")["normalised"].mean()
    assert hopper.to_dict() == pytest.approx({"ppo_clip": 1.0, "ppo_kl": 0.5, "grpo": 0.75})   # (x - 10) / 100
    assert normed.loc[normed["env"] != "Hopper-v5", "normalised"].isna().all()
    t1 = report.csv["table1"].set_index("setting")
    assert t1.loc["grpo", "mean"] == pytest.approx(0.75)
    assert t1.loc["Adaptive KL, d_targ = 0.01", "mean"] == pytest.approx(0.5)
    agg = report.csv["aggregates"]
    assert agg[(agg["label"] == "grpo") & (agg["metric"] == "mean")]["point"].item() == pytest.approx(0.75)
    assert agg.loc[agg["metric"] != "optimality_gap", "point"].max() == pytest.approx(1.0)
    md = (report.out_dir / "report.md").read_text()
    assert ("No normalised score on InvertedPendulum-v5: the anchor, ppo_clip (Clipping, ε = 0.2), the setting "
            "scored 1, has a mean score of 14.0, 9.0 above the random policy's 5.0: not more than 3 standard "
            "deviations of the random policy's episode returns (3 × 4.0 = 12.0)") in md
    assert "No normalised score on Swimmer-v5: no Table 1 setting ran on it" in md
    assert "| 14.0 (ppo_clip; untrained: not used) |" in md                   # the best setting's row, per environment
    # nothing trained anywhere (Hopper's sd 40: 100 <= 3 x 40): no normalised score, no aggregates
    write_random_cache(tmp_path, scores, std={"Hopper-v5": 40.0, "InvertedPendulum-v5": 4.0, "Swimmer-v5": 2.0})
    none = build_report(tmp_path, "mujoco", reps=REPS, out_dir=tmp_path / "none")
    md = (none.out_dir / "report.md").read_text()
    assert not none.failures and none.csv["run_scores"]["normalised"].isna().all()
    assert none.csv["table1"]["mean"].isna().all() and "aggregates" not in none.csv
    assert not (tmp_path / "none" / "aggregates.png").exists() and "Not shown: the aggregate metrics" in md
    assert "| algorithm | grpo | no normalised score (below) | – |" in md


def test_report_header_counts_the_seeds(tmp_path):
    """Issue 28, item 8 (c): one run of seed 0 is "1 (seed 0)", not "0" (which reads as no seeds)."""
    constant_setting(tmp_path, "ppo_clip", {"Hopper-v5": 110.0}, seeds=1)
    write_random_cache(tmp_path, {"Hopper-v5": 10.0})
    report = build_report(tmp_path, "mujoco", reps=REPS)
    header = (report.out_dir / "report.md").read_text().splitlines()[2]
    assert header.endswith("**seeds:** 1 (seed 0)")
    assert "<b>seeds:</b> 1 (seed 0)</span>" in report.path.read_text()
    assert "| ppo_clip | 1 | 1 (seed 0) | 1 |" in (report.out_dir / "report.md").read_text()     # runs per setting
    from analysis.report import seeds_text
    assert seeds_text([2, 0, 1]) == "3 (seeds 0, 1, 2)" and seeds_text(range(10)) == "10 (seeds 0–9)"
    assert seeds_text([11, 0, 1, 2, 3, 4, 8]) == "7 (seeds 0–4, 8, 11)"


def test_llm_table_and_report(tmp_path):
    for label, end in (("grpo", 0.8), ("rloo", 0.6)):
        for seed in range(2):
            write_run(tmp_path, "arith", label, seed, [0.0, 1.0] * 10, suite="llm_toy", evals=[0.1, 0.4, end + 0.01 * seed],
                      eval_extra={"eval_kl_ref": [0.0, 0.5, 1.5 + seed]},
                      metrics={"kl_ref": [0.0, 0.02, 0.04], "gen_tokens_per_s": [900.0, 1000.0, 1100.0]})
    results = load_results(tmp_path, "llm_toy")
    from analysis.tables import llm_table
    t = llm_table(results, "llm_toy", reps=REPS).set_index(["label", "quantity"])
    assert t.loc[("grpo", "start"), "mean"] == pytest.approx(0.1)
    assert t.loc[("grpo", "end"), "mean"] == pytest.approx(0.805)
    assert t.loc[("rloo", "kl"), "mean"] == pytest.approx(2.0)             # eval_kl_ref at the last evaluation
    assert t.loc[("rloo", "throughput"), "mean"] == pytest.approx(1100.0)
    report = build_report(tmp_path, "llm_toy", reps=REPS)
    assert not report.failures and 'id="llm"' in report.path.read_text()
    assert 'id="gold-vs-proxy"' not in report.path.read_text()     # a verifiable task has no proxy reward


def test_llm_report_training_dynamics(tmp_path):
    """Issue 31: the update metrics the GRPO variants change, per task, one panel per metric; each
    line is the mean over seeds at each update, and a metric no run logs has no panel."""
    for label, entropy in (("grpo", [1.0, 0.8, 0.5]), ("dapo", [1.0, 0.9, 0.85])):
        for seed in range(2):
            write_run(tmp_path, "sort", label, seed, [0.0, 1.0] * 10, suite="llm_toy", evals=[0.5, 0.6, 0.7],
                      metrics={"entropy": [e + 0.1 * seed for e in entropy], "kl_ref": [0.0, 0.1, 0.2 + seed],
                               "gen_tokens_per_s": [900.0, 1000.0, 1100.0]})
    report = build_report(tmp_path, "llm_toy", reps=REPS)
    assert not report.failures
    (sec,) = [s for s in report.sections if s.anchor == "dynamics"]
    (figure,) = sec.parts
    assert figure.name == "dynamics_sort" and (report.out_dir / "dynamics_sort.png").exists()
    entropy_ax, kl_ax = [ax for ax in figure.figure.axes if ax.get_visible() and ax.get_title()][:2]
    assert entropy_ax.get_title().startswith("entropy") and kl_ax.get_title().startswith("KL")
    grpo_entropy = [line for line in entropy_ax.get_lines() if line.get_label() == "grpo"][0]
    np.testing.assert_allclose(grpo_entropy.get_ydata(), [1.05, 0.85, 0.55])
    dapo_kl = [line for line in kl_ax.get_lines() if line.get_label() == "dapo"][0]
    np.testing.assert_allclose(dapo_kl.get_ydata(), [0.0, 0.1, 0.7])


def test_llm_report_gold_versus_proxy(tmp_path):
    # a preference task logs the reward-model score beside the gold one: the report plots both against KL
    for seed in range(2):
        write_run(tmp_path, "keywords", "ppo_clip", seed, [0.0, 1.0] * 10, suite="llm_toy", evals=[0.6, 0.9, 0.7],
                  eval_extra={"eval_kl_ref": [0.0, 2.0, 9.0], "eval_proxy_reward": [0.0, 1.0, 2.5 + seed]})
    write_run(tmp_path, "sort", "ppo_clip", 0, [0.0, 1.0] * 10, suite="llm_toy", evals=[0.5, 0.9, 0.95],
              eval_extra={"eval_kl_ref": [0.0, 0.5, 0.8]})
    report = build_report(tmp_path, "llm_toy", reps=REPS)
    assert not report.failures
    (sec,) = [s for s in report.sections if s.anchor == "gold-vs-proxy"]
    (figure,) = sec.parts                                       # keywords only: sort logs no proxy reward
    assert figure.name == "gold_vs_proxy_keywords"
    gold_ax, proxy_ax = figure.figure.axes[:2]
    (gold_line,), (proxy_line,) = gold_ax.get_lines(), proxy_ax.get_lines()
    np.testing.assert_allclose(gold_line.get_xdata(), [0.0, 2.0, 9.0])      # mean KL over seeds, in training order
    np.testing.assert_allclose(gold_line.get_ydata(), [0.6, 0.9, 0.7])
    np.testing.assert_allclose(proxy_line.get_ydata(), [0.0, 1.0, 3.0])
    assert (report.out_dir / "gold_vs_proxy_keywords.png").exists()


@pytest.mark.slow
def test_compare_runs_real_training_runs(tmp_path, capsys):
    # a baseline recorded at a tiny budget; compare trains the candidate's two runs for real
    for run in resolved_runs(tmp_path, "ppo_clip", ["InvertedPendulum-v5"], 2, 512):
        write_resolved_run(run, [8.0 + run.seed] * 30)
    write_random_cache(tmp_path, {"InvertedPendulum-v5": 5.0})
    code = compare_main(["compare", "candidate=ppo_clip+num_epochs=1+num_steps=256", "baseline=ppo_clip",
                          f"results_dir={tmp_path}", "jobs=1", f"reps={REPS}"])
    assert code in (0, 1, 3)
    out = capsys.readouterr().out
    assert "verdict:" in out and "InvertedPendulum-v5" in out
    from core.results import is_done
    for seed in (0, 1):
        run = (tmp_path / "compare" / "steps=512+eval_every=512+eval_episodes=5+device=cpu" / "mujoco"
               / "InvertedPendulum-v5" / "ppo_clip+num_epochs=1+num_steps=256" / f"seed{seed}")
        assert is_done(run)
        assert json.loads((run / "run.json").read_text())["config"]["steps"] == 512


def test_config_drift_ignores_what_is_not_the_protocol(tmp_path):
    """Runs of one setting made by different commits may differ in threads, tracking or paths (a run
    resumed by a newer pg-arena records a field the older one lacked): not a drift. A different
    algo_cfg is."""
    import json as _json
    from analysis.load import load_results
    for seed in range(3):
        write_run(tmp_path, "Hopper-v5", "ppo_clip", seed, [1.0, 2.0, 3.0])
    path = tmp_path / "mujoco" / "Hopper-v5" / "ppo_clip" / "seed1" / "run.json"
    record = _json.loads(path.read_text())
    record["config"].update(threads=2, track=["tensorboard"], checkpoint_every=7)
    path.write_text(_json.dumps(record))
    assert not [w for w in load_results(tmp_path, "mujoco").warnings if "different configs" in w]
    record["config"]["algo_cfg"] = {**record["config"]["algo_cfg"], "lr": 1.0}
    path.write_text(_json.dumps(record))
    (drift,) = [w for w in load_results(tmp_path, "mujoco").warnings if "different configs" in w]
    assert "ppo_clip on Hopper-v5: its 3 runs were made with 2 different configs" in drift


def test_satterthwaite_df_counts_the_environments_that_spread():
    """Table 1's t-adjusted intervals: environments x (seeds - 1) degrees of freedom only where every
    environment spreads alike; where one environment carries the variance, its seeds - 1."""
    import math
    from analysis.stats import satterthwaite_df
    base = np.array([0.0, 1.0, 2.0])
    equal = np.stack([np.roll(base, k) for k in range(7)], axis=1)      # every column the same sample spread
    assert satterthwaite_df([equal]) == pytest.approx(14.0)
    assert satterthwaite_df([equal, 3 * equal]) < 28.0 == pytest.approx(satterthwaite_df([equal, equal]))
    one = np.zeros((3, 7))
    one[:, 2] = base                                                     # one environment spreads, six agree
    assert satterthwaite_df([one]) == pytest.approx(2.0)
    assert satterthwaite_df([np.zeros((3, 7))]) == math.inf and satterthwaite_df([np.ones((1, 7))]) == math.inf


def test_small_sample_interval_against_the_formula_as_a_loop():
    """Table 1's CIs: the expanded stratified bootstrap (each task's resampled mean pushed
    sqrt(n / (n - 1)) further from the task's mean), read at the level whose normal quantile is
    Student's t quantile for the Welch-Satterthwaite degrees of freedom, written out as loops."""
    import math
    from scipy.stats import norm, t as student_t
    rng = np.random.default_rng(3)
    n, tasks, reps = 3, 5, 400
    m = rng.normal(0, rng.uniform(0.1, 2, tasks), (n, tasks))
    got = stats.small_sample_interval(m, reps, np.random.default_rng(9))
    idx = np.random.default_rng(9).integers(0, n, size=(reps, n, tasks))
    draws = []
    for b in range(reps):
        per_task = []
        for t in range(tasks):
            col = [float(v) for v in m[:, t]]
            centre = sum(col) / n
            boot = sum(col[idx[b, i, t]] for i in range(n)) / n
            per_task.append(centre + math.sqrt(n / (n - 1)) * (boot - centre))
        draws.append(sum(per_task) / tasks)
    terms = [float(np.var(m[:, t], ddof=1)) / n / tasks ** 2 for t in range(tasks)]
    df = sum(terms) ** 2 / sum(v ** 2 / (n - 1) for v in terms)
    level = 2 * norm.cdf(student_t.ppf(0.975, df)) - 1
    low, high = np.percentile(draws, [50 * (1 - level), 100 - 50 * (1 - level)])
    assert got == pytest.approx((float(m.mean()), low, high))
