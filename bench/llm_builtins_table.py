"""The seven built-in algorithms against each other on the LLM toy suite (issue 31), from the archive.

    .venv/bin/python bench/llm_builtins_table.py [ARCHIVE] [--tasks sort,keywords,add] [--out FILE.md]

ARCHIVE (default ``docs/llm_toy/archive``, made by ``bash bench/llm_archive.sh``) holds 5 seeds of
each built-in per task at ``scale=quick``; nothing trains here. Per task, two tables:

1. each algorithm's held-out score at the end (sampled, temperature 1) with its 95% t interval over
   seeds, on a task with a generalisation set (``add``) the score on inputs longer than any in
   training, and at the end of training (mean over the last quarter of the updates, then over seeds)
   the dynamics the variants table shows (entropy, response length, clipped fraction, KL to the
   reference), with the training time per run (``training_minutes``: two runs at a time on 2 cores);
2. every pair: P(row > column) with compare's verdict on the two sides' scores
   (``analysis.compare.compare_scores``, the function ``./run_all.sh compare`` calls: ▲ ``better``,
   ▼ ``worse`` when the 95% CI of P(X > Y) excludes 0.5, nothing when inconclusive).

The 21 pairs per task are 21 tests at 95% each: the matrix does not control the family-wise error
(``compare ... seeds=auto`` on one pair does); read a lone ▲ among many blanks with that in mind.
"""
from __future__ import annotations

import argparse
import itertools
import sys
import warnings
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from analysis.archive import load_archive  # noqa: E402
from analysis.compare import compare_scores  # noqa: E402
from analysis.load import ResultsWarning  # noqa: E402
from analysis.scores import run_scores, scoring  # noqa: E402
from harness.summary import mean_ci95  # noqa: E402
from bench.llm_variants_table import DYNAMICS, TASKS, cell, emit, end_dynamics  # noqa: E402

SUITE = "llm_toy"
# the paper's order of the PPO family, then the critic-free ones
ORDER = ("reinforce", "trpo", "ppo_clip", "ppo_kl", "grpo", "rloo", "dapo")
MARK = {"better": " ▲", "worse": " ▼"}


def training_minutes(frame: pd.DataFrame) -> pd.Series:
    """Per label and task: a run's updates times its median update (collection + update seconds, the
    evaluations left out), then the mean over seeds. Not the runs' recorded wall time: the archive's
    runs were made in a background sweep that was paused (SIGSTOP) while benchmarks ran alone, and a
    pause lands inside an update; the median update does not see it."""
    rows = frame[frame["metric"].isin(("collect_seconds", "update_seconds"))].astype({"label": str, "env": str})
    per_update = rows.groupby(["label", "env", "seed", "step"], observed=True)["value"].sum()
    per_run = per_update.groupby(["label", "env", "seed"], observed=True).agg(lambda v: v.median() * len(v))
    return per_run.groupby(["label", "env"], observed=True).mean() / 60


def longer_inputs(frame: pd.DataFrame) -> pd.Series:
    """Per label and task: the held-out gold score on inputs longer than any in training
    (``eval_long_return``, tasks with a generalisation set, e.g. ``add``) at each run's last
    evaluation, mean over seeds."""
    rows = frame[frame["metric"] == "eval_long_return"].astype({"label": str, "env": str})
    last = rows[rows["step"] == rows.groupby(["label", "env", "seed"], observed=True)["step"].transform("max")]
    return last.groupby(["label", "env"], observed=True)["value"].mean()


def sft_start(frame: pd.DataFrame, task: str) -> float:
    """The held-out score of the SFT warm start every run begins from: the evaluation at step 0,
    mean over the task's runs."""
    rows = frame[(frame["metric"] == "eval_return_mean") & (frame["env"].astype(str) == task) & (frame["step"] == 0)]
    return float(rows["value"].mean())


def task_tables(scores: pd.DataFrame, dynamics: pd.DataFrame, walls: pd.Series, longer: pd.Series,
                start: float, task: str) -> list[str]:
    here = scores[scores["env"] == task]
    has_longer = any(k[1] == task for k in longer.index)
    labels = [a for a in ORDER if (here["label"] == a).any()]
    labels += sorted(set(here["label"]) - set(labels))
    seeds = ", ".join(f"{a} {int((here['label'] == a).sum())}" for a in labels)
    lines = [f"**task={task}**: the built-ins at the end (seeds: {seeds}; the SFT start scores {start:.3f})",
             "", "| algorithm | score [95% CI] | " + ("longer inputs | " if has_longer else "")
             + " | ".join(DYNAMICS) + " | training per run (min) |",
             "|---|---:|" + "---:|" * (len(DYNAMICS) + has_longer) + "---:|"]
    for a in labels:
        mean, half = mean_ci95(here[here["label"] == a]["score"].tolist())
        lines.append(f"| {a} | {mean:.3f} [{mean - half:.3f}, {mean + half:.3f}] | "
                     + (f"{cell(longer, (a, task))} | " if has_longer else "")
                     + " | ".join(cell(dynamics, (a, task), m, 2 if m != "kl_ref" else 3) for m in DYNAMICS)
                     + f" | {cell(walls, (a, task), digits=1)} |")
    lines += ["", f"P(row > column) on task={task}, ▲/▼ where compare's verdict is better/worse:", "",
              "| | " + " | ".join(labels) + " |", "|---|" + ":---:|" * len(labels)]
    verdicts = {}
    for x, y in itertools.permutations(labels, 2):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResultsWarning)
            verdicts[x, y] = compare_scores(here, x, y, suite=SUITE)
    for x in labels:
        row = []
        for y in labels:
            if x == y:
                row.append("–")
                continue
            c = verdicts[x, y]
            row.append(f"{c.poi[0]:.2f}{MARK.get(c.verdict, '')}")
        lines.append(f"| **{x}** | " + " | ".join(row) + " |")
    wins = {x: sum(verdicts[x, y].verdict == "better" for y in labels if y != x) for x in labels}
    losses = {x: sum(verdicts[x, y].verdict == "worse" for y in labels if y != x) for x in labels}
    lines += ["", "Better than / worse than (of the others): "
              + ", ".join(f"{x} {wins[x]}/{losses[x]}" for x in labels) + ".", ""]
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("archive", type=Path, nargs="?", default=ROOT / "docs" / "llm_toy" / "archive")
    ap.add_argument("--tasks", default=",".join(TASKS), help="comma-separated (default: %(default)s)")
    ap.add_argument("--out", type=Path, default=None, help="also write the tables to this markdown file")
    args = ap.parse_args()
    summary = load_archive(args.archive)
    scores = run_scores(summary, scoring(SUITE)["score"], SUITE)
    dynamics, walls = end_dynamics(summary.frame), training_minutes(summary.frame)
    longer = longer_inputs(summary.frame)
    shown = args.archive.resolve()
    shown = shown.relative_to(ROOT) if shown.is_relative_to(ROOT) else shown
    lines = [f"Held-out score: {scoring(SUITE)['name']}. Archive: {shown}.", ""]
    for task in args.tasks.split(","):
        if not (scores["env"] == task).any():
            raise SystemExit(f"the archive holds no run on task={task}; tasks it holds: "
                             f"{', '.join(sorted(set(scores['env'])))}")
        lines += task_tables(scores, dynamics, walls, longer, sft_start(summary.frame, task), task)
    emit("\n".join(lines), args.out)


if __name__ == "__main__":
    main()
