"""rliable, wrapped once with a fixed bootstrap seed so that every table is reproducible.

rliable passes one shape everywhere: ``{algorithm: scores[runs x tasks]}``. Its stratified bootstrap
draws resampling indices from NumPy's global generator, so each call here seeds that generator with
``BOOTSTRAP_SEED`` (and restores the caller's state afterwards): the same scores give the same CI,
whatever was computed before. Calling ``np.random.seed(BOOTSTRAP_SEED)`` and then
``rliable.library.get_interval_estimates({key: scores}, func, reps=reps)`` gives identical numbers.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Sequence

import math

import numpy as np
from rliable import library as rly
from rliable import metrics as rlm

BOOTSTRAP_SEED = 1707_06347      # the PPO paper's arXiv number: fixed, so every table is reproducible
DEFAULT_REPS = 2000              # bootstrap resamples (rliable's default for profiles; 50000 for aggregates)
CONFIDENCE = 0.95
AGGREGATES = ("median", "iqm", "mean", "optimality_gap")
AGGREGATE_NAMES = {"median": "Median", "iqm": "IQM", "mean": "Mean", "optimality_gap": "Optimality gap"}


@contextmanager
def fixed_seed(seed: int = BOOTSTRAP_SEED):
    """Seed NumPy's global generator (which rliable's bootstraps use) and restore it afterwards."""
    state = np.random.get_state()
    np.random.seed(seed % 2**32)
    try:
        yield
    finally:
        np.random.set_state(state)


def interval_estimate(scores: np.ndarray | Sequence[np.ndarray], func: Callable, reps: int = DEFAULT_REPS,
                      seed: int = BOOTSTRAP_SEED) -> tuple[np.ndarray, np.ndarray]:
    """Point estimate ``func(scores)`` and its 95% stratified-bootstrap percentile CI (rliable).

    ``scores``: one runs x tasks matrix, or a list of them for a ``func`` of several (resampled
    independently, e.g. a probability of improvement). Returns (point [k], ci [2, k])."""
    key = "x"
    with fixed_seed(seed):
        points, cis = rly.get_interval_estimates({key: scores if isinstance(scores, np.ndarray) else list(scores)},
                                                 func, reps=reps, confidence_interval_size=CONFIDENCE)
    point = np.atleast_1d(np.asarray(points[key], dtype=float))
    ci = np.asarray(cis[key], dtype=float).reshape(2, -1)
    return point, ci


def aggregate_metrics(scores: np.ndarray) -> np.ndarray:
    """[median, IQM, mean, optimality gap] of a runs x tasks matrix: rliable's ``aggregate_median``,
    ``aggregate_iqm`` (scipy's 25% trimmed mean of all runs), ``aggregate_mean`` and
    ``aggregate_optimality_gap`` (gamma 1), computed in one pass (rliable's take ~20x longer, and
    the bootstrap calls this thousands of times)."""
    task_means = scores.mean(axis=0)
    flat = np.sort(scores, axis=None)
    cut = int(0.25 * flat.size)                      # scipy.stats.trim_mean's cut on each side
    return np.array([np.median(task_means), flat[cut:flat.size - cut].mean(), task_means.mean(),
                     1.0 - np.minimum(scores, 1.0).mean()])


def aggregate_estimates(score_dict: dict[str, np.ndarray], reps: int = DEFAULT_REPS,
                        seed: int = BOOTSTRAP_SEED) -> dict[str, dict[str, tuple[float, float, float]]]:
    """``{label: {metric: (point, low, high)}}`` for the four aggregate metrics, one bootstrap per label."""
    out = {}
    for label, scores in score_dict.items():
        point, ci = interval_estimate(scores, aggregate_metrics, reps, seed)
        out[label] = {m: (float(point[i]), float(ci[0, i]), float(ci[1, i])) for i, m in enumerate(AGGREGATES)}
    return out


def task_means(scores: np.ndarray, reps: int = DEFAULT_REPS, seed: int = BOOTSTRAP_SEED) -> tuple[np.ndarray, np.ndarray]:
    """Per-task mean over runs and its CI (the stratified bootstrap resamples runs within each task)."""
    point, ci = interval_estimate(scores, lambda s: np.mean(s, axis=0), reps, seed)
    return point, ci


def probability_of_improvement(scores_x: np.ndarray, scores_y: np.ndarray) -> float:
    """P(X > Y): per task, the probability that a run of X scores higher than a run of Y (ties count
    half; the Mann-Whitney U statistic over n_x * n_y), averaged over tasks. Equal to
    ``rliable.metrics.probability_of_improvement``, vectorised (rliable calls scipy once per task)."""
    x = np.asarray(scores_x, dtype=float)[:, None, :]
    y = np.asarray(scores_y, dtype=float)[None, :, :]
    per_task = (x > y).mean(axis=(0, 1)) + 0.5 * (x == y).mean(axis=(0, 1))
    return float(np.mean(per_task))


def poi_estimate(scores_x: np.ndarray, scores_y: np.ndarray, reps: int = DEFAULT_REPS,
                 seed: int = BOOTSTRAP_SEED) -> tuple[float, float, float]:
    """P(X > Y) with its CI (X and Y resampled independently, stratified by task)."""
    point, ci = interval_estimate([scores_x, scores_y], probability_of_improvement, reps, seed)
    return float(point[0]), float(ci[0, 0]), float(ci[1, 0])


def poi_matrix(score_dict: dict[str, np.ndarray], reps: int = DEFAULT_REPS,
               seed: int = BOOTSTRAP_SEED) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """P(row > column) for every pair of labels, with CIs, from one rliable bootstrap in which every
    label's runs are resampled independently (so each pair's CI is that of its own bootstrap).

    Returns (labels, point [L, L], low [L, L], high [L, L]); the diagonal is 0.5."""
    labels = list(score_dict)
    arrays = [np.asarray(score_dict[k], dtype=float) for k in labels]
    n = len(labels)
    if n < 2:
        half = np.full((n, n), 0.5)
        return labels, half, half.copy(), half.copy()

    def matrix(*xs):
        if len({x.shape for x in xs}) == 1:       # vectorised over all pairs
            s = np.stack(xs)                           # [L, runs, tasks]
            a, b = s[:, None, :, None, :], s[None, :, None, :, :]
            per_task = (a > b).mean(axis=(2, 3)) + 0.5 * (a == b).mean(axis=(2, 3))
            return per_task.mean(axis=-1).ravel()
        out = np.full((n, n), 0.5)
        for i in range(n):
            for j in range(i + 1, n):
                p = probability_of_improvement(xs[i], xs[j])
                out[i, j], out[j, i] = p, 1.0 - p
        return out.ravel()

    point, ci = interval_estimate(arrays, matrix, reps, seed)
    return labels, point.reshape(n, n), ci[0].reshape(n, n), ci[1].reshape(n, n)


def performance_profiles(score_dict: dict[str, np.ndarray], taus: np.ndarray, reps: int = DEFAULT_REPS,
                         seed: int = BOOTSTRAP_SEED) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Run-score distributions (fraction of runs with score > tau) with CIs: {label: (profile, low, high)}."""
    taus = np.asarray(taus, dtype=float)

    def profile(scores, tau_list):          # rliable's score_distributions, vectorised
        return (np.asarray(scores).reshape(-1)[:, None] > np.asarray(tau_list)[None, :]).mean(axis=0)

    out = {}
    for label, scores in score_dict.items():
        with fixed_seed(seed):
            profiles, cis = rly.create_performance_profile({label: scores}, taus, custom_profile_func=profile,
                                                           reps=reps, confidence_interval_size=CONFIDENCE)
        out[label] = (np.asarray(profiles[label]), np.asarray(cis[label][0]), np.asarray(cis[label][1]))
    return out


def bootstrap_mean_band(values: np.ndarray, reps: int = 1000, seed: int = BOOTSTRAP_SEED) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean over seeds (axis 0) of a seeds x points matrix, and a 95% percentile bootstrap band over
    seeds (NaN-aware; with one seed the band is the mean itself). For learning curves."""
    values = np.asarray(values, dtype=float)
    with np.errstate(invalid="ignore"), _quiet():
        mean = np.nanmean(values, axis=0)
        if values.shape[0] < 2:
            return mean, mean.copy(), mean.copy()
        rng = np.random.default_rng(seed)
        idx = rng.integers(0, values.shape[0], size=(reps, values.shape[0]))
        boot = np.nanmean(values[idx], axis=1)                # [reps, points]
        low, high = np.nanpercentile(boot, [2.5, 97.5], axis=0)
    return mean, low, high


@contextmanager
def _quiet():
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


# ---------------------------------------------------------------------------------------
# bootstrap draws and rank correlation (analysis/paper.py: the paper's Table 1 and Figure 3)

def label_rng(seed: int, *names: str) -> np.random.Generator:
    """A generator fixed by ``seed`` and the names (a setting, an environment): each group's bootstrap
    draws are the same whatever else is in the table, and independent of the other groups'."""
    import zlib
    return np.random.default_rng([seed % 2**32, *(zlib.crc32(n.encode()) for n in names)])


def stratified_bootstrap_means(scores: np.ndarray, reps: int, rng: np.random.Generator,
                               expand: bool = False) -> np.ndarray:
    """[reps] means over runs x tasks of ``scores`` [runs, tasks], runs resampled with replacement
    within each task (rliable's stratified bootstrap, drawn from ``rng``).

    ``expand``: scale each task's resampled mean's deviation from the task mean by sqrt(n / (n - 1))
    (n runs), the small-sample correction of the "expanded" bootstrap: the plain bootstrap's variance
    of a mean of n runs is (n - 1) / n of the usual unbiased estimate, a third too small at 3 seeds."""
    scores = np.asarray(scores, dtype=float)
    runs, tasks = scores.shape
    idx = rng.integers(0, runs, size=(reps, runs, tasks))
    task_means = scores[idx, np.arange(tasks)].mean(axis=1)          # [reps, tasks]
    if expand and runs > 1:
        centre = scores.mean(axis=0)
        task_means = centre + np.sqrt(runs / (runs - 1)) * (task_means - centre)
    return task_means.mean(axis=1)


def satterthwaite_df(matrices: list[np.ndarray]) -> float:
    """The Welch-Satterthwaite degrees of freedom of the variance of a sum (or difference) of
    stratified means, each ``[runs, tasks]`` matrix a mean over its tasks of the mean over its runs:
    the variance's terms are each task's ``s2 / runs / tasks^2``, each with ``runs - 1`` degrees of
    freedom; df = (sum of terms)^2 / sum(term^2 / its df). Equal spreads everywhere give the sum of
    the terms' degrees of freedom (tasks x (runs - 1) for one matrix); unequal ones fewer. Infinite
    where nothing spreads (the interval is the point) or a matrix has one run."""
    terms, dfs = [], []
    for m in matrices:
        m = np.asarray(m, dtype=float)
        if m.shape[0] < 2:
            return math.inf
        terms.append(m.var(axis=0, ddof=1) / m.shape[0] / m.shape[1] ** 2)
        dfs.append(np.full(m.shape[1], m.shape[0] - 1.0))
    t, d = np.concatenate(terms), np.concatenate(dfs)
    if not np.any(t > 0):
        return math.inf
    return float(t.sum() ** 2 / np.sum(t ** 2 / d))


def small_sample_interval(scores: np.ndarray, reps: int, rng: np.random.Generator,
                          confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """The mean over runs x tasks of ``scores`` [runs, tasks] with an interval that keeps its level
    at a few runs a task: the expanded stratified bootstrap (``stratified_bootstrap_means(expand=True)``)
    read at the t-adjusted level for the Welch-Satterthwaite degrees of freedom
    (``t_adjusted_confidence``, ``satterthwaite_df``). rliable's plain percentile interval is a
    third too narrow in variance at 3 seeds and takes the normal quantile. (point, low, high)."""
    scores = np.asarray(scores, dtype=float)
    draws = stratified_bootstrap_means(scores, reps, rng, expand=True)
    low, high = percentile_interval(draws, t_adjusted_confidence(confidence, satterthwaite_df([scores])))
    return float(scores.mean()), low, high


def t_adjusted_confidence(confidence: float, df: float) -> float:
    """The normal-theory level whose quantile is Student's t quantile of ``confidence`` at ``df``
    degrees of freedom: 2 Phi(t_{(1+c)/2, df}) - 1. A percentile interval of expanded bootstrap
    draws (``stratified_bootstrap_means(expand=True)``: the variance corrected, the shape still
    normal) taken at this level has the t interval's width (Hesterberg's expanded percentile
    interval). With few seeds it matters: 7 environments x 3 seeds (df 14 at most) turn 95% into 96.8%;
    the normal quantile alone lets a 95% rule err about 7% of the time. ``df`` infinite or NaN:
    ``confidence`` itself."""
    if not math.isfinite(df) or df <= 0:
        return confidence
    from scipy.stats import norm, t as student_t
    return float(2 * norm.cdf(student_t.ppf((1 + confidence) / 2, df)) - 1)


def percentile_interval(draws: np.ndarray, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The central ``confidence`` percentile interval of bootstrap draws (NaN draws ignored)."""
    tail = 50.0 * (1.0 - confidence)
    low, high = np.nanpercentile(np.asarray(draws, dtype=float), [tail, 100.0 - tail])
    return float(low), float(high)


def kendall_tau_b(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's tau-b of ``x`` [..., n] against ``y`` [n] (or [..., n]), over the last axis:
    (concordant - discordant) / sqrt((n0 - ties_x) * (n0 - ties_y)), n0 = n(n-1)/2, where a pair tied
    in both counts in both tie counts (scipy.stats.kendalltau's default variant). Vectorised over the
    leading axes (bootstrap draws); NaN where either side is constant."""
    x = np.asarray(x, dtype=float)
    y = np.broadcast_to(np.asarray(y, dtype=float), x.shape)
    i, j = np.triu_indices(x.shape[-1], k=1)
    sx = np.sign(x[..., j] - x[..., i])
    sy = np.sign(y[..., j] - y[..., i])
    n0 = i.size
    untied_x = n0 - np.sum(sx == 0, axis=-1)
    untied_y = n0 - np.sum(sy == 0, axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.sum(sx * sy, axis=-1) / np.sqrt(untied_x * untied_y)


def welch_interval(x: np.ndarray, y: np.ndarray, confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """mean(x) - mean(y) with Welch's t interval (unequal variances, Welch-Satterthwaite degrees of
    freedom): ``stratified_welch_interval`` of one task. For two algorithms' seeds in one
    environment: with 3 seeds each, a percentile bootstrap of the difference calls equal algorithms
    different about one time in five at 95%; Welch's interval keeps to its level (for roughly normal
    returns). NaN ends with fewer than 2 values on a side; the point itself when both sides are
    constant."""
    return stratified_welch_interval(np.asarray(x, dtype=float), np.asarray(y, dtype=float), confidence)


def stratified_welch_interval(x: np.ndarray, y: np.ndarray, confidence: float = CONFIDENCE
                              ) -> tuple[float, float, float]:
    """The mean over tasks of mean(x) - mean(y), ``x`` [runs_x, tasks] and ``y`` [runs_y, tasks],
    with a t interval: the variance sum_t (s2_xt / n_x + s2_yt / n_y) / T^2 from each task's own
    spread, the Welch-Satterthwaite degrees of freedom of those 2T terms. One task: Welch's
    interval (``welch_interval``). compare's per-environment and normalised aggregate differences:
    a percentile bootstrap of them covers about 81% at 3 seeds a side where it says 95%. NaN ends
    with fewer than 2 runs on a side; the point itself when every task is constant on both sides."""
    from scipy.stats import t as student_t
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    x, y = (a[:, None] if a.ndim == 1 else a for a in (x, y))
    tasks = x.shape[1]
    diff = float(x.mean(axis=0).mean() - y.mean(axis=0).mean())
    if x.shape[0] < 2 or y.shape[0] < 2:
        return diff, float("nan"), float("nan")
    var = float((x.var(axis=0, ddof=1) / x.shape[0]).sum() + (y.var(axis=0, ddof=1) / y.shape[0]).sum()) / tasks ** 2
    if var == 0.0:
        return diff, diff, diff
    half = float(student_t.ppf(0.5 + confidence / 2.0, satterthwaite_df([x, y]))) * math.sqrt(var)
    return diff, diff - half, diff + half
