"""How often is compare's verdict wrong, and how many seeds does it spend? (issue "A verdict in minutes")

    .venv/bin/python bench/verdict_error_rates.py --pool DIR [--save docs/verdict_study/pool_scores.csv]
    .venv/bin/python bench/verdict_error_rates.py --scores docs/verdict_study/pool_scores.csv \
        [--round-seeds 3] [--max-seeds 15] [--synthetic-envs 2]

Two sources of comparisons, each run through the exact decision rules ``compare`` applies:

- **Real runs.** A pool of stored runs (``--pool``, a results folder; or their scores, ``--scores``)
  of a baseline with many seeds and of candidates with fewer, on the same environments. An A/A
  comparison draws two disjoint sets of the baseline's seeds: the candidate is the baseline's code
  under another name with other seeds, so every ``better``/``worse`` is wrong. A power comparison
  draws the candidate's seeds from its own pool and the baseline's from the baseline's. Draws are
  without replacement within a comparison and independent between comparisons (so comparisons
  share runs: the rates are those of the pool's runs, the pool a sample of the algorithm's).
- **Synthetic runs,** where the truth is known: per environment, normal scores (the candidate's
  shifted by ``d`` standard deviations), and a heavy-tailed case (a fifth of the runs fail and
  score 3 standard deviations lower), A/A (d = 0) and d > 0.

Rules measured:

- ``seeds=auto``: ``analysis.sequential.SequentialTest`` as ``compare ... seeds=auto`` runs it
  (rounds of 3 seeds per side, which ``round_seeds=auto`` takes on 2 or 3 environments, at most 15,
  alpha 0.05, all environments together; ``--round-seeds`` and ``--max-seeds`` measure compare's
  ``round_seeds=`` and ``max_seeds=`` options, e.g. rounds of 2, its choice on 7 environments);
- the fixed-seed permutation test of the same statistic (one round of n seeds), for the fixed
  design of the same power: the smallest n whose power reaches the sequential test's;
- ``seeds=N`` (the fixed-seed bootstrap verdict, ``analysis.compare.verdict_from_poi``: the
  aggregate P(X > Y)'s 95% stratified-bootstrap CI clear of 0.5), at 3, 5 and 10 seeds, on the
  real runs.
"""
from __future__ import annotations

import argparse
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from analysis import stats  # noqa: E402
from analysis.compare import verdict_from_poi  # noqa: E402
from analysis.sequential import SequentialTest  # noqa: E402

ALPHA = 0.05
ROUND_SEEDS = 3          # round_seeds=auto's round on 2 or 3 environments (first_deciding_round)
MAX_SEEDS = 15
BOOTSTRAP_SEEDS = (3, 5, 10)


@dataclass
class Outcome:
    decision: str        # better / worse / inconclusive
    seeds: int           # per side and environment, when it stopped


def sequential(x: np.ndarray, y: np.ndarray, seed: int, round_seeds: int = ROUND_SEEDS,
               max_seeds: int = MAX_SEEDS, alpha: float = ALPHA, permutations: int = 10_000) -> Outcome:
    """``compare seeds=auto`` on ``[environments, max_seeds]`` scores, taken round by round."""
    test = SequentialTest(n=round_seeds, rounds=max_seeds // round_seeds, alpha=alpha,
                          permutations=permutations, seed=seed)
    while test.decision == "continue":
        test.update(x, y)
    return Outcome(test.decision, test.k * round_seeds)


def fixed(x: np.ndarray, y: np.ndarray, n: int, seed: int, alpha: float = ALPHA) -> str:
    """The same permutation test with all ``n`` seeds in one round (a fixed design)."""
    test = SequentialTest(n=n, rounds=1, alpha=alpha, seed=seed)
    return test.update(x[:, :n], y[:, :n])


def bootstrap(x: np.ndarray, y: np.ndarray, n: int) -> str:
    """``compare seeds=n``'s verdict on the first n seeds: the aggregate P(X > Y) and its 95%
    stratified-bootstrap CI (``analysis.stats.poi_estimate``, as ``compare_scores`` computes it; the
    per-environment rows it also prints do not enter the verdict), judged by ``verdict_from_poi``."""
    poi = stats.poi_estimate(x[:, :n].T, y[:, :n].T)     # runs x environments, as rliable takes them
    return verdict_from_poi(poi, n)[0]


def pool_scores(pool: Path) -> pd.DataFrame:
    """Every done run's score (the suite's own, as compare computes it) in a results folder."""
    from analysis.load import load_results
    from analysis.scores import run_scores, score_sources, scoring
    suites = sorted(p.name for p in pool.iterdir() if p.is_dir())
    frames = []
    for suite in suites:
        kind = scoring(suite)["score"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            results = load_results(pool, suite, sources=score_sources(kind))
        frames.append(run_scores(results, kind, suite)[["suite", "env", "label", "seed", "score"]])
    return pd.concat(frames, ignore_index=True)


def seed_table(scores: pd.DataFrame, label: str, envs: list[str]) -> pd.DataFrame:
    """``label``'s scores as ``[envs, seeds]``, the seeds with a run on every environment (a seed is a
    run on every environment, as in compare)."""
    table = scores[scores["label"] == label].pivot_table(index="env", columns="seed", values="score")
    return table.reindex(index=envs).dropna(axis=1)


def draw(table: pd.DataFrame, label: str, n: int, rng: np.random.Generator,
         exclude: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``[envs, n]`` scores of ``n`` seeds of ``table`` (``seed_table``) drawn without replacement,
    and the seeds drawn."""
    seeds = np.array(table.columns)
    if exclude is not None:
        seeds = np.setdiff1d(seeds, exclude)
    if len(seeds) < n:
        raise SystemExit(f"{label} has {len(seeds)} seeds with runs on every environment; {n} needed")
    chosen = rng.choice(seeds, size=n, replace=False)
    return table[chosen].to_numpy(dtype=float), chosen


def real_study(scores: pd.DataFrame, baseline: str, candidates: list[str], comparisons: int,
               bootstrap_comparisons: int, round_seeds: int = ROUND_SEEDS, max_seeds: int = MAX_SEEDS) -> list[dict]:
    envs = sorted(set(scores[scores["label"] == baseline]["env"]))
    rows = []
    for candidate in ["A/A"] + candidates:
        rng = np.random.default_rng(20231)
        seq, fix, boot = [], {n: [] for n in range(round_seeds, max_seeds + 1)}, {n: [] for n in BOOTSTRAP_SEEDS}
        ys = seed_table(scores, baseline, envs)       # pivoted once, drawn from every comparison
        xs = ys if candidate == "A/A" else seed_table(scores, candidate, envs)
        for i in range(comparisons):
            if candidate == "A/A":
                y, taken = draw(ys, baseline, max_seeds, rng)
                x, _ = draw(xs, baseline, max_seeds, rng, exclude=taken)
            else:
                x, _ = draw(xs, candidate, max_seeds, rng)
                y, _ = draw(ys, baseline, max_seeds, rng)
            seq.append(sequential(x, y, seed=i, round_seeds=round_seeds, max_seeds=max_seeds))
            for n in fix:
                fix[n].append(fixed(x, y, n, seed=i))
            if i < bootstrap_comparisons:       # the bootstrap is slow (2,000 resamples a verdict)
                for n in boot:
                    boot[n].append(bootstrap(x, y, n))
        rows.append(summary(f"{candidate} vs {baseline}", "real runs: " + ", ".join(envs), seq, fix,
                            boot if bootstrap_comparisons else None, comparisons))
    return rows


def synthetic_study(comparisons: int, envs: int = 2, round_seeds: int = ROUND_SEEDS,
                    max_seeds: int = MAX_SEEDS) -> list[dict]:
    rows = []
    cases = [("normal", d) for d in (0.0, 0.5, 1.0, 2.0)] + [("heavy-tailed", d) for d in (0.0, 1.0)]
    for shape, d in cases:
        rng = np.random.default_rng(7 + int(10 * d))
        seq, fix = [], {n: [] for n in range(round_seeds, max_seeds + 1)}
        for i in range(comparisons):
            x = rng.normal(size=(envs, max_seeds)) - d      # the candidate is worse by d sd
            y = rng.normal(size=(envs, max_seeds))
            if shape == "heavy-tailed":                     # a fifth of the runs fail
                x -= 3.0 * (rng.random(x.shape) < 0.2)
                y -= 3.0 * (rng.random(y.shape) < 0.2)
            seq.append(sequential(x, y, seed=i, round_seeds=round_seeds, max_seeds=max_seeds))
            for n in fix:
                fix[n].append(fixed(x, y, n, seed=i))
        name = "A/A" if d == 0 else f"worse by {d:g} sd"
        rows.append(summary(name, f"synthetic, {shape}, {envs} environments", seq, fix, None, comparisons))
    return rows


def summary(name: str, source: str, seq: list[Outcome], fix: dict[int, list[str]], boot, comparisons: int) -> dict:
    decided = [o for o in seq if o.decision in ("better", "worse")]
    row = {"comparison": name, "source": source, "comparisons": comparisons,
           "seq_better": sum(o.decision == "better" for o in seq) / comparisons,
           "seq_worse": sum(o.decision == "worse" for o in seq) / comparisons,
           "seq_mean_seeds": float(np.mean([o.seeds for o in seq])),
           "seq_mean_seeds_decided": float(np.mean([o.seeds for o in decided])) if decided else float("nan")}
    power = max(row["seq_better"], row["seq_worse"])
    row["fixed_rejects"] = {n: sum(v in ("better", "worse") for v in out) / comparisons for n, out in fix.items()}
    matching = [n for n, r in row["fixed_rejects"].items() if r >= power]
    row["fixed_n_same_power"] = min(matching) if matching else None
    if boot is not None:
        row["bootstrap_comparisons"] = len(boot[BOOTSTRAP_SEEDS[0]])
        row["bootstrap_better_worse"] = {n: (sum(v == "better" for v in out) / len(out),
                                             sum(v == "worse" for v in out) / len(out))
                                         for n, out in boot.items()}
    return row


def markdown(rows: list[dict], max_seeds: int = MAX_SEEDS) -> str:
    lines = ["| comparison | source | n | `better` | `worse` | seeds/side (mean) | fixed design, same power |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        same = r["fixed_n_same_power"]
        lines.append(f"| {r['comparison']} | {r['source']} | {r['comparisons']} | {r['seq_better']:.3f} | "
                     f"{r['seq_worse']:.3f} | {r['seq_mean_seeds']:.1f} | "
                     f"{'—' if r['comparison'].startswith('A/A') else (same if same else f'> {max_seeds}')} |")
    boot = [r for r in rows if "bootstrap_better_worse" in r]
    if boot:
        lines += ["", "| comparison (fixed seeds, bootstrap verdict) | n | "
                  + " | ".join(f"seeds={n}: `better` / `worse`" for n in BOOTSTRAP_SEEDS) + " |",
                  "|---|---:|" + "---:|" * len(BOOTSTRAP_SEEDS)]
        for r in boot:
            cells = [f"{b:.3f} / {w:.3f}" for b, w in r["bootstrap_better_worse"].values()]
            lines.append(f"| {r['comparison']} | {r['bootstrap_comparisons']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--pool", type=Path, help="a results folder holding the pool of real runs")
    source.add_argument("--scores", type=Path, help="the pool's scores (a CSV --save wrote)")
    parser.add_argument("--save", type=Path, help="write the pool's scores here (with --pool)")
    parser.add_argument("--baseline", default="ppo_clip")
    parser.add_argument("--comparisons", type=int, default=400, help="per row (A/A: at least 200)")
    parser.add_argument("--bootstrap-comparisons", type=int, default=200,
                        help="per row, of the seeds=N bootstrap verdict (0: skip it)")
    parser.add_argument("--no-synthetic", action="store_true")
    parser.add_argument("--synthetic-envs", type=int, default=2, help="environments of the synthetic comparisons")
    parser.add_argument("--round-seeds", type=int, default=ROUND_SEEDS, help="compare's round_seeds= (%(default)s)")
    parser.add_argument("--max-seeds", type=int, default=MAX_SEEDS, help="compare's max_seeds= (%(default)s)")
    args = parser.parse_args(argv)
    if not 1 <= args.round_seeds <= args.max_seeds:
        parser.error(f"--round-seeds {args.round_seeds} must be between 1 and --max-seeds {args.max_seeds}")
    start = time.time()
    rows = []
    if args.pool or args.scores:
        scores = pool_scores(args.pool) if args.pool else pd.read_csv(args.scores)
        if args.save:
            args.save.parent.mkdir(parents=True, exist_ok=True)
            scores.to_csv(args.save, index=False, float_format="%.6g")
        candidates = sorted(set(scores["label"]) - {args.baseline})
        print("pool: " + ", ".join(f"{label} {scores[scores['label'] == label]['seed'].nunique()} seeds"
                                   for label in [args.baseline] + candidates), flush=True)
        rows += real_study(scores, args.baseline, candidates, args.comparisons,
                           min(args.bootstrap_comparisons, args.comparisons), args.round_seeds, args.max_seeds)
    if not args.no_synthetic:
        rows += synthetic_study(args.comparisons, args.synthetic_envs, args.round_seeds, args.max_seeds)
    print(markdown(rows, args.max_seeds))
    rounds = args.max_seeds // args.round_seeds
    print(f"\n({time.time() - start:.0f} s; alpha = {ALPHA}, {rounds} rounds of {args.round_seeds} seeds, "
          f"at most {rounds * args.round_seeds})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
