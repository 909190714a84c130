"""The end-of-sweep table: each run's score per algorithm and environment, mean +- 95% CI over seeds.

The score is the suite's own (``analysis.scores.SUITE_SCORING``), the one the report and ``compare``
use: on MuJoCo the mean return of the last 100 training episodes, on Atari the last evaluation's
whole games, on the LLM suite the held-out gold score of the last evaluation (not the training
proxy)."""
from __future__ import annotations

import csv
import math
from collections import defaultdict

from harness.config import RunConfig
from core.results import is_done

LAST_EPISODES = 100  # the PPO paper's score: mean return of the last 100 training episodes


def final_return(run_dir) -> float | None:
    """Mean return of the run's last 100 training episodes (``episodes.csv``)."""
    return _last_column(run_dir / "episodes.csv", "episode_return", LAST_EPISODES)


def final_evaluation(run_dir) -> float | None:
    """The mean score of the run's last evaluation (``evals.csv``)."""
    return _last_column(run_dir / "evals.csv", "eval_return_mean", 1)


def _last_column(path, column: str, last: int) -> float | None:
    try:
        with open(path) as f:
            values = [float(row[column]) for row in csv.DictReader(f)]
    except (OSError, KeyError, ValueError):
        return None
    return sum(values[-last:]) / len(values[-last:]) if values else None


SCORERS = {"last100": final_return, "final_eval": final_evaluation}


def mean_ci95(values: list[float]) -> tuple[float, float]:
    """Mean and the half-width of its 95% Student-t confidence interval (NaN for one value: no interval)."""
    n = len(values)
    mean = sum(values) / n
    if n < 2:
        return mean, float("nan")
    from scipy.stats import t
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    return mean, float(t.ppf(0.975, n - 1) * sd / math.sqrt(n))


def summary_table(runs: list[RunConfig]) -> str:
    from analysis.scores import scoring
    suite = runs[0].suite if runs else "mujoco"
    kind = scoring(suite)
    score_of = SCORERS[kind["score"]]
    scores: dict[tuple[str, str], list[float]] = defaultdict(list)
    missing: dict[tuple[str, str], int] = defaultdict(int)
    for run in runs:
        value = score_of(run.run_dir) if is_done(run.run_dir) else None
        if value is None:
            missing[(run.label, run.env)] += 1
        else:
            scores[(run.label, run.env)].append(value)
    labels = list(dict.fromkeys(r.label for r in runs))
    envs = list(dict.fromkeys(r.env for r in runs))
    from analysis.tables import digits_for
    digits = digits_for(v for vs in scores.values() for v in vs)
    header = ["algorithm"] + envs
    rows = [header]
    for label in labels:
        row = [label]
        for env in envs:
            values = scores.get((label, env), [])
            if not values:
                row.append("-")
                continue
            mean, half = mean_ci95(values)
            d = digits
            cell = f"{mean:.{d}f}" + ("" if math.isnan(half) else f" ± {half:.{d}f}") + f" (n={len(values)})"
            if missing.get((label, env)):
                cell += f" [{missing[(label, env)]} not done]"
            row.append(cell)
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = [f"score: {kind['name']}; mean ± 95% CI over seeds"]
    for k, r in enumerate(rows):
        lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths)))
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)
