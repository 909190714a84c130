"""The end-of-sweep table: final return per algorithm and environment, mean +- 95% CI over seeds."""
from __future__ import annotations

import csv
import math
from collections import defaultdict

from harness.config import RunConfig
from core.results import is_done

LAST_EPISODES = 100  # the PPO paper's score: mean return of the last 100 training episodes


def final_return(run_dir) -> float | None:
    try:
        with open(run_dir / "episodes.csv") as f:
            returns = [float(row["episode_return"]) for row in csv.DictReader(f)]
    except (OSError, KeyError, ValueError):
        return None
    return sum(returns[-LAST_EPISODES:]) / len(returns[-LAST_EPISODES:]) if returns else None


def mean_ci95(values: list[float]) -> tuple[float, float]:
    """Mean and the half-width of its 95% Student-t confidence interval (0 for one value)."""
    n = len(values)
    mean = sum(values) / n
    if n < 2:
        return mean, float("nan")
    from scipy.stats import t
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    return mean, float(t.ppf(0.975, n - 1) * sd / math.sqrt(n))


def summary_table(runs: list[RunConfig]) -> str:
    scores: dict[tuple[str, str], list[float]] = defaultdict(list)
    missing: dict[tuple[str, str], int] = defaultdict(int)
    for run in runs:
        value = final_return(run.run_dir) if is_done(run.run_dir) else None
        if value is None:
            missing[(run.label, run.env)] += 1
        else:
            scores[(run.label, run.env)].append(value)
    labels = list(dict.fromkeys(r.label for r in runs))
    envs = list(dict.fromkeys(r.env for r in runs))
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
            cell = f"{mean:.1f}" + ("" if math.isnan(half) else f" ± {half:.1f}") + f" (n={len(values)})"
            if missing.get((label, env)):
                cell += f" [{missing[(label, env)]} not done]"
            row.append(cell)
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = ["final return (mean of the last 100 training episodes; mean ± 95% CI over seeds)"]
    for k, r in enumerate(rows):
        lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths)))
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)
