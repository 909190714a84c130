"""The GRPO variants against their parent on the LLM toy suite (issue 31): compare's verdict per task,
the training dynamics each variant was designed to change, and wall time per run.

    .venv/bin/python bench/llm_variants_table.py RESULTS_DIR ARCHIVE [--seeds 5] [--out FILE.md]

RESULTS_DIR holds the variants' runs (``bench/llm_variants.sh``); ARCHIVE the seven built-ins at the
same protocol (``docs/llm_toy/archive``). For every pair and task this runs

    ./run_all.sh compare candidate=<variant> baseline=<parent> suite=llm_toy archive=ARCHIVE env=<task>
        seeds=<seeds> results_dir=RESULTS_DIR json=RESULTS_DIR/verdicts/<variant>__<task>.json

which takes a built-in parent's runs from the archive (its canaries rerun first; ``scale=<--scale>``
instead of ``archive=`` where the parent is itself a variant, whose runs are in RESULTS_DIR) and the variant's from
RESULTS_DIR, so nothing trains here when the sweeps are done. Then one markdown table per task:
held-out score (sampled, temperature 1, at the end) with its 95% CI, the difference to the parent
with its CI, compare's verdict and test, and at the end of training (mean over the last quarter of
the updates, then over seeds) entropy, response length, clipped fraction and KL to the reference,
and each side's wall time per run. The figure of the same dynamics over training is the report's
"Training dynamics" section (``./run_all.sh report suite=llm_toy archive=ARCHIVE results_dir=RESULTS_DIR``).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import algos  # noqa: E402
from analysis.archive import load_archive  # noqa: E402
from analysis.load import load_results  # noqa: E402

TASKS = ("sort", "keywords", "add")
# (variant label, parent label, what it changes); the parent is the built-in the variant subclasses
PAIRS = (
    ("dr_grpo", "grpo", "no std normalisation; token sums over the length limit"),
    ("gspo", "grpo", "sequence-level ratio and clip"),
    ("gspo+importance_sampling_level=sequence_token", "gspo", "GSPO-token: the sequence ratio per token"),
    ("cispo", "grpo", "clipped, stop-gradient IS weight; every token keeps its gradient"),
    ("reinforce_pp", "grpo", "batch-normalised return; token KL in the reward"),
    ("reinforce_pp_baseline", "reinforce_pp", "group mean baseline, then batch normalisation; k2 KL loss"),
    ("grpo+loss_agg=token-mean", "grpo", "token-mean aggregation (DAPO's)"),
)
DYNAMICS = ("entropy", "response_length", "clip_fraction", "kl_ref")


def compare(variant: str, parent: str, task: str, results: Path, archive: Path, seeds: int, scale: str) -> dict:
    out = results / "verdicts" / f"{variant}__{task}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    # a built-in parent's runs come from the archive; a variant parent's (reinforce_pp, gspo) from RESULTS_DIR
    source = [f"archive={archive}"] if parent in algos.builtin_names() else []
    # Without an archive, scale= names the sweeps' protocol: with env= alone compare plans both sides at
    # the paper scale, and a variant parent's runs would be trained again at 4x the budget. With one,
    # the protocol is the archive's (compare refuses scale= there).
    source = source or [f"scale={scale}"]
    cmd = [str(ROOT / "run_all.sh"), "compare", f"candidate={variant}", f"baseline={parent}", "suite=llm_toy",
           *source, f"env={task}", f"seeds={seeds}", f"results_dir={results}", f"json={out}"]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if proc.returncode == 2 or not out.exists():
        raise SystemExit(f"compare {variant} vs {parent} on {task} failed (exit {proc.returncode}):\n"
                         f"{proc.stderr.strip() or proc.stdout[-2000:]}")
    return json.loads(out.read_text())


def end_dynamics(frame: pd.DataFrame) -> pd.DataFrame:
    """Per label and task: each run's mean over its last quarter of updates, then the mean over seeds."""
    rows = frame[frame["metric"].isin(DYNAMICS)].astype({"label": str, "env": str, "metric": str})
    last = rows["step"] >= rows.groupby(["label", "env", "seed", "metric"], observed=True)["step"].transform(
        lambda s: s.min() + 0.75 * (s.max() - s.min()))
    per_run = rows[last].groupby(["label", "env", "seed", "metric"], observed=True)["value"].mean()
    return per_run.groupby(["label", "env", "metric"], observed=True).mean().unstack("metric")


def wall_minutes(runs: pd.DataFrame) -> pd.Series:
    done = runs[runs["done"]].astype({"label": str, "env": str})
    return done.groupby(["label", "env"])["wall_seconds"].mean() / 60


def fmt_ci(d: list | None, digits: int = 3) -> str:
    """compare's JSON [value, low, high] as 'value [low, high]'."""
    if not d:
        return "–"
    value, low, high = d
    return f"{value:+.{digits}f} [{low:+.{digits}f}, {high:+.{digits}f}]"


def cell(table: pd.DataFrame | pd.Series, key: tuple, column: str | None = None, digits: int = 3) -> str:
    try:
        value = table.loc[key] if column is None else table.loc[key, column]
    except KeyError:
        return "–"
    return "–" if pd.isna(value) else f"{value:.{digits}f}"


def emit(text: str, out: Path | None) -> None:
    """Print the tables, and write them to ``out`` where given."""
    print(text)
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results_dir", type=Path)
    ap.add_argument("archive", type=Path)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--scale", default="quick", help="the sweeps' scale (bench/llm_variants.sh: %(default)s)")
    ap.add_argument("--tasks", default=",".join(TASKS), help="comma-separated (default: %(default)s)")
    ap.add_argument("--variants", default=None, help="comma-separated variant labels (default: every pair)")
    ap.add_argument("--out", type=Path, default=None, help="also write the tables to this markdown file")
    args = ap.parse_args()
    mine, base = load_results(args.results_dir, "llm_toy"), load_archive(args.archive)
    dynamics = pd.concat([end_dynamics(mine.frame), end_dynamics(base.frame)])
    dynamics = dynamics[~dynamics.index.duplicated(keep="first")]
    walls = pd.concat([wall_minutes(mine.runs), wall_minutes(base.runs)])
    walls = walls[~walls.index.duplicated(keep="first")]
    lines = []
    pairs = [p for p in PAIRS if args.variants is None or p[0] in args.variants.split(",")]
    for task in args.tasks.split(","):
        lines += [f"**task={task}** (held-out score at the end, sampled; {args.seeds} seeds a side; "
                  f"a built-in parent's runs from the archive)", "",
                  "| variant | changes | score | parent | difference [95% CI] | P(X > Y) [95% CI] | verdict | "
                  "entropy | length | clipped | KL to ref | wall per run (min), variant / parent |",
                  "|---|---|---:|---:|---:|---:|:---:|---:|---:|---:|---:|---:|"]
        for variant, parent, what in pairs:
            v = compare(variant, parent, task, args.results_dir, args.archive, args.seeds, args.scale)
            (env,) = [e for e in v["environments"] if e["env"] == task]
            key = (variant, task)
            lines.append(
                f"| {variant} | {what} | {env['mean_x']:.3f} | {env['mean_y']:.3f} | {fmt_ci(env['diff'])} | "
                f"{fmt_ci(env['poi'], 2).replace('+', '')} | **{v['verdict']}** | "
                + " | ".join(cell(dynamics, key, m, 2 if m != "kl_ref" else 3) for m in DYNAMICS)
                + f" | {cell(walls, key, digits=1)} / {cell(walls, (parent, task), digits=1)} |")
        lines.append("")
        for parent in dict.fromkeys(p[1] for p in pairs):      # the parents' own dynamics, for reading the columns
            lines.append(f"{parent} (a parent) at the end: " + ", ".join(
                f"{m} {cell(dynamics, (parent, task), m)}" for m in DYNAMICS) + ".")
        lines.append("")
    lines.append(f"Verdicts: compare's {v['test']}" + (f", alpha = {v['alpha']}." if v.get("alpha") else "."))
    emit("\n".join(lines), args.out)


if __name__ == "__main__":
    main()
