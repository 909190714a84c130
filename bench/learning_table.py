"""The learning benchmark's table: pg-arena at the paper's budget against CleanRL's PPO.

    .venv/bin/python bench/learning_table.py [results_dir]     (default results/bench)

Score of a run: the mean return of its last 100 training episodes (the PPO paper's and
Open RL Benchmark's metric); then mean and standard deviation over seeds, as CleanRL
reports. The bar (issue 2): not below CleanRL's mean minus one standard deviation, applied only to
runs of CleanRL's budget (1M steps; at another budget "bar met" says "not compared").
"""
from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.results import is_done  # noqa: E402
from harness.summary import final_return  # noqa: E402
# CleanRL's published PPO numbers live once, with their source, in analysis/reference.py.
from analysis.reference import CLEANRL_PPO_STEPS, cleanrl_ppo  # noqa: E402


def main() -> None:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "results" / "bench") / "mujoco"
    print("| env | algorithm | seeds | steps | score (mean ± sd over seeds) | per seed | CleanRL PPO | bar met | "
          "wall per run (min) |")
    print("|---|---|---:|---:|---:|---|---:|:---:|---:|")
    for env_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        for algo_dir in sorted(p for p in env_dir.iterdir() if p.is_dir()):
            scores, walls, steps = [], [], set()
            for seed_dir in sorted(algo_dir.glob("seed*")):
                if not is_done(seed_dir):
                    continue
                record = json.loads((seed_dir / "run.json").read_text())
                scores.append(final_return(seed_dir))
                walls.append(record.get("wall_seconds", float("nan")) / 60)
                steps.add(record["config"]["steps"])
            if not scores:
                continue
            mean = statistics.mean(scores)
            sd = statistics.stdev(scores) if len(scores) > 1 else float("nan")
            ref = cleanrl_ppo(env_dir.name)
            ref_text = f"{ref[0]:.0f} ± {ref[1]:.0f}" if ref else "-"
            met = ("yes" if mean >= ref[0] - ref[1] else "no") if ref and algo_dir.name.startswith("ppo_clip") else ""
            if met and steps != {CLEANRL_PPO_STEPS}:
                met = f"not compared (CleanRL: {CLEANRL_PPO_STEPS:,} steps)"
            per_seed = ", ".join(f"{s:.0f}" for s in scores)
            print(f"| {env_dir.name} | {algo_dir.name} | {len(scores)} | {','.join(map(str, sorted(steps)))} | "
                  f"{mean:.0f} ± {sd:.0f} | {per_seed} | {ref_text} | {met} | {statistics.mean(walls):.1f} |")


if __name__ == "__main__":
    main()
