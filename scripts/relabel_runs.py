"""Move stored runs to the label today's defaults give them, after a default changed.

A run is stored under its algorithm and the options that differ from the defaults
(``grpo+kl_coef=0.0``). When a default changes to what a variant ran (``kl_coef`` 0 becomes
grpo's default), those runs *are* the plain algorithm's runs now, but stay stored under the
variant's name; and the runs stored under the plain name ran the old default. This moves
them, checking each run against what the planner resolves for the new label today:

    .venv/bin/python scripts/relabel_runs.py RESULTS_DIR SUITE FROM_LABEL TO_LABEL [--dry-run]

e.g. ``scripts/relabel_runs.py results mujoco grpo+kl_coef=0.0 grpo``. Every done run of
FROM_LABEL whose resolved config (steps, evaluation, every algorithm and suite option) equals the
config the planner gives TO_LABEL today is moved to TO_LABEL's folder with its ``run.json``
relabelled; a run whose config differs, a run that is not done, or a TO_LABEL folder that already
exists is refused with the reason (exit 2), before anything is moved.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.errors import ConfigError  # noqa: E402
from core.results import atomic_write_text, comparable_config, is_done, read_run_json  # noqa: E402
from harness.config import parse_sweep, plan_runs, split_args  # noqa: E402


def planned_config(suite: str, env: str, label: str, seed: int, config: dict) -> dict:
    """What the planner resolves today for ``label`` on ``env`` at ``seed`` with the run's budget."""
    algo, *parts = label.split("+")
    words = [f"suite={suite}", f"algo={algo}", f"env={env}", "seeds=1", f"steps={config['steps']}",
             f"eval_every={config['eval_every']}", f"eval_episodes={config['eval_episodes']}",
             f"results_dir={config['results_dir']}"]
    words += [p if p.startswith("suite.") or p.startswith("preset=") else f"algo.{p}" for p in parts]
    top, algo_over, suite_over = split_args(words)
    (run,) = plan_runs(parse_sweep(top), algo_over, suite_over)
    planned = dataclasses.asdict(dataclasses.replace(run, seed=seed))
    return _without_label(comparable_config(planned))


def _without_label(config: dict) -> dict:
    """The label is what moves; everything else must agree."""
    return {k: v for k, v in config.items() if k != "variant"}


def relabel(results_dir: Path, suite: str, source: str, target: str, dry_run: bool = False) -> list[tuple[Path, Path]]:
    """The (from, to) folders moved; raises ConfigError (nothing moved) when any run cannot be."""
    moves, problems = [], []
    for run_dir in sorted((results_dir / suite).glob(f"*/{source}/seed*")):
        record = read_run_json(run_dir)
        env = run_dir.parent.parent.name
        if record is None or not is_done(run_dir):
            problems.append(f"{run_dir}: not done")
            continue
        config = record["config"]
        want = planned_config(suite, env, target, int(config["seed"]), config)
        have = _without_label(comparable_config(config))
        if have != want:
            diff = sorted(k for k in set(have) | set(want) if have.get(k) != want.get(k))
            detail = []
            for k in diff:
                if isinstance(have.get(k), dict) and isinstance(want.get(k), dict):
                    detail += [f"{k}.{o}: {have[k].get(o)!r} != {want[k].get(o)!r}"
                               for o in sorted(set(have[k]) | set(want[k])) if have[k].get(o) != want[k].get(o)]
                else:
                    detail.append(f"{k}: {have.get(k)!r} != {want.get(k)!r}")
            problems.append(f"{run_dir}: ran another config than {target} resolves today ({'; '.join(detail)})")
            continue
        dest = run_dir.parent.parent / target / run_dir.name
        if dest.exists():
            problems.append(f"{run_dir}: {dest} exists already (move or archive it first)")
            continue
        moves.append((run_dir, dest))
    if problems:
        raise ConfigError("nothing moved:\n  " + "\n  ".join(problems))
    if not moves:
        raise ConfigError(f"no runs of {source} under {results_dir / suite}")
    if dry_run:
        return moves
    algo, _, rest = target.partition("+")
    variant = "+" + rest if rest else ""
    for src, dest in moves:
        dest.parent.mkdir(parents=True, exist_ok=True)
        src.rename(dest)
        record = read_run_json(dest)
        record["config"]["variant"] = variant
        record["variant"] = variant
        record["run_id"] = f"{suite}/{dest.parent.parent.name}/{target}/{dest.name}"
        record.setdefault("warnings", []).append(f"relabelled from {source} to {target} "
                                                 f"(scripts/relabel_runs.py: the same config under today's defaults)")
        atomic_write_text(dest / "run.json", json.dumps(record, indent=2))
        stale = dest / "checkpoint.pt"     # written under the old label's config; a done run never resumes
        if stale.exists():
            stale.unlink()
    for src, _ in moves:
        try:
            src.parent.rmdir()
        except OSError:
            pass
    return moves


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results_dir", type=Path)
    parser.add_argument("suite")
    parser.add_argument("source", help="the label the runs are stored under, e.g. grpo+kl_coef=0.0")
    parser.add_argument("target", help="the label today's defaults give them, e.g. grpo")
    parser.add_argument("--dry-run", action="store_true", help="check and list, move nothing")
    args = parser.parse_args(argv)
    try:
        moves = relabel(args.results_dir, args.suite, args.source, args.target, args.dry_run)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for src, dest in moves:
        print(f"{'would move' if args.dry_run else 'moved'} {src} -> {dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
