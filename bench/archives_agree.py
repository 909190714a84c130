"""Do two archives of the same protocol agree, setting by setting, beyond seed noise?

    .venv/bin/python bench/archives_agree.py NEW_ARCHIVE OLD_ARCHIVE [--alpha 0.05]

For every label both archives hold done runs of, the permutation test ``compare seeds=auto`` uses
(``analysis.sequential.SequentialTest``, one round: the runs of both archives exchanged within each
environment, environments scaled by their pooled spread) on the suite's score, over the
environments where the label's scores vary (an environment where every run scores the same, such
as InvertedPendulum's 1000, carries no information). Remade runs follow other trajectories (issue
29: a run's numbers no longer depend on its stack), so the archives' numbers differ; this says
whether they differ more than another draw of seeds would. With L labels, about alpha * L of them
reject by chance; the Bonferroni column tests each at alpha / L.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from analysis.archive import load_archive  # noqa: E402
from analysis.scores import run_scores, scoring  # noqa: E402
from analysis.sequential import SequentialTest  # noqa: E402


def scores_of(archive: Path):
    summary = load_archive(archive)
    suite = next(iter(summary.budgets))
    return run_scores(summary, scoring(suite)["score"], suite)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("new", type=Path)
    parser.add_argument("old", type=Path)
    parser.add_argument("--alpha", type=float, default=0.05)
    args = parser.parse_args(argv)
    new, old = scores_of(args.new), scores_of(args.old)
    labels = sorted(set(new["label"]) & set(old["label"]))
    print(f"| setting | environments | S (new − old, in pooled sd) | boundary at α = {args.alpha:g} | "
          f"verdict | at α / {len(labels)} (Bonferroni) |")
    print("|---|---:|---:|---:|---|---|")
    for label in labels:
        x_all, y_all = (s[s["label"] == label].pivot_table(index="env", columns="seed", values="score")
                        for s in (new, old))
        seeds = sorted(set(x_all.columns) & set(y_all.columns))
        envs = [e for e in sorted(set(x_all.index) & set(y_all.index))
                if np.ptp(np.r_[x_all.loc[e, seeds], y_all.loc[e, seeds]]) > 0]
        x, y = x_all.loc[envs, seeds].to_numpy(float), y_all.loc[envs, seeds].to_numpy(float)
        row = []
        for alpha in (args.alpha, args.alpha / len(labels)):
            test = SequentialTest(n=len(seeds), rounds=1, alpha=alpha, seed=0)
            row.append((test.update(x, y), test))
        (verdict, test), (strict, _) = row
        print(f"| {label} | {len(envs)} | {test.statistics[-1]:+.2f} | {test.boundaries[-1]:.2f} | {verdict} | {strict} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
