"""The report of one suite: ``<results_dir>/reports/<suite>/``

- ``index.html``: self-contained (figures embedded as base64 PNG, tables as HTML tables, the runs'
  configs and package versions, the date);
- ``report.md`` beside it, with the same tables and links to the figures;
- every figure as ``<name>.png`` and ``<name>.svg``, and the numeric tables as CSV.

``render_report(results_dir, suite)`` works on whatever is there: runs that are not done, missing
seeds or environments and mixed budgets are left out and listed at the top of the report.
"""
from __future__ import annotations

import html
import json
import math
import traceback
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from analysis import figures as figs
from analysis import stats
from analysis.load import NOT_SUITE_DIRS, REPORTS_DIR, AnalysisError, Results, load_results, order_labels, split_label
from analysis.reference import ATARI_SOURCE, PAPER, TABLE1, TABLE2
from analysis.scores import (SCORE_NAMES, human_normalise, normalise_random_best, published_atari_scores,
                             random_scores, run_scores, score_dict, scoring)
from analysis.tables import (Table, aggregate_presentable, aggregate_table, env_score_presentable, env_score_table,
                             fmt, llm_presentable, llm_table, poi_presentable, poi_table, runtime_presentable,
                             runtime_table, table1, table1_label, table1_presentable, table2, table2_presentable)
from analysis.paper import ANCHOR_MARGIN_SD, budget_gap, untrained_anchors
from analysis.reference import CLEANRL_PPO_STEPS, PAPER_MUJOCO_STEPS
from analysis.scores import RANDOM_CACHE

MAX_POI_LABELS = 24     # past this the matrix is unreadable: it keeps the plain algorithms and Table 1 rows
SINGLE_SEED_NOTE = ("some settings have a single seed per environment: a bootstrap has nothing to resample "
                    "within an environment, so their CIs collapse to the point estimate")


@dataclass
class Section:
    title: str
    anchor: str
    parts: list = field(default_factory=list)     # str (paragraph text), Table, figs.Figure, ("html", str)


@dataclass
class Report:
    suite: str
    results: Results
    out_dir: Path
    reps: int
    sections: list[Section] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)        # left out / problems, shown at the top
    failures: list[str] = field(default_factory=list)     # sections that could not be built
    csv: dict[str, pd.DataFrame] = field(default_factory=dict)
    path: Path | None = None                               # index.html, once written

    def section(self, title: str, anchor: str, build: Callable[[Section], None]) -> None:
        sec = Section(title, anchor)
        try:
            build(sec)
        except AnalysisError:
            raise
        except Exception as exc:  # one broken section must not cost the whole report
            self.failures.append(f"{title}: {type(exc).__name__}: {exc}")
            sec.parts = [f"This section could not be built: {type(exc).__name__}: {exc}",
                         ("pre", traceback.format_exc(limit=4))]
        if sec.parts:
            self.sections.append(sec)


def render_report(results_dir: str | Path, suite: str, reps: int = stats.DEFAULT_REPS, steps: int | None = None,
                  out_dir: str | Path | None = None, measure_random: Callable[[str], dict] | None = None) -> Path:
    """Render the report of ``suite`` from the runs under ``results_dir``; returns the path of its
    ``index.html``. Raises ``AnalysisError`` (one line) when there is nothing to report on (missing or
    empty folder, no done runs) or a done run's CSV is corrupt. ``measure_random`` replaces the
    random-policy measurement (tests)."""
    return build_report(results_dir, suite, reps, steps, out_dir, measure_random).path


def summarized_results(results_dir: str | Path, suite: str, steps: int | None = None,
                       require_done: bool = True) -> Results:
    """The runs of ``suite`` under ``results_dir``, loaded and reduced to what a report reads
    (``analysis.archive.summarize``); ``require_done=False``: also when none is done yet (to be
    merged with an archive's)."""
    import warnings as _warnings
    from analysis.archive import summarize
    from analysis.load import ResultsWarning
    with _warnings.catch_warnings():
        _warnings.simplefilter("ignore", ResultsWarning)     # they are listed in the report instead
        # the scores and curves read episodes.csv; the LLM table also evals.csv and metrics.csv
        sources = (("episodes.csv", "evals.csv", "metrics.csv") if scoring(suite)["score"] == "final_eval"
                   else ("episodes.csv",))
        results = load_results(results_dir, suite, steps=steps, sources=sources, require_done=require_done)
        if suite not in results.budgets and require_done:
            raise AnalysisError(f"no completed runs of suite {suite} in {results_dir}")
        return summarize(results, suite)


def build_report(results_dir: str | Path, suite: str, reps: int = stats.DEFAULT_REPS, steps: int | None = None,
                 out_dir: str | Path | None = None, measure_random: Callable[[str], dict] | None = None,
                 summary: Results | None = None) -> "Report":
    """``render_report``, returning the ``Report`` (its ``path``, ``notes``, ``failures``, ``csv`` tables).
    ``summary``: render from these summarised results (an archive's) instead of reading ``results_dir``."""
    results = summary if summary is not None else summarized_results(results_dir, suite, steps)
    if suite not in results.budgets:
        raise AnalysisError(f"no completed runs of suite {suite} in {results.source or results_dir}")
    out = Path(out_dir) if out_dir is not None else Path(results_dir) / REPORTS_DIR / suite
    report = Report(suite, results, out, reps)
    report.notes += results.warnings
    kind = scoring(suite)
    if kind["normalise"] == "random-best":
        _mujoco_sections(report, measure_random)
    elif kind["normalise"] == "human":
        _atari_sections(report)
    elif kind["score"] == "final_eval":
        _llm_sections(report)
    else:
        _generic_sections(report)
    report.section("Runtime", "runtime", lambda sec: sec.parts.append(runtime_presentable(
        runtime_table(report.results.analysed[report.results.analysed["suite"] == suite]),
        report.results.labels(suite))))
    report.section("Runs, configuration and versions", "runs", lambda sec: _runs_section(report, sec))
    report.path = _write(report)
    return report


# ---------------------------------------------------------------------------------------
# suite sections

def _curve_sections(report: Report, metric: str = "episode_return", ylabel: str = "episode return",
                    caption: str | None = None) -> None:
    results, suite = report.results, report.suite

    def build(sec: Section) -> None:
        if metric == "episode_return":     # summarised: the curves on the report's step grid
            curves = results.curves
            if curves is None or curves.empty:
                return
            curves = curves[curves["suite"] == suite]
            cap = caption or (f"Mean over seeds of each run's running mean of its last 100 training episode returns "
                              f"(the paper's score, read at {figs.CURVE_POINTS} points); shaded: 95% bootstrap "
                              f"interval over seeds ({stats.BOOTSTRAP_SEED} seed).")
        else:
            rows = results.metric(metric)
            rows = rows[rows["suite"] == suite]
            if rows.empty:
                return
            curves = rows.rename(columns={})[["suite", "env", "algo", "variant", "label", "seed", "step", "value"]]
            cap = caption or "Mean over seeds of the evaluation score; shaded: 95% bootstrap interval over seeds."
        curves = curves.astype({"label": str, "env": str})
        labels, envs = results.labels(suite), results.envs(suite)
        styles = figs.label_styles(labels)
        for part, group in figs.split_for_curves(labels):
            name = "learning_curves" + (f"_{part}" if part else "")
            title = "Learning curves" + (f" — {part}" if part else "")
            sec.parts.append(figs.learning_curves(curves, envs, group, styles, name, title, cap, ylabel))
        clock = results.wall_curves      # summarised: the same curves against wall-clock time
        if metric == "episode_return" and clock is not None and len(clock[clock["suite"] == suite]):
            clock = figs.setting_wall_curves(clock[clock["suite"] == suite]).astype({"label": str, "env": str})
            for part, group in figs.split_for_curves(labels):
                sec.parts.append(figs.learning_curves(
                    clock, envs, group, styles, "learning_curves_wall" + (f"_{part}" if part else ""),
                    "Learning curves against wall-clock time" + (f" — {part}" if part else ""),
                    "The same score against each run's wall-clock seconds (metrics.csv), up to the end of the "
                    "setting's shortest seed; compare only runs made on one machine (see Runtime).",
                    ylabel, xlabel="wall-clock seconds"))
    report.section("Learning curves (Figure 3 style)", "curves", build)


def _rliable_sections(report: Report, scores: pd.DataFrame, envs: list[str], value: str, unit: str,
                      prefer: list[str] | None = None, extra_rows: pd.DataFrame | None = None) -> None:
    """Aggregate metrics, performance profiles, probability of improvement on ``scores[value]``."""
    reps = report.reps
    labels = order_labels(scores["label"].unique())
    sd, notes = score_dict(scores, envs, labels, value)
    report.notes.extend(n for n in notes if n not in report.notes)
    styles = figs.label_styles(labels)
    if not sd:
        return
    if min(m.shape[0] for m in sd.values()) < 2:
        report.notes.append(SINGLE_SEED_NOTE)

    def aggregates(sec: Section) -> None:
        agg = aggregate_table(sd, reps)
        report.csv["aggregates"] = agg
        sec.parts.append(f"rliable's aggregate metrics of the {unit} over runs × environments "
                         f"({len(envs)} environments): median and mean of the per-environment means, the "
                         f"interquartile mean (IQM) of all runs, and the optimality gap (how far below 1 the "
                         f"runs fall, lower is better). 95% stratified-bootstrap CIs ({reps} resamples, seed "
                         f"{stats.BOOTSTRAP_SEED}).")
        table = aggregate_presentable(agg, f"Aggregate {unit} [95% CI]")
        if extra_rows is not None and not extra_rows.empty:
            table.row_classes = [""] * len(table.rows)
            for r in extra_rows.to_dict("records"):
                table.rows.append([r["label"]] + [fmt(r[m]) for m in stats.AGGREGATES])
                table.row_classes.append("ref")
        sec.parts.append(table)
        sec.parts.append(figs.aggregates_figure(agg, styles, "aggregates", "Aggregate metrics",
                                                "Point estimate (black) and 95% CI (bar).", unit))
    report.section("Aggregate metrics (rliable)", "aggregates", aggregates)

    def profiles(sec: Section) -> None:
        all_scores = np.concatenate([m.ravel() for m in sd.values()])
        hi = max(1.2, float(np.nanpercentile(all_scores, 99)) * 1.05)
        lo = min(0.0, float(np.nanmin(all_scores)))
        taus = np.linspace(lo, hi, 101)
        prof = stats.performance_profiles(sd, taus, reps)
        sec.parts.append(figs.profiles_figure(prof, taus, styles, "performance_profiles", "Performance profiles",
                                              "Fraction of runs (all environments) whose score exceeds τ; shaded: "
                                              "95% stratified-bootstrap CI.", f"{unit} (τ)"))
    report.section("Performance profiles", "profiles", profiles)

    def poi(sec: Section) -> None:
        keep = list(sd)
        if len(keep) > MAX_POI_LABELS:
            preferred = [lab for lab in keep if not split_label(lab)[1] or (prefer and lab in prefer)]
            sec.parts.append(f"{len(keep)} settings: the matrix shows the {len(preferred)} algorithms and Table 1 rows.")
            keep = preferred
        if len(keep) < 2:
            return
        table = poi_table({k: sd[k] for k in keep}, reps)
        report.csv["probability_of_improvement"] = table
        sec.parts.append(f"P(X > Y): the probability that a run of X scores higher than a run of Y on the same "
                         f"environment (Mann-Whitney U / n·m, ties half), averaged over environments; 95% CIs "
                         f"from one stratified bootstrap in which each setting's runs are resampled "
                         f"independently ({reps} resamples).")
        sec.parts.append(figs.poi_figure(table, "probability_of_improvement", "Probability of improvement",
                                         "P(row > column), point estimates."))
        presentable = poi_presentable(table)
        sec.parts.append(presentable if len(keep) <= 8 else ("details", f"Every pair with its 95% CI ({len(keep)} settings)",
                                                             presentable))
    report.section("Probability of improvement", "poi", poi)


def _mujoco_sections(report: Report, measure_random) -> None:
    results, suite, reps = report.results, report.suite, report.reps
    scores = run_scores(results, "last100", suite)
    report.notes.extend(n for n in results.warnings if n not in report.notes)
    envs = sorted(scores["env"].unique())
    random, problems = random_scores(results.root, suite, envs, measure_random)
    spreads = random_spreads(results.root, suite)
    t1_labels = _table1_labels(results, suite, scores)
    normed, constants, norm_problems, withheld = _normalise(scores, random, t1_labels, spreads)
    unchecked = [e for e in envs if e in random and e not in spreads and e not in withheld]
    if unchecked:
        norm_problems.append(f"{', '.join(unchecked)}: the random policy's spread is not in {suite}/{RANDOM_CACHE} "
                             f"(measured before it was recorded): whether the anchor is trained is not checked")
    report.notes += problems + norm_problems + [f"{env}: no normalised score: {why}" for env, why in withheld.items()]
    norm_envs = sorted(normed.loc[normed["normalised"].notna(), "env"].unique())
    report.csv["run_scores"] = normed
    report.csv["normalisation"] = constants
    budget = results.budgets[suite]
    paper_gap = budget_gap(budget, PAPER_MUJOCO_STEPS, "the paper's Table 1 numbers")
    if len(scores) and scores.groupby(["label", "env"]).size().min() < 2:     # said here too: at times no aggregates
        report.notes.append(SINGLE_SEED_NOTE)

    def t1(sec: Section) -> None:
        t = table1(results, suite, normed, norm_envs, reps)
        report.csv["table1"] = t
        sec.parts.append(
            f"Score of a run: the {SCORE_NAMES['last100']}; per environment shifted and scaled so that the random "
            f"policy (uniform random actions, {100} episodes, measured by pg-arena and cached in "
            f"{suite}/random_scores.json) scores 0 and, as in the paper, the best of the Table 1 settings present "
            f"(highest mean over seeds; in a report without Table 1 runs, the best setting of this report) "
            f"scores 1; then averaged over the runs × environments of a setting (seeds present on every "
            f"environment). 95% CI: the stratified bootstrap ({reps} resamples, seed {stats.BOOTSTRAP_SEED}), expanded "
            f"for few seeds and read at Student's t level for the Welch–Satterthwaite degrees of freedom "
            f"(rliable's plain percentile interval is too narrow at 3 seeds). "
            f"An environment has no normalised score when that anchor is absent (Table 1 settings ran, none on it) "
            f"or untrained: its mean score is not above the random policy's by more than {ANCHOR_MARGIN_SD:g} "
            f"standard deviations of the random policy's episode returns (measured with it); dividing by a "
            f"difference the size of the random policy's noise would make a number, not a score. "
            + (f"'paper': {PAPER}, Table 1 (7 MuJoCo -v1 environments, 1M steps, 3 seeds; its best result = 1 over "
               f"its 11 settings). " if not paper_gap else
               f"The paper's numbers: {paper_gap[0].lower()}{paper_gap[1:]} ")
            + f"This report: {len(norm_envs)} of {len(envs)} environment(s) normalised, at {budget:,} steps.")
        sec.parts.append(table1_presentable(t, len(norm_envs), paper=not paper_gap,
                                            notes=[f"No normalised score on {env}: {why}."
                                                   for env, why in withheld.items()]))
    report.section("Table 1 — normalised scores", "table1", t1)
    _paper_sections(report, scores, random, t1_labels, normed, norm_envs, spreads)

    def per_env(sec: Section) -> None:
        t = env_score_table(scores, reps=reps)
        report.csv["env_scores"] = t
        sec.parts.append(env_score_presentable(
            t, f"Score per environment: {SCORE_NAMES['last100']}, mean over seeds [95% CI]", constants,
            unused=[e for e in withheld if e not in norm_envs]))
    report.section("Scores per environment", "scores", per_env)

    if norm_envs:
        t1_labels = [lab for lab in (report.csv.get("table1", pd.DataFrame()).get("label", pd.Series(dtype=object)))
                     if isinstance(lab, str)]
        _rliable_sections(report, normed, norm_envs, "normalised", "normalised score", prefer=t1_labels)
    else:
        report.section("Aggregate metrics (rliable)", "aggregates", lambda sec: sec.parts.append(
            "Not shown: the aggregate metrics, performance profiles and probability of improvement are computed on "
            "the normalised score, and no environment has one here (see 'Table 1 — normalised scores')."))
    _curve_sections(report)


def random_spreads(results_dir: str | Path, suite: str) -> dict[str, float]:
    """The standard deviation of the random policy's episode returns per environment (``std`` in
    ``<results_dir>/<suite>/random_scores.json``, beside the score ``analysis.scores.random_scores``
    reads); environments without one are left out, and an unreadable cache gives none."""
    try:
        cache = json.loads((Path(results_dir) / suite / RANDOM_CACHE).read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(cache, dict):
        return {}
    return {str(env): float(e["std"]) for env, e in cache.items()
            if isinstance(e, dict) and isinstance(e.get("std"), (int, float)) and math.isfinite(e["std"])}


def _table1_labels(results: Results, suite: str, scores: pd.DataFrame) -> dict[str, str | None]:
    """The label whose runs are each of the paper's Table 1 settings (None where none are)."""
    labels = order_labels(scores["label"].unique())
    counts = scores.groupby("label").size().to_dict()
    return {row.name: table1_label(results, suite, row, labels, counts) for row in TABLE1}


def _normalise(scores: pd.DataFrame, random: dict[str, float], table1_labels: dict[str, str | None],
               spreads: dict[str, float]):
    """The paper's normalisation: random 0, the best Table 1 setting 1 (the paper's best result over its
    11 settings), so that other algorithms in the same report do not move Table 1's numbers; in a
    report without Table 1 runs, the best setting of each environment is its 1.

    Returns (scores with ``normalised``, constants, problems, withheld): ``withheld``, environment ->
    why it has no normalised score although it has runs and a random score: its anchor is absent (a
    report with Table 1 runs, none on this environment) or untrained (``untrained_anchors``)."""
    names = {lab: name for name, lab in table1_labels.items() if lab}
    t1_labels = list(names)
    with_t1 = set(scores.loc[scores["label"].isin(t1_labels), "env"])
    if not with_t1:
        normed, constants, problems = normalise_random_best(scores, random)
        withheld = {}
    else:
        normed, constants, problems = normalise_random_best(scores[scores["env"].isin(with_t1)], random, t1_labels)
        without = sorted(set(scores["env"]) - with_t1)
        if without:
            normed = pd.concat([normed, scores[scores["env"].isin(without)].assign(normalised=np.nan)]).sort_index()
        withheld = {env: "no Table 1 setting ran on it, so the anchor (the best Table 1 setting) is absent"
                    for env in without}
    withheld.update(untrained_anchors(constants, spreads, names))
    normed.loc[normed["env"].isin(list(withheld)), "normalised"] = np.nan
    return normed, constants, problems, dict(sorted(withheld.items()))


def _paper_sections(report: Report, scores: pd.DataFrame, random: dict[str, float],
                    t1_labels: dict[str, str | None], normed: pd.DataFrame, norm_envs: list[str],
                    spreads: dict[str, float]) -> None:
    """The MuJoCo results beside the PPO paper (``analysis/paper.py``): Table 1 with the paper's numbers,
    Kendall's tau and the paper's conclusions judged; Figure 3's algorithms ranked per environment;
    ppo_clip against CleanRL; where the conditions differ. A published number is compared only when
    these runs' budget is its budget (``paper.budget_gap``); otherwise its section says so, and no
    table of grades (CSV) is written."""
    from analysis import paper
    reps, suite = report.reps, report.suite
    budget = report.results.budgets[suite]
    at_paper_budget = paper.budget_gap(budget, PAPER_MUJOCO_STEPS, "") is None
    at_cleanrl_budget = paper.budget_gap(budget, CLEANRL_PPO_STEPS, "") is None
    runs = report.results.analysed[report.results.analysed["suite"] == suite]
    if any(t1_labels.values()):
        def t1(sec: Section) -> None:
            if at_paper_budget:
                kw = {"spreads": spreads}
                report.csv["paper_table1"] = paper.table1_beside_paper(scores, random, t1_labels, reps, **kw)
                report.csv["paper_verdicts"] = paper.table1_verdicts(scores, random, t1_labels, reps, **kw)
                report.csv["paper_kendall_tau"] = paper.table1_rank_correlation(scores, random, t1_labels, reps, **kw)
            sec.parts.extend(paper.table1_parts(scores, random, t1_labels, reps, budget=budget, spreads=spreads))
        report.section("Table 1 beside the paper", "paper-table1", t1)
    if len(paper.figure3_labels(scores)) >= 2:
        def fig3(sec: Section) -> None:
            report.csv["paper_figure3_ranking"] = paper.figure3_ranking(scores, reps=reps)
            aggregate = None
            if at_paper_budget:
                aggregate = paper.figure3_aggregate(normed, norm_envs, reps=reps)
                report.csv["paper_figure3_aggregate"] = aggregate
            sec.parts.extend(paper.figure3_parts(scores, reps, aggregate=aggregate, budget=budget))
        report.section("Figure 3 beside the paper: the algorithms ranked per environment", "paper-figure3", fig3)
    if "ppo_clip" in set(scores["label"]):
        def cleanrl(sec: Section) -> None:
            if at_cleanrl_budget:
                report.csv["paper_cleanrl"] = paper.cleanrl_table(scores, "ppo_clip", reps)
            sec.parts.extend(paper.cleanrl_parts(scores, "ppo_clip", reps, budget=budget))
        report.section("PPO against CleanRL's published runs", "paper-cleanrl", cleanrl)
    report.section("Conditions: where this differs from the paper, and how much it matters", "paper-conditions",
                   lambda sec: sec.parts.extend(paper.conditions_parts(scores, random, t1_labels,
                                                                       paper.run_configs(runs),
                                                                       paper.run_versions(runs), reps=reps,
                                                                       spreads=spreads)))


def cut_training_episodes(labels, suite: str) -> list[str]:
    """The labels whose training episodes are not whole games: the group algorithms, whose games
    are cut at ``suite.group_max_steps`` (their rollout declares ``groups``). A label whose algorithm
    is not registered here counts as cut (its training episodes cannot be vouched for)."""
    import algos
    cut = []
    for label in labels:
        try:
            rollout = algos.get(split_label(label)[0]).rollout
        except Exception:
            rollout = "unknown"
        if rollout != "horizon":
            cut.append(label)
    return cut


def _atari_sections(report: Report) -> None:
    results, suite, reps = report.results, report.suite, report.reps
    name = scoring(suite)["name"]
    evals = run_scores(results, "final_eval", suite)          # the shared protocol: whole evaluation games
    last = run_scores(results, "last100", suite)              # the paper's training-episode metrics (Table 2)
    every = run_scores(results, "all", suite)
    report.notes.extend(n for n in results.warnings if n not in report.notes)
    eval_h, problems = human_normalise(evals)
    last_h, _ = human_normalise(last)
    every_h, _ = human_normalise(every)
    report.notes += problems
    labels = order_labels(evals["label"].unique())
    games = sorted(eval_h.loc[eval_h["normalised"].notna(), "env"].unique())
    report.csv["run_scores"] = eval_h
    cut = cut_training_episodes(order_labels(last["label"].unique()), suite)
    whole = [lab for lab in order_labels(last["label"].unique()) if lab not in cut]

    def t2(sec: Section) -> None:
        sec.parts.append(
            f"Table 2 counts games won on the paper's own metrics, which average *training* episodes. It counts only "
            f"the settings whose training episodes are whole games (to {_atari_limit(results)} steps): "
            + (f"{', '.join(cut)} train on games cut at suite.group_max_steps, so their training episodes score the "
               f"cut, not the play; they are compared on the evaluation score below (scores per game, aggregates). "
               if cut else "")
            + f"A game is won by the setting with the highest mean over seeds; equal means count as a tie. Only games "
              f"where every setting has runs count. 'paper': {PAPER}, Table 2 (A2C, ACER, PPO; 49 games, 40M frames, "
              f"3 seeds).")
        if not whole:
            return
        t = table2(every_h[every_h["label"].isin(whole)], last_h[last_h["label"].isin(whole)], whole)
        report.csv["table2"] = t.drop(columns=["paper"])
        sec.parts.append(table2_presentable(t, whole))
        pub = published_atari_scores()
        from analysis.scores import win_counts
        wins = win_counts(pub, by="env", labels=["A2C", "ACER", "PPO"])
        sec.parts.append(f"The same count on the paper's per-game last-100 table (Appendix B, rounded to 0.1): "
                         f"{', '.join(f'{k} {v}' for k, v in wins.items())} (paper: "
                         f"{', '.join(f'{k} {v}' for k, v in TABLE2['last100'].items())}; Pong is 20.7 for both "
                         f"ACER and PPO after rounding).")
    report.section("Table 2 — games won", "table2", t2)

    def per_game(sec: Section) -> None:
        t = env_score_table(evals, reps=reps)
        report.csv["env_scores"] = t
        table = env_score_presentable(t, f"Score per game: {name}, mean over seeds [95% CI]")
        # transpose for 49 games: rows games, columns settings + the paper's numbers
        from analysis.reference import atari49, atari_game
        pub = atari49().set_index("game")
        cells = {(r.label, r.env): r for r in t.itertuples()}
        rows = []
        for env in sorted(t["env"].unique()):
            game = atari_game(env)
            row = [env]
            for label in labels:
                r = cells.get((label, env))
                row.append("–" if r is None else f"{r.mean:.1f} [{r.low:.1f}, {r.high:.1f}]")
            row += [fmt(pub.loc[game, c], 1) if game in pub.index else "–"
                    for c in ("a2c_last100", "acer_last100", "ppo_last100", "random", "human")]
            rows.append(row)
        table = Table(table.title, ["game", *labels, "paper A2C", "paper ACER", "paper PPO", "random", "human"], rows,
                      anchor="scores", numeric=set(range(1, len(labels) + 6)),
                      notes=[ATARI_SOURCE, "The paper's columns average its last 100 training episodes, a different "
                                           "protocol: read them as a reference, not as the same measurement."])
        sec.parts.append(table)
    report.section("Scores per game", "scores", per_game)

    if games:
        # the paper's algorithms as reference rows: one number per game (a mean of 3 seeds), no CI
        pub, _ = human_normalise(published_atari_scores())
        extra = []
        for paper_name in ("A2C", "ACER", "PPO"):
            mine = pub[pub["label"] == paper_name].sort_values("env")
            values = stats.aggregate_metrics(mine["normalised"].to_numpy(dtype=float)[None, :])
            extra.append({"label": f"paper {paper_name} (49 games, 10M steps, mean of 3 seeds; last 100 training "
                                   f"episodes)", **dict(zip(stats.AGGREGATES, values))})
        _rliable_sections(report, eval_h, games, "normalised", "human-normalised score",
                          extra_rows=pd.DataFrame(extra))
    _curve_sections(report, "eval_return_mean", "evaluation score (whole games)",
                    caption="Mean over seeds of the evaluation score (whole games to the time limit, raw score: the "
                            "protocol every algorithm is scored on); shaded: 95% bootstrap interval over seeds.")


def _atari_limit(results: Results) -> str:
    """The evaluation games' step limit of these runs (suite.max_episode_steps), as text."""
    limits = set()
    for cfg in results.runs.get("config", pd.Series(dtype=object)):
        try:
            limits.add(int(cfg["suite_cfg"]["max_episode_steps"]))
        except (KeyError, TypeError, ValueError):
            pass
    return " / ".join(f"{v:,}" for v in sorted(limits)) or "27,000"


def _llm_sections(report: Report) -> None:
    def build(sec: Section) -> None:
        t = llm_table(report.results, report.suite, report.reps)
        report.csv["llm"] = t
        if not t.empty:
            sec.parts.append(llm_presentable(t))
    report.section("Held-out score, KL and throughput", "llm", build)
    report.section("Gold versus proxy reward (over-optimisation)", "gold-vs-proxy", lambda sec: _gold_vs_proxy(report, sec))
    _curve_sections(report, "eval_return_mean", "held-out score")
    report.section("Training dynamics", "dynamics", lambda sec: _dynamics(report, sec))


# The update metrics the GRPO fixes were designed to change (issue 31): entropy collapse (DAPO's
# clip-higher), response length (Dr. GRPO's length bias), how often the ratio is clipped (GSPO,
# CISPO), and the drift from the reference policy. Each as metrics.csv logs it per update.
DYNAMICS = {"entropy": "entropy (nats / token)", "response_length": "response length (tokens)",
            "clip_fraction": "clipped fraction", "kl_ref": "KL to the reference"}


def _dynamics(report: Report, sec: Section) -> None:
    """Per task, the update metrics of ``DYNAMICS`` against steps: one panel per metric, one line
    per setting (mean over seeds, 95% bootstrap band)."""
    frame = report.results.frame
    frame = frame[(frame["suite"] == report.suite) & frame["metric"].isin(list(DYNAMICS))]
    if frame.empty:
        return
    labels = report.results.labels(report.suite)
    styles = figs.label_styles(labels)
    for env in sorted(frame["env"].astype(str).unique()):
        rows = frame[frame["env"].astype(str) == env].astype({"label": str})
        panels = [m for m in DYNAMICS if m in set(rows["metric"])]
        # one panel per metric: the curve figure's per-environment axes, keyed by the metric instead
        curves = rows.assign(env=rows["metric"].map(DYNAMICS))[["env", "label", "seed", "step", "value"]]
        for part, group in figs.split_for_curves([lab for lab in labels if lab in set(rows["label"])]):
            suffix = f"_{part}" if part else ""
            sec.parts.append(figs.learning_curves(
                curves, [DYNAMICS[m] for m in panels], group, styles, f"dynamics_{env}{suffix}",
                f"Training dynamics — {env}" + (f" — {part}" if part else ""),
                "Per update (metrics.csv): the policy's entropy on its own samples, the mean response "
                "length, the fraction of tokens (or sequences) whose ratio was clipped, and the KL to the "
                "reference policy. Mean over seeds; shaded: 95% bootstrap interval over seeds. An algorithm "
                "that does not log a metric has no line in its panel.", "value"))


def _gold_vs_proxy(report: Report, sec: Section) -> None:
    """On the preference tasks (the ones whose evaluations log a reward-model score): held-out gold
    score and proxy score against the KL to the reference policy, one figure per task."""
    frame = report.results.frame
    frame = frame[(frame["suite"] == report.suite)
                  & frame["metric"].isin(["eval_kl_ref", "eval_return_mean", "eval_proxy_reward"])]
    if frame.empty:
        return
    wide = (frame.astype({"label": str, "env": str, "metric": str})
            .pivot_table(index=["label", "env", "seed", "step"], columns="metric", values="value", aggfunc="last")
            .reset_index())
    if not {"eval_kl_ref", "eval_proxy_reward"} <= set(wide.columns):
        return
    wide = wide.rename(columns={"eval_kl_ref": "kl", "eval_return_mean": "gold", "eval_proxy_reward": "proxy"})
    wide = wide.dropna(subset=["kl", "gold", "proxy"])
    labels = report.results.labels(report.suite)
    styles = figs.label_styles(labels)
    for env in sorted(wide["env"].unique()):
        sec.parts.append(figs.gold_vs_proxy(
            wide[wide["env"] == env], env, [lab for lab in labels if lab in set(wide["label"])], styles,
            f"gold_vs_proxy_{env}", f"Gold versus proxy reward — {env}",
            "Each held-out evaluation: the policy optimises the learned reward model (proxy); the hidden gold "
            "score is what it was meant to learn. Over-optimisation shows as gold flattening or falling while "
            "the proxy keeps rising with KL (Gao et al. 2023). Lines: mean over seeds at each evaluation, in "
            "training order; dots: single runs."))


def _generic_sections(report: Report) -> None:
    scores = run_scores(report.results, "last100", report.suite)

    def build(sec: Section) -> None:
        t = env_score_table(scores, reps=report.reps)
        report.csv["env_scores"] = t
        sec.parts.append(env_score_presentable(t, f"Score per environment: {SCORE_NAMES['last100']} [95% CI]"))
    report.section("Scores per environment", "scores", build)
    _curve_sections(report)


# ---------------------------------------------------------------------------------------
# runs, configuration, versions

def _distinct(values) -> str:
    seen = Counter(json.dumps(v, sort_keys=True, default=str) if not isinstance(v, str) else v for v in values)
    return "; ".join(f"{k}" + (f" ({n} runs)" if len(seen) > 1 else "") for k, n in seen.most_common())


def seeds_text(seeds) -> str:
    """How many seeds, then which: ``1 (seed 0)``, ``3 (seeds 0, 1, 2)``, ``10 (seeds 0–9)``; runs of
    consecutive seeds longer than three as a range (``7 (seeds 0–4, 8, 11)``); ``–`` for none. A bare
    list ("0") reads as a count."""
    values = sorted({int(s) for s in seeds})
    if not values:
        return "–"
    runs = [[values[0]]]
    for v in values[1:]:
        if v == runs[-1][-1] + 1:
            runs[-1].append(v)
        else:
            runs.append([v])
    parts = [f"{r[0]}–{r[-1]}" if len(r) > 3 else ", ".join(map(str, r)) for r in runs]
    return f"{len(values)} ({'seed' if len(values) == 1 else 'seeds'} {', '.join(parts)})"


def _runs_section(report: Report, sec: Section) -> None:
    runs = report.results.runs[report.results.runs["suite"] == report.suite]
    analysed = runs[runs["analysed"]]
    rows = []
    for label in order_labels(runs["label"].unique()):
        mine = runs[runs["label"] == label]
        used = mine[mine["analysed"]]
        status = Counter(mine["status"])
        rows.append([label, str(used["env"].nunique()), seeds_text(used["seed"]),
                     str(len(used)), ", ".join(f"{n} {s}" for s, n in sorted(status.items())),
                     _distinct(mine["steps"].dropna().astype(int).map(lambda s: f"{s:,}")),
                     f"{used['wall_seconds'].dropna().astype(float).sum() / 60:.1f}"])
    sec.parts.append(Table("Runs per setting", ["setting", "envs", "seeds", "analysed", "status of all runs",
                                                "steps", "wall minutes (analysed)"], rows, anchor="runs-table",
                           numeric={1, 3, 6}))
    configs = [c for c in analysed["config"] if isinstance(c, dict)]
    common = []
    for key in ("steps", "eval_every", "eval_episodes", "checkpoint_every", "device"):
        common.append([key, _distinct(c.get(key) for c in configs)])
    suite_cfgs = [c.get("suite_cfg") or {} for c in configs]
    for key in sorted({k for s in suite_cfgs for k in s}):
        common.append([f"suite.{key}", _distinct(s.get(key) for s in suite_cfgs)])
    sec.parts.append(Table("Run settings (analysed runs)", ["key", "value"], common, anchor="settings"))
    by_algo: dict[str, list[str]] = {}
    for label in order_labels(analysed["label"].unique()):
        by_algo.setdefault(split_label(label)[0], []).append(label)
    for algo, labels in by_algo.items():
        cfgs = {}
        for label in labels:
            mine = [c.get("algo_cfg") or {} for c in analysed[analysed["label"] == label]["config"] if isinstance(c, dict)]
            cfgs[label] = mine
        keys = sorted({k for lst in cfgs.values() for c in lst for k in c})
        rows = [[key] + [_distinct(c.get(key) for c in cfgs[label]) for label in labels] for key in keys]
        if not rows:
            continue
        sec.parts.append(("details", f"Resolved configuration of {algo}",
                          Table(f"algo_cfg of {algo}", ["option", *labels], rows, anchor=f"config-{algo}")))
    if report.results.sweeps:
        sec.parts.append(_sweeps_table(report.results.sweeps))
    versions = [v for v in analysed["versions"] if isinstance(v, dict)]
    rows = [[pkg, _distinct(v.get(pkg) for v in versions if pkg in v)] for pkg in sorted({k for v in versions for k in v})]
    rows.append(["git commit", _distinct(analysed["git_commit"].fillna("unknown"))])
    rows.append(["host", _distinct(analysed["host"].fillna("unknown"))])
    start, end = analysed["start_time"].dropna(), analysed["end_time"].dropna()
    rows.append(["runs made", f"{start.min()} → {end.max()}" if len(start) and len(end) else "unknown"])
    sec.parts.append(Table("Versions", ["package", "version"], rows, anchor="versions"))


def _sweeps_table(pieces: list[dict]) -> Table:
    """The wall time of each sweep that made these runs, summed over the pieces it ran in (a sweep
    killed and resumed by the same command is one plan)."""
    plans: dict[str, list[dict]] = {}
    for piece in pieces:
        plans.setdefault(piece["plan_id"], []).append(piece)
    rows = []
    for group in plans.values():
        group = sorted(group, key=lambda p: p["start"])
        minutes = sum(p["seconds"] for p in group) / 60
        killed = sum(bool(p["killed"]) for p in group)
        rows.append(["./run_all.sh " + " ".join(group[-1]["command"]), str(group[-1]["runs_planned"]),
                     f"{len(group)}" + (f" ({killed} killed)" if killed else ""), f"{minutes:.0f}",
                     f"{group[0]['start']} → {group[-1].get('end') or group[-1]['last_seen']}"])
    return Table("Sweeps and their wall time (pieces: invocations of the same command, each resuming from the "
                 "runs' checkpoints; a killed piece counts to its last heartbeat)",
                 ["command", "runs", "pieces", "wall minutes", "from → to"], rows, anchor="sweeps", numeric={1, 3})


# ---------------------------------------------------------------------------------------
# writing

CSS = """
body{font-family:-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif;margin:0;color:#1d2433;background:#fafbfc}
main{max-width:1180px;margin:0 auto;padding:24px 32px 64px}
h1{font-size:1.7em;margin:.2em 0}h2{font-size:1.25em;margin-top:2em;border-bottom:2px solid #d8dee8;padding-bottom:.25em}
.meta{color:#55607a;font-size:.92em}.meta span{margin-right:1.4em;white-space:nowrap}
nav{margin:1em 0;font-size:.92em}nav a{margin-right:1em;color:#2456a6;text-decoration:none}
table{border-collapse:collapse;margin:.8em 0 .4em;font-size:.86em;background:#fff;box-shadow:0 1px 2px rgba(0,0,0,.06)}
caption{caption-side:top;text-align:left;font-weight:600;padding:.3em 0;color:#33405a;white-space:nowrap}
th,td{border:1px solid #dfe3ea;padding:4px 8px;vertical-align:top}th{background:#eef1f6;text-align:left}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr.t1 td:first-child{font-weight:600}tr.ref td{background:#f5f6f8;color:#55607a;font-style:italic}
figure{margin:1em 0;background:#fff;padding:8px;box-shadow:0 1px 2px rgba(0,0,0,.06)}
figure img{max-width:100%;height:auto;display:block}figcaption{font-size:.85em;color:#55607a;margin-top:.4em}
.warn{background:#fff7e0;border:1px solid #f0d48a;padding:.6em 1em;font-size:.88em}.warn li{margin:.2em 0}
.fail{background:#fde8e8;border:1px solid #f3b3b3;padding:.6em 1em}
p{line-height:1.45;max-width:75em}p.note{font-size:.85em;color:#55607a}pre{font-size:.8em;overflow:auto}
.scroll{overflow-x:auto;max-width:100%}details{margin:.5em 0}summary{cursor:pointer;color:#2456a6}
"""


def _part_html(part) -> str:
    if isinstance(part, str):
        return f"<p>{html.escape(part)}</p>"
    if isinstance(part, Table):
        return f"<div class=scroll>{part.html()}</div>"
    if isinstance(part, figs.Figure):
        return (f"<figure><img src=\"{part.data_uri()}\" alt=\"{html.escape(part.title)}\" "
                f"data-file=\"{part.name}.png\"><figcaption>{html.escape(part.caption)} "
                f"(<a href=\"{part.name}.png\">PNG</a>, <a href=\"{part.name}.svg\">SVG</a>)</figcaption></figure>")
    if isinstance(part, tuple) and part[0] == "pre":
        return f"<pre>{html.escape(part[1])}</pre>"
    if isinstance(part, tuple) and part[0] == "details":
        return f"<details><summary>{html.escape(part[1])}</summary>{_part_html(part[2])}</details>"
    raise TypeError(part)


def _part_md(part) -> str:
    if isinstance(part, str):
        return part + "\n"
    if isinstance(part, Table):
        return part.markdown()
    if isinstance(part, figs.Figure):
        return f"![{part.title}]({part.name}.png)\n\n_{part.caption}_ ([SVG]({part.name}.svg))\n"
    if isinstance(part, tuple) and part[0] == "pre":
        return "```\n" + part[1] + "\n```\n"
    if isinstance(part, tuple) and part[0] == "details":
        return f"<details><summary>{part[1]}</summary>\n\n{_part_md(part[2])}\n</details>\n"
    raise TypeError(part)


def _write(report: Report) -> Path:
    from core.results import atomic_write_text
    out = report.out_dir
    out.mkdir(parents=True, exist_ok=True)
    for sec in report.sections:
        for part in sec.parts:
            if isinstance(part, figs.Figure):
                part.save(out)
    for name, frame in report.csv.items():
        atomic_write_text(out / f"{name}.csv", frame.to_csv(index=False))
    results, suite = report.results, report.suite
    analysed = results.analysed[results.analysed["suite"] == suite]
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    meta = [("suite", suite), ("generated", now), ("results", results.source or str(Path(results.root).resolve())),
            ("budget", f"{results.budgets[suite]:,} steps"), ("settings", str(analysed["label"].nunique())),
            ("environments", str(analysed["env"].nunique())), ("runs analysed", str(len(analysed))),
            ("seeds", seeds_text(analysed["seed"]))]
    notes = list(dict.fromkeys(report.notes))
    title = f"pg-arena report — {suite}"

    body = [f"<h1>{html.escape(title)}</h1>",
            "<div class=meta>" + "".join(f"<span><b>{html.escape(k)}:</b> {html.escape(v)}</span>" for k, v in meta)
            + "</div>",
            "<nav>" + "".join(f"<a href=\"#{s.anchor}\">{html.escape(s.title)}</a>" for s in report.sections) + "</nav>"]
    if report.failures:
        body.append("<div class=fail><b>Sections that failed:</b><ul>"
                    + "".join(f"<li>{html.escape(f)}</li>" for f in report.failures) + "</ul></div>")
    if notes:
        body.append("<div class=warn><b>Left out or incomplete</b><ul>"
                    + "".join(f"<li>{html.escape(n)}</li>" for n in notes) + "</ul></div>")
    for sec in report.sections:
        body.append(f"<section id=\"{sec.anchor}\"><h2>{html.escape(sec.title)}</h2>"
                    + "".join(_part_html(p) for p in sec.parts) + "</section>")
    page = (f"<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
            f"<meta name=viewport content=\"width=device-width, initial-scale=1\"><title>{html.escape(title)}</title>"
            f"<meta name=generator content=\"pg-arena analysis\"><style>{CSS}</style></head>"
            f"<body><main>{''.join(body)}</main></body></html>\n")
    atomic_write_text(out / "index.html", page)

    md = [f"# {title}", "", " · ".join(f"**{k}:** {v}" for k, v in meta), ""]
    if report.failures:
        md += ["**Sections that failed:**", ""] + [f"- {f}" for f in report.failures] + [""]
    if notes:
        md += ["**Left out or incomplete:**", ""] + [f"- {n}" for n in notes] + [""]
    for sec in report.sections:
        md += [f"## {sec.title}", ""] + [_part_md(p) for p in sec.parts]
    atomic_write_text(out / "report.md", "\n".join(md).rstrip() + "\n")
    return out / "index.html"


def report_suites(results_dir: str | Path) -> list[str]:
    """The suites under ``results_dir`` that hold at least one run."""
    root = Path(results_dir)
    if not root.is_dir():
        raise AnalysisError(f"results folder {root} does not exist")
    return sorted(d.name for d in root.iterdir()
                  if d.is_dir() and d.name not in NOT_SUITE_DIRS and not d.name.startswith(".")
                  and any(d.rglob("run.json")))
