"""DAPO's clip-higher on the LLM toy suite, against GRPO (the effect of the DAPO paper's Figure 2).

    .venv/bin/python bench/llm_clip_higher.py [results_dir] [--task sort] [--out docs/llm_clip_higher.png]

Reads the runs of ``bench/llm_learning.sh`` (``<results_dir>/llm_toy/<task>/{grpo,dapo}/seed*``)
(and the symmetric-clip arm ``dapo+clip_eps_high=0.2``: DAPO's schedule without clip-higher) and
draws, per update and over seeds (mean and 95% t-interval): the policy's entropy on its own
training batch, and the low- and high-side clip fractions (``clip_fraction_low``: share of
tokens with ratio < 1 - eps_low and A < 0; ``clip_fraction_high``: ratio > 1 + eps_high and
A > 0). It prints a table of both, averaged over windows of training, for docs/BENCHMARKS.md.
"""
from __future__ import annotations

import argparse
import csv
import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.results import is_done  # noqa: E402
from harness.summary import mean_ci95  # noqa: E402

# GRPO (one update per batch: its ratio stays 1), DAPO, and DAPO without clip-higher on DAPO's own
# schedule (eps_high = eps_low = 0.2): the last pair isolates the asymmetric clip from the extra updates.
ALGOS = ("grpo", "dapo", "dapo+clip_eps_high=0.2")
SERIES = ("entropy", "clip_fraction_low", "clip_fraction_high")
WINDOWS = 4      # the table's windows of training (quarters)


def read_metrics(run_dir: Path) -> list[dict[str, float]]:
    with open(run_dir / "metrics.csv", newline="") as f:
        return [{k: float(v) for k, v in row.items() if v not in ("", None)} for row in csv.DictReader(f)]


def runs_of(task_dir: Path, algo: str) -> list[list[dict[str, float]]]:
    return [read_metrics(d) for d in sorted((task_dir / algo).glob("seed*")) if is_done(d)]


def window_means(rows: list[dict[str, float]], key: str) -> list[float]:
    """The mean of ``key`` over each of WINDOWS equal parts of a run's updates."""
    values = [r[key] for r in rows if key in r and not math.isnan(r[key])]
    if not values:
        return [math.nan] * WINDOWS
    size = len(values) / WINDOWS
    return [statistics.mean(values[int(i * size):max(int((i + 1) * size), int(i * size) + 1)]) for i in range(WINDOWS)]


def table(task_dir: Path) -> str:
    lines = ["| algorithm | seeds | series | " + " | ".join(f"updates {i + 1}/{WINDOWS}" for i in range(WINDOWS)) + " |",
             "|---|---:|---|" + "---:|" * WINDOWS]
    for algo in ALGOS:
        runs = runs_of(task_dir, algo)
        for key in SERIES:
            per_run = [window_means(rows, key) for rows in runs]
            if not per_run or all(math.isnan(v) for w in per_run for v in w):
                continue
            cells = []
            for i in range(WINDOWS):
                m, h = mean_ci95([w[i] for w in per_run])
                cells.append(f"{m:.4f}" + ("" if math.isnan(h) else f" ± {h:.4f}"))
            lines.append(f"| {algo} | {len(runs)} | {key} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def rolling_mean(values, window: int):
    """Each run's series (rows) averaged over the last ``window`` updates (shorter at the start)."""
    import numpy as np
    cumulative = np.cumsum(values, axis=1)
    out = cumulative.copy()
    out[:, window:] = cumulative[:, window:] - cumulative[:, :-window]
    counts = np.minimum(np.arange(1, values.shape[1] + 1), window)
    return out / counts


def figure(task_dir: Path, out: Path, smooth: int = 10) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for algo, colour in zip(ALGOS, ("tab:blue", "tab:red", "tab:green")):
        runs = runs_of(task_dir, algo)
        if not runs:
            continue
        length = min(len(r) for r in runs)
        steps = np.array([r["global_step"] for r in runs[0][:length]])
        for ax, key, style in ((axes[0], "entropy", "-"), (axes[1], "clip_fraction_low", "--"),
                               (axes[1], "clip_fraction_high", "-")):
            if not all(key in r[0] for r in runs):
                continue
            values = rolling_mean(np.array([[row[key] for row in r[:length]] for r in runs]), smooth)
            mean = values.mean(0)
            half = np.nan_to_num([mean_ci95(list(values[:, j]))[1] for j in range(length)])   # one run: no band
            label = f"{algo}" if key == "entropy" else f"{algo} {key.rsplit('_', 1)[1]}"
            ax.plot(steps, mean, style, color=colour, label=label)
            ax.fill_between(steps, mean - half, mean + half, color=colour, alpha=0.2)
    axes[0].set(xlabel="completions sampled", ylabel="entropy per token (nats)",
                title="policy entropy on its training batch")
    axes[1].set(xlabel="completions sampled", ylabel="share of tokens clipped",
                title="clip fractions: low side (--), high side (-)")
    for ax in axes:
        ax.legend()
    fig.suptitle(f"task={task_dir.name}: mean and 95% CI over seeds, each run a rolling mean over {smooth} updates")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    print(f"written: {out}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results_dir", nargs="?", default=str(ROOT / "results" / "bench_llm"))
    parser.add_argument("--task", default="sort")
    parser.add_argument("--out", default=None, help="figure path (default <results_dir>/llm_clip_higher.png)")
    parser.add_argument("--smooth", type=int, default=10, help="rolling mean over this many updates per run")
    args = parser.parse_args()
    task_dir = Path(args.results_dir) / "llm_toy" / args.task
    if not task_dir.is_dir():
        sys.exit(f"error: no runs under {task_dir}; run bash bench/llm_learning.sh {args.results_dir} first")
    print(table(task_dir))
    figure(task_dir, Path(args.out) if args.out else Path(args.results_dir) / "llm_clip_higher.png", args.smooth)


if __name__ == "__main__":
    main()
