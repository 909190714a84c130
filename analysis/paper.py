"""pg-arena's MuJoCo results set beside the PPO paper (Schulman et al. 2017), point by point.

Pure analysis of plain frames, so it works from stored results or from an archive:

- ``scores``: one row per run, ``suite, env, algo, variant, label, seed, score`` (``score`` = mean
  return of the run's last 100 training episodes; ``analysis.scores.run_scores``);
- ``random``: environment -> the random policy's score (``analysis.scores.random_scores``);
- ``table1_labels``: Table 1 setting name (``analysis.reference.TABLE1[i].name``) -> the label whose
  runs are that setting, or None (``analysis.tables.table1_label``);
- ``configs``: label -> resolved ``algo_cfg`` (for the annealing schedule).

What it computes (each a DataFrame, then ``*_parts`` turns them into the report's paragraphs and
``Table`` objects):

1. ``table1_beside_paper``: each Table 1 setting's average normalised score (random 0, best of the
   11 settings 1) with its 95% CI (the expanded stratified bootstrap at the t-adjusted level, as the
   verdicts), the paper's number, whether it lies inside.
2. ``table1_rank_correlation``: Kendall's tau-b of the 11 settings against the paper's numbers, with
   a bootstrap CI.
3. ``table1_verdicts``: the paper's conclusions from Table 1, each holds / does not hold /
   inconclusive with its CI evidence (``table1_differences``: every pairwise difference).
4. ``figure3_ranking`` / ``figure3_claim``: the seven algorithms ranked per environment at the final
   budget, against the paper's text claim on Figure 3 (a plot only: no number is read off it).
5. ``cleanrl_table``: ppo_clip's final returns against CleanRL's published PPO.
6. ``random_sensitivity``, ``annealing_table``, ``conditions_parts``: where the protocol differs
   from the paper's and how much that matters, where it can be measured.

A published number is compared only with runs of its own budget (``budget_gap``: the paper's and
CleanRL's MuJoCo numbers are at 1M steps); the ``*_parts`` say so otherwise, and grade nothing. With
the random policy's spread (``spreads``), an environment whose anchor (the setting scored 1) is not
trained (``untrained_anchors``) gets no normalised score.

Every bootstrap here is seeded (``analysis.stats.BOOTSTRAP_SEED``) so the same scores give the same
numbers. The Table 1 comparisons share one joint bootstrap: each setting's runs are resampled within
each environment (stratified, as rliable), independently of the other settings (different runs), and
the per-environment normalisation constants are held fixed (as in the Table 1 CIs).
"""
from __future__ import annotations

import math
from typing import Iterable

import numpy as np
import pandas as pd

from analysis import stats
from analysis.load import order_labels, split_label
from analysis.reference import (CLEANRL_PPO_SOURCE, CLEANRL_PPO_STEPS, FIGURE3_CLAIM, FIGURE3_SHARED, FIGURE3_SOURCE,
                                LATER_BASELINES_SOURCE, MUJOCO_V5_CHANGES, MUJOCO_VERSION_SOURCE, PAPER,
                                PAPER_MUJOCO_STEPS, RELEASED_CODE_SCHEDULE, RELEASED_CODE_SOURCE, TABLE1, cleanrl_ppo,
                                env_base)
from analysis.scores import finite, normalise_random_best, score_matrix
from analysis.tables import Table, digits_for, fmt, fmt_ci

HOLDS, FAILS, INCONCLUSIVE, UNMEASURED = "holds", "does not hold", "inconclusive", "not measured"
SURE = 0.95            # "ranks first / last in >= 95% of the bootstrap resamples"

# The Table 1 settings the conclusions name (analysis.reference.TABLE1 spells them as the paper does).
NO_CLIP = "No clipping or penalty"
CLIP_02 = "Clipping, ε = 0.2"
CLIPPING = tuple(r.name for r in TABLE1 if r.name.startswith("Clipping"))
ADAPTIVE = tuple(r.name for r in TABLE1 if r.name.startswith("Adaptive KL"))
FIXED = tuple(r.name for r in TABLE1 if r.name.startswith("Fixed KL"))
PAPER_SCORE = {r.name: r.paper for r in TABLE1}

# §6.2: "Vanilla PG, Adaptive" is policy gradient with an adaptive step size; here reinforce is
# REINFORCE with a learned value baseline and a fixed Adam step size: the nearest algorithm, not the same.
REINFORCE_CAVEAT = ("the paper's \"Vanilla PG, Adaptive\" (policy gradient with an adaptive step size) is not "
                    "the same algorithm as this suite's reinforce (REINFORCE with a learned value baseline, "
                    "fixed Adam step size); it is the nearest one here")


# ---------------------------------------------------------------------------------------
# the inputs, from what a report holds

def table1_labels_from(t1: pd.DataFrame) -> dict[str, str | None]:
    """Setting name -> label (or None) from ``analysis.tables.table1``'s frame (its "Table 1" rows)."""
    rows = t1[t1["section"] == "Table 1"]
    return {str(s): (lab if isinstance(lab, str) else None) for s, lab in zip(rows["setting"], rows["label"])}


def run_configs(runs: pd.DataFrame) -> dict[str, dict]:
    """Label -> resolved ``algo_cfg`` from a runs table (``Results.analysed``: columns label, config);
    the first run of each label with one (the runs of a label share it: a label is its config)."""
    out: dict[str, dict] = {}
    for label, config in zip(runs["label"], runs["config"]):
        if label not in out and isinstance(config, dict) and isinstance(config.get("algo_cfg"), dict):
            out[str(label)] = config["algo_cfg"]
    return out


def run_versions(runs: pd.DataFrame) -> dict[str, str]:
    """Package -> version from a runs table (column ``versions``); several versions of one package
    are joined with " / " (most runs first)."""
    from collections import Counter
    seen: dict[str, Counter] = {}
    for versions in runs["versions"] if "versions" in runs else []:
        if isinstance(versions, dict):
            for pkg, v in versions.items():
                seen.setdefault(str(pkg), Counter())[str(v)] += 1
    return {pkg: " / ".join(v for v, _ in c.most_common()) for pkg, c in seen.items()}


def budget_gap(budget: int | None, published: int, what: str) -> str | None:
    """None when the runs' ``budget`` (steps per run) equals ``published``, the budget of the published
    numbers ``what`` names (plural: "CleanRL's results"); otherwise the sentence that says they are
    not compared, and how far apart the two budgets are. A score at another budget measures another
    thing: a grade against the published number would be no grade at all."""
    if budget is not None and int(budget) == int(published):
        return None
    if budget is None or int(budget) <= 0:
        return f"Not compared: the budget of these runs is unknown; {what} are at {published:,} steps."
    budget = int(budget)
    ratio = published / budget
    if ratio >= 2:
        how = f"{ratio:.3g} times fewer steps"
    elif ratio <= 0.5:
        how = f"{1 / ratio:.3g} times more steps"
    else:
        how = f"{abs(budget - published) / published:.1%} {'fewer' if budget < published else 'more'} steps"
    return f"Not compared: these runs have {budget:,} steps, {what} are at {published:,} steps ({how})."


# The anchor of the random-best normalisation (the setting scored 1) counts as trained on an
# environment when its mean score exceeds the random policy's by more than this many standard
# deviations of the random policy's episode returns: its average episode is better than almost
# every random episode. Below that, (score - random) / (best - random) divides by a difference the
# size of the random policy's own noise, and reads as a score only by accident (issue 28: at 4,096
# steps grpo "scored" 3.33 and dapo 3.78). Measured (the best Table 1 setting's margin): at 1M steps
# (docs/paper_mujoco) the smallest of the paper's 7 environments is 10.2 sd (Reacher); at 50,000
# steps (docs/report_example) HalfCheetah 0.2, Reacher 2.7, Swimmer 2.8, Hopper 17; at 4,096 steps
# Hopper 0.5, InvertedPendulum 2.0. A rule on the budget instead (no normalised score below 1M
# steps) would hide Hopper's trained anchor at 50,000 steps and pass an untrained one at 1M.
ANCHOR_MARGIN_SD = 3.0


def untrained_anchors(constants: pd.DataFrame, spreads: dict[str, float], names: dict[str, str] | None = None,
                      margin: float = ANCHOR_MARGIN_SD) -> dict[str, str]:
    """Environment -> why its normalisation is not shown as a score: its anchor (``constants``' row, as
    ``normalise_random_best`` returns it: ``best`` by ``best_label``) beats the random policy's score
    ``random`` by no more than ``margin`` standard deviations of the random policy's episode returns
    (``spreads``: environment -> that sd). ``names``: label -> Table 1 setting, to name the anchor. An
    environment without a spread, a random score, or a best above random is not judged here
    (``normalise_random_best`` already leaves out the last two)."""
    out, names = {}, names or {}
    for row in constants.itertuples():
        sd = spreads.get(row.env)
        rnd, best = row.random, row.best
        if sd is None or not (finite(rnd) and finite(best)) or not best > rnd:
            continue
        if best - rnd <= margin * sd:
            name = f" ({names[row.best_label]})" if row.best_label in names else ""
            out[row.env] = (f"the anchor, {row.best_label}{name}, the setting scored 1, has a mean score of "
                            f"{best:.1f}, {best - rnd:.1f} above the random policy's {rnd:.1f}: not more than {margin:g} standard "
                            f"deviations of the random policy's episode returns ({margin:g} × {sd:.1f} = "
                            f"{margin * sd:.1f}), so it is not a trained policy to scale by")
    return out


# ---------------------------------------------------------------------------------------
# Table 1: normalisation, means, the joint bootstrap

def _t1_labels(table1_labels: dict[str, str | None]) -> dict[str, str]:
    """Setting -> label for the settings that were run, in the paper's order."""
    return {r.name: table1_labels[r.name] for r in TABLE1 if isinstance(table1_labels.get(r.name), str)}


def table1_normalised(scores: pd.DataFrame, random: dict[str, float], table1_labels: dict[str, str | None],
                      *, spreads: dict[str, float] | None = None
                      ) -> tuple[pd.DataFrame, pd.DataFrame, list[str], list[str]]:
    """The paper's normalisation over the Table 1 settings only: per environment, random policy 0 and
    the highest mean over seeds among the 11 settings' labels 1 (the report's other algorithms, however
    high they score, change nothing here). ``spreads``: environment -> standard deviation of the random
    policy's episode returns; where given, an environment whose anchor is untrained
    (``untrained_anchors``) gets no normalised score and is named in problems.

    Returns (scores of the Table 1 labels with ``normalised`` and ``setting`` columns, constants
    [env, random, best, best_label, best_setting], environments normalised, problems)."""
    by_label = {lab: name for name, lab in _t1_labels(table1_labels).items()}
    mine = scores[scores["label"].isin(list(by_label))]
    normed, constants, problems = normalise_random_best(mine, random, labels=list(by_label))
    untrained = untrained_anchors(constants, spreads, by_label) if spreads is not None else {}
    if untrained:
        normed.loc[normed["env"].isin(list(untrained)), "normalised"] = np.nan
        problems = problems + [f"{env}: no normalised score: {why}" for env, why in sorted(untrained.items())]
    normed = normed.assign(setting=normed["label"].map(by_label))
    constants = constants.assign(best_setting=constants["best_label"].map(by_label))
    envs = sorted(normed.loc[normed["normalised"].notna(), "env"].unique())
    return normed, constants, envs, problems


def _matrices(normed: pd.DataFrame, envs: list[str], table1_labels: dict[str, str | None]
              ) -> tuple[dict[str, np.ndarray], list[str]]:
    """Setting -> seeds x envs matrix of normalised scores (seeds present on every environment)."""
    out, notes = {}, []
    if not envs:
        return out, notes
    for name, label in _t1_labels(table1_labels).items():
        matrix, note = score_matrix(normed, label, envs, "normalised")
        if note:
            notes.append(note)
        if matrix is not None:
            out[name] = matrix
    return out, notes


def _joint_draws(matrices: dict[str, np.ndarray], reps: int, seed: int, expand: bool = False) -> dict[str, np.ndarray]:
    """Setting -> [reps] bootstrap means: runs resampled within each environment, each setting from
    its own generator (independent runs; the same draws whatever other settings are present).
    ``expand``: the small-sample corrected draws (``stats.stratified_bootstrap_means``)."""
    return {name: stats.stratified_bootstrap_means(m, reps, stats.label_rng(seed, "table1", name), expand)
            for name, m in matrices.items()}


def _degrees_of_freedom(matrices: dict[str, np.ndarray]):
    """``df(*settings)``: the Welch-Satterthwaite degrees of freedom of the variance of one setting's
    average normalised score, or of a difference of settings (``stats.satterthwaite_df``): each
    environment's spread from its own seeds, weighted by its share of the variance. Environments x
    (seeds - 1) only where every environment spreads alike; here they do not (InvertedPendulum's
    runs agree, Hopper's spread), and a few environments carry the variance with their few seeds."""
    def df(*names: str) -> float:
        return stats.satterthwaite_df([matrices[n] for n in names])
    return df


def _t1_state(scores, random, table1_labels, reps, seed, expand=False, spreads=None):
    normed, constants, envs, problems = table1_normalised(scores, random, table1_labels, spreads=spreads)
    matrices, notes = _matrices(normed, envs, table1_labels)
    points = {name: float(m.mean()) for name, m in matrices.items()}
    draws = _joint_draws(matrices, reps, seed, expand)
    return normed, constants, envs, problems + notes, matrices, points, draws


def table1_beside_paper(scores: pd.DataFrame, random: dict[str, float], table1_labels: dict[str, str | None],
                        reps: int = stats.DEFAULT_REPS, seed: int = stats.BOOTSTRAP_SEED, *,
                        spreads: dict[str, float] | None = None) -> pd.DataFrame:
    """One row per Table 1 setting, in the paper's order: ``setting, label, mean, low, high, runs, seeds,
    paper, paper_in_ci, rank, paper_rank``. ``mean``: average normalised score over the seeds x
    environments matrix (``table1_normalised``) with its 95% CI, ``stats.small_sample_interval`` of
    ``reps`` stratified-bootstrap resamples (``seed``): the expanded bootstrap at the t-adjusted level,
    the verdicts' own draws and level; NaN for a setting not run or lacking an environment. ``rank``:
    1 = highest mean here; ``paper_rank``: the same by the paper's numbers; both among the settings
    measured here (equal numbers share the lower rank)."""
    normed, _, envs, _ = table1_normalised(scores, random, table1_labels, spreads=spreads)
    matrices, _ = _matrices(normed, envs, table1_labels)
    rows = []
    for r in TABLE1:
        label = table1_labels.get(r.name)
        mean = low = high = np.nan
        runs = seeds = 0
        if r.name in matrices:
            m = matrices[r.name]
            # the draws the verdicts use (the same generator): the CI of "no clipping" is its verdict's
            mean, low, high = stats.small_sample_interval(m, reps, stats.label_rng(seed, "table1", r.name))
            runs, seeds = m.size, m.shape[0]
        inside = bool(low <= r.paper <= high) if math.isfinite(mean) else None
        rows.append({"setting": r.name, "label": label if isinstance(label, str) else None, "mean": mean,
                     "low": low, "high": high, "runs": runs, "seeds": seeds, "paper": r.paper,
                     "paper_in_ci": inside})
    out = pd.DataFrame(rows, columns=["setting", "label", "mean", "low", "high", "runs", "seeds", "paper",
                                      "paper_in_ci"])
    out["rank"] = out["mean"].rank(ascending=False, method="min")
    # both ranks among the settings measured here, so that they compare like with like
    out["paper_rank"] = out["paper"].where(out["mean"].notna()).rank(ascending=False, method="min")
    return out


def table1_rank_correlation(scores: pd.DataFrame, random: dict[str, float], table1_labels: dict[str, str | None],
                            reps: int = stats.DEFAULT_REPS, seed: int = stats.BOOTSTRAP_SEED, *,
                            spreads: dict[str, float] | None = None) -> pd.DataFrame:
    """Kendall's tau-b between the settings' average normalised scores here and the paper's numbers
    (the settings measured on every environment; the paper has one tie, 0.71 twice), with a 95%
    percentile bootstrap CI: every setting's runs resampled within each environment, the means and
    tau recomputed, ``reps`` times. One row: ``settings, tau, low, high, p_value, reps, seed``
    (``p_value``: scipy's test of tau = 0, which treats both sets of means as exact)."""
    *_, points, draws = _t1_state(scores, random, table1_labels, reps, seed, spreads=spreads)
    names = [r.name for r in TABLE1 if r.name in points]
    row = {"settings": len(names), "tau": np.nan, "low": np.nan, "high": np.nan, "p_value": np.nan,
           "reps": reps, "seed": seed}
    if len(names) >= 3:
        ours = np.array([points[n] for n in names])
        paper = np.array([PAPER_SCORE[n] for n in names])
        row["tau"] = float(stats.kendall_tau_b(ours, paper))
        try:
            from scipy.stats import kendalltau
            row["p_value"] = float(kendalltau(ours, paper).pvalue)
        except ImportError:  # the interval does not need it
            pass
        boot = stats.kendall_tau_b(np.stack([draws[n] for n in names], axis=1), paper)
        row["low"], row["high"] = stats.percentile_interval(boot)
    return pd.DataFrame([row], columns=["settings", "tau", "low", "high", "p_value", "reps", "seed"])


def table1_differences(scores: pd.DataFrame, random: dict[str, float], table1_labels: dict[str, str | None],
                       reps: int = stats.DEFAULT_REPS, seed: int = stats.BOOTSTRAP_SEED, *,
                       spreads: dict[str, float] | None = None) -> pd.DataFrame:
    """mean(a) - mean(b) of the average normalised scores for every ordered pair of measured settings,
    with the 95% percentile CI of the joint bootstrap the verdicts use (expanded for few seeds):
    ``a, b, point, low, high, p_greater`` (``p_greater``: the fraction of resamples in which a
    scores above b)."""
    *_, matrices, points, draws = _t1_state(scores, random, table1_labels, reps, seed, expand=True, spreads=spreads)
    return _differences(points, draws, _degrees_of_freedom(matrices))


def _differences(points, draws, df) -> pd.DataFrame:
    """Every ordered pair's difference with its 95% interval, t-adjusted for the two settings' degrees
    of freedom (expanded draws: ``stats.t_adjusted_confidence``)."""
    names = [r.name for r in TABLE1 if r.name in points]
    rows = []
    for a in names:
        for b in names:
            if a == b:
                continue
            d = draws[a] - draws[b]
            low, high = stats.percentile_interval(d, stats.t_adjusted_confidence(stats.CONFIDENCE, df(a, b)))
            rows.append({"a": a, "b": b, "point": points[a] - points[b], "low": low, "high": high,
                         "p_greater": float(np.mean(d > 0))})
    return pd.DataFrame(rows, columns=["a", "b", "point", "low", "high", "p_greater"])


# ---------------------------------------------------------------------------------------
# Table 1: the paper's conclusions

def _significance(low: float, high: float) -> str:
    return "above" if low > 0 else "below" if high < 0 else "overlaps"


def _adjusted_low(draws: np.ndarray, comparisons: int, df: float) -> float:
    """Lower end of the two-sided (1 - 0.05 / comparisons) interval (Bonferroni), t-adjusted for
    ``df`` degrees of freedom (expanded draws)."""
    level = 1.0 - (1.0 - stats.CONFIDENCE) / max(comparisons, 1)
    return stats.percentile_interval(draws, stats.t_adjusted_confidence(level, df))[0]


def _fmt_d(point, low, high) -> str:
    return fmt_ci(point, low, high, 2, sign=True)


def table1_verdicts(scores: pd.DataFrame, random: dict[str, float], table1_labels: dict[str, str | None],
                    reps: int = stats.DEFAULT_REPS, seed: int = stats.BOOTSTRAP_SEED, *,
                    spreads: dict[str, float] | None = None) -> pd.DataFrame:
    """The paper's conclusions from Table 1, each judged on the joint bootstrap:
    ``key, claim, paper, statistic, point, low, high, probability, verdict, evidence``.

    - ``best_clip``: clipping at ε = 0.2 scores best of the 11. ``probability``: the fraction of
      resamples in which ε = 0.2 has the highest mean of all measured settings (a simultaneous
      statement over the 10 comparisons). holds: >= 0.95; does not hold: another setting is
      significantly better (the CI of its difference lies above 0, Bonferroni-adjusted for the 10
      comparisons: a 99.5% interval); else inconclusive. ``point/low/high``: ε = 0.2 minus the best
      other setting (95% CI).
    - ``worst_noclip``: no clipping or penalty scores worst. Mirror image: ``probability`` = fraction
      of resamples in which it is lowest; does not hold if another setting is significantly lower.
      ``point/low/high``: the lowest other setting minus it.
    - ``noclip_below_random``: its score is below the random policy's (the paper: -0.39 < 0).
      holds: CI below 0; does not hold: CI above 0.
    - ``adaptive_below_clip``: adaptive KL scores below clipping, as the paper compares it: best
      adaptive-KL setting (paper 0.74) below the best clipping setting (paper 0.82). Statistic: best
      clipping minus best adaptive, the best re-chosen in every resample. holds: CI above 0; does not
      hold: CI below 0.
    - ``kl_below_clip``: §4, the KL penalty (adaptive or fixed, 7 settings) performed worse than the
      clipped surrogate: best clipping minus best KL setting, judged the same way."""
    normed, _, envs, _, matrices, points, draws = _t1_state(scores, random, table1_labels, reps, seed, expand=True,
                                                            spreads=spreads)
    df = _degrees_of_freedom(matrices)
    diffs = _differences(points, draws, df)
    rows = []

    def d_row(a, b):
        hit = diffs[(diffs["a"] == a) & (diffs["b"] == b)]
        return hit.iloc[0] if len(hit) else None

    def row(key, claim, paper, statistic, point=np.nan, low=np.nan, high=np.nan, probability=np.nan,
            verdict=UNMEASURED, evidence=""):
        rows.append({"key": key, "claim": claim, "paper": paper, "statistic": statistic, "point": point, "low": low,
                     "high": high, "probability": probability, "verdict": verdict, "evidence": evidence})

    names = [r.name for r in TABLE1 if r.name in points]
    stack = np.stack([draws[n] for n in names], axis=1) if names else np.zeros((reps, 0))

    def extreme(name: str, highest: bool):
        """Whether setting ``name`` scores highest (lowest) of those measured: the rival nearest to it,
        the gap to that rival oriented so that > 0 agrees with the claim, the fraction of resamples
        in which it is the extreme, the settings significantly beyond it, those whose difference to it
        has a CI containing 0, its rank, and the verdict."""
        others = [n for n in names if n != name]
        rival = (max if highest else min)(others, key=points.get)
        gap = d_row(name, rival) if highest else d_row(rival, name)
        extreme_at = (np.argmax if highest else np.argmin)(stack, axis=1)
        p = float(np.mean(extreme_at == names.index(name)))
        # "does not hold" needs one of 10 comparisons to reach significance: Bonferroni, so that
        # pure noise over 11 settings says so at most 5% of the time (as "holds" does, jointly).
        sign = 1.0 if highest else -1.0
        beyond = [n for n in others
                  if _adjusted_low(sign * (draws[n] - draws[name]), len(others), df(n, name)) > 0]
        tied = [n for n in others if _significance(d_row(name, n)["low"], d_row(name, n)["high"]) == "overlaps"]
        rank = 1 + sum(points[n] > points[name] for n in others)
        verdict = HOLDS if p >= SURE else FAILS if beyond else INCONCLUSIVE
        return rival, gap, p, beyond, tied, rank, verdict

    # (a) clipping at ε = 0.2 scores best
    claim = "Clipping at ε = 0.2 scores best of the 11 settings"
    paper = "0.82, the highest of the 11 (next: ε = 0.1, 0.76)"
    if CLIP_02 in points and len(names) >= 2:
        rival, d, p_first, better, tied, rank, verdict = extreme(CLIP_02, highest=True)
        evidence = (f"ε = 0.2 ranks {rank} of {len(names)} here ({points[CLIP_02]:.2f}); it ranks first in "
                    f"{p_first:.0%} of the resamples. Against the best other setting ({rival}, {points[rival]:.2f}): "
                    f"{_fmt_d(d['point'], d['low'], d['high'])}.")
        if better:
            evidence += f" Significantly better than ε = 0.2 (Bonferroni-adjusted CI above 0): {', '.join(better)}."
        evidence += (f" Unadjusted 95% CI of the difference containing 0: {', '.join(tied)}." if tied
                     else " No other setting's unadjusted 95% CI of the difference contains 0 (not a verdict: "
                          "the verdict takes the Bonferroni-adjusted intervals).")
        row("best_clip", claim, paper, "ε = 0.2 minus the best other setting", d["point"], d["low"], d["high"],
            p_first, verdict, evidence)
    else:
        row("best_clip", claim, paper, "ε = 0.2 minus the best other setting",
            evidence="ε = 0.2 (or every other setting) was not run on every environment")

    # (b) no clipping or penalty scores worst
    claim = "No clipping or penalty scores worst"
    paper = "−0.39, the lowest of the 11 (next lowest: fixed KL β = 0.3, 0.62)"
    if NO_CLIP in points and len(names) >= 2:
        rival, d, p_last, worse, tied, rank, verdict = extreme(NO_CLIP, highest=False)
        evidence = (f"It ranks {rank} of {len(names)} here ({points[NO_CLIP]:.2f}); lowest in {p_last:.0%} of the "
                    f"resamples. The lowest other setting ({rival}, {points[rival]:.2f}) minus it: "
                    f"{_fmt_d(d['point'], d['low'], d['high'])}.")
        if worse:
            evidence += f" Significantly below it (Bonferroni-adjusted CI below 0): {', '.join(worse)}."
        evidence += (f" Unadjusted 95% CI of the difference containing 0: {', '.join(tied)}." if tied
                     else " Every other setting is above it by its unadjusted 95% CI (not a verdict: the "
                          "verdict takes the Bonferroni-adjusted intervals).")
        row("worst_noclip", claim, paper, "lowest other setting minus no clipping", d["point"], d["low"], d["high"],
            p_last, verdict, evidence)
    else:
        row("worst_noclip", claim, paper, "lowest other setting minus no clipping",
            evidence="no clipping or penalty (or every other setting) was not run on every environment")

    # (b') ... and below the random policy (the paper's -0.39)
    claim = "No clipping or penalty scores below the random policy (normalised score < 0)"
    paper = "−0.39; §6.1: because of one environment (HalfCheetah) with a very negative score"
    if NO_CLIP in matrices:
        m = matrices[NO_CLIP]
        low, high = stats.percentile_interval(draws[NO_CLIP], stats.t_adjusted_confidence(stats.CONFIDENCE,
                                                                                            df(NO_CLIP)))
        verdict = HOLDS if high < 0 else FAILS if low > 0 else INCONCLUSIVE
        per_env = m.mean(axis=0)
        worst = int(np.argmin(per_env))
        evidence = (f"{points[NO_CLIP]:.2f} [{low:.2f}, {high:.2f}]. Per environment (mean over seeds): "
                    + ", ".join(f"{env_base(e)} {v:.2f}" for e, v in zip(envs, per_env))
                    + f"; lowest: {env_base(envs[worst])}.")
        row("noclip_below_random", claim, paper, "average normalised score", points[NO_CLIP], low, high, np.nan,
            verdict, evidence)
    else:
        row("noclip_below_random", claim, paper, "average normalised score",
            evidence="no clipping or penalty was not run on every environment")

    # (c) adaptive KL below clipping; (d) the KL penalty below clipping
    for key, claim, paper, group, group_name in (
            ("adaptive_below_clip", "Adaptive KL scores below clipping",
             "best adaptive KL 0.74 (d_targ = 0.01) < best clipping 0.82 (ε = 0.2)", ADAPTIVE, "adaptive KL"),
            ("kl_below_clip", "The KL penalty (adaptive or fixed) performs worse than the clipped surrogate (§4)",
             "best KL setting 0.74 (adaptive, d_targ = 0.01) < best clipping 0.82", ADAPTIVE + FIXED, "KL")):
        clips = [n for n in CLIPPING if n in points]
        kls = [n for n in group if n in points]
        statistic = f"best clipping minus best {group_name} setting"
        if not clips or not kls:
            row(key, claim, paper, statistic, evidence=f"no clipping or no {group_name} setting was run on every environment")
            continue
        best_clip, best_kl = max(clips, key=points.get), max(kls, key=points.get)
        boot = (np.max(np.stack([draws[n] for n in clips], 1), 1) - np.max(np.stack([draws[n] for n in kls], 1), 1))
        point = points[best_clip] - points[best_kl]
        # a difference of two settings' maxima: the fewest degrees of freedom of a pair of them
        pair_df = min(df(c, k) for c in clips for k in kls)
        low, high = stats.percentile_interval(boot, stats.t_adjusted_confidence(stats.CONFIDENCE, pair_df))
        verdict = HOLDS if low > 0 else FAILS if high < 0 else INCONCLUSIVE
        evidence = (f"best clipping here: {best_clip} ({points[best_clip]:.2f}); best {group_name}: {best_kl} "
                    f"({points[best_kl]:.2f}); difference {_fmt_d(point, low, high)} (the best of each re-chosen in "
                    f"every resample).")
        if CLIP_02 in points:
            vs = [(n, d_row(CLIP_02, n)) for n in kls]
            evidence += " ε = 0.2 minus each: " + "; ".join(f"{n.split(', ', 1)[1]} {_fmt_d(d['point'], d['low'], d['high'])}"
                                                          for n, d in vs) + "."
        row(key, claim, paper, statistic, point, low, high, float(np.mean(boot > 0)), verdict, evidence)
    single = [n for n in names if matrices[n].shape[0] < 2]
    if single:   # one seed per environment: nothing to resample, the intervals collapse to points
        for r in rows:
            if r["verdict"] in (HOLDS, FAILS):
                r["verdict"] = INCONCLUSIVE
                r["evidence"] += (f" A single seed for {', '.join(single)}: the bootstrap has nothing to resample, "
                                  f"so no verdict is drawn.")
    return pd.DataFrame(rows, columns=["key", "claim", "paper", "statistic", "point", "low", "high", "probability",
                                       "verdict", "evidence"])


def table1_parts(scores: pd.DataFrame, random: dict[str, float], table1_labels: dict[str, str | None],
                 reps: int = stats.DEFAULT_REPS, seed: int = stats.BOOTSTRAP_SEED, *, budget: int | None = None,
                 spreads: dict[str, float] | None = None) -> list:
    """The report's parts for Table 1 beside the paper: paragraphs and ``Table`` objects. ``budget``:
    the runs' steps; unless it is the paper's (``PAPER_MUJOCO_STEPS``), one paragraph that says so and
    nothing set beside the paper's numbers."""
    gap = budget_gap(budget, PAPER_MUJOCO_STEPS, "the paper's Table 1 numbers")
    if gap:
        return [f"{gap} So no setting's score is set beside the paper's, no rank correlation is computed and none "
                f"of the paper's Table 1 conclusions is judged. The settings' scores at this budget: 'Table 1 — "
                f"normalised scores' and 'Scores per environment'."]
    kw = {"spreads": spreads}
    normed, constants, envs, problems = table1_normalised(scores, random, table1_labels, **kw)
    t1 = table1_beside_paper(scores, random, table1_labels, reps, seed, **kw)
    tau = table1_rank_correlation(scores, random, table1_labels, reps, seed, **kw).iloc[0]
    verdicts = table1_verdicts(scores, random, table1_labels, reps, seed, **kw)
    measured = t1[t1["mean"].notna()]
    parts: list = [
        f"Normalised as the paper does, per environment: the random policy scores 0 and the best of the 11 Table 1 "
        f"settings (the highest mean over seeds among those settings only; the other algorithms of this report "
        f"play no part) scores 1; a setting's number is the average over its runs × environments "
        f"({len(envs)} environment(s): {', '.join(envs) or 'none'}). 95% CIs: the stratified bootstrap (runs "
        f"resampled within each environment; {reps} resamples, seed {seed}), expanded for few seeds and read at the "
        f"t-adjusted level, as the conclusions below take it; the normalisation constants are held fixed. 'paper': {PAPER}, Table 1 (MuJoCo -v1, 1M steps, 3 seeds, 21 runs per setting)."]
    rows = []
    for r in t1.itertuples():
        if not math.isfinite(r.mean):
            ours = "not run" if r.label is None else "– (not on every environment)"
            inside = "–"
        else:
            ours = fmt_ci(r.mean, r.low, r.high)
            inside = "yes" if r.paper_in_ci else ("no, paper above" if r.paper > r.high else "no, paper below")
        rows.append([r.setting, r.label or "–", ours, str(r.runs) if r.runs else "–",
                     f"{int(r.rank)}" if math.isfinite(r.rank) else "–", fmt(r.paper),
                     f"{int(r.paper_rank)}" if math.isfinite(r.paper_rank) else "–", inside])
    inside_n = int(measured["paper_in_ci"].sum()) if len(measured) else 0
    parts.append(Table("Table 1 beside the paper — average normalised score [95% CI]",
                       ["setting", "label", "here [95% CI]", "runs", "rank here", "paper", "paper rank",
                        "paper inside CI"], rows, anchor="paper-table1", numeric={2, 3, 4, 5, 6},
                       notes=[f"The paper's number lies inside the CI for {inside_n} of {len(measured)} measured "
                              f"setting(s)."] + problems))
    if math.isfinite(tau["tau"]):
        parts.append(
            f"Rank agreement with the paper: Kendall's τ-b = {tau['tau']:.2f} [95% CI {tau['low']:.2f}, "
            f"{tau['high']:.2f}] over {int(tau['settings'])} settings (τ = 1: the same order, 0: unrelated, −1: "
            f"reversed; τ-b counts the paper's tie, 0.71 twice). CI: percentile bootstrap, {int(tau['reps'])} "
            f"resamples (seed {int(tau['seed'])}), each setting's runs resampled within each environment and the "
            f"11 means and τ recomputed (a plain stratified bootstrap: with 3 seeds it is narrow, and resampling "
            f"noise pulls τ toward 0, so the interval sits low around the point). scipy's test of τ = 0, which takes both sets of means as exact, gives "
            f"p = {tau['p_value']:.3g}.")
    else:
        parts.append("Rank agreement with the paper: fewer than 3 settings were measured on every environment; "
                     "Kendall's τ is not computed.")
    parts.append(
        "The paper's conclusions. Every judgement uses one joint bootstrap of the settings' average normalised "
        f"scores ({reps} resamples, seed {seed}): each setting's runs resampled within each environment, independently "
        "of the other settings, and — because with 3 seeds a plain bootstrap makes a mean's variance a third too "
        "small — each environment's resampled mean spread by √(n/(n−1)) about its mean (the expanded bootstrap; n "
        "seeds), and every interval taken at the level whose normal quantile is Student's t quantile for "
        "the Welch–Satterthwaite degrees of freedom of the settings involved (each environment's spread from its "
        "own seeds: where a few environments carry the variance, as on MuJoCo, fewer than environments × (n − 1); "
        "the normal quantile alone erred about 7–9% of the time at 3 seeds). How often these rules claim falsely "
        "on synthetic data where the truth is known: docs/BENCHMARKS.md, \"Table 1's conclusions on data where "
        "the truth is known\" (bench/table1_null.py). 'Scores best' holds "
        "when ε = 0.2 has the highest mean in at "
        f"least {SURE:.0%} of the resamples (a statement about all 10 comparisons at once, so no multiple-comparison "
        "correction is needed), does not hold when some other setting is significantly better (the CI of its "
        "difference lies above 0, Bonferroni-adjusted for the 10 comparisons, i.e. a 99.5% interval: with 11 settings "
        "of equal merit, ten unadjusted 95% intervals would often find one), and is inconclusive otherwise; 'scores "
        "worst' mirrors it. A comparison of two "
        "groups holds when the CI of the difference lies on the paper's side of 0, does not hold when it lies on the "
        "other side, and is inconclusive when it contains 0.")
    vrows = [[v.claim, v.paper, v.statistic + ": " + _fmt_d(v.point, v.low, v.high) if math.isfinite(v.point) else "–",
              v.verdict, v.evidence] for v in verdicts.itertuples()]
    parts.append(Table("The paper's Table 1 conclusions, here", ["claim", "paper", "here [95% CI]", "verdict",
                                                                "evidence"], vrows, anchor="paper-verdicts"))
    diffs = table1_differences(scores, random, table1_labels, reps, seed, **kw)
    if len(diffs):
        names = [n for n in (r.name for r in TABLE1) if n in set(diffs["a"])]
        cell = {(d.a, d.b): d for d in diffs.itertuples()}
        short = [f"({i + 1})" for i in range(len(names))]
        drows = []
        for i, a in enumerate(names):
            line = [f"{short[i]} {a}"]
            for b in names:
                d = cell.get((a, b))
                if d is None:
                    line.append("–")
                    continue
                mark = " ▲" if d.low > 0 else " ▼" if d.high < 0 else ""
                line.append(f"{d.point:+.2f} [{d.low:+.2f}, {d.high:+.2f}]{mark}")
            drows.append(line)
        parts.append(("details", "Every pairwise difference of the Table 1 settings (row minus column) [95% CI, "
                                 "expanded joint bootstrap]",
                      Table("Row minus column, average normalised score [95% CI]; ▲ CI above 0, ▼ below",
                            ["row \\ column"] + short, drows, anchor="paper-differences",
                            numeric=set(range(1, len(names) + 1)))))
    return parts


# ---------------------------------------------------------------------------------------
# Figure 3: the algorithms per environment at the final budget

def figure3_labels(scores: pd.DataFrame) -> list[str]:
    """The plain algorithm labels present (no variant), in registry order."""
    return [lab for lab in order_labels(scores["label"].unique()) if not split_label(lab)[1]]


def _env_draws(scores: pd.DataFrame, labels: list[str], reps: int, seed: int):
    """(env, label) -> (seed scores, [reps] percentile-bootstrap means over seeds)."""
    out = {}
    for (env, label), g in scores[scores["label"].isin(labels) & scores["score"].notna()].groupby(["env", "label"]):
        values = g.sort_values("seed")["score"].to_numpy(dtype=float)
        rng = stats.label_rng(seed, "figure3", str(env), str(label))
        out[(str(env), str(label))] = (values, values[rng.integers(0, len(values), size=(reps, len(values)))].mean(1))
    return out


def _versus(low: float, high: float) -> str:
    """ahead / behind / tied from a difference's interval; unknown without one (a single seed)."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return "unknown"
    return "ahead" if low > 0 else "behind" if high < 0 else "tied"


def _diff(draws, a, b):
    """mean(a) - mean(b) over seeds with Welch's 95% t interval: with 3 seeds a side, a bootstrap
    interval of the difference is far too narrow (``stats.welch_interval``)."""
    return stats.welch_interval(draws[a][0], draws[b][0])


def figure3_ranking(scores: pd.DataFrame, labels: list[str] | None = None, reps: int = stats.DEFAULT_REPS,
                    seed: int = stats.BOOTSTRAP_SEED) -> pd.DataFrame:
    """Per environment, the algorithms ranked by their mean raw score over seeds (the mean return of
    the last 100 training episodes at the final budget): ``env, label, n, mean, low, high, rank,
    lead, lead_low, lead_high, ahead``. ``low, high``: 95% percentile bootstrap over seeds;
    ``rank``: 1 = highest mean (ties share the lower rank). On the top row, ``lead`` is its mean minus
    the second's with the 95% Welch t interval of that difference and ``ahead`` says whether that
    interval lies above 0 (NaN / None on the other rows). ``labels``: default the plain
    algorithm labels present (``figure3_labels``)."""
    labels = figure3_labels(scores) if labels is None else list(labels)
    draws = _env_draws(scores, labels, reps, seed)
    rows = []
    for env in sorted({e for e, _ in draws}):
        present = [lab for lab in labels if (env, lab) in draws]
        means = {lab: float(draws[(env, lab)][0].mean()) for lab in present}
        order = sorted(present, key=lambda lab: -means[lab])
        for lab in order:
            values, boot = draws[(env, lab)]
            low, high = stats.percentile_interval(boot)
            rank = 1 + sum(means[o] > means[lab] for o in present)
            row = {"env": env, "label": lab, "n": len(values), "mean": means[lab], "low": low, "high": high,
                   "rank": rank, "lead": np.nan, "lead_low": np.nan, "lead_high": np.nan, "ahead": None}
            if lab == order[0] and len(order) > 1:
                row["lead"], row["lead_low"], row["lead_high"] = _diff(draws, (env, lab), (env, order[1]))
                known = _versus(row["lead_low"], row["lead_high"]) != "unknown"
                row["ahead"] = bool(row["lead_low"] > 0) if known else None
            rows.append(row)
    return pd.DataFrame(rows, columns=["env", "label", "n", "mean", "low", "high", "rank", "lead", "lead_low",
                                       "lead_high", "ahead"])


def figure3_claim(scores: pd.DataFrame, labels: list[str] | None = None, ours: str = "ppo_clip",
                  reps: int = stats.DEFAULT_REPS, seed: int = stats.BOOTSTRAP_SEED) -> pd.DataFrame:
    """Per environment, where ``ours`` (PPO-clip) stands: ``env, rank, algorithms, status, top,
    top_minus_ours, low, high``, then for each of the paper's Figure 3 algorithms that this suite has
    (TRPO -> trpo, "Vanilla PG, Adaptive" -> reinforce; ``FIGURE3_SHARED``) ``vs_<label>`` (ahead /
    tied / behind: the 95% Welch interval of ours minus it above 0 / containing 0 / below 0) and ``diff_<label>``,
    ``diff_<label>_low``, ``diff_<label>_high``.

    ``status``: best (top, and its lead over the second is significant), tied (the CI of the
    difference to the top, or of the top's lead, contains 0), beaten (the top is significantly ahead);
    unknown (and ``vs_*`` unknown) where a side has a single seed: no interval."""
    labels = figure3_labels(scores) if labels is None else list(labels)
    draws = _env_draws(scores, labels, reps, seed)
    shared = [lab for lab in FIGURE3_SHARED.values() if lab != ours]
    rows = []
    for env in sorted({e for e, lab in draws if lab == ours}):
        present = [lab for lab in labels if (env, lab) in draws]
        means = {lab: float(draws[(env, lab)][0].mean()) for lab in present}
        order = sorted(present, key=lambda lab: -means[lab])
        rank = 1 + sum(means[o] > means[ours] for o in present)
        row = {"env": env, "rank": rank, "algorithms": len(present)}
        if order[0] == ours:
            if len(order) > 1:
                lead, low, high = _diff(draws, (env, ours), (env, order[1]))
                status = {"ahead": "best", "unknown": "unknown"}.get(_versus(low, high), "tied")
                row.update(status=status, top=ours, top_minus_ours=0.0, low=np.nan, high=np.nan,
                           second=order[1], lead=lead, lead_low=low, lead_high=high)
            else:
                row.update(status="best", top=ours, top_minus_ours=0.0, low=np.nan, high=np.nan)
        else:
            d, low, high = _diff(draws, (env, order[0]), (env, ours))
            status = {"ahead": "beaten", "unknown": "unknown"}.get(_versus(low, high), "tied")
            row.update(status=status, top=order[0], top_minus_ours=d, low=low, high=high)
        for lab in shared:
            if (env, lab) in draws:
                d, low, high = _diff(draws, (env, ours), (env, lab))
                row[f"vs_{lab}"] = _versus(low, high)
                row[f"diff_{lab}"], row[f"diff_{lab}_low"], row[f"diff_{lab}_high"] = d, low, high
        rows.append(row)
    columns = ["env", "rank", "algorithms", "status", "top", "top_minus_ours", "low", "high"]
    for lab in shared:
        columns += [f"vs_{lab}", f"diff_{lab}", f"diff_{lab}_low", f"diff_{lab}_high"]
    out = pd.DataFrame(rows)
    return out.reindex(columns=columns + [c for c in out.columns if c not in columns])


def figure3_verdict(claim: pd.DataFrame, ours: str = "ppo_clip") -> tuple[str, str]:
    """The paper's text claim on Figure 3 (PPO "outperforms the previous methods on almost all the
    continuous control environments"), for the baselines both have, with "almost all" read as at
    least 80% of the n environments (k = ceil(0.8 n): 6 of 7, all but one). holds: against each
    baseline, ours is significantly ahead on at least k environments; does not hold: against some
    baseline it cannot reach k even if every tie were a win (n - behind < k; at 7 environments:
    behind on 2 or more); inconclusive otherwise. Returns (verdict, evidence)."""
    shared = [lab for lab in FIGURE3_SHARED.values() if lab != ours and f"vs_{lab}" in claim.columns]
    if claim.empty or not shared:
        return UNMEASURED, f"{ours} and none of the paper's Figure 3 algorithms were run on the same environment"
    parts, holds, fails = [], True, False
    for lab in shared:
        col = claim[f"vs_{lab}"].dropna()
        n = len(col)
        need = math.ceil(0.8 * n - 1e-9)
        ahead, tied, behind = int((col == "ahead").sum()), int((col == "tied").sum()), int((col == "behind").sum())
        parts.append(f"against {lab}: ahead on {ahead}, tied on {tied}, behind on {behind} of {n}")
        holds &= n > 0 and ahead >= need
        fails |= n > 0 and n - behind < need
    verdict = HOLDS if holds else FAILS if fails else INCONCLUSIVE
    return verdict, "; ".join(parts)


def figure3_aggregate(normed: pd.DataFrame, envs: list[str], ours: str = "ppo_clip",
                      reps: int = stats.DEFAULT_REPS, seed: int = stats.BOOTSTRAP_SEED) -> pd.DataFrame:
    """Over every environment at once: ``ours`` against each of the paper's Figure 3 algorithms that
    this suite has, on the normalised score (``normed``'s ``normalised`` column: Table 1's random 0,
    best setting 1): ``label, envs, seeds, ours_mean, mean, difference, low, high``. ``difference``: the
    mean over runs x environments of ours minus theirs, with its 95% t interval, each environment's
    spread from its own seeds and Welch-Satterthwaite degrees of freedom (``stats.stratified_welch_interval``;
    a percentile bootstrap of it covers about 81% at 3 seeds a side)."""
    columns = ["label", "envs", "seeds", "ours_mean", "mean", "difference", "low", "high"]
    mine, _ = score_matrix(normed, ours, envs, "normalised") if envs else (None, None)
    rows = []
    for lab in FIGURE3_SHARED.values():
        theirs, _ = score_matrix(normed, lab, envs, "normalised") if envs and lab != ours else (None, None)
        if mine is None or theirs is None:
            continue
        diff, low, high = stats.stratified_welch_interval(mine, theirs)
        rows.append({"label": lab, "envs": len(envs), "seeds": min(len(mine), len(theirs)),
                     "ours_mean": float(np.mean(mine)),
                     "mean": float(np.mean(theirs)), "difference": diff, "low": low, "high": high})
    return pd.DataFrame(rows, columns=columns)


def figure3_parts(scores: pd.DataFrame, reps: int = stats.DEFAULT_REPS, seed: int = stats.BOOTSTRAP_SEED,
                  ours: str = "ppo_clip", aggregate: pd.DataFrame | None = None, *, budget: int | None = None) -> list:
    """The report's parts for Figure 3 beside the paper; with ``aggregate`` (``figure3_aggregate``'s
    table), also ``ours`` against the paper's algorithms over all environments at once. ``budget``:
    the runs' steps; unless it is the paper's (``PAPER_MUJOCO_STEPS``), the ranking of these runs
    only, and a paragraph that says the paper's claim is not judged."""
    labels = figure3_labels(scores)
    ranking = figure3_ranking(scores, labels, reps, seed)
    if ranking.empty:
        return []
    envs = sorted(ranking["env"].unique())
    cell = {(r.env, r.label): r for r in ranking.itertuples()}
    rows = []
    for env in envs:
        digits = digits_for(ranking.loc[ranking["env"] == env, "mean"])
        line = [env]
        for lab in labels:
            r = cell.get((env, lab))
            line.append("–" if r is None else f"#{r.rank} {fmt_ci(r.mean, r.low, r.high, digits)}")
        top = ranking[(ranking["env"] == env) & ranking["lead"].notna()]
        if len(top):
            t = top.iloc[0]
            second = ranking[(ranking["env"] == env) & (ranking["label"] != t["label"])].iloc[0]["label"]
            answer = "unknown (1 seed)" if t["ahead"] is None else "yes" if t["ahead"] else "no"
            line.append(f"{answer}: {t['label']} − {second} = "
                        f"{fmt_ci(t['lead'], t['lead_low'], t['lead_high'], digits, sign=True)}")
        else:
            line.append("–")
        rows.append(line)
    n = ranking.groupby("env")["n"].agg(["min", "max"])
    seeds = f"{int(n['min'].min())}" if n["min"].min() == n["max"].max() else f"{int(n['min'].min())}–{int(n['max'].max())}"
    parts: list = [
        f"Each algorithm's score per environment at the final budget: the mean return of its runs' last 100 training "
        f"episodes, mean over {seeds} seed(s) with a 95% percentile bootstrap CI over seeds ({reps} resamples, seed "
        f"{seed}; with 3 seeds a bootstrap interval is too narrow: read it as a lower bound on the uncertainty). "
        f"#k: rank by mean. 'top ahead': whether the 95% CI of the top algorithm minus the second lies above 0. "
        f"Every difference in this section uses Welch's t interval over seeds: with 3 seeds a side, a percentile "
        f"bootstrap of a difference calls two equal algorithms different about one time in five at 95% (measured "
        f"on normal samples), Welch's interval about one in twenty or less — so two means whose bootstrap "
        f"intervals do not overlap can still be tied.",
        Table("Figure 3 at the final budget — mean return [95% CI] and rank per environment",
              ["environment", *labels, "top ahead of 2nd?"], rows, anchor="paper-figure3",
              numeric=set(range(1, len(labels) + 1)))]
    gap = budget_gap(budget, PAPER_MUJOCO_STEPS, "the paper's Figure 3 results")
    if gap:
        parts.append(f"The paper's Figure 3 is a plot only; its text claims that PPO \"{FIGURE3_CLAIM}\" "
                     f"({FIGURE3_SOURCE}). {gap} The ranking above is of these runs only; the claim is not judged.")
        return parts
    claim = figure3_claim(scores, labels, ours, reps, seed)
    mapping = ", ".join(f"{paper} ↔ {lab}" for paper, lab in FIGURE3_SHARED.items())
    text = (f"The paper's Figure 3 is a plot only (no published numbers), so it is compared through its text alone: "
            f"PPO \"{FIGURE3_CLAIM}\" ({FIGURE3_SOURCE}). Algorithms both have: {mapping}; {REINFORCE_CAVEAT}. "
            f"The paper's other Figure 3 algorithms (CEM, A2C, A2C with trust region) are not in this suite, and "
            f"this suite's ppo_kl, grpo, rloo and dapo are not in the paper's figure.")
    parts.append(text)
    if claim.empty:
        parts.append(f"{ours} was not run: the claim cannot be checked.")
        return parts
    counts = claim["status"].value_counts()
    verdict, evidence = figure3_verdict(claim, ours)
    parts.append(
        f"{ours} among all {len(labels)} algorithms here: best on {int(counts.get('best', 0))}, tied with the top "
        f"on {int(counts.get('tied', 0))}, beaten on {int(counts.get('beaten', 0))}"
        + (f", unknown (a single seed) on {int(counts['unknown'])}" if counts.get("unknown") else "")
        + f" of {len(claim)} environment(s) "
        f"(best: top with its lead over the second significant; tied: the 95% CI of the difference to the top "
        f"contains 0; beaten: the top is significantly ahead). Against the paper's algorithms that this suite has "
        f"({evidence}), the claim — \"almost all\" read as at least 80% of the environments (6 of 7): it holds if "
        f"{ours} is significantly ahead of each on that many, does not hold if against one of them it cannot get "
        f"there even counting every tie as a win, and is inconclusive otherwise — {verdict}.")
    shared = [lab for lab in FIGURE3_SHARED.values() if lab != ours and f"vs_{lab}" in claim.columns]
    crows = []
    for r in claim.to_dict("records"):
        digits = digits_for([r["top_minus_ours"]] + [r.get(f"diff_{lab}", np.nan) for lab in shared])
        where = r["status"] if r["top"] == ours else f"{r['status']} (top: {r['top']}, ahead by " \
            f"{fmt_ci(r['top_minus_ours'], r['low'], r['high'], digits, sign=True)})"
        line = [r["env"], f"{r['rank']} of {r['algorithms']}", where]
        for lab in shared:
            v = r.get(f"vs_{lab}")
            line.append("–" if not isinstance(v, str) else
                        f"{v}: {fmt_ci(r[f'diff_{lab}'], r[f'diff_{lab}_low'], r[f'diff_{lab}_high'], digits, sign=True)}")
        crows.append(line)
    parts.append(Table(f"{ours} per environment, against the top and against the paper's Figure 3 algorithms "
                       f"(ours minus theirs [95% CI])", ["environment", "rank", "status"] + [f"vs {lab}" for lab in shared],
                       crows, anchor="paper-figure3-claim", numeric=set(range(3, 3 + len(shared)))))
    if aggregate is not None and len(aggregate):
        said = []
        for r in aggregate.itertuples():
            sign = _versus(r.low, r.high)
            said.append(f"against {r.label}, {ours} is {sign} ({ours} {r.ours_mean:.2f}, {r.label} {r.mean:.2f}, "
                        f"difference {fmt_ci(r.difference, r.low, r.high, 2, sign=True)})")
        parts.append(
            f"Over all {int(aggregate['envs'].iloc[0])} environments at once, on the normalised score of Table 1 (random policy 0, "
            f"best Table 1 setting 1; mean over runs × environments, 95% stratified bootstrap, {reps} resamples, "
            f"seed {seed}): " + "; ".join(said) + ". Ahead / behind: the CI of the difference lies above / below "
            f"0 (the probability that a run of one beats a run of the other is in 'Probability of improvement').")
    return parts


# ---------------------------------------------------------------------------------------
# CleanRL's published PPO

def cleanrl_table(scores: pd.DataFrame, label: str = "ppo_clip", reps: int = stats.DEFAULT_REPS,
                  seed: int = stats.BOOTSTRAP_SEED) -> pd.DataFrame:
    """``label``'s final returns per environment against CleanRL's published PPO
    (``analysis.reference.CLEANRL_PPO``), for the environments both have: ``env, n, mean, sd, low,
    high, cleanrl_mean, cleanrl_sd, difference, bar, meets_bar``. ``mean, sd``: over seeds (sample
    sd, n - 1) of the mean return of the last 100 training episodes; ``low, high``: 95% percentile
    bootstrap over seeds; ``difference`` = mean - cleanrl_mean; ``bar`` = cleanrl_mean - cleanrl_sd;
    ``meets_bar``: mean >= bar (the bar of issue 2)."""
    mine = scores[(scores["label"] == label) & scores["score"].notna()]
    draws = _env_draws(mine, [label], reps, seed)
    rows = []
    for env in sorted(mine["env"].unique()):
        ref = cleanrl_ppo(env)
        if ref is None:
            continue
        values, boot = draws[(env, label)]
        low, high = stats.percentile_interval(boot)
        mean = float(values.mean())
        sd = float(values.std(ddof=1)) if len(values) > 1 else np.nan
        rows.append({"env": env, "n": len(values), "mean": mean, "sd": sd, "low": low, "high": high,
                     "cleanrl_mean": ref[0], "cleanrl_sd": ref[1], "difference": mean - ref[0],
                     "bar": ref[0] - ref[1], "meets_bar": bool(mean >= ref[0] - ref[1])})
    return pd.DataFrame(rows, columns=["env", "n", "mean", "sd", "low", "high", "cleanrl_mean", "cleanrl_sd",
                                       "difference", "bar", "meets_bar"])


def cleanrl_parts(scores: pd.DataFrame, label: str = "ppo_clip", reps: int = stats.DEFAULT_REPS,
                  seed: int = stats.BOOTSTRAP_SEED, *, budget: int | None = None) -> list:
    """The report's parts for the CleanRL comparison. ``budget``: the runs' steps; unless it is
    CleanRL's (``CLEANRL_PPO_STEPS``), one paragraph that says so, and no bar applied."""
    gap = budget_gap(budget, CLEANRL_PPO_STEPS, "CleanRL's results")
    if gap:
        return [f"{label} against CleanRL's published PPO ({CLEANRL_PPO_SOURCE}): {gap} No bar is applied; "
                f"{label}'s returns at this budget are in 'Scores per environment'."]
    t = cleanrl_table(scores, label, reps, seed)
    if t.empty:
        return [f"No {label} runs on an environment CleanRL publishes (HalfCheetah, Hopper, Walker2d, "
                f"InvertedPendulum)."]
    rows = [[r.env, str(r.n), f"{r.mean:.0f} ± {fmt(r.sd, 0)}", f"[{r.low:.0f}, {r.high:.0f}]",
             f"{r.cleanrl_mean:.2f} ± {r.cleanrl_sd:.2f}", f"{r.difference:+.0f}", f"{r.bar:.0f}",
             "yes" if r.meets_bar else "no"] for r in t.itertuples()]
    met = int(t["meets_bar"].sum())
    return [f"{label}'s final returns against CleanRL's published PPO ({CLEANRL_PPO_SOURCE}). Ours: mean ± sample sd "
            f"over seeds of the mean return of the last 100 training episodes (the same metric), and a 95% percentile "
            f"bootstrap CI over seeds ({reps} resamples, seed {seed}). The bar: not below CleanRL's mean minus one sd; "
            f"met on {met} of {len(t)} environment(s). CleanRL ran -v4 environments; these runs are on "
            f"{', '.join(sorted(t['env']))} (see 'Conditions' for what changed), and CleanRL's code-level options "
            f"(per-minibatch advantage normalisation, value clipping, gradient clipping, reward scaling, no clip "
            f"annealing) are not this suite's defaults.",
            Table(f"{label} against CleanRL's PPO (1M steps)", ["environment", "seeds", "ours: mean ± sd",
                  "ours: 95% CI", "CleanRL: mean ± sd", "difference", "bar (CleanRL mean − sd)", "ours ≥ bar"],
                  rows, anchor="paper-cleanrl", numeric={1, 2, 3, 4, 5, 6})]


# ---------------------------------------------------------------------------------------
# conditions: what differs from the paper, and how much it matters

def random_sensitivity(scores: pd.DataFrame, random: dict[str, float], table1_labels: dict[str, str | None],
                       shift: float = 0.10, *, spreads: dict[str, float] | None = None) -> pd.DataFrame:
    """How the Table 1 means move when the random policy's score moves by ``shift`` of its magnitude
    (r -> r ± shift·|r|, the best setting's score held fixed), on every environment at once
    (``moved`` = "all") and on one environment at a time (``moved`` = that environment):
    ``moved, direction, setting, label, base, shifted, change``, plus per ``moved`` and direction
    the Kendall tau-b of the shifted means against the paper (``setting`` = "τ-b vs paper")."""
    normed, constants, envs, _ = table1_normalised(scores, random, table1_labels, spreads=spreads)
    if not envs:
        return pd.DataFrame(columns=["moved", "direction", "setting", "label", "base", "shifted", "change"])
    c = constants.set_index("env")
    labels = _t1_labels(table1_labels)
    raw = {name: score_matrix(normed, lab, envs, "score")[0] for name, lab in labels.items()}
    raw = {k: v for k, v in raw.items() if v is not None}
    best = np.array([c.loc[e, "best"] for e in envs])
    rnd = np.array([c.loc[e, "random"] for e in envs])
    names = [r.name for r in TABLE1 if r.name in raw]
    paper = np.array([PAPER_SCORE[n] for n in names])

    def means(r):
        return {n: float(((raw[n] - r) / (best - r)).mean()) for n in names}

    base = means(rnd)
    rows = []
    for moved in ["all", *envs]:
        mask = np.ones(len(envs), bool) if moved == "all" else np.array([e == moved for e in envs])
        for sign, direction in ((-1, f"−{shift:.0%}"), (1, f"+{shift:.0%}")):
            shifted = means(rnd + sign * shift * np.abs(rnd) * mask)
            for n in names:
                rows.append({"moved": moved, "direction": direction, "setting": n, "label": labels[n],
                             "base": base[n], "shifted": shifted[n], "change": shifted[n] - base[n]})
            if len(names) >= 3:
                tau = float(stats.kendall_tau_b(np.array([shifted[n] for n in names]), paper))
                rows.append({"moved": moved, "direction": direction, "setting": "τ-b vs paper", "label": None,
                             "base": float(stats.kendall_tau_b(np.array([base[n] for n in names]), paper)),
                             "shifted": tau, "change": np.nan})
    out = pd.DataFrame(rows, columns=["moved", "direction", "setting", "label", "base", "shifted", "change"])
    tau_rows = out["setting"] == "τ-b vs paper"
    out.loc[tau_rows, "change"] = out.loc[tau_rows, "shifted"] - out.loc[tau_rows, "base"]
    return out


def annealing_table(configs: dict[str, dict], table1_labels: dict[str, str | None],
                    labels: Iterable[str] = ()) -> pd.DataFrame:
    """The schedule each run used, from its resolved ``algo_cfg``, beside the code released with the
    paper (constant learning rate and ε: ``RELEASED_CODE_SCHEDULE``): ``setting, label, lr, lr_anneal,
    clipped, clip_eps, clip_anneal, as_released``. Rows: the Table 1 settings that were run, then
    ``labels`` (e.g. ppo_clip, ppo_kl). ``clipped``: whether ε acts at all (ppo_kl's objective is not
    clipped; its ε and schedule are None unless value clipping is on). ``as_released``: the schedules
    that act equal the released code's (None when the config lacks them)."""
    rows = []
    wanted = [(name, lab) for name, lab in _t1_labels(table1_labels).items()]
    wanted += [(lab, lab) for lab in labels if lab not in {lab2 for _, lab2 in wanted}]
    for name, lab in wanted:
        cfg = configs.get(lab)
        if not isinstance(cfg, dict):
            continue
        # ppo_kl inherits clip_eps / clip_anneal but its objective is not clipped: there ε (and its
        # schedule) acts only through value clipping, when that is on.
        clipped = split_label(lab)[0] != "ppo_kl" or bool(cfg.get("value_clip"))
        lr_anneal, clip_anneal = cfg.get("lr_anneal"), cfg.get("clip_anneal") if clipped else None
        known = lr_anneal is not None and (clip_anneal is not None or not clipped)
        as_released = None
        if known:
            as_released = bool(lr_anneal) == RELEASED_CODE_SCHEDULE["lr_anneal"] and (
                not clipped or bool(clip_anneal) == RELEASED_CODE_SCHEDULE["clip_anneal"])
        rows.append({"setting": name, "label": lab, "lr": cfg.get("lr"), "lr_anneal": lr_anneal, "clipped": clipped,
                     "clip_eps": cfg.get("clip_eps") if clipped else None, "clip_anneal": clip_anneal,
                     "as_released": as_released})
    return pd.DataFrame(rows, columns=["setting", "label", "lr", "lr_anneal", "clipped", "clip_eps", "clip_anneal",
                                       "as_released"])


SCHEDULE_KEYS = ("lr_anneal", "clip_anneal")


def constant_schedule_label(configs: dict[str, dict], annealed: str) -> str | None:
    """The label whose resolved config is ``annealed``'s with the released code's constant schedule
    (``lr_anneal`` and ``clip_anneal`` false, every other option equal), or None."""
    base = configs.get(annealed)
    if not isinstance(base, dict) or not all(base.get(k) for k in SCHEDULE_KEYS):
        return None
    rest = {k: v for k, v in base.items() if k not in SCHEDULE_KEYS}
    for label, cfg in configs.items():
        if (split_label(label)[0] == split_label(annealed)[0] and isinstance(cfg, dict)
                and all(cfg.get(k) is False for k in SCHEDULE_KEYS)
                and {k: v for k, v in cfg.items() if k not in SCHEDULE_KEYS} == rest):
            return label
    return None


def schedule_effect(scores: pd.DataFrame, random: dict[str, float], table1_labels: dict[str, str | None],
                    configs: dict[str, dict], reps: int = stats.DEFAULT_REPS,
                    seed: int = stats.BOOTSTRAP_SEED, *, spreads: dict[str, float] | None = None) -> pd.DataFrame:
    """What the annealing changes: each Table 1 setting (annealed) against the same config with the
    released code's constant schedule, where both were run (``bench/paper_mujoco.sh`` runs ε = 0.2 and
    no clipping or penalty both ways). Per setting, rows ``env`` per environment (raw returns:
    ``annealed``, ``constant``, ``difference`` = constant − annealed with Welch's 95% interval ``low``,
    ``high``) and one row ``env = "normalised (all)"``: the two average normalised scores (Table 1's
    constants: random 0, best Table 1 setting 1) over the environments both have, and their difference
    with a 95% t interval (``stats.stratified_welch_interval``). Empty when no
    constant-schedule run exists."""
    columns = ["setting", "env", "annealed_label", "constant_label", "seeds", "annealed", "constant", "difference",
               "low", "high"]
    _, constants, t1_envs, _ = table1_normalised(scores, random, table1_labels, spreads=spreads)
    consts = constants.set_index("env") if len(constants) else None
    rows = []
    for setting, annealed in _t1_labels(table1_labels).items():
        constant = constant_schedule_label(configs, annealed)
        if constant is None:
            continue
        a, c = scores[scores["label"] == annealed], scores[scores["label"] == constant]
        envs = sorted(set(a["env"]) & set(c["env"]))
        mine = []
        for env in envs:
            x, y = c.loc[c["env"] == env, "score"].to_numpy(float), a.loc[a["env"] == env, "score"].to_numpy(float)
            diff, low, high = stats.welch_interval(x, y)
            mine.append({"env": env, "seeds": min(len(x), len(y)), "annealed": float(y.mean()),
                         "constant": float(x.mean()), "difference": diff, "low": low, "high": high})
        norm_envs = [e for e in envs if e in t1_envs]      # those with a (trained) anchor and a random score
        if norm_envs:
            both = scores[scores["label"].isin([annealed, constant]) & scores["env"].isin(norm_envs)].copy()
            both["normalised"] = [(r.score - random[r.env]) / (consts.loc[r.env, "best"] - random[r.env])
                                  for r in both.itertuples()]
            mc, _ = score_matrix(both, constant, norm_envs, "normalised")
            ma, _ = score_matrix(both, annealed, norm_envs, "normalised")
            if mc is not None and ma is not None:
                diff, low, high = stats.stratified_welch_interval(mc, ma)
                mine.append({"env": "normalised (all)", "seeds": min(len(mc), len(ma)),
                             "annealed": float(np.mean(ma)), "constant": float(np.mean(mc)),
                             "difference": diff, "low": low, "high": high})
        rows += [{**r, "setting": setting, "annealed_label": annealed, "constant_label": constant} for r in mine]
    return pd.DataFrame(rows, columns=columns)


def conditions_parts(scores: pd.DataFrame, random: dict[str, float], table1_labels: dict[str, str | None],
                     configs: dict[str, dict], versions: dict[str, str] | None = None, shift: float = 0.10,
                     reps: int = stats.DEFAULT_REPS, seed: int = stats.BOOTSTRAP_SEED, *,
                     spreads: dict[str, float] | None = None) -> list:
    """The report's parts on where this protocol differs from the paper's, and how much it matters
    where that can be measured: environment versions, the random-policy normalisation (the scores
    used, and the Table 1 means when they move by ±``shift``), the annealing schedule.
    ``configs``: label -> resolved ``algo_cfg``; ``versions``: package -> version of the runs;
    ``spreads``: as ``table1_normalised`` (an untrained anchor is marked, and its environment not used)."""
    normed, constants, envs, _ = table1_normalised(scores, random, table1_labels, spreads=spreads)
    ids = sorted(scores["env"].unique())
    versions = versions or {}
    gym_v, mj_v = versions.get("gymnasium"), versions.get("mujoco")
    sim = (f"gymnasium {gym_v}, mujoco {mj_v}" if gym_v or mj_v else "gymnasium and mujoco (versions: see the runs' "
           "versions table)")
    parts: list = [
        f"Environments. The paper ran gym's MuJoCo -v1 environments (mujoco-py before 1.50, i.e. MuJoCo 1.31); these "
        f"runs use {', '.join(ids)} through {sim}. Every version since changed the simulator (v2: mujoco-py ≥ 1.50; "
        f"v4: DeepMind's mujoco bindings), and v5 changed some models and rewards (below). So absolute returns are "
        f"not comparable across versions (nor with CleanRL's -v4): what Table 1 compares — normalised scores within "
        f"one set of environments, and the order of the settings — is what can be set beside the paper."]
    rows = []
    c = constants.set_index("env") if len(constants) else None
    for env in ids:
        base = env_base(env)
        r = random.get(env)
        best = c.loc[env, "best"] if c is not None and env in c.index else np.nan
        best_setting = c.loc[env, "best_setting"] if c is not None and env in c.index else "–"
        digits = digits_for([r if r is not None else np.nan, best])
        gain = fmt(best - r, digits) if r is not None and math.isfinite(best) else "–"
        if math.isfinite(best) and env not in envs:
            gain += " (no normalised score: see 'Table 1 — normalised scores')"
        rows.append([env, MUJOCO_V5_CHANGES.get(base, "not one of the paper's environments"),
                     fmt(r, digits) if r is not None else "not measured", fmt(best, digits), str(best_setting), gain])
    parts.append(Table("Environments here: what changed since -v1, the random policy's score (= 0) and the best "
                       "Table 1 setting's (= 1)", ["environment", f"change to dynamics / reward ({MUJOCO_VERSION_SOURCE})",
                                                 "random policy", "best Table 1 setting", "best setting", "best − random"],
                       rows, anchor="paper-environments", numeric={2, 3, 5}))
    sens = random_sensitivity(scores, random, table1_labels, shift, spreads=spreads)
    if sens.empty:
        parts.append("The random-policy normalisation: no environment has a normalised Table 1 score here, so how "
                     "much the random policy's score matters is not measured.")
    else:
        every = sens[(sens["moved"] == "all") & (sens["setting"] != "τ-b vs paper")]
        wide = every.pivot_table(index="setting", columns="direction", values="shifted", sort=False)
        base = every.drop_duplicates("setting").set_index("setting")["base"]
        dirs = [f"−{shift:.0%}", f"+{shift:.0%}"]
        srows = [[name, fmt(base[name])] + [fmt(wide.loc[name, d]) for d in dirs]
                 + [fmt(max(abs(wide.loc[name, d] - base[name]) for d in dirs), 3)]
                 for name in (r.name for r in TABLE1) if name in base.index]
        one = sens[(sens["moved"] != "all") & (sens["setting"] != "τ-b vs paper")]
        per_env = one.groupby("moved")["change"].apply(lambda x: float(np.max(np.abs(x))))
        taus = sens[sens["setting"] == "τ-b vs paper"]
        tau_text = ""
        if len(taus):
            t_all = taus[taus["moved"] == "all"]
            tau_text = (f" Kendall's τ-b with the paper: {t_all['base'].iloc[0]:.2f} as measured, "
                        + ", ".join(f"{r.shifted:.2f} at {r.direction}" for r in t_all.itertuples())
                        + f" (over every single-environment move: {taus['shifted'].min():.2f} to "
                        f"{taus['shifted'].max():.2f}).")
        parts.append(
            f"The random-policy normalisation: the paper does not publish its random or best values, so both are "
            f"measured here (the random policy: uniform random actions, 100 episodes, analysis.scores). How much it "
            f"matters: moving every environment's random score by ±{shift:.0%} of its magnitude (the best setting's "
            f"score held) changes a setting's average normalised score by at most "
            f"{every['change'].abs().max():.3f}; moving one environment at a time, at most "
            + ", ".join(f"{env_base(e)} {v:.3f}" for e, v in per_env.items()) + "." + tau_text
            + " A setting's number moves little where the random score is small beside best − random.")
        parts.append(Table(f"Table 1 means with the random policy's score moved by ±{shift:.0%} on every environment",
                           ["setting", "as measured", *dirs, "largest change"], srows, anchor="paper-random-sensitivity",
                           numeric={1, 2, 3, 4}))
    ann = annealing_table(configs, table1_labels, [lab for lab in ("ppo_clip", "ppo_kl") if lab in configs])
    if ann.empty:
        parts.append("Annealing: no resolved configuration was given; the schedule of these runs is unknown here.")
    else:
        on_lr = ann["lr_anneal"].map(lambda v: bool(v) if v is not None else False)
        on_clip = ann.loc[ann["clipped"], "clip_anneal"].map(lambda v: bool(v) if v is not None else False)

        def which(mask):
            return "all" if mask.all() else "none" if not mask.any() else f"{int(mask.sum())} of {len(mask)}"
        parts.append(
            f"Annealing. The code released with the paper ({RELEASED_CODE_SOURCE}) keeps the learning rate and ε "
            f"constant; from August 2017 the same repository anneals both linearly to 0 ({LATER_BASELINES_SOURCE}), and "
            f"the paper's MuJoCo text names no schedule. In these runs the learning rate is annealed in "
            f"{which(on_lr)} of the {len(ann)} setting(s) listed and ε in {which(on_clip)} of the {len(on_clip)} "
            f"clipped one(s) "
            f"({sum(v is True for v in ann['as_released'])} run as released).")
        arows = [[r.setting, r.label, fmt(r.lr, 5) if isinstance(r.lr, (int, float)) else "–",
                  str(r.lr_anneal), fmt(r.clip_eps) if r.clipped and isinstance(r.clip_eps, (int, float)) else "–",
                  str(r.clip_anneal) if r.clipped else "– (not clipped)",
                  "–" if r.as_released is None else ("yes" if r.as_released else "no")] for r in ann.itertuples()]
        parts.append(Table("Schedules of the runs (resolved algo_cfg) against the released code (constant)",
                           ["setting", "label", "lr", "lr_anneal", "clip_eps", "clip_anneal", "as released"], arows,
                           anchor="paper-annealing"))
    effect = schedule_effect(scores, random, table1_labels, configs, reps, seed, spreads=spreads)
    if effect.empty:
        parts.append("How much the schedule matters is not measured here: no Table 1 setting also ran with the "
                     "released code's constant schedule (bench/paper_mujoco.sh runs two: algo=ppo_clip and the "
                     "no-clipping setting with algo.lr_anneal=false algo.clip_anneal=false).")
        return parts
    erows = []
    for setting, group in effect.groupby("setting", sort=False):
        label_c, label_a = group["constant_label"].iloc[0], group["annealed_label"].iloc[0]
        agg = group[group["env"] == "normalised (all)"]
        per_env = group[group["env"] != "normalised (all)"]
        signs = [_versus(r.low, r.high) for r in per_env.itertuples()]
        text = (f"How much the schedule matters for {setting}, measured: {label_c} (the released code's constant "
                f"schedule) against {label_a} (annealed). Per environment, constant − annealed with Welch's 95% "
                f"interval over seeds: constant is ahead on {signs.count('ahead')}, tied on {signs.count('tied')} "
                f"and behind on {signs.count('behind')} of {len(per_env)} environment(s).")
        if len(agg):
            r = agg.iloc[0]
            text += (f" Average normalised score (Table 1's constants): constant {r.constant:.2f}, annealed "
                     f"{r.annealed:.2f}, difference {fmt_ci(r.difference, r.low, r.high, 2, sign=True)} (95% "
                     f"stratified bootstrap, {reps} resamples, seed {seed}).")
        parts.append(text)
        for r in group.itertuples():
            digits = 2 if r.env == "normalised (all)" else digits_for([r.annealed, r.constant])
            erows.append([setting, r.env, str(r.seeds), fmt(r.annealed, digits), fmt(r.constant, digits),
                          fmt_ci(r.difference, r.low, r.high, digits, sign=True)])
    parts.append(Table("The schedule's effect: mean over seeds, constant − annealed [95% CI]",
                       ["setting", "environment", "seeds", "annealed", "constant", "constant − annealed"], erows,
                       anchor="paper-schedule-effect", numeric={2, 3, 4, 5}))
    return parts
