"""Compare settings that an archive (and optionally a results folder) already holds, without
rerunning anything: ``compare``'s statistics (per environment: difference of means and P(X > Y)
with stratified-bootstrap CIs; over all environments: the normalised score's difference) on
stored runs, for pairs X:Y.

    .venv/bin/python bench/compare_in_archive.py ARCHIVE [--results DIR] X:Y [X:Y ...] [--markdown]

e.g. the issue "Fair on every suite"'s reference-policy question, with the β = 0 runs in a results
folder and today's β in the committed archive:

    .venv/bin/python bench/compare_in_archive.py docs/paper_mujoco/archive --results results \\
        grpo+kl_coef=0.0:grpo rloo+kl_coef=0.0:rloo --markdown
"""
from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from analysis.archive import load_archive, merge_summaries  # noqa: E402
from analysis.compare import compare_scores, format_comparison  # noqa: E402
from analysis.scores import random_scores, run_scores, scoring  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("archive", type=Path)
    parser.add_argument("pairs", nargs="+", help="candidate:baseline labels")
    parser.add_argument("--results", type=Path, help="a results folder whose runs join the archive's")
    parser.add_argument("--markdown", action="store_true", help="also print one table row per pair")
    args = parser.parse_args(argv)
    summary = load_archive(args.archive)
    suite = next(iter(summary.budgets))
    if args.results is not None:
        from analysis.report import summarized_results
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            summary = merge_summaries(summary, summarized_results(args.results, suite, require_done=False), suite)
    scores = run_scores(summary, scoring(suite)["score"], suite)
    random = None
    if scoring(suite)["normalise"] == "random-best":
        random, _ = random_scores(args.archive, suite, sorted(set(scores["env"])))
    rows = []
    for pair in args.pairs:
        candidate, baseline = pair.split(":")
        c = compare_scores(scores, candidate, baseline, random, suite=suite, steps=summary.budgets[suite])
        print(format_comparison(c), end="\n\n")
        p, plo, phi = c.poi
        if c.aggregate_diff is None:
            means, diff = "n/a | n/a", "n/a"
        else:
            d, lo, hi = c.aggregate_diff
            means, diff = f"{c.aggregate_mean_x:.2f} | {c.aggregate_mean_y:.2f}", f"{d:+.2f} [{lo:+.2f}, {hi:+.2f}]"
        rows.append(f"| {candidate} vs {baseline} | {len(c.envs)} × {c.seeds} | {means} | {diff} | "
                    f"{p:.2f} [{plo:.2f}, {phi:.2f}] | {c.verdict} |")
    if args.markdown:
        print("| X vs Y | envs × seeds | X normalised | Y normalised | X − Y [95% CI] | P(X > Y) [95% CI] | verdict |")
        print("|---|---:|---:|---:|---:|---:|---|")
        print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
