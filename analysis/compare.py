"""Checking a new variant: the comparison of a candidate's stored runs with a baseline's.

Analysis is a function of stored results: it never plans or trains. ``./run_all.sh compare``
(``harness/compare.py``) makes sure both sides' runs exist at one protocol, runs what is missing,
then calls ``compare_stored`` here, which

1. checks that both sides ran the same protocol: every resolved setting of the runs' ``run.json``
   ``config`` that differs between candidate and baseline is printed (``protocol_differences``),
   and compare refuses (``ProtocolError``, exit 2) when a difference is one nobody asked for:
   anything outside the algorithm options (suite options not set by a label, ``steps``,
   ``eval_every``, ``eval_episodes``, ``device``, the environments, the seeds) and, for an algorithm
   option both sides share, a value that neither side's *definition* sets: its class's ``Config``
   defaults with the suite's defaults for that class, and the ``+key=value`` parts of its label
   (``preset=`` included). Options only one side's class has are that side's own. Where a run was
   made (``results_dir``), how often it checkpointed and its torch threads are not its protocol.
   ``allow_protocol_diff=True`` compares anyway, and the printout says so plainly;
2. per environment and in aggregate: the score difference X − Y with its 95% CI and the probability
   of improvement P(X > Y) with its 95% CI (rliable, stratified bootstrap, fixed seed);
3. the verdict, from the aggregate P(X > Y): ``better`` when its CI lies entirely above 0.5, ``worse``
   when entirely below, ``inconclusive`` otherwise, with the number of seeds per environment that
   would likely settle it; ``identical`` when the candidate's runs wrote exactly the baseline's
   episodes, evaluations and metrics (timing columns aside) on every environment and seed: the
   change never acted at this budget, and no number of seeds would separate them.
   Exit codes (``EXIT``): 0 better, 1 worse, 3 inconclusive, 4 identical; 2 is bad input or a
   refused protocol.
"""
from __future__ import annotations

import dataclasses
import json
import math
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, TextIO

import numpy as np
import pandas as pd

from analysis import stats
from analysis.load import AnalysisError, ResultsWarning, load_results, split_label, variant_overrides
from analysis.scores import random_scores, run_scores, score_sources, scoring
from analysis.tables import digits_for
from core.options import field_defaults, format_value
from core.results import NOT_PROTOCOL, same_learning

EXIT = {"better": 0, "worse": 1, "inconclusive": 3, "identical": 4}
MAX_SEEDS = 100          # past this, "more than 100 seeds" (the difference is too small to matter)
MIN_SEEDS = 2            # fewer runs per environment give a bootstrap with no spread


class ProtocolError(AnalysisError):
    """The two sides ran different protocols in a way nobody asked for (compare refuses)."""


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
class ProtocolDifference:
    """One resolved setting whose value differs between the candidate's and the baseline's runs."""
    setting: str             # steps, eval_every, device, algo.<option>, suite.<option>, environments, seeds
    candidate: str           # its value(s) in the candidate's runs, as text
    baseline: str
    asked: bool              # set by one side's definition (label, class defaults): a deliberate difference
    why: str                 # who asks for it, or why it is not the candidate's to change


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
    protocol: list[ProtocolDifference] = field(default_factory=list)   # every setting that differs
    protocol_overridden: bool = False                       # refused differences compared anyway (allow_protocol_diff)
    scores: Any = None                                      # the compared runs' scores (env, label, seed, score)

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
                                 stats.stratified_welch_interval(x, y), stats.poi_estimate(x, y, reps)))
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
            agg_diff = stats.stratified_welch_interval(nx, ny)
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


def mark_identical(comparison: Comparison, same: list, paired: int, whole: bool, whose: str, what: str) -> None:
    """``identical`` (exit 4) when ``whole`` (every paired run is in ``same``, and the two sides pair
    up exactly), else a note naming the runs that are: ``same`` are the (env, seed) pairs whose
    candidate run equals ``whose`` run in ``what``."""
    if whole and len(same) == paired:
        comparison.verdict = "identical"
        comparison.seeds_needed = None
        comparison.reason = (f"the candidate's runs are identical to {whose} on every environment and seed "
                             f"({paired} run(s): {what}): the change never acted at this budget")
    elif same:
        same = sorted(same)
        comparison.notes.append(f"{len(same)} of the {paired} paired run(s) are identical to {whose} "
                                f"(the change did not act there): "
                                + ", ".join(f"{e} seed {s}" for e, s in same[:5]) + (" ..." if len(same) > 5 else ""))


# ---------------------------------------------------------------------------------------
# the protocol: what both sides ran, and which differences were asked for

IGNORED_SETTINGS = NOT_PROTOCOL    # where and how fast, not what (core.results)
RUN_IDENTITY = ("suite", "env", "algo", "variant", "seed")            # compared by pairing runs
MISSING = "(not recorded)"


def _plain(value: Any) -> Any:
    """A value as read back from run.json (tuples become lists)."""
    return json.loads(json.dumps(value, default=str))


def protocol_settings(config: dict | None) -> dict[str, Any]:
    """A run's resolved config as flat protocol settings: the top-level keys but a run's identity
    and ``IGNORED_SETTINGS``, with ``algo_cfg`` / ``suite_cfg`` spread into ``algo.<option>`` /
    ``suite.<option>``."""
    out: dict[str, Any] = {}
    for key, value in (config or {}).items():
        if key in IGNORED_SETTINGS or key in RUN_IDENTITY:
            continue
        if key in ("algo_cfg", "suite_cfg") and isinstance(value, dict):
            prefix = "algo." if key == "algo_cfg" else "suite."
            out.update({prefix + k: _plain(v) for k, v in value.items()})
        else:
            out[key] = _plain(value)
    return out


def _text(value: Any) -> str:
    """A value as a label writes it (``format_value`` of the harness)."""
    return MISSING if value is MISSING else format_value(value)


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


@dataclass
class Definition:
    """What a label asks for: its algorithm class's options and defaults (with the suite's defaults
    for that class) and the options its ``+key=value`` parts (and ``preset=``) set."""
    label: str
    algo: str
    options: set[str] | None             # the class's Config fields (None: the class is not registered here)
    defaults: dict[str, Any]
    algo_set: dict[str, str]
    suite_set: dict[str, str]


def label_definition(label: str, suite: str) -> Definition:
    algo, top, algo_set, suite_set = candidate_overrides(label)
    options, defaults = None, {}
    try:
        import algos
        cls = algos.get(algo)
    except Exception:  # noqa: BLE001 - results outlive code: a label whose class is gone is judged on its runs
        cls = None
    suite_obj = None
    try:
        import suites
        suite_obj = suites.get(suite)
    except Exception:  # noqa: BLE001
        pass
    if cls is not None:
        options = {f.name for f in dataclasses.fields(cls.Config)}
        defaults = {k: _plain(v) for k, v in field_defaults(cls.Config).items() if v is not dataclasses.MISSING}
        if suite_obj is not None:
            resolve = getattr(suite_obj, "defaults_for", None)
            suite_defaults = resolve(cls) if callable(resolve) else suite_obj.algo_defaults.get(algo, {})
            defaults.update({k: _plain(v) for k, v in suite_defaults.items() if k in options})
    preset = top.get("preset")
    if preset is not None and suite_obj is not None:
        for key, value in getattr(suite_obj, "presets", {}).get(preset, {}).items():
            if key.startswith("algo.") and (options is None or key[5:] in options):
                algo_set.setdefault(key[5:], _text(value))
            elif key.startswith("suite."):
                suite_set.setdefault(key[6:], _text(value))
    return Definition(label, algo, options, defaults, algo_set, suite_set)


def _why_asked(setting: str, x: Definition, y: Definition, x_has: bool, y_has: bool,
               x_values: list[str] | None = None, y_values: list[str] | None = None) -> tuple[bool, str]:
    if setting.startswith("suite."):
        key = setting[6:]
        if x.suite_set.get(key) != y.suite_set.get(key):
            side = x if key in x.suite_set else y
            return True, f"set by {'the candidate' if side is x else 'the baseline'}'s label ({side.label})"
        return False, "a suite option neither label sets"
    if setting.startswith("algo."):
        key = setting[5:]
        x_own = key in x.options if x.options is not None else x_has
        y_own = key in y.options if y.options is not None else y_has
        if x_own and not y_own:
            return True, f"an option only the candidate's algorithm ({x.algo}) has"
        if y_own and not x_own:
            return True, f"an option only the baseline's algorithm ({y.algo}) has"
        if x.algo_set.get(key) != y.algo_set.get(key):
            side = x if key in x.algo_set else y
            return True, f"set by {'the candidate' if side is x else 'the baseline'}'s label ({side.label})"
        if key not in x.algo_set and x.defaults.get(key, MISSING) != y.defaults.get(key, MISSING):
            # only if each side's runs used its definition's value: a run stored before a default
            # was edited is not what the definition asks for now
            if (x_values is None or set(x_values) == {_text(x.defaults.get(key, MISSING))}) and (
                    y_values is None or set(y_values) == {_text(y.defaults.get(key, MISSING))}):
                return True, f"{x.algo}'s definition defaults to {_text(x.defaults.get(key, MISSING))}"
            return False, (f"the definitions default to {_text(x.defaults.get(key, MISSING))} (X) and "
                           f"{_text(y.defaults.get(key, MISSING))} (Y), but the stored runs used other values")
        return False, "neither side's definition sets it (label or class defaults)"
    if setting in ("environments", "seeds"):
        return False, "both sides must run the same environments and seeds"
    return False, "not an algorithm option: both sides must share it"


def protocol_differences(candidate: str, baseline: str, suite: str, x_configs: dict[tuple[str, int], dict],
                         y_configs: dict[tuple[str, int], dict]) -> list[ProtocolDifference]:
    """Every resolved setting that differs between the candidate's runs and the baseline's.
    ``x_configs`` / ``y_configs``: each side's run configs (``run.json`` ``config``) by (env, seed);
    runs are paired by (env, seed), and the environments and seeds themselves are compared too."""
    x_def, y_def = label_definition(candidate, suite), label_definition(baseline, suite)
    out: list[ProtocolDifference] = []
    x_envs, y_envs = {e for e, _ in x_configs}, {e for e, _ in y_configs}
    if x_envs != y_envs:
        out.append(ProtocolDifference("environments", ", ".join(sorted(x_envs)) or "none",
                                      ", ".join(sorted(y_envs)) or "none", False, ""))
    seeds_of = lambda configs, env: sorted(s for e, s in configs if e == env)  # noqa: E731
    uneven = [e for e in sorted(x_envs & y_envs) if seeds_of(x_configs, e) != seeds_of(y_configs, e)]
    if uneven:
        fmt = lambda configs: "; ".join(f"{e}: {','.join(map(str, seeds_of(configs, e)))}" for e in uneven)  # noqa: E731
        out.append(ProtocolDifference("seeds", fmt(x_configs), fmt(y_configs), False, ""))
    values: dict[str, tuple[list, list]] = {}
    for pair in sorted(set(x_configs) & set(y_configs)):
        xs, ys = protocol_settings(x_configs[pair]), protocol_settings(y_configs[pair])
        for setting in list(xs) + [k for k in ys if k not in xs]:
            xv, yv = xs.get(setting, MISSING), ys.get(setting, MISSING)
            if xv != yv:
                seen = values.setdefault(setting, ([], []))
                seen[0].append(_text(xv))
                seen[1].append(_text(yv))
    for setting, (xv, yv) in values.items():
        x_has = any(v != MISSING for v in xv)
        y_has = any(v != MISSING for v in yv)
        asked, why = _why_asked(setting, x_def, y_def, x_has, y_has, xv, yv)
        out.append(ProtocolDifference(setting, " | ".join(dict.fromkeys(xv)), " | ".join(dict.fromkeys(yv)), asked, why))
    for d in out:
        if not d.why:
            d.why = _why_asked(d.setting, x_def, y_def, True, True)[1]
    order = {"environments": 0, "seeds": 1}
    return sorted(out, key=lambda d: (order.get(d.setting, 2 if "." not in d.setting else 3), d.setting))


def format_protocol(diffs: list[ProtocolDifference], candidate: str, baseline: str) -> str:
    if not diffs:
        return "protocol: candidate and baseline ran the same resolved settings"
    lines = [f"protocol: {len(diffs)} resolved setting(s) differ between X = {candidate} and Y = {baseline}:"]
    header = ["setting", "X", "Y", ""]
    rows = [[d.setting, d.candidate, d.baseline, ("asked for: " if d.asked else "NOT ASKED FOR: ") + d.why]
            for d in diffs]
    widths = [max(len(r[i]) for r in [header] + rows) for i in range(3)]
    for row in [header] + rows:
        lines.append("  " + "  ".join(v.ljust(w) for v, w in zip(row[:3], widths)) + "  " + row[3])
    return "\n".join(lines).rstrip()


def refused(diffs: list[ProtocolDifference]) -> list[ProtocolDifference]:
    return [d for d in diffs if not d.asked]


def protocol_error(diffs: list[ProtocolDifference], candidate: str) -> ProtocolError:
    names = ", ".join(d.setting for d in refused(diffs))
    return ProtocolError(f"the candidate's and the baseline's runs differ in {names}, which {candidate} does not "
                         f"ask for (not in its label or its algorithm's defaults): not one protocol; compare them at "
                         f"one protocol (see ./run_all.sh compare help) or pass allow_protocol_diff=true to compare anyway")


# ---------------------------------------------------------------------------------------
# the comparison of stored runs

def _fmt(x: float, d: int, sign: bool = False) -> str:
    return f"{x:+.{d}f}" if sign else f"{x:.{d}f}"


def format_comparison(c: Comparison) -> str:
    lines = [f"compare: X = {c.candidate}  vs  Y = {c.baseline}   (suite {c.suite}, {len(c.envs)} environment(s), "
             f"{c.seeds} seed(s) each in the aggregate, {c.steps:,} steps)",
             f"score: {scoring(c.suite)['name']}; X − Y: Welch's 95% t interval (the aggregate's stratified over "
             f"environments); P(X > Y): 95% CI by stratified bootstrap (rliable, seed {stats.BOOTSTRAP_SEED})",
             format_protocol(c.protocol, c.candidate, c.baseline)]
    if c.protocol_overridden:
        lines.append(f"WARNING: NOT ONE PROTOCOL: X and Y also differ in {', '.join(d.setting for d in refused(c.protocol))}, "
                     f"which X does not ask for; compared anyway because allow_protocol_diff=true, so the numbers "
                     f"below do not isolate X's change")
    lines.append("")
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
    verdict = f"verdict: {c.verdict} — {c.reason}"
    if c.protocol_overridden:
        verdict += " (NOT one protocol: allow_protocol_diff=true)"
    lines += ["", verdict]
    return "\n".join(lines)


def _side(runs: pd.DataFrame, label: str, pairs: set[tuple[str, int]] | None) -> dict[tuple[str, int], dict]:
    mine = runs[runs["label"] == label]
    out = {(r["env"], int(r["seed"])): r for r in mine.to_dict("records")}
    return {k: v for k, v in out.items() if pairs is None or k in pairs}


def normalising_scores(suite: str, root: str | Path, envs: list[str], measure_random=None,
                       err: TextIO | None = None) -> dict[str, float] | None:
    """The per-environment scores the suite normalises by (None where it does not): the random
    policy's, cached under ``root`` (a results folder or an archive; measured where missing, each
    problem a note on ``err``), or Atari's published random scores."""
    if scoring(suite)["normalise"] == "random-best":
        random, problems = random_scores(root, suite, envs, measure_random)
        for p in problems:
            print(f"note: {p}", file=err or sys.stderr)
        return random
    if scoring(suite)["normalise"] == "human":
        from analysis.reference import atari49, atari_game
        table = atari49().set_index("game")
        return {e: float(table.loc[atari_game(e), "random"]) for e in envs if atari_game(e)}
    return None


def compare_stored(candidate: str, baseline: str, suite: str = "mujoco", results_dir: str | Path = "results",
                   pairs: set[tuple[str, int]] | None = None, steps: int | None = None,
                   reps: int = stats.DEFAULT_REPS, allow_protocol_diff: bool = False,
                   out: TextIO | None = None, err: TextIO | None = None,
                   measure_random: Callable[[str], dict] | None = None,
                   run_dirs: list[str | Path] | None = None) -> Comparison:
    """Compare the done runs of ``candidate`` and ``baseline`` at ``steps`` (default: the budget with
    the most done runs), on the (env, seed) ``pairs`` given (default: all), as the module docstring
    says; prints the protocol and the comparison to ``out``. ``run_dirs``: exactly these run folders
    (default: every run of the two labels under ``results_dir/suite``). Raises ``ProtocolError``
    (after printing the differing settings) when the protocols differ unasked and
    ``allow_protocol_diff`` is false, ``AnalysisError`` on bad input. Reads only; runs nothing."""
    out, err = out or sys.stdout, err or sys.stderr
    root = Path(results_dir)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResultsWarning)
        # the suite's own score: llm_toy and Atari score the last evaluation (evals.csv), not episodes
        results = load_results(root, suite, steps=steps, sources=score_sources(scoring(suite)["score"]),
                               labels=(candidate, baseline), run_dirs=run_dirs)
    runs = results.analysed if "analysed" in results.runs else results.runs
    x_runs, y_runs = _side(runs, candidate, pairs), _side(runs, baseline, pairs)
    if not y_runs:
        raise AnalysisError(f"baseline {baseline} has no done runs to compare in {root / suite}")
    if not x_runs:
        raise AnalysisError(f"candidate {candidate} has no done runs to compare in {root / suite}")
    steps = results.budgets.get(suite, steps)
    diffs = protocol_differences(candidate, baseline, suite, {k: r["config"] for k, r in x_runs.items()},
                                 {k: r["config"] for k, r in y_runs.items()})
    if refused(diffs) and not allow_protocol_diff:
        print(format_protocol(diffs, candidate, baseline), file=out)
        raise protocol_error(diffs, candidate)
    scores = run_scores(results, scoring(suite)["score"], suite)
    wanted = set(x_runs) | set(y_runs)
    scores = scores[scores.apply(lambda r: (r["env"], int(r["seed"])) in wanted, axis=1)]
    for label, side in ((baseline, y_runs), (candidate, x_runs)):
        if not (scores["label"] == label).any():
            raise AnalysisError(f"{label}'s {len(side)} done run(s) in {root / suite} have no score "
                                f"({scoring(suite)['name']})")
    random = normalising_scores(suite, root, sorted(set(scores["env"])), measure_random, err)
    comparison = compare_scores(scores, candidate, baseline, random, reps, suite, int(steps or 0))
    comparison.scores = scores
    comparison.protocol = diffs
    comparison.protocol_overridden = bool(refused(diffs))
    common = sorted(set(x_runs) & set(y_runs))
    same = [p for p in common if same_learning(Path(x_runs[p]["path"]), Path(y_runs[p]["path"]))]
    mark_identical(comparison, same, len(common), bool(common) and set(x_runs) == set(y_runs),
                   "the baseline's", "the same episodes, evaluations and update metrics, timing aside")
    print(format_comparison(comparison), file=out)
    return comparison
