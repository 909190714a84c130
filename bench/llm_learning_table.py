"""Tables of the LLM toy suite's learning benchmark (``bench/llm_learning.sh``).

    .venv/bin/python bench/llm_learning_table.py [results_dir]     (default results/bench_llm)

Per task and algorithm, over seeds (mean ± sd): held-out score of the SFT start (the
evaluation at step 0) and at the end of training (sampled at temperature 1; greedy in
its own column), the best evaluation, KL to the reference at the end, and wall time per
run. The bars (issue 4), on the verifiable task: every algorithm ends above its start
(mean over seeds), and the best algorithm's end reaches at least 90% of the maximum.
On the preference task it also writes ``gold_vs_proxy.png``: gold and proxy
(reward-model) score against KL to the reference, every evaluation of every run.
"""
from __future__ import annotations

import csv
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.results import is_done  # noqa: E402
from suites.llm_toy.tasks import TASKS  # noqa: E402

ORDER = ("reinforce", "trpo", "ppo_clip", "ppo_kl", "grpo", "rloo", "dapo")


def read_evals(run_dir: Path) -> list[dict]:
    with open(run_dir / "evals.csv", newline="") as f:
        return [{k: float(v) for k, v in row.items() if v not in ("", None)} for row in csv.DictReader(f)]


def fmt(values: list[float], digits: int = 3) -> str:
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:.{digits}f}"
    return f"{statistics.mean(values):.{digits}f} ± {statistics.stdev(values):.{digits}f}"


def task_table(task_dir: Path) -> tuple[list[str], dict]:
    task = TASKS[task_dir.name]
    lines = [f"### task={task_dir.name} ({'verifiable: exact match' if task.verifiable else 'preference: gold score'}, "
             f"max {task.max_gold})", "",
             "| algorithm | seeds | steps | start (SFT) | end | end, greedy | best | KL to ref at end | "
             "wall per run (min) | above start |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|:---:|"]
    summary = {}
    algo_dirs = sorted((p for p in task_dir.iterdir() if p.is_dir()),
                       key=lambda p: (ORDER.index(p.name) if p.name in ORDER else len(ORDER), p.name))
    for algo_dir in algo_dirs:
        starts, ends, greedy, best, kls, walls, steps = [], [], [], [], [], [], set()
        for seed_dir in sorted(algo_dir.glob("seed*")):
            if not is_done(seed_dir):
                continue
            evals = read_evals(seed_dir)
            record = json.loads((seed_dir / "run.json").read_text())
            starts.append(evals[0]["eval_return_mean"])
            ends.append(evals[-1]["eval_return_mean"])
            greedy.append(evals[-1]["eval_greedy_return"])
            best.append(max(e["eval_return_mean"] for e in evals))
            kls.append(evals[-1]["eval_kl_ref"])
            walls.append(record.get("wall_seconds", float("nan")) / 60)
            steps.add(int(evals[-1]["global_step"]))
        if not ends:
            continue
        above = statistics.mean(ends) > statistics.mean(starts)
        summary[algo_dir.name] = {"start": statistics.mean(starts), "end": statistics.mean(ends), "above": above}
        lines.append(f"| {algo_dir.name} | {len(ends)} | {','.join(map(str, sorted(steps)))} | {fmt(starts)} | "
                     f"{fmt(ends)} | {fmt(greedy)} | {fmt(best)} | {fmt(kls, 2)} | {fmt(walls, 1)} | "
                     f"{'yes' if above else 'NO'} |")
    if task.verifiable and summary:
        best_algo = max(summary, key=lambda a: summary[a]["end"])
        every = all(s["above"] for s in summary.values())
        reach = summary[best_algo]["end"] >= 0.9 * task.max_gold
        lines += ["", f"Bars: every algorithm above its SFT start: {'met' if every else 'NOT met'}; best "
                  f"({best_algo}, {summary[best_algo]['end']:.3f}) >= 90% of the maximum: {'met' if reach else 'NOT met'}."]
    return lines, summary


def gold_vs_proxy(task_dir: Path, out: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharex=True)
    for algo_dir in sorted(p for p in task_dir.iterdir() if p.is_dir()):
        rows = [e for seed_dir in sorted(algo_dir.glob("seed*")) if (seed_dir / "evals.csv").exists()
                for e in read_evals(seed_dir)]
        kl = [r["eval_kl_ref"] for r in rows]
        axes[0].scatter(kl, [r["eval_return_mean"] for r in rows], s=12, label=algo_dir.name)
        axes[1].scatter(kl, [r["eval_proxy_reward"] for r in rows], s=12, label=algo_dir.name)
    axes[0].set(xlabel="KL(pi || pi_SFT) per completion (nats)", ylabel="gold score (held out)", title="gold")
    axes[1].set(xlabel="KL(pi || pi_SFT) per completion (nats)", ylabel="reward-model score", title="proxy")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    print(f"\nwritten: {out}")


def main() -> None:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "results" / "bench_llm") / "llm_toy"
    for task_dir in sorted(p for p in root.iterdir() if p.is_dir() and p.name in TASKS):
        lines, _ = task_table(task_dir)
        print("\n".join(lines) + "\n")
        if not TASKS[task_dir.name].verifiable:
            gold_vs_proxy(task_dir, root.parent / "gold_vs_proxy.png")


if __name__ == "__main__":
    main()
