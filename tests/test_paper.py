"""analysis/paper.py: pg-arena's MuJoCo results beside the PPO paper, checked against naive references
on synthetic score frames (no runs, no files)."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from analysis import paper, stats
from analysis.reference import CLEANRL_PPO, TABLE1, cleanrl_ppo
from analysis.tables import Table

REPS = 400          # enough for the verdicts below, which are built to be far from the thresholds
ENVS = ["HalfCheetah-v5", "Hopper-v5", "InvertedPendulum-v5", "Reacher-v5"]
RANDOM = {"HalfCheetah-v5": -280.0, "Hopper-v5": 18.0, "InvertedPendulum-v5": 5.5, "Reacher-v5": -43.0}
SCALE = {"HalfCheetah-v5": 2000.0, "Hopper-v5": 2500.0, "InvertedPendulum-v5": 1000.0, "Reacher-v5": 40.0}
T1_LABELS = {r.name: r.label for r in TABLE1}
AT_1M = {"budget": 1_000_000}     # the budget of the paper's MuJoCo numbers and CleanRL's: there they are compared


def _rows(label: str, values: dict[str, list[float]]) -> list[dict]:
    algo, _, rest = label.partition("+")
    return [{"suite": "mujoco", "env": env, "algo": algo, "variant": f"+{rest}" if rest else "", "label": label,
             "seed": seed, "score": float(v)} for env, vs in values.items() for seed, v in enumerate(vs)]


def table1_scores(level: dict[str, float], noise: float, seeds: int = 3, rng_seed: int = 0,
                  extra: dict[str, float] | None = None) -> pd.DataFrame:
    """Each Table 1 setting at normalised level ``level[name]`` (plus Gaussian ``noise``) on every
    environment; ``extra``: plain algorithms at a normalised level."""
    rng = np.random.default_rng(rng_seed)
    rows = []
    for r in TABLE1:
        rows += _rows(r.label, {e: RANDOM[e] + SCALE[e] * (level[r.name] + noise * rng.standard_normal(seeds))
                                for e in ENVS})
    for label, lv in (extra or {}).items():
        rows += _rows(label, {e: RANDOM[e] + SCALE[e] * (lv + noise * rng.standard_normal(seeds)) for e in ENVS})
    return pd.DataFrame(rows)


PAPER_LEVELS = {r.name: r.paper for r in TABLE1}


# ---------------------------------------------------------------------------------------
# Kendall's tau-b and the bootstrap helpers

def naive_tau_b(x, y) -> float:
    conc = disc = tx = ty = 0
    n = len(x)
    for i, j in itertools.combinations(range(n), 2):
        dx, dy = np.sign(x[j] - x[i]), np.sign(y[j] - y[i])
        if dx == 0:
            tx += 1
        if dy == 0:
            ty += 1
        if dx * dy > 0:
            conc += 1
        elif dx * dy < 0:
            disc += 1
    n0 = n * (n - 1) // 2
    denom = math.sqrt((n0 - tx) * (n0 - ty))
    return (conc - disc) / denom if denom else float("nan")


def test_kendall_tau_b_matches_a_naive_pair_count_and_scipy():
    rng = np.random.default_rng(3)
    for _ in range(150):
        n = int(rng.integers(2, 13))
        x = rng.integers(0, 5, n).astype(float)      # small alphabets: plenty of ties
        y = rng.integers(0, 5, n).astype(float)
        got, want = float(stats.kendall_tau_b(x, y)), naive_tau_b(x, y)
        assert (math.isnan(got) and math.isnan(want)) or got == pytest.approx(want, abs=1e-12)
    scipy_stats = pytest.importorskip("scipy.stats")
    x, y = rng.normal(size=11), np.array([r.paper for r in TABLE1])   # the paper's numbers hold a tie
    assert float(stats.kendall_tau_b(x, y)) == pytest.approx(scipy_stats.kendalltau(x, y).statistic, abs=1e-12)
    batch = rng.normal(size=(6, 11))                                  # vectorised over bootstrap draws
    assert np.allclose(stats.kendall_tau_b(batch, y), [naive_tau_b(b, y) for b in batch])


def test_stratified_bootstrap_means_resample_runs_within_each_task():
    rng = np.random.default_rng(0)
    scores = rng.normal(size=(3, 5))
    got = stats.stratified_bootstrap_means(scores, 50, np.random.default_rng(7))
    idx = np.random.default_rng(7).integers(0, 3, size=(50, 3, 5))
    want = [np.mean([[scores[idx[r, i, t], t] for t in range(5)] for i in range(3)]) for r in range(50)]
    assert np.allclose(got, want)
    # one draw per task from the run's own column only: a constant task stays constant
    flat = np.tile(np.array([1.0, 2.0, 3.0]), (4, 1))
    assert np.allclose(stats.stratified_bootstrap_means(flat, 20, np.random.default_rng(1)), 2.0)


# ---------------------------------------------------------------------------------------
# Table 1 beside the paper

def test_table1_normalises_over_the_table1_settings_only():
    scores = table1_scores(PAPER_LEVELS, 0.05)
    base = paper.table1_beside_paper(scores, RANDOM, T1_LABELS, reps=REPS)
    huge = table1_scores(PAPER_LEVELS, 0.05, extra={"trpo": 50.0, "ppo_clip": 10.0})
    with_extra = paper.table1_beside_paper(huge, RANDOM, T1_LABELS, reps=REPS)
    pd.testing.assert_frame_equal(base, with_extra)
    normed, constants, envs, problems = paper.table1_normalised(huge, RANDOM, T1_LABELS)
    assert envs == ENVS and not problems and set(normed["label"]) == set(T1_LABELS.values())
    # by hand: (score - random) / (best - random), best = highest mean over seeds of the 11 settings
    for env in ENVS:
        mine = scores[scores["env"] == env]
        best = mine.groupby("label")["score"].mean().max()
        c = constants.set_index("env").loc[env]
        assert c["best"] == pytest.approx(best) and c["random"] == RANDOM[env]
        got = normed[normed["env"] == env].sort_values(["label", "seed"])["normalised"].to_numpy()
        want = ((mine.sort_values(["label", "seed"])["score"] - RANDOM[env]) / (best - RANDOM[env])).to_numpy()
        assert np.allclose(got, want)


def test_table1_means_cis_and_paper_column():
    scores = table1_scores(PAPER_LEVELS, 0.05)
    t = paper.table1_beside_paper(scores, RANDOM, T1_LABELS, reps=REPS)
    normed, *_ = paper.table1_normalised(scores, RANDOM, T1_LABELS)
    assert list(t["setting"]) == [r.name for r in TABLE1]
    for r in t.itertuples():
        naive = normed[normed["label"] == r.label]["normalised"].mean()
        assert r.mean == pytest.approx(naive)
        assert r.low <= r.mean <= r.high and r.runs == 3 * len(ENVS) and r.seeds == 3
        assert r.paper == dict((x.name, x.paper) for x in TABLE1)[r.setting]
        assert r.paper_in_ci == (r.low <= r.paper <= r.high)
        # the CI is stats.small_sample_interval's on the seeds x envs matrix, from the verdicts' draws
        matrix = normed[normed["label"] == r.label].pivot(index="seed", columns="env", values="normalised")
        rng = stats.label_rng(stats.BOOTSTRAP_SEED, "table1", r.setting)
        assert (r.mean, r.low, r.high) == pytest.approx(stats.small_sample_interval(matrix[ENVS].to_numpy(), REPS, rng))
    # no clipping's CI is the interval its "below the random policy" verdict takes
    v = paper.table1_verdicts(scores, RANDOM, T1_LABELS, reps=REPS).set_index("key").loc["noclip_below_random"]
    noclip = t.set_index("setting").loc[paper.NO_CLIP]
    assert (v["low"], v["high"]) == pytest.approx((noclip["low"], noclip["high"]))
    assert t.loc[t["setting"] == paper.CLIP_02, "rank"].item() == 1
    assert t.loc[t["setting"] == paper.NO_CLIP, "rank"].item() == 11


def test_setting_not_run_or_missing_an_environment_is_shown_not_averaged():
    scores = table1_scores(PAPER_LEVELS, 0.05)
    labels = dict(T1_LABELS, **{"Fixed KL, β = 10": None})
    lab03 = T1_LABELS["Clipping, ε = 0.3"]
    scores = scores[~((scores["label"] == lab03) & (scores["env"] == "Hopper-v5"))]
    t = paper.table1_beside_paper(scores, RANDOM, labels, reps=REPS).set_index("setting")
    assert t.loc["Fixed KL, β = 10", "label"] is None and np.isnan(t.loc["Fixed KL, β = 10", "mean"])
    assert np.isnan(t.loc["Clipping, ε = 0.3", "mean"]) and t.loc["Clipping, ε = 0.3", "paper_in_ci"] is None
    tau = paper.table1_rank_correlation(scores, RANDOM, labels, reps=REPS).iloc[0]
    assert tau["settings"] == 9
    # ranks among the 9 measured: the paper's 0.70 (ε = 0.3) and 0.69 (β = 10) are out
    assert t["paper_rank"].dropna().sort_values().tolist() == [1, 2, 3, 4, 5, 5, 7, 8, 9]
    assert np.isnan(t.loc["Clipping, ε = 0.3", "paper_rank"])
    assert any(isinstance(p, Table) for p in paper.table1_parts(scores, RANDOM, labels, reps=REPS, **AT_1M))


def test_rank_correlation_point_ci_and_determinism():
    scores = table1_scores(PAPER_LEVELS, 0.03)
    t = paper.table1_rank_correlation(scores, RANDOM, T1_LABELS, reps=REPS)
    row = t.iloc[0]
    means = paper.table1_beside_paper(scores, RANDOM, T1_LABELS, reps=50)["mean"].to_numpy()
    assert row["tau"] == pytest.approx(naive_tau_b(means, [r.paper for r in TABLE1]))
    assert row["settings"] == 11 and row["reps"] == REPS and row["seed"] == stats.BOOTSTRAP_SEED
    assert row["low"] <= row["tau"] <= row["high"] and row["tau"] > 0.8
    pd.testing.assert_frame_equal(t, paper.table1_rank_correlation(scores, RANDOM, T1_LABELS, reps=REPS))
    reversed_levels = {k: -v for k, v in PAPER_LEVELS.items()}
    rev = paper.table1_rank_correlation(table1_scores(reversed_levels, 0.03), RANDOM, T1_LABELS, reps=REPS).iloc[0]
    assert rev["tau"] < -0.8 and rev["high"] < 0


def test_differences_match_the_point_means():
    scores = table1_scores(PAPER_LEVELS, 0.05)
    d = paper.table1_differences(scores, RANDOM, T1_LABELS, reps=REPS)
    means = paper.table1_beside_paper(scores, RANDOM, T1_LABELS, reps=50).set_index("setting")["mean"]
    assert len(d) == 11 * 10
    for r in d.itertuples():
        assert r.point == pytest.approx(means[r.a] - means[r.b])
    one = d[(d["a"] == paper.CLIP_02) & (d["b"] == paper.NO_CLIP)].iloc[0]
    back = d[(d["a"] == paper.NO_CLIP) & (d["b"] == paper.CLIP_02)].iloc[0]
    assert (one["low"], one["high"]) == pytest.approx((-back["high"], -back["low"]))


def verdicts(levels, noise, **kw):
    v = paper.table1_verdicts(table1_scores(levels, noise, **kw), RANDOM, T1_LABELS, reps=REPS)
    return dict(zip(v["key"], v["verdict"])), v


def test_verdicts_hold_when_the_paper_is_right_by_a_wide_margin():
    levels = dict(PAPER_LEVELS)
    levels[paper.CLIP_02] = 1.3                 # far above every other setting
    got, v = verdicts(levels, 0.02)
    assert got == {"best_clip": "holds", "worst_noclip": "holds", "noclip_below_random": "holds",
                   "adaptive_below_clip": "holds", "kl_below_clip": "holds"}
    assert (v["probability"].dropna() >= 0.95).all()


def test_verdicts_do_not_hold_when_reversed():
    levels = {r.name: 0.7 for r in TABLE1}
    levels[paper.CLIP_02] = 0.2                 # clipping at 0.2 far below the others
    levels[paper.NO_CLIP] = 1.2                 # no clipping far above, and above random
    for name in paper.ADAPTIVE:
        levels[name] = 1.5                      # adaptive KL far above every clipping setting
    got, _ = verdicts(levels, 0.02)
    assert got == {"best_clip": "does not hold", "worst_noclip": "does not hold",
                   "noclip_below_random": "does not hold", "adaptive_below_clip": "does not hold",
                   "kl_below_clip": "does not hold"}


def test_verdicts_are_inconclusive_on_heavy_overlap():
    # every setting draws from one wide distribution: no ordering, nothing significant
    levels = {r.name: 0.0 for r in TABLE1}
    got, v = verdicts(levels, 1.0, seeds=3, rng_seed=0)
    assert got["best_clip"] == "inconclusive" and got["worst_noclip"] == "inconclusive"
    assert got["adaptive_below_clip"] == "inconclusive" and got["kl_below_clip"] == "inconclusive"
    assert got["noclip_below_random"] == "inconclusive"
    assert (v["probability"].dropna() < 0.95).all()


def test_verdicts_rarely_conclude_on_settings_of_equal_merit():
    # 3 seeds x 4 environments of pure noise, 12 data sets: the joint (expanded, Bonferroni) rule may
    # err at about its 5% level; the plain bootstrap with ten unadjusted comparisons erred in half
    wrong = 0
    for rng_seed in range(12):
        got, _ = verdicts({r.name: 0.0 for r in TABLE1}, 1.0, rng_seed=100 + rng_seed)
        wrong += got["best_clip"] != "inconclusive"
    assert wrong <= 2


def test_verdicts_not_measured_without_the_runs():
    scores = table1_scores(PAPER_LEVELS, 0.05)
    labels = dict(T1_LABELS, **{paper.CLIP_02: None, paper.NO_CLIP: None})
    v = paper.table1_verdicts(scores, RANDOM, labels, reps=REPS).set_index("key")
    assert v.loc["best_clip", "verdict"] == paper.UNMEASURED
    assert v.loc["worst_noclip", "verdict"] == paper.UNMEASURED
    assert v.loc["adaptive_below_clip", "verdict"] != paper.UNMEASURED   # ε = 0.1 and 0.3 still compare


# ---------------------------------------------------------------------------------------
# Figure 3

def figure3_scores() -> pd.DataFrame:
    rng = np.random.default_rng(11)
    levels = {"reinforce": 300.0, "trpo": 1000.0, "ppo_clip": 2000.0, "ppo_kl": 1995.0, "grpo": 100.0}
    rows = []
    for env, shift in (("Hopper-v5", 0.0), ("Walker2d-v5", 0.0)):
        for label, lv in levels.items():
            if env == "Walker2d-v5" and label == "trpo":
                lv = 5000.0                     # trpo clearly on top of Walker2d
            rows += _rows(label, {env: lv + shift + 20.0 * rng.standard_normal(3)})
    rows += _rows("ppo_clip+clip_eps=0.1", {"Hopper-v5": [9e9, 9e9, 9e9]})   # a variant is not an algorithm
    return pd.DataFrame(rows)


def test_figure3_ranking_ranks_and_lead():
    scores = figure3_scores()
    t = paper.figure3_ranking(scores, reps=REPS)
    assert set(t["label"]) == {"reinforce", "trpo", "ppo_clip", "ppo_kl", "grpo"}
    hop = t[t["env"] == "Hopper-v5"].set_index("label")
    assert hop["rank"].to_dict() == {"ppo_clip": 1, "ppo_kl": 2, "trpo": 3, "reinforce": 4, "grpo": 5}
    for lab, r in hop.iterrows():
        vals = scores[(scores["env"] == "Hopper-v5") & (scores["label"] == lab)]["score"]
        assert r["mean"] == pytest.approx(vals.mean()) and r["low"] <= r["mean"] <= r["high"] and r["n"] == 3
    assert hop.loc["ppo_clip", "lead"] == pytest.approx(hop.loc["ppo_clip", "mean"] - hop.loc["ppo_kl", "mean"])
    assert not hop.loc["ppo_clip", "ahead"]                          # 5 apart, seeds ± 20: not significant
    d, low, high = stats.welch_interval(*(scores[(scores["env"] == "Hopper-v5") & (scores["label"] == lab)]
                                          .sort_values("seed")["score"] for lab in ("ppo_clip", "ppo_kl")))
    assert (hop.loc["ppo_clip", "lead_low"], hop.loc["ppo_clip", "lead_high"]) == pytest.approx((low, high))
    assert hop["ahead"].drop("ppo_clip").isna().all()
    walker = t[t["env"] == "Walker2d-v5"].set_index("label")
    assert walker.loc["trpo", "rank"] == 1 and bool(walker.loc["trpo", "ahead"])


def test_figure3_claim_statuses():
    scores = figure3_scores()
    c = paper.figure3_claim(scores, reps=REPS).set_index("env")
    assert c.loc["Hopper-v5", "status"] == "tied"          # top, but not significantly ahead of ppo_kl
    assert c.loc["Walker2d-v5", "status"] == "beaten" and c.loc["Walker2d-v5", "top"] == "trpo"
    assert c.loc["Hopper-v5", "vs_trpo"] == "ahead" and c.loc["Walker2d-v5", "vs_trpo"] == "behind"
    assert (c["vs_reinforce"] == "ahead").all()
    verdict, evidence = paper.figure3_verdict(c.reset_index())
    assert verdict == "does not hold" and "behind on 1 of 2" in evidence     # 80% of 2 is 2
    tie = c.reset_index().assign(vs_trpo=["ahead", "tied"])
    assert paper.figure3_verdict(tie)[0] == "inconclusive"
    # ppo_clip significantly ahead everywhere: the claim holds
    strong = scores[~((scores["label"] == "trpo") & (scores["env"] == "Walker2d-v5"))]
    strong = pd.concat([strong, pd.DataFrame(_rows("trpo", {"Walker2d-v5": [1000.0, 1001.0, 999.0]}))])
    assert paper.figure3_verdict(paper.figure3_claim(strong, reps=REPS))[0] == "holds"
    parts = paper.figure3_parts(scores, reps=REPS, **AT_1M)
    text = " ".join(p for p in parts if isinstance(p, str))
    assert paper.FIGURE3_CLAIM in text and "not the same algorithm" in text
    assert any(isinstance(p, Table) for p in parts)


def test_figure3_aggregate_against_a_hand_computation():
    """ppo_clip against trpo and reinforce over all environments at once: the mean normalised score
    of each (mean over runs x environments), their difference, and a CI that separates a clear gap
    from a tie."""
    rng = np.random.default_rng(3)
    level = {"ppo_clip": 0.8, "trpo": 0.8, "reinforce": 0.3}
    rows = []
    for label, lv in level.items():
        rows += _rows(label, {e: lv + 0.05 * rng.standard_normal(3) for e in ENVS})
    normed = pd.DataFrame(rows).assign(normalised=lambda f: f["score"])
    normed = normed[~((normed["label"] == "reinforce") & (normed["seed"] == 2) & (normed["env"] == ENVS[0]))]
    t = paper.figure3_aggregate(normed, ENVS, reps=REPS).set_index("label")
    assert list(t.index) == ["trpo", "reinforce"]            # the paper's algorithms this suite has
    ours = normed[normed["label"] == "ppo_clip"]["normalised"].mean()
    for lab in t.index:
        theirs = normed[normed["label"] == lab]
        seeds = sorted(set.intersection(*(set(g["seed"]) for _, g in theirs.groupby("env"))))
        mean = theirs[theirs["seed"].isin(seeds)]["normalised"].mean()   # seeds present on every environment
        assert t.loc[lab, "seeds"] == len(seeds)
        assert t.loc[lab, "ours_mean"] == pytest.approx(ours) and t.loc[lab, "mean"] == pytest.approx(mean)
        assert t.loc[lab, "difference"] == pytest.approx(ours - mean)
        assert t.loc[lab, "low"] <= t.loc[lab, "difference"] <= t.loc[lab, "high"]
    assert t.loc["reinforce", "low"] > 0.3 and t.loc["trpo", "low"] < 0 < t.loc["trpo", "high"]
    assert (t["envs"] == len(ENVS)).all()
    parts = paper.figure3_parts(normed.drop(columns="normalised"), reps=REPS, aggregate=t.reset_index(), **AT_1M)
    text = " ".join(p for p in parts if isinstance(p, str))
    assert "against trpo, ppo_clip is tied" in text and "against reinforce, ppo_clip is ahead" in text
    assert paper.figure3_aggregate(normed, [], reps=REPS).empty


# ---------------------------------------------------------------------------------------
# CleanRL

def test_cleanrl_table_equals_a_hand_computation():
    values = {"Hopper-v5": [2000.0, 2400.0, 2700.0], "HalfCheetah-v5": [1000.0, 1100.0, 1500.0],
              "Swimmer-v5": [50.0, 60.0, 70.0]}                       # CleanRL publishes no Swimmer number
    scores = pd.DataFrame(_rows("ppo_clip", values) + _rows("trpo", {"Hopper-v5": [1.0, 2.0, 3.0]}))
    t = paper.cleanrl_table(scores, reps=REPS).set_index("env")
    assert list(t.index) == ["HalfCheetah-v5", "Hopper-v5"]
    for env in t.index:
        v = np.array(values[env])
        ref_mean, ref_sd = CLEANRL_PPO[env.split("-")[0]]
        mean, sd = v.mean(), math.sqrt(((v - v.mean()) ** 2).sum() / 2)
        r = t.loc[env]
        assert r["mean"] == pytest.approx(mean) and r["sd"] == pytest.approx(sd) and r["n"] == 3
        assert (r["cleanrl_mean"], r["cleanrl_sd"]) == (ref_mean, ref_sd)
        assert r["difference"] == pytest.approx(mean - ref_mean) and r["bar"] == pytest.approx(ref_mean - ref_sd)
        assert r["meets_bar"] == (mean >= ref_mean - ref_sd) and v.min() <= r["low"] <= r["high"] <= v.max()
    assert bool(t.loc["Hopper-v5", "meets_bar"]) and not bool(t.loc["HalfCheetah-v5", "meets_bar"])
    assert cleanrl_ppo("Hopper-v5") == cleanrl_ppo("Hopper-v4") == (2382.86, 271.74)


def test_bench_learning_table_uses_the_one_cleanrl_table():
    import importlib.util
    from pathlib import Path
    path = Path(__file__).resolve().parent.parent / "bench" / "learning_table.py"
    spec = importlib.util.spec_from_file_location("learning_table", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.cleanrl_ppo is cleanrl_ppo and not hasattr(module, "CLEANRL_PPO")


def test_bench_learning_table_applies_the_bar_only_at_cleanrls_budget(tmp_path, monkeypatch, capsys):
    """ppo_clip scoring 2400 on Hopper (CleanRL: 2382.86 ± 271.74 at 1M steps) meets the bar at 1,000,000
    steps; at 4,096 steps the same score is not compared."""
    import importlib.util
    import sys
    from pathlib import Path
    from analysis.synthetic import write_run
    path = Path(__file__).resolve().parent.parent / "bench" / "learning_table.py"
    spec = importlib.util.spec_from_file_location("learning_table", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rows = {}
    for steps in (1_000_000, 4096):
        write_run(tmp_path / str(steps), "Hopper-v5", "ppo_clip", 0, [2400.0] * 110, steps=steps)
        monkeypatch.setattr(sys, "argv", ["learning_table.py", str(tmp_path / str(steps))])
        module.main()
        (rows[steps],) = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| Hopper-v5")]
    assert rows[1_000_000].split(" | ")[7] == "yes"
    assert rows[4096].split(" | ")[7] == "not compared (CleanRL: 1,000,000 steps)"


# ---------------------------------------------------------------------------------------
# conditions

def test_random_sensitivity_by_hand():
    scores = table1_scores(PAPER_LEVELS, 0.05)
    s = paper.random_sensitivity(scores, RANDOM, T1_LABELS, shift=0.10)
    normed, constants, envs, _ = paper.table1_normalised(scores, RANDOM, T1_LABELS)
    c = constants.set_index("env")
    lab = T1_LABELS[paper.NO_CLIP]
    mine = normed[normed["label"] == lab]

    def mean_with(moved, sign):
        out = []
        for env, g in mine.groupby("env"):
            r = RANDOM[env]
            if moved in ("all", env):
                r = r + sign * 0.10 * abs(r)
            out.append(((g["score"] - r) / (c.loc[env, "best"] - r)).to_numpy())
        return float(np.mean(np.concatenate(out)))

    for moved in ("all", "Reacher-v5"):
        for sign, direction in ((-1, "−10%"), (1, "+10%")):
            row = s[(s["moved"] == moved) & (s["direction"] == direction) & (s["setting"] == paper.NO_CLIP)].iloc[0]
            assert row["shifted"] == pytest.approx(mean_with(moved, sign))
            assert row["change"] == pytest.approx(row["shifted"] - row["base"])
    zero = paper.random_sensitivity(scores, RANDOM, T1_LABELS, shift=0.0)
    assert np.allclose(zero["change"], 0.0)


def test_annealing_table_against_the_released_code():
    configs = {T1_LABELS[paper.CLIP_02]: {"lr": 3e-4, "lr_anneal": True, "clip_anneal": True, "clip_eps": 0.2},
               T1_LABELS["Clipping, ε = 0.1"]: {"lr": 3e-4, "lr_anneal": False, "clip_anneal": False, "clip_eps": 0.1},
               T1_LABELS[paper.NO_CLIP]: {"lr": 3e-4, "lr_anneal": False, "clip_anneal": True, "clip_eps": 0.2},
               "ppo_clip": {"lr": 3e-4}}
    a = paper.annealing_table(configs, T1_LABELS, ["ppo_clip"]).set_index("setting")
    assert a.loc[paper.CLIP_02, "as_released"] is False or a.loc[paper.CLIP_02, "as_released"] == False  # noqa: E712
    assert bool(a.loc["Clipping, ε = 0.1", "as_released"])
    # ppo_kl's objective is not clipped: its clip schedule does not count
    assert not a.loc[paper.NO_CLIP, "clipped"] and bool(a.loc[paper.NO_CLIP, "as_released"])
    assert a.loc["ppo_clip", "as_released"] is None                 # its config lacks the flags


def test_parts_render():
    scores = table1_scores(PAPER_LEVELS, 0.05, extra={"ppo_clip": 0.8, "trpo": 0.6, "reinforce": 0.3})
    configs = {lab: {"lr": 3e-4, "lr_anneal": True, "clip_anneal": True, "clip_eps": 0.2}
               for lab in [*T1_LABELS.values(), "ppo_clip"]}
    parts = (paper.table1_parts(scores, RANDOM, T1_LABELS, reps=REPS, **AT_1M)
             + paper.figure3_parts(scores, reps=REPS, **AT_1M) + paper.cleanrl_parts(scores, reps=REPS, **AT_1M)
             + paper.conditions_parts(scores, RANDOM, T1_LABELS, configs, {"gymnasium": "1.4.0", "mujoco": "3.3.0"}))
    for p in parts:
        assert isinstance(p, (str, Table)) or (isinstance(p, tuple) and p[0] == "details" and isinstance(p[2], Table))
        table = p[2] if isinstance(p, tuple) else p
        if isinstance(table, Table):
            assert table.markdown() and table.html() and all(len(r) == len(table.columns) for r in table.rows)
    text = " ".join(p for p in parts if isinstance(p, str))
    assert "Kendall" in text and "gymnasium 1.4.0" in text and "constant" in text


def test_a_single_seed_draws_no_conclusion():
    levels = dict(PAPER_LEVELS, **{paper.CLIP_02: 1.3})
    scores = table1_scores(levels, 0.02, seeds=1, extra={"ppo_clip": 0.8, "trpo": 0.2})
    v = paper.table1_verdicts(scores, RANDOM, T1_LABELS, reps=REPS)
    assert set(v["verdict"]) == {"inconclusive"} and v["evidence"].str.contains("single seed").all()
    c = paper.figure3_claim(scores, reps=REPS)
    assert set(c["status"]) == {"unknown"} and set(c["vs_trpo"]) == {"unknown"}
    assert paper.figure3_ranking(scores, reps=REPS)["ahead"].isna().all()
    assert any(isinstance(p, Table) for p in paper.figure3_parts(scores, reps=REPS, **AT_1M))


def test_inputs_from_a_report():
    t1 = pd.DataFrame({"section": ["Table 1", "Table 1", "algorithms"], "setting": [paper.CLIP_02, paper.NO_CLIP, "trpo"],
                       "label": ["ppo_clip", None, "trpo"]})
    assert paper.table1_labels_from(t1) == {paper.CLIP_02: "ppo_clip", paper.NO_CLIP: None}
    runs = pd.DataFrame({"label": ["ppo_clip", "ppo_clip", "trpo", "ppo_kl"],
                         "config": [{"algo_cfg": {"lr_anneal": True}}, {"algo_cfg": {"lr_anneal": False}},
                                    {"algo_cfg": {"max_kl": 0.01}}, None],
                         "versions": [{"gymnasium": "1.4.0", "mujoco": "3.3.0"}, {"gymnasium": "1.4.0"},
                                      {"gymnasium": "1.3.0"}, None]})
    assert paper.run_configs(runs) == {"ppo_clip": {"lr_anneal": True}, "trpo": {"max_kl": 0.01}}
    assert paper.run_versions(runs) == {"gymnasium": "1.4.0 / 1.3.0", "mujoco": "3.3.0"}


def test_schedule_effect_by_hand():
    """The released code's constant schedule against the annealed ε = 0.2 setting: per environment the
    difference of means with Welch's interval (by the formula), and the normalised aggregate."""
    from scipy.stats import t as student_t
    scores = table1_scores(PAPER_LEVELS, 0.05)
    annealed = T1_LABELS[paper.CLIP_02]
    constant = "ppo_clip+clip_anneal=false+lr_anneal=false"
    rng = np.random.default_rng(7)
    scores = pd.concat([scores, pd.DataFrame(_rows(constant, {e: RANDOM[e] + SCALE[e] * (0.5 + 0.05 * rng.standard_normal(3))
                                                             for e in ENVS}))], ignore_index=True)
    cfg = {"lr": 3e-4, "clip_eps": 0.2, "lr_anneal": True, "clip_anneal": True, "num_epochs": 10}
    configs = {annealed: cfg, constant: {**cfg, "lr_anneal": False, "clip_anneal": False},
               "ppo_clip+clip_anneal=false+lr_anneal=false+num_epochs=3":
                   {**cfg, "lr_anneal": False, "clip_anneal": False, "num_epochs": 3}}
    assert paper.constant_schedule_label(configs, annealed) == constant
    assert paper.constant_schedule_label({annealed: cfg}, annealed) is None        # never run both ways
    effect = paper.schedule_effect(scores, RANDOM, T1_LABELS, configs, reps=REPS)
    assert set(effect["setting"]) == {paper.CLIP_02}      # the only setting run both ways
    effect = effect.set_index("env")
    for env in ENVS:
        x = scores.query("label == @constant and env == @env")["score"].to_numpy()
        y = scores.query("label == @annealed and env == @env")["score"].to_numpy()
        vx, vy = x.var(ddof=1) / 3, y.var(ddof=1) / 3
        dof = (vx + vy) ** 2 / (vx ** 2 / 2 + vy ** 2 / 2)
        half = student_t.ppf(0.975, dof) * math.sqrt(vx + vy)
        r = effect.loc[env]
        assert r["difference"] == pytest.approx(x.mean() - y.mean(), rel=1e-12)
        assert (r["low"], r["high"]) == pytest.approx((x.mean() - y.mean() - half, x.mean() - y.mean() + half), rel=1e-9)
        assert r["high"] < 0                       # built 0.32 below in normalised units, noise 0.05
    agg = effect.loc["normalised (all)"]
    assert agg["constant"] < agg["annealed"] and agg["high"] < 0 and agg["low"] < agg["difference"] < agg["high"]
    parts = paper.conditions_parts(scores, RANDOM, T1_LABELS, configs, reps=REPS)
    assert any(isinstance(p, Table) and p.anchor == "paper-schedule-effect" for p in parts)
    assert "behind on 4 of 4" in " ".join(p for p in parts if isinstance(p, str))


# ---------------------------------------------------------------------------------------
# issue 28, item 8: nothing graded that cannot be

def test_published_numbers_are_compared_only_at_their_budget():
    """At 4,096 steps (scale=smoke) no part grades against the paper's Table 1, its Figure 3 claim or
    CleanRL's 1M-step runs: each says so and how far off the budget is (1,000,000 / 4,096 = 244.1
    times fewer steps); at 1,000,000 steps each does grade."""
    assert paper.budget_gap(1_000_000, 1_000_000, "CleanRL's results") is None
    assert paper.budget_gap(4096, 1_000_000, "CleanRL's results") == (
        "Not compared: these runs have 4,096 steps, CleanRL's results are at 1,000,000 steps (244 times fewer steps).")
    assert "(2 times more steps)" in paper.budget_gap(2_000_000, 1_000_000, "x")
    assert "(10.0% fewer steps)" in paper.budget_gap(900_000, 1_000_000, "x")
    assert paper.budget_gap(None, 1_000_000, "x").startswith("Not compared: the budget of these runs is unknown")
    scores = table1_scores(PAPER_LEVELS, 0.05, extra={"ppo_clip": 0.8, "trpo": 0.6, "reinforce": 0.3})
    aggregate = paper.figure3_aggregate(scores.assign(normalised=scores["score"]), ENVS, reps=REPS)
    smoke = {"budget": 4096}
    gap = "Not compared: these runs have 4,096 steps, {} are at 1,000,000 steps (244 times fewer steps)."

    def text(parts):
        return " ".join(p for p in parts if isinstance(p, str))

    def anchors(parts):
        return {p.anchor for p in parts if isinstance(p, Table)} | {p[2].anchor for p in parts if isinstance(p, tuple)}

    # Table 1 beside the paper: one paragraph, no CI beside the paper's number, no τ, no verdict
    t1 = paper.table1_parts(scores, RANDOM, T1_LABELS, reps=REPS, **smoke)
    assert anchors(t1) == set() and gap.format("the paper's Table 1 numbers") in text(t1)
    assert "Kendall" not in text(t1) and not any(v in text(t1) for v in ("holds", "inconclusive"))
    t1_1m = paper.table1_parts(scores, RANDOM, T1_LABELS, reps=REPS, **AT_1M)
    assert {"paper-table1", "paper-verdicts"} <= anchors(t1_1m) and "Kendall" in text(t1_1m)
    # Figure 3: these runs ranked, the paper's claim not judged
    f3 = paper.figure3_parts(scores, reps=REPS, aggregate=aggregate, **smoke)
    assert anchors(f3) == {"paper-figure3"} and gap.format("the paper's Figure 3 results") in text(f3)
    assert "the claim is not judged" in text(f3)
    assert not any(v in text(f3) for v in ("holds", "inconclusive", "is ahead", "is behind", "is tied"))
    f3_1m = paper.figure3_parts(scores, reps=REPS, aggregate=aggregate, **AT_1M)
    assert "paper-figure3-claim" in anchors(f3_1m) and "Over all 4 environments at once" in text(f3_1m)
    # CleanRL: no bar
    c = paper.cleanrl_parts(scores, reps=REPS, **smoke)
    assert anchors(c) == set() and gap.format("CleanRL's results") in text(c) and "No bar is applied" in text(c)
    assert anchors(paper.cleanrl_parts(scores, reps=REPS, **AT_1M)) == {"paper-cleanrl"}


def test_table1_normalisation_withholds_an_untrained_anchor():
    """Reacher's best Table 1 setting is 0.82 x 40 = 32.8 above the random policy (± noise): with the
    random policy's episodes spread by sd 20, that is within 3 sd (60), so Reacher gets no normalised
    score; the other environments (sd 1) keep theirs, and every mean is over them alone."""
    scores = table1_scores(PAPER_LEVELS, 0.05)
    spreads = {"HalfCheetah-v5": 1.0, "Hopper-v5": 1.0, "InvertedPendulum-v5": 1.0, "Reacher-v5": 20.0}
    normed, constants, envs, problems = paper.table1_normalised(scores, RANDOM, T1_LABELS, spreads=spreads)
    kept = ["HalfCheetah-v5", "Hopper-v5", "InvertedPendulum-v5"]
    assert envs == kept and normed.loc[normed["env"] == "Reacher-v5", "normalised"].isna().all()
    best = scores[scores["env"] == "Reacher-v5"].groupby("label")["score"].mean().max()
    assert best - RANDOM["Reacher-v5"] < 60
    assert [p for p in problems if p.startswith("Reacher-v5: no normalised score")] and len(problems) == 1
    assert "3 × 20.0 = 60.0" in problems[0]
    t = paper.table1_beside_paper(scores, RANDOM, T1_LABELS, reps=REPS, spreads=spreads)
    for r in t.itertuples():      # by hand: (score - random) / (best - random) over the three kept environments
        values = []
        for env in kept:
            mine = scores[scores["env"] == env]
            top = mine.groupby("label")["score"].mean().max()
            values += list((mine[mine["label"] == r.label]["score"] - RANDOM[env]) / (top - RANDOM[env]))
        assert r.mean == pytest.approx(np.mean(values)) and r.runs == 3 * len(kept)
    # the sensitivity to the random policy's score moves the kept environments only
    sens = paper.random_sensitivity(scores, RANDOM, T1_LABELS, spreads=spreads)
    assert set(sens["moved"]) == {"all", *kept}
    # without the spreads (an old cache), nothing is withheld
    assert paper.table1_normalised(scores, RANDOM, T1_LABELS)[2] == ENVS
