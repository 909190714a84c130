"""Where the Atari learning benchmark stands: finished or still running, against CleanRL's PPO.

    .venv/bin/python bench/atari_learning_progress.py [results_dir] [--compare DIR ...] [--figure PNG]
        (default results/bench_atari_10M, the directory of `bash bench/atari_learning.sh`)

Runs checkpoint their CSVs as they go, so this reads runs that are still going or were
stopped as well as finished ones. Per run it prints the steps reached, the wall time, the
mean raw score of the last 100 training games (the paper's Table 6 metric, CleanRL's
reported score) and of all training games (the paper's Table 2 other metric), the mean per
window of steps, and the evaluations (full games, raw scores, the policy of
``suite.eval_policy``: sampled by default). The figure draws the
rolling 100-game mean against steps, with CleanRL's 10M-step score as the bar; --compare
adds the runs of other result directories (e.g. the 2M-step schedule) as dashed lines.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.locks import is_locked  # noqa: E402
from core.results import read_run_json  # noqa: E402
from harness.summary import LAST_EPISODES  # noqa: E402

# CleanRL ppo_atari_envpool.py at 10M steps, 3 seeds, mean ± std of the last-100-episode
# score over seeds; source: CleanRL's docs, https://docs.cleanrl.dev/rl-algorithms/ppo/,
# ppo_atari_envpool.py, "Experiment results" (Open RL Benchmark,
# openrlbenchmark/cleanrl/ppo_atari_envpool, tag pr-424).
CLEANRL_PPO_ENVPOOL_10M = {"Pong": (20.45, 0.09), "Breakout": (211.24, 151.84), "BeamRider": (2501.85, 210.52)}


def run_dirs(results_dir: Path) -> list[Path]:
    """Every run directory (holding episodes.csv) under results_dir/atari, in a stable order."""
    return sorted(p.parent for p in (results_dir / "atari").glob("*/*/seed*/episodes.csv"))


def run_progress(run_dir: Path, window: int) -> dict:
    episodes = pd.read_csv(run_dir / "episodes.csv")
    metrics = pd.read_csv(run_dir / "metrics.csv")
    evals = pd.read_csv(run_dir / "evals.csv") if (run_dir / "evals.csv").exists() else pd.DataFrame()
    record = read_run_json(run_dir) or {}
    last = metrics.iloc[-1]
    windows = episodes.groupby(episodes.global_step // window).episode_return.mean()
    return {
        "game": run_dir.parts[-3], "variant": run_dir.parts[-2], "seed": run_dir.name,
        # run.json says "running" until the run ends; a run whose sweep was stopped holds no lock
        "status": ("running" if is_locked(run_dir) else "stopped") if record.get("status") == "running"
        else record.get("status", "?"),
        "budget": record.get("config", {}).get("steps"),
        "step": int(last.global_step), "wall_h": float(last.wall_seconds) / 3600,
        "episodes": len(episodes),
        "last100": episodes.episode_return.tail(LAST_EPISODES).mean(),
        "all": episodes.episode_return.mean(),
        "windows": ", ".join(f"{w * window / 1e6:g}M: {v:.1f}" for w, v in windows.items()),
        "evals": ", ".join(f"{s / 1e6:.1f}M: {v:.1f}" for s, v in zip(evals.get("global_step", []),
                                                                    evals.get("eval_return_mean", []))),
    }


def print_table(rows: list[dict]) -> None:
    print(f"| game | run | status | steps / budget | wall (h) | games | last {LAST_EPISODES} | all training | "
          "CleanRL envpool 10M |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        ref = CLEANRL_PPO_ENVPOOL_10M.get(r["game"])
        ref_text = f"{ref[0]:.2f} ± {ref[1]:.2f}" if ref else "-"
        budget = f"{r['budget'] / 1e6:g}M" if r["budget"] else "?"
        print(f"| {r['game']} | {r['variant']} {r['seed']} | {r['status']} | {r['step'] / 1e6:.2f}M / {budget} | "
              f"{r['wall_h']:.2f} | {r['episodes']} | {r['last100']:.1f} | {r['all']:.1f} | {ref_text} |")
    for r in rows:
        print(f"\n{r['game']} {r['variant']} {r['seed']}\n  mean score per window: {r['windows']}\n"
              f"  evaluations: {r['evals']}")


def draw(results_dir: Path, compare: list[Path], figure: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    games = sorted({d.parts[-3] for d in run_dirs(results_dir)})
    fig, axes = plt.subplots(1, len(games), figsize=(5 * len(games), 3.6), squeeze=False)
    for ax, game in zip(axes[0], games):
        budgets = [0.0]
        for root, style in [(results_dir, "-")] + [(c, "--") for c in compare]:
            for run_dir in (d for d in run_dirs(root) if d.parts[-3] == game):
                e = pd.read_csv(run_dir / "episodes.csv")
                budget = (read_run_json(run_dir) or {}).get("config", {}).get("steps")
                budgets.append(budget or e.global_step.max())
                label = f"{run_dir.parts[-2]} {run_dir.name}, {budget / 1e6:g}M schedule" if budget else run_dir.name
                ax.plot(e.global_step / 1e6, e.episode_return.rolling(LAST_EPISODES, min_periods=10).mean(), style,
                        label=label)
        if game in CLEANRL_PPO_ENVPOOL_10M:
            mean, sd = CLEANRL_PPO_ENVPOOL_10M[game]
            ax.axhline(mean, color="gray", lw=0.8, ls=":", label="CleanRL ppo_atari_envpool at 10M (± sd)")
            ax.axhspan(mean - sd, mean + sd, color="gray", alpha=0.12)
        ax.set_xlim(0, max(budgets) / 1e6)  # the whole schedule, so a run stopped early shows where it stopped
        ax.set_title(game)
        ax.set_xlabel("environment steps (M)")
        ax.set_ylabel(f"raw score, mean of last {LAST_EPISODES} games")
        ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    figure.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(figure, dpi=110)
    print(f"\nfigure: {figure}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results_dir", nargs="?", type=Path, default=ROOT / "results" / "bench_atari_10M")
    parser.add_argument("--compare", type=Path, nargs="*", default=[], help="other result directories to draw")
    parser.add_argument("--figure", type=Path, help="where to write the learning-curve figure (PNG)")
    parser.add_argument("--window", type=int, default=1_000_000, help="steps per window of the per-window means")
    args = parser.parse_args()
    dirs = run_dirs(args.results_dir)
    if not dirs:
        sys.exit(f"no Atari runs under {args.results_dir}/atari (run bench/atari_learning.sh first)")
    print_table([run_progress(d, args.window) for d in dirs])
    if args.figure:
        draw(args.results_dir, args.compare, args.figure)


if __name__ == "__main__":
    main()
