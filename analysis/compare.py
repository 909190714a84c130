"""Checking a new variant: ``compare candidate=X baseline=Y``.

1. The baseline's done runs fix the protocol: its environments, seeds and budget (``steps``, and
   its evaluation settings).
2. Whatever candidate runs of that protocol are missing are planned through the harness (the
   candidate label ``algo+key=value+...`` becomes ``algo=<algo>`` with ``algo.<key>=<value>``
   overrides, ``suite.<key>=`` and ``preset=`` parts likewise) and run with the local executor.
3. Per environment and in aggregate: the score difference X − Y with its 95% CI and the
   probability of improvement P(X > Y) with its 95% CI (rliable, stratified bootstrap, fixed seed).
4. The verdict, from the aggregate P(X > Y): ``better`` when its CI lies entirely above 0.5,
   ``worse`` when entirely below, ``inconclusive`` otherwise, with the number of seeds per
   environment that would likely settle it. Exit codes 0 / 1 / 3 (2: bad input).
"""
from __future__ import annotations

import math
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, TextIO

import numpy as np
import pandas as pd

from analysis import stats
from analysis.load import AnalysisError, Results, ResultsWarning, load_results, split_label, variant_overrides
from analysis.scores import SCORE_NAMES, random_scores, run_scores, scoring
from analysis.tables import digits_for

EXIT = {"better": 0, "worse": 1, "inconclusive": 3}
MAX_SEEDS = 100          # past this, "more than 100 seeds" (the difference is too small to matter)
MIN_SEEDS = 2            # fewer runs per environment give a bootstrap with no spread


@dataclass
class EnvResult:
    env: str
    n_x: int
    n_y: int
    mean_x: float
    mean_y: float
    diff: tuple[float, float, float]
    poi: tuple[float, float, float]


@dataclass
class Comparison:
    candidate: str
    baseline: str
    suite: str
    steps: int
    envs: list[EnvResult]
    aggregate_diff: tuple[float, float, float] | None      # normalised score (random 0, better of X/Y 1)
    aggregate_mean_x: float | None
    aggregate_mean_y: float | None
    poi: tuple[float, float, float]
    seeds: int                                              # seeds per env in the aggregate
    verdict: str
    reason: str
    seeds_needed: int | None                                # for an inconclusive verdict (None: no estimate)
    notes: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return EXIT[self.verdict]


def verdict_from_poi(poi: tuple[float, float, float], seeds: int) -> tuple[str, str, int | None]:
    """better / worse / inconclusive from P(X > Y) and its CI, with the seeds per environment that
    would likely settle an inconclusive result: the CI's half-width shrinks like 1/sqrt(n), so about
    n * (half-width / |P - 0.5|)^2 seeds bring it clear of 0.5 if P stays where it is."""
    p, low, high = poi
    if seeds < MIN_SEEDS:
        return ("inconclusive", f"only {seeds} seed per environment: a bootstrap over one run has no spread; "
                f"run at least {max(5, MIN_SEEDS)} seeds (seeds=5)", 5)
    if low > 0.5:
        return "better", f"P(X > Y) 95% CI [{low:.2f}, {high:.2f}] lies entirely above 0.5", None
    if high < 0.5:
        return "worse", f"P(X > Y) 95% CI [{low:.2f}, {high:.2f}] lies entirely below 0.5", None
    effect = abs(p - 0.5)
    half = (p - low) if p >= 0.5 else (high - p)
    if effect < 1e-9 or half <= 0:
        return ("inconclusive", f"P(X > Y) = {p:.2f} [{low:.2f}, {high:.2f}]: no difference detected; more than "
                f"{MAX_SEEDS} seeds per environment would be needed to tell them apart, if they differ at all", None)
    needed = max(seeds + 1, math.ceil(seeds * (half / effect) ** 2))
    if needed > MAX_SEEDS:
        return ("inconclusive", f"P(X > Y) = {p:.2f} [{low:.2f}, {high:.2f}] contains 0.5; the difference is "
                f"small: more than {MAX_SEEDS} seeds per environment would likely be needed", None)
    return ("inconclusive", f"P(X > Y) = {p:.2f} [{low:.2f}, {high:.2f}] contains 0.5; about {needed} seeds per "
            f"environment (now {seeds}) would likely settle it", needed)


def _matrix(scores: pd.DataFrame, label: str, envs: list[str], seeds: list[int], value: str) -> np.ndarray:
    mine = scores[scores["label"] == label].set_index(["env", "seed"])[value]
    return np.array([[mine[(e, s)] for e in envs] for s in seeds], dtype=float)


def compare_scores(scores: pd.DataFrame, candidate: str, baseline: str, random: dict[str, float] | None = None,
                   reps: int = stats.DEFAULT_REPS, suite: str = "mujoco", steps: int = 0) -> Comparison:
    """The comparison from run scores (columns env, label, seed, score). ``random``: the random
    policy's score per environment, for the normalised aggregate difference."""
    notes = []
    x_all = scores[scores["label"] == candidate]
    y_all = scores[scores["label"] == baseline]
    envs = sorted(set(y_all["env"]) & set(x_all["env"]))
    if not envs:
        raise AnalysisError(f"{candidate} and {baseline} have no environment in common with done runs")
    lacking = sorted(set(y_all["env"]) - set(x_all["env"]))
    if lacking:
        notes.append(f"{candidate} has no done runs on {', '.join(lacking)}; compared on the other environments")
    per_env = []
    for env in envs:
        x = x_all[x_all["env"] == env]["score"].to_numpy(dtype=float)[:, None]
        y = y_all[y_all["env"] == env]["score"].to_numpy(dtype=float)[:, None]
        per_env.append(EnvResult(env, len(x), len(y), float(x.mean()), float(y.mean()),
                                 stats.difference_estimate(x, y, reps), stats.poi_estimate(x, y, reps)))
    # the aggregate needs runs x envs matrices: the seeds each label has on every environment
    seeds_x = sorted(set.intersection(*(set(x_all[x_all["env"] == e]["seed"]) for e in envs)))
    seeds_y = sorted(set.intersection(*(set(y_all[y_all["env"] == e]["seed"]) for e in envs)))
    if not seeds_x or not seeds_y:
        raise AnalysisError("no seed of the candidate or baseline has runs on every compared environment")
    for label, seeds, runs in ((candidate, seeds_x, x_all), (baseline, seeds_y, y_all)):
        if len(runs[runs["env"].isin(envs)]) != len(seeds) * len(envs):
            notes.append(f"{label}: the aggregate uses the {len(seeds)} seed(s) present on every environment")
    mx = _matrix(scores, candidate, envs, seeds_x, "score")
    my = _matrix(scores, baseline, envs, seeds_y, "score")
    poi = stats.poi_estimate(mx, my, reps)
    agg_diff = agg_x = agg_y = None
    if random is not None and all(e in random for e in envs):
        r = np.array([random[e] for e in envs])
        best = np.maximum(mx.mean(axis=0), my.mean(axis=0))
        if np.all(best > r):
            nx, ny = (mx - r) / (best - r), (my - r) / (best - r)
            agg_diff = stats.difference_estimate(nx, ny, reps)
            agg_x, agg_y = float(nx.mean()), float(ny.mean())
        else:
            notes.append("neither setting beats the random policy on "
                         + ", ".join(e for e, b, rr in zip(envs, best, r) if not b > rr)
                         + ": no normalised aggregate difference")
    elif random is not None:
        notes.append("no random-policy score for " + ", ".join(e for e in envs if e not in random)
                     + ": no normalised aggregate difference")
    n = min(len(seeds_x), len(seeds_y))
    verdict, reason, needed = verdict_from_poi(poi, n)
    return Comparison(candidate, baseline, suite, steps, per_env, agg_diff, agg_x, agg_y, poi, n, verdict, reason,
                      needed, notes)


# ---------------------------------------------------------------------------------------
# planning the missing candidate runs

def candidate_overrides(label: str) -> tuple[str, dict[str, str], dict[str, str], dict[str, str]]:
    """``"ppo_clip+clip_eps=0.3+suite.obs_norm=false"`` -> (algo, top, algo overrides, suite overrides)."""
    algo, variant = split_label(label)
    if not algo:
        raise AnalysisError(f"candidate {label!r} has no algorithm name")
    top, algo_o, suite_o = {}, {}, {}
    for key, value in variant_overrides(variant).items():
        if key == "preset":
            top["preset"] = value
        elif key.startswith("suite."):
            suite_o[key[6:]] = value
        else:
            algo_o[key] = value
    return algo, top, algo_o, suite_o


def plan_candidate(candidate: str, baseline_runs: pd.DataFrame, results_dir: str | Path, suite: str,
                   wanted: set[tuple[str, int]]):
    """The harness RunConfigs of ``candidate`` for the (env, seed) pairs in ``wanted``, with the
    baseline's budget and evaluation settings."""
    from harness.config import ConfigError, parse_sweep, plan_runs, split_args
    algo, top, algo_o, suite_o = candidate_overrides(candidate)
    config = baseline_runs.iloc[0]["config"] or {}
    envs = sorted({e for e, _ in wanted})
    words = {"suite": suite, "algo": algo, "env": ",".join(envs), "seeds": str(max(s for _, s in wanted) + 1),
             "steps": str(int(baseline_runs.iloc[0]["steps"])), "results_dir": str(results_dir), **top}
    for key in ("eval_every", "eval_episodes", "checkpoint_every", "device"):
        if config.get(key) is not None:
            words[key] = str(config[key])
    argv = ([f"{k}={v}" for k, v in words.items()] + [f"algo.{k}={v}" for k, v in algo_o.items()]
            + [f"suite.{k}={v}" for k, v in suite_o.items()])
    try:
        top_args, algo_args, suite_args = split_args(argv)
        runs = plan_runs(parse_sweep(top_args), algo_args, suite_args)
    except ConfigError as exc:
        raise AnalysisError(f"cannot plan the runs of {candidate}: {exc}") from None
    return [r for r in runs if (r.env, r.seed) in wanted]


# ---------------------------------------------------------------------------------------
# the command

def _fmt(x: float, d: int, sign: bool = False) -> str:
    return f"{x:+.{d}f}" if sign else f"{x:.{d}f}"


def format_comparison(c: Comparison) -> str:
    lines = [f"compare: X = {c.candidate}  vs  Y = {c.baseline}   (suite {c.suite}, {len(c.envs)} environment(s), "
             f"{c.seeds} seed(s) each in the aggregate, {c.steps:,} steps)",
             f"score: {SCORE_NAMES[scoring(c.suite)['score']]}; 95% CIs by stratified bootstrap "
             f"(rliable, seed {stats.BOOTSTRAP_SEED})", ""]
    header = ["environment", "n X/Y", "X mean", "Y mean", "X − Y [95% CI]", "P(X > Y) [95% CI]"]
    rows = []
    for e in c.envs:
        d = digits_for([e.mean_x, e.mean_y])
        rows.append([e.env, f"{e.n_x}/{e.n_y}", _fmt(e.mean_x, d), _fmt(e.mean_y, d),
                     f"{_fmt(e.diff[0], d, True)} [{_fmt(e.diff[1], d, True)}, {_fmt(e.diff[2], d, True)}]",
                     f"{e.poi[0]:.2f} [{e.poi[1]:.2f}, {e.poi[2]:.2f}]"])
    if c.aggregate_diff is not None:
        d = c.aggregate_diff
        agg_diff = f"{d[0]:+.3f} [{d[1]:+.3f}, {d[2]:+.3f}]"
        agg_x, agg_y = f"{c.aggregate_mean_x:.3f}", f"{c.aggregate_mean_y:.3f}"
    else:
        agg_diff = agg_x = agg_y = "n/a"
    rows.append(["aggregate (normalised)", f"{c.seeds}×{len(c.envs)}", agg_x, agg_y, agg_diff,
                 f"{c.poi[0]:.2f} [{c.poi[1]:.2f}, {c.poi[2]:.2f}]"])
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    for k, row in enumerate([header] + rows):
        lines.append("  ".join(str(v).ljust(w) if i == 0 else str(v).rjust(w) for i, (v, w) in enumerate(zip(row, widths))))
        if k == 0 or k == len(rows) - 1:
            lines.append("  ".join("-" * w for w in widths))
    lines.append("normalised: per environment, random policy = 0 and the better of X and Y = 1; "
                 "P(X > Y): chance that a run of X beats a run of Y on the same environment, averaged over environments")
    for note in c.notes:
        lines.append(f"note: {note}")
    lines += ["", f"verdict: {c.verdict} — {c.reason}"]
    return "\n".join(lines)


def run_compare(candidate: str, baseline: str, suite: str = "mujoco", results_dir: str | Path = "results",
                jobs: int | None = None, seeds: int | None = None, reps: int = stats.DEFAULT_REPS,
                out: TextIO | None = None, err: TextIO | None = None, executor: Callable | None = None,
                measure_random: Callable[[str], dict] | None = None) -> Comparison:
    """Run the missing candidate runs, then compare (see the module docstring). ``seeds`` extends
    both candidate and baseline to seeds 0..seeds-1 (running what is missing). Raises AnalysisError
    on bad input; nothing stored is deleted or overwritten."""
    from core.results import is_done
    out, err = out or sys.stdout, err or sys.stderr
    if candidate == baseline:
        raise AnalysisError(f"candidate and baseline are the same setting ({candidate})")
    root = Path(results_dir)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResultsWarning)
        # reads the two settings' episodes.csv now: a corrupt file stops compare before anything runs
        everything = load_results(root, suite, sources=("episodes.csv",), require_done=False,
                                  labels=(candidate, baseline))
    runs = everything.runs
    base = runs[(runs["label"] == baseline) & runs["done"]]
    if base.empty:
        have = sorted(runs.loc[runs["done"], "label"].unique())
        raise AnalysisError(f"baseline {baseline} has no done runs in {root / suite}"
                            + (f" (settings with done runs: {', '.join(have)})" if have else ""))
    budgets = base["steps"].dropna().astype(int).value_counts()
    steps = int(budgets.index[0])
    if len(budgets) > 1:
        print(f"note: baseline {baseline} has runs at several budgets ({', '.join(f'{s:,}' for s in budgets.index)}); "
              f"comparing at steps={steps:,} (its most common)", file=err)
    base = base[base["steps"] == steps]
    wanted = set(zip(base["env"], base["seed"].astype(int)))
    if seeds is not None:
        wanted |= {(e, s) for e in set(base["env"]) for s in range(seeds)}

    cand = runs[runs["label"] == candidate]
    cand_done = cand[cand["done"]]
    for label, done in ((candidate, cand_done), (baseline, runs[(runs["label"] == baseline) & runs["done"]])):
        clash = done[(done["steps"] != steps) & done.apply(lambda r: (r["env"], int(r["seed"])) in wanted, axis=1)]
        if not clash.empty:
            r = clash.iloc[0]
            raise AnalysisError(f"{label} already has a done run at another budget where compare would run one "
                                f"({r['run_id']} at steps={int(r['steps']):,}; the baseline's budget is "
                                f"steps={steps:,}); it would be overwritten: use another results_dir")
    have = set(zip(cand_done.loc[cand_done["steps"] == steps, "env"], cand_done.loc[cand_done["steps"] == steps, "seed"].astype(int)))
    missing_x = sorted(wanted - have)
    missing_y = sorted(wanted - set(zip(base["env"], base["seed"].astype(int))))
    todo = []
    if missing_x:
        planned = plan_candidate(candidate, base, root, suite, set(missing_x))
        if planned and planned[0].label != candidate:       # e.g. clip_eps=.3 is stored as clip_eps=0.3
            print(f"note: {candidate} is stored as {planned[0].label}", file=err)
            return run_compare(planned[0].label, baseline, suite, results_dir, jobs, seeds, reps, out, err,
                               executor, measure_random)
        todo += [r for r in planned if not is_done(r.run_dir)]
    if missing_y:
        todo += [r for r in plan_candidate(baseline, base, root, suite, set(missing_y)) if not is_done(r.run_dir)]
    if todo:
        labels = sorted({r.label for r in todo})
        print(f"compare: running {len(todo)} missing run(s) of {', '.join(labels)} "
              f"({len({r.env for r in todo})} env(s), {steps:,} steps each)", file=err)
        if executor is None:
            from harness.executor import run_local
            executor = run_local
        import os
        results = executor(todo, max(1, min(jobs or os.cpu_count() or 1, len(todo))))
        elsewhere = [r for r in results if r.get("status") == "running elsewhere"]
        failed = [r for r in results if r.get("status") not in ("done", "running elsewhere")]
        if failed:
            raise AnalysisError(f"{len(failed)} of the missing run(s) failed (e.g. {failed[0]['run_id']}: "
                                f"{failed[0].get('error')}); nothing to compare on them")
        if elsewhere:
            raise AnalysisError(f"{len(elsewhere)} of the missing run(s) are being run by another sweep (e.g. "
                                f"{elsewhere[0]['run_id']}); compare again when it has finished")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResultsWarning)
        results = load_results(root, suite, steps=steps, sources=("episodes.csv",), labels=(candidate, baseline))
    scores = run_scores(results, scoring(suite)["score"], suite)
    scores = scores[scores.apply(lambda r: (r["env"], int(r["seed"])) in wanted, axis=1)]
    if scores[scores["label"] == candidate].empty:
        raise AnalysisError(f"candidate {candidate} has no done runs to compare")
    random = None
    if scoring(suite)["normalise"] == "random-best":
        random, problems = random_scores(root, suite, sorted(set(scores["env"])), measure_random)
        for p in problems:
            print(f"note: {p}", file=err)
    elif scoring(suite)["normalise"] == "human":
        from analysis.reference import atari49, atari_game
        table = atari49().set_index("game")
        random = {e: float(table.loc[atari_game(e), "random"]) for e in set(scores["env"]) if atari_game(e)}
    comparison = compare_scores(scores, candidate, baseline, random, reps, suite, steps)
    print(format_comparison(comparison), file=out)
    return comparison
