"""``./run_all.sh report ...`` (dispatched here by ``harness.cli``).

    report  [suite=mujoco] [results_dir=results] [steps=N] [reps=2000] [out_dir=DIR]
            [save_archive=DIR]      also write the compact archive the report is rendered from
    report  archive=DIR [out_dir=DIR] [reps=2000]   the report again, from an archive alone
    report  archive=DIR results_dir=R [save_archive=DIR] [out_dir=DIR]   the archive's runs and R's

Exit codes: 0 (written); 2 on bad input (one line on stderr; nothing stored is deleted or
overwritten).

``./run_all.sh compare`` is ``harness/compare.py``: it may run the runs either side is missing,
which analysis never does, then compares the stored runs with ``analysis.compare.compare_stored``.
Its exit codes are the verdict's (``analysis.compare.EXIT``): 0 better, 1 worse, 3 inconclusive
(more seeds may settle it), 4 identical (the candidate's runs equal the baseline's on every
environment and seed, timing columns aside: its change never acted, and no number of seeds would
separate them); 2 bad input, or the two sides ran different protocols in a setting the candidate
does not ask for (``allow_protocol_diff=true`` compares anyway).
"""
from __future__ import annotations

import sys

from analysis.load import AnalysisError
from core.options import parse_key_values

USAGE = {
    "report": """usage: ./run_all.sh report [suite=mujoco] [results_dir=results] [steps=N] [reps=2000] [out_dir=DIR]
                           [save_archive=DIR]
       ./run_all.sh report archive=DIR [out_dir=DIR] [reps=2000]
       ./run_all.sh report archive=DIR results_dir=R [save_archive=DIR] [out_dir=DIR] [reps=2000]

  Tables (the paper's, with 95% bootstrap CIs), figures and an HTML + Markdown report per suite,
  written to <results_dir>/reports/<suite>/index.html and report.md (or out_dir=). Without suite=,
  every suite with results. steps= picks one budget when a suite holds runs of several.

  save_archive=DIR (one suite) also writes what the report reads -- each run's config, versions,
  scores and learning curve -- as a compact archive (a few MB for hundreds of runs), and renders
  the report from it. archive=DIR renders that report again from the archive alone, on any
  machine, with the same numbers (default out_dir: the archive's parent folder), e.g.
      ./run_all.sh report archive=docs/paper_mujoco/archive
  An archive also carries the checkpoints of the runs not done when it was written. With
  results_dir=, the report reads the archive's runs and the folder's together (a run in both: the
  done one, else the folder's), and save_archive= writes them as one archive (it may be the same
  folder). That is how a sweep too long for one machine goes on on another:
      ./run_all.sh suite=mujoco grid=table1 archive=A      runs what A does not hold done
      ./run_all.sh report suite=mujoco archive=A results_dir=results save_archive=A""",
}
KEYS = {
    "report": {"suite": str, "results_dir": str, "steps": int, "reps": int, "out_dir": str,
               "archive": str, "save_archive": str},
}


def _parse(command: str, words: list[str]) -> dict:
    return parse_key_values(command, words, KEYS[command], AnalysisError)


def main(argv: list[str]) -> int:
    """``argv[0]`` is ``report``; the rest are key=value words."""
    if argv and argv[0] == "compare":
        print("error: compare runs missing runs, which analysis never does: use ./run_all.sh compare "
              "(harness/compare.py)", file=sys.stderr)
        return 2
    if not argv or argv[0] not in USAGE:
        print("usage: ./run_all.sh report key=value ...", file=sys.stderr)
        return 2
    command, words = argv[0], argv[1:]
    if any(w in ("-h", "--help", "help") for w in words):
        print(USAGE[command])
        return 0
    try:
        args = _parse(command, words)
        return _report(args)
    except AnalysisError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130


def _print_report(report, suite: str) -> None:
    for note in dict.fromkeys(report.notes):
        print(f"warning: {note}", file=sys.stderr)
    for failure in report.failures:
        print(f"error: report section failed: {failure}", file=sys.stderr)
    print(f"report ({suite}): {report.path.resolve()}")
    print(f"{' ' * len(f'report ({suite}): ')}{report.path.with_name('report.md').resolve()}")


def _report_archive(args: dict) -> int:
    """``archive=DIR``: the report from an archive alone; with ``results_dir=``, from the archive's
    runs and the results folder's together (``merge_summaries``), written as one archive when
    ``save_archive=`` is given (it may be the same folder: how a long sweep gathers its pieces)."""
    from pathlib import Path
    from analysis.archive import archive_suite, load_archive, merge_summaries, write_archive
    from analysis.report import build_report, summarized_results
    from analysis.stats import DEFAULT_REPS
    merged = "results_dir" in args
    clash = [k for k in ("steps",) + (() if merged else ("save_archive",)) if k in args]
    if clash:
        raise AnalysisError(f"archive= renders from the archive{' and the results folder' if merged else ' alone'}; "
                            f"drop {', '.join(k + '=' for k in clash)}")
    archive = Path(args["archive"])
    suite = archive_suite(archive)
    if "suite" in args and args["suite"] != suite:
        raise AnalysisError(f"archive {archive} holds suite {suite}, not {args['suite']}")
    summary = load_archive(archive)
    out = Path(args.get("out_dir", archive.resolve().parent))
    source = archive
    if merged:
        results_dir = Path(args["results_dir"])
        here = summarized_results(results_dir, suite, summary.budgets.get(suite), require_done=False)
        _share_random_scores(archive, results_dir, suite)
        summary = merge_summaries(summary, here, suite)
        if "save_archive" in args:   # write the archive, then render from it: the two cannot differ
            path = write_archive(summary, suite, args["save_archive"])
            summary = load_archive(path)
            print(f"archive ({suite}): {path.resolve()}")
            source = path
        else:
            source = results_dir
            out = Path(args.get("out_dir", results_dir / "reports" / suite))
    report = build_report(source, suite, reps=args.get("reps", DEFAULT_REPS), out_dir=out, summary=summary)
    _print_report(report, suite)
    return 0


def _share_random_scores(archive, results_dir, suite: str) -> None:
    """The random-policy scores the archive used, for the environments the results folder has not
    measured, so that a merged report normalises as the archive's did (and measures nothing again)."""
    import json
    from analysis.scores import RANDOM_CACHE
    from core.results import atomic_write_text
    theirs, mine = archive / suite / RANDOM_CACHE, results_dir / suite / RANDOM_CACHE
    if not theirs.is_file():
        return
    cache = json.loads(theirs.read_text())
    if mine.is_file():
        cache.update(json.loads(mine.read_text()))
    if not mine.is_file() or json.loads(mine.read_text()) != cache:
        mine.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(mine, json.dumps(cache, indent=2, sort_keys=True))


def _report(args: dict) -> int:
    from analysis.load import load_results
    from analysis.report import build_report, report_suites
    from analysis.stats import DEFAULT_REPS
    if "archive" in args:
        return _report_archive(args)
    results_dir = args.get("results_dir", "results")
    if "save_archive" in args and "suite" not in args:
        raise AnalysisError("save_archive= writes one suite's archive: add suite=<name>")
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
        summary = None
        if "save_archive" in args:   # write the archive, then render from it: the two cannot differ
            from analysis.archive import load_archive, write_archive
            from analysis.report import summarized_results
            path = write_archive(summarized_results(results_dir, suite, args.get("steps")), suite,
                                 args["save_archive"])
            summary = load_archive(path)
            print(f"archive ({suite}): {path.resolve()}")
        out_dir = args.get("out_dir")
        if out_dir is not None and len(suites) > 1:
            from pathlib import Path
            out_dir = Path(out_dir) / suite
        report = build_report(results_dir, suite, reps=args.get("reps", DEFAULT_REPS), steps=args.get("steps"),
                              out_dir=out_dir, summary=summary)
        _print_report(report, suite)
    if not made:
        raise AnalysisError(f"no completed runs under {results_dir}")
    return 0
