"""``./run_all.sh report ...`` and ``./run_all.sh compare ...`` (dispatched here by ``harness.cli``).

    report  [suite=mujoco] [results_dir=results] [steps=N] [reps=2000]
    compare candidate=X baseline=Y [suite=mujoco] [results_dir=results] [jobs=N] [seeds=N] [reps=2000]

Exit codes: report 0 (written); compare 0 better, 1 worse, 3 inconclusive; both 2 on bad input
(one line on stderr; nothing stored is deleted or overwritten).
"""
from __future__ import annotations

import sys

from analysis.load import AnalysisError

USAGE = {
    "report": """usage: ./run_all.sh report [suite=mujoco] [results_dir=results] [steps=N] [reps=2000]

  Tables (the paper's, with 95% bootstrap CIs), figures and an HTML + Markdown report per suite,
  written to <results_dir>/reports/<suite>/index.html and report.md. Without suite=, every suite
  with results. steps= picks one budget when a suite holds runs of several.""",
    "compare": """usage: ./run_all.sh compare candidate=X baseline=Y [suite=mujoco] [results_dir=results] [jobs=N] [seeds=N] [reps=2000]

  Runs the candidate's missing runs (the baseline's environments, seeds and budget), then prints per
  environment and in aggregate X - Y and P(X > Y) with 95% CIs, and a verdict:
  better (exit 0), worse (exit 1) or inconclusive (exit 3, with the seeds that would likely settle it).
  seeds=N extends both to seeds 0..N-1. X and Y are labels: algo[+key=value...], e.g. ppo_clip+clip_eps=0.3.""",
}
KEYS = {
    "report": {"suite": str, "results_dir": str, "steps": int, "reps": int},
    "compare": {"candidate": str, "baseline": str, "suite": str, "results_dir": str, "jobs": int, "seeds": int,
                "reps": int},
}


def _parse(command: str, words: list[str]) -> dict:
    valid = KEYS[command]
    out: dict = {}
    for word in words:
        if "=" not in word:
            raise AnalysisError(f"{command}: argument {word!r} is not key=value; valid keys: {', '.join(valid)}")
        key, value = word.split("=", 1)
        if key not in valid:
            raise AnalysisError(f"{command}: unknown key {key!r}; valid: {', '.join(valid)}")
        if key in out:
            raise AnalysisError(f"{command}: {key} given twice")
        if valid[key] is int:
            try:
                out[key] = int(value)
            except ValueError:
                raise AnalysisError(f"{command}: {key}={value!r}: expected an integer") from None
            if out[key] <= 0:
                raise AnalysisError(f"{command}: {key}={value} must be a positive integer")
        else:
            if not value:
                raise AnalysisError(f"{command}: {key}= is empty")
            out[key] = value
    return out


def main(argv: list[str]) -> int:
    """``argv[0]`` is ``report`` or ``compare``; the rest are key=value words."""
    if not argv or argv[0] not in USAGE:
        print("usage: ./run_all.sh report|compare key=value ...", file=sys.stderr)
        return 2
    command, words = argv[0], argv[1:]
    if any(w in ("-h", "--help", "help") for w in words):
        print(USAGE[command])
        return 0
    try:
        args = _parse(command, words)
        if command == "report":
            return _report(args)
        return _compare(args)
    except AnalysisError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130


def _report(args: dict) -> int:
    from analysis.load import load_results
    from analysis.report import build_report, report_suites
    from analysis.stats import DEFAULT_REPS
    results_dir = args.get("results_dir", "results")
    suites = [args["suite"]] if "suite" in args else report_suites(results_dir)
    if not suites:
        # distinguish a missing folder from an empty one
        load_results(results_dir)   # raises the right one-line error
        raise AnalysisError(f"no runs under {results_dir}")
    made = 0
    for suite in suites:
        if "suite" not in args and len(suites) > 1:
            runs = load_results(results_dir, suite, sources=(), require_done=False).runs
            if not runs["done"].any():
                print(f"warning: suite {suite}: no completed runs; no report", file=sys.stderr)
                continue
        made += 1
        report = build_report(results_dir, suite, reps=args.get("reps", DEFAULT_REPS), steps=args.get("steps"))
        for note in dict.fromkeys(report.notes):
            print(f"warning: {note}", file=sys.stderr)
        for failure in report.failures:
            print(f"error: report section failed: {failure}", file=sys.stderr)
        print(f"report ({suite}): {report.path.resolve()}")
        print(f"{' ' * len(f'report ({suite}): ')}{report.path.with_name('report.md').resolve()}")
    if not made:
        raise AnalysisError(f"no completed runs under {results_dir}")
    return 0


def _compare(args: dict) -> int:
    from analysis.compare import run_compare
    from analysis.stats import DEFAULT_REPS
    for key in ("candidate", "baseline"):
        if key not in args:
            raise AnalysisError(f"compare: {key}= is required (e.g. candidate=ppo_clip+clip_eps=0.3 baseline=ppo_clip)")
    comparison = run_compare(args["candidate"], args["baseline"], suite=args.get("suite", "mujoco"),
                             results_dir=args.get("results_dir", "results"), jobs=args.get("jobs"),
                             seeds=args.get("seeds"), reps=args.get("reps", DEFAULT_REPS))
    return comparison.exit_code
