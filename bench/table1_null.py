"""How often the report's Table 1 conclusions are wrong when every setting is equally good.

    OMP_NUM_THREADS=1 .venv/bin/python bench/table1_null.py [--datasets 200] [--seeds 3]
        [--envs 7] [--reps 2000] [--noise 0.3 | --spreads measured]

Synthetic Table 1 data sets where the truth is known, ``--datasets`` of each kind, ``--seeds``
seeds on each of ``--envs`` environments, every run drawn around its setting's level with normal
noise in units of the environment's scale (random policy 0, a good score 1): ``--noise`` on every
environment alike, or with ``--spreads measured`` each environment's own, as the paper's archive
measured it (``MEASURED_SPREADS``: a few environments carry the variance, as in real runs):

  equal     the 11 settings at one level (1): every "holds" or "does not hold" of the four
            comparisons (best_clip, worst_noclip, adaptive_below_clip, kl_below_clip) is false,
            and so is a "holds" of noclip_below_random;
  at random no clipping at the random policy's level (0), the others at 1: every "holds" or
            "does not hold" of noclip_below_random is false.

Each data set goes through ``analysis.paper.table1_verdicts`` exactly as the report runs it
(``--reps`` bootstrap resamples). Prints, per conclusion, the share of false claims with its
Wilson 95% interval; the rules aim at 5% each.
"""
from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from analysis import paper  # noqa: E402
from analysis.reference import TABLE1  # noqa: E402
from suites.mujoco import PAPER_ENVS  # noqa: E402


# Each environment's run-to-run spread of the normalised score (random 0, best Table 1 setting 1): the
# median over the paper archive's 18 settings of the standard deviation over 3 seeds at 1M steps
# (docs/paper_mujoco/run_scores.csv, 2026-12-07). InvertedPendulum's runs all reach 1000.
MEASURED_SPREADS = {"HalfCheetah-v5": 0.148, "Hopper-v5": 0.148, "InvertedDoublePendulum-v5": 0.044,
                    "InvertedPendulum-v5": 0.0, "Reacher-v5": 0.008, "Swimmer-v5": 0.142, "Walker2d-v5": 0.152}


def null_dataset(rng: np.random.Generator, envs: list[str], seeds: int, noise: dict[str, float],
                 random: dict[str, float], scale: dict[str, float], noclip_level: float) -> pd.DataFrame:
    """Every Table 1 setting 1 scale above the random policy on every environment, but no clipping
    at ``noclip_level``; ``noise``: each environment's spread, in units of its scale."""
    rows = []
    for r in TABLE1:
        level = noclip_level if r.name == paper.NO_CLIP else 1.0
        algo, _, rest = r.label.partition("+")
        for env in envs:
            for seed, z in enumerate(rng.standard_normal(seeds)):
                rows.append({"suite": "mujoco", "env": env, "algo": algo, "variant": f"+{rest}" if rest else "",
                             "label": r.label, "seed": seed,
                             "score": random[env] + scale[env] * (level + noise[env] * z)})
    return pd.DataFrame(rows)


def wilson(k: int, n: int) -> tuple[float, float]:
    """The Wilson 95% interval of a proportion k / n."""
    z = 1.959963984540054
    p = k / n
    centre, half = (p + z * z / (2 * n)) / (1 + z * z / n), z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", type=int, default=200)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--envs", type=int, default=7, help="the first N of the paper's environments")
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--noise", type=float, default=0.3, help="run-to-run spread, in units of the scale")
    parser.add_argument("--spreads", choices=("equal", "measured"), default="equal",
                        help="equal: --noise on every environment; measured: MEASURED_SPREADS")
    args = parser.parse_args()
    envs = list(PAPER_ENVS[: args.envs])
    noise = {e: MEASURED_SPREADS[e] if args.spreads == "measured" else args.noise for e in envs}
    rng = np.random.default_rng(20261207)
    random = {e: float(rng.normal(0, 100)) for e in envs}
    scale = {e: float(rng.uniform(50, 3000)) for e in envs}
    labels = {r.name: r.label for r in TABLE1}
    false = Counter()
    start = time.perf_counter()
    for i in range(args.datasets):
        for kind, noclip_level in (("equal", 1.0), ("at random", 0.0)):
            scores = null_dataset(np.random.default_rng([i, int(noclip_level)]), envs, args.seeds, noise,
                                  random, scale, noclip_level)
            verdicts = paper.table1_verdicts(scores, random, labels, reps=args.reps)
            for key, verdict in zip(verdicts["key"], verdicts["verdict"]):
                if kind == "at random" and key == "noclip_below_random":
                    false[key] += verdict in (paper.HOLDS, paper.FAILS)
                elif kind == "equal" and key != "noclip_below_random":
                    false[key] += verdict in (paper.HOLDS, paper.FAILS)
                elif kind == "equal":
                    false[key + " (holds, the setting 1 scale above random)"] += verdict == paper.HOLDS
    spread = (f"noise {args.noise} of the scale" if args.spreads == "equal" else
              "each environment's measured spread (" + ", ".join(f"{e} {noise[e]}" for e in envs) + ")")
    print(f"{args.datasets} data sets of each kind: {args.seeds} seeds x {len(envs)} environments, {spread}, "
          f"{args.reps} resamples each ({time.perf_counter() - start:.0f} s)\n")
    print("| conclusion | false 'holds' or 'does not hold' | 95% interval |")
    print("|---|---:|---|")
    for key in sorted(false):
        low, high = wilson(false[key], args.datasets)
        print(f"| {key} | {false[key] / args.datasets:.1%} ({false[key]} of {args.datasets}) | "
              f"{low:.1%}–{high:.1%} |")


if __name__ == "__main__":
    main()
