"""Is a run trained in a stack the same run as alone? Seeds batched against seeds alone.

    OMP_NUM_THREADS=1 .venv/bin/python bench/batched_equivalence.py [--env Hopper-v5]
        [--algo ppo_clip] [--seeds 5] [--steps 100000] [--results-dir results/bench_equivalence]

Trains seeds 0..seeds-1 twice from empty folders: each run alone (``batch_runs=1 jobs=2``) and
all of them as one stack (``batch_runs=<seeds> jobs=1``). Since a lone run trains as a stack of
one, the two are bit-identical (tests/test_invariance.py) and both tests below must find the same
samples; the script was written when the two engines followed their own trajectories after the
first update (MuJoCo amplifies a 1e-7 difference in the weights into another episode within a
few hundred steps) and the question was whether they draw runs from the same distribution.

Per run: the final return (mean of the last 100 training episodes, the score of every table
here) and the mean return over all training episodes (the area under the learning curve).
For each, the two samples (alone, batched) are compared with Welch's t-test (unequal
variances) and the Mann-Whitney U test (two-sided, exact for small samples); "the same" means
neither rejects at the 5% level. With 5 seeds a side these tests detect only large
differences (about 2 standard deviations of the seed spread for 80% power): a check that the
engine has no gross effect, not a proof of equality.
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import pandas as pd
from scipy import stats

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.results import is_done  # noqa: E402
from harness.summary import final_return  # noqa: E402


def sweep(env_id: str, algo: str, seeds: int, steps: int, results_dir: Path, batch_runs: int, jobs: int) -> None:
    shutil.rmtree(results_dir, ignore_errors=True)
    words = ["suite=mujoco", f"algo={algo}", f"env={env_id}", f"seeds={seeds}", f"steps={steps}", f"jobs={jobs}",
             f"batch_runs={batch_runs}", f"results_dir={results_dir}", "report=false"]
    done = subprocess.run([sys.executable, "-m", "harness.cli", *words], cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"sweep failed ({' '.join(words)}):\n{done.stderr[-2000:]}")


def scores(results_dir: Path) -> tuple[list[float], list[float]]:
    finals, means = [], []
    for run_dir in sorted(results_dir.glob("mujoco/*/*/seed*"), key=lambda p: int(p.name[4:])):
        assert is_done(run_dir), run_dir
        finals.append(final_return(run_dir))
        means.append(float(pd.read_csv(run_dir / "episodes.csv")["episode_return"].mean()))
    return finals, means


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="Hopper-v5")
    parser.add_argument("--algo", default="ppo_clip")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--results-dir", default="results/bench_equivalence")
    args = parser.parse_args()
    root = Path(args.results_dir)
    sweep(args.env, args.algo, args.seeds, args.steps, root / "alone", 1, 2)
    sweep(args.env, args.algo, args.seeds, args.steps, root / "batched", args.seeds, 1)
    alone, batched = scores(root / "alone"), scores(root / "batched")
    print(f"{args.algo} on {args.env}, {args.steps:,} steps, seeds 0..{args.seeds - 1}: alone (batch_runs=1) "
          f"against one stack of {args.seeds} (batch_runs={args.seeds})\n")
    print("| score | alone: per seed | batched: per seed | alone mean ± sd | batched mean ± sd | "
          "Welch t-test p | Mann-Whitney U p | same at 5% |")
    print("|---|---|---|---|---|---:|---:|:---:|")
    for name, a, b in (("final return (last 100 episodes)", alone[0], batched[0]),
                       ("mean return over training", alone[1], batched[1])):
        welch = stats.ttest_ind(a, b, equal_var=False).pvalue
        mwu = stats.mannwhitneyu(a, b, alternative="two-sided").pvalue
        print(f"| {name} | {', '.join(f'{x:.0f}' for x in a)} | {', '.join(f'{x:.0f}' for x in b)} | "
              f"{statistics.mean(a):.0f} ± {statistics.stdev(a):.0f} | {statistics.mean(b):.0f} ± "
              f"{statistics.stdev(b):.0f} | {welch:.2f} | {mwu:.2f} | {'yes' if min(welch, mwu) >= 0.05 else 'no'} |")


if __name__ == "__main__":
    main()
