"""``./run_all.sh compare candidate=X baseline=Y [key=value ...]``: both sides' runs at one protocol,
then the comparison of the stored results (``analysis.compare``, which never plans or trains).

Where the protocol comes from:

- with sweep keys (``scale=``, ``env=``, ``steps=``, ``eval_every=``, ``eval_episodes=``,
  ``device=``): both sides are planned by the harness's planner exactly as
  ``./run_all.sh suite=S algo=<X's algorithm> algo.<option>=... <the same keys>`` would plan them
  (the suite's defaults for each algorithm, the scale's environments, seeds and budget; the scale
  is ``paper`` unless given, as for a sweep; ``seeds=N`` is seeds 0..N-1). A done run already in
  compare's folder where one of them goes must have been made with that protocol: compare never
  overwrites a done run and refuses (exit 2) if it was not.
- without them: the baseline's done runs fix it (its environments and seeds at its most common
  budget, with their ``eval_every``, ``eval_episodes`` and ``device``), and the candidate's missing
  runs are planned at it; ``seeds=N`` extends both sides to seeds 0..N-1.

Compare makes its runs in a results folder of its own per protocol (``compare_home``:
``<results_dir>/compare/steps=S+eval_every=E+eval_episodes=N+device=D/``), never in a sweep's
``<results_dir>/<suite>/``: the two cannot collide. A sweep's done run is used where it is: with sweep keys where its resolved
protocol equals the planned run's, without them where it is a done run at the baseline's budget.

Either way the plan is printed (for each side, the runs that exist, resume or are new), the
protocol of the runs about to be made is checked against the other side before anything runs, the
missing runs run with the local executor, and ``analysis.compare.compare_stored`` compares exactly
the runs the plan named.
Exit codes: 0 better, 1 worse, 3 inconclusive, 4 identical (``analysis.compare.EXIT``); 2 bad input
or a refused protocol (one line on stderr; nothing stored is deleted or overwritten).
"""
from __future__ import annotations

import dataclasses
import functools
import io
import os
import sys
import warnings
from pathlib import Path
from typing import Callable, TextIO

import pandas as pd

from analysis import stats
from analysis.compare import (Comparison, candidate_overrides, compare_stored, format_protocol, mark_identical,
                              protocol_differences, protocol_error, protocol_settings, refused)
from analysis.load import AnalysisError, ResultsWarning, load_results
from core.options import parse_key_values
from core.results import (COMPARE_DIR, ResultsDirError, check_results_dir, check_results_folder, is_done,
                          read_run_json)
from harness.config import (ConfigError, RunConfig, SweepConfig, estimated_minutes, parse_sweep, plan_batches,
                            plan_runs, split_args, threads_per_run)
from harness.plan import run_start

# The sweep keys that fix the protocol; given any of them, both sides are planned as a sweep would.
PROTOCOL_KEYS = ("scale", "env", "steps", "eval_every", "eval_episodes", "device")
STORED, OWN = "results_dir", "compare's folder"     # where a run that exists was found
KEYS = {"candidate": str, "baseline": str, "suite": str, "results_dir": str, "jobs": int, "seeds": str,
        "threads": int, "reps": int, "scale": str, "env": str, "steps": int, "eval_every": int,
        "eval_episodes": int, "device": str, "allow_protocol_diff": bool, "plan": bool, "archive": str,
        "json": str, "alpha": float, "max_seeds": int, "round_seeds": str}

USAGE = """usage: ./run_all.sh compare candidate=X baseline=Y [suite=mujoco] [results_dir=results]
           [scale=smoke|quick|paper] [env=A,B] [steps=N] [seeds=N] [eval_every=N] [eval_episodes=N]
           [device=cpu] [jobs=N] [threads=N] [reps=2000] [allow_protocol_diff=false] [plan=false]
           [archive=DIR] [json=PATH] [seeds=auto [alpha=0.05] [max_seeds=15] [round_seeds=auto]]

  X and Y are labels: algo[+key=value...], e.g. ppo_clip+clip_eps=0.3 (a variant registered in
  algos/ is just its name). With any of scale= env= steps= eval_every= eval_episodes= device=, both
  sides are planned as a sweep with those keys would plan them (scale defaults to paper); without,
  the baseline's done runs fix environments, seeds and budget (seeds=N extends both to 0..N-1).
  Prints the plan, runs what either side is missing (local processes, in results_dir/compare/<protocol>/;
  a sweep's done runs of that protocol are used where they are), checks that both sides ran
  one protocol, then prints per environment and in aggregate X - Y and P(X > Y) with 95% CIs and a
  verdict: better (exit 0), worse (1), inconclusive (3, with the seeds that would likely settle it)
  or identical (4: X's runs equal Y's on every environment and seed, so X's change never acted).
  Exit 2: bad input, or a setting differs that X does not ask for (allow_protocol_diff=true
  compares anyway, and says so). plan=true prints the plan (each side's runs: done, resuming from
  step N, or new; the time estimate), checks the input as compare does, and exits 0 without running,
  comparing or writing anything (with archive=, the baseline's canaries still run, in a temporary
  folder, so that the plan says whether the archive would be refused).

  archive=DIR takes the baseline's runs from an archive (e.g. docs/paper_mujoco/archive, the paper's
  protocol): its done runs of Y fix the protocol (environments, seeds, budget, evaluations; env= and
  seeds=N narrow them), only X runs. First Y's canaries are rerun (a few seconds per environment): if
  today's code no longer computes what the archive's code did, compare refuses (exit 2) unless
  allow_protocol_diff=true, and the verdict then says so. json=PATH also writes the verdict, the
  test, the seeds per side, the per-environment and aggregate differences with their CIs and the
  protocol check as JSON (for a CI to gate on; exit codes as above).

  seeds=auto adds seeds in rounds (round_seeds per side per environment; past what the archive or
  the stored runs hold, both sides run) and applies a group-sequential permutation test after each
  (AdaStop, Mathieu et al. 2023; analysis/sequential.py): it stops at the first round where the
  difference over all environments is beyond the round's boundary (better or worse, the chance of
  a wrong "better" or "worse" at most alpha over all rounds), or says inconclusive at max_seeds.
  round_seeds=auto (the default): the fewest seeds (at least 2) with which the first round can
  already decide: 2 on the paper's 7 environments, 3 on 2, 5 on one."""


def _parse(words: list[str]) -> dict:
    return parse_key_values("compare", words, KEYS, AnalysisError)


def _seeds_arg(args: dict) -> int | str | None:
    """``seeds=``: a number of seeds, or ``auto`` (with ``alpha=``, ``max_seeds=``, ``round_seeds=``)."""
    seeds = args.get("seeds")
    sequential = ("alpha", "max_seeds", "round_seeds")
    if seeds != "auto":
        given = [k for k in sequential if k in args]
        if given:
            raise AnalysisError(f"compare: {', '.join(given)} go with seeds=auto")
        if seeds is None:
            return None
        try:
            value = int(seeds)
        except ValueError:
            raise AnalysisError(f"compare: seeds={seeds} is not valid; valid: a number of seeds >= 1, or auto") from None
        if value < 1:
            raise AnalysisError(f"compare: seeds={seeds} is not valid; valid: a number of seeds >= 1, or auto")
        return value
    alpha = args.get("alpha", 0.05)
    if not 0 < alpha < 0.5:
        raise AnalysisError(f"compare: alpha={alpha} is not valid; valid: a level in (0, 0.5), e.g. 0.05")
    if args.get("max_seeds", 15) < 2:
        raise AnalysisError(f"compare: max_seeds={args['max_seeds']} is not valid; valid: at least 2 seeds per side")
    round_seeds = args.get("round_seeds", "auto")
    if round_seeds != "auto":
        if not round_seeds.isdigit() or int(round_seeds) < 1:
            raise AnalysisError(f"compare: round_seeds={round_seeds} is not valid; valid: auto, or a number of "
                                f"seeds >= 1")
        args["round_seeds"] = int(round_seeds)
    return "auto"


def main(argv: list[str]) -> int:
    """``argv``: ``["compare", key=value ...]`` (the word ``compare`` first, as on the command line)."""
    words = argv[1:] if argv and argv[0] == "compare" else list(argv)
    if any(w in ("-h", "--help", "help") for w in words):
        print(USAGE)
        return 0
    try:
        args = _parse(words)
        for key in ("candidate", "baseline"):
            if key not in args:
                raise AnalysisError(f"compare: {key}= is required (e.g. candidate=ppo_clip+clip_eps=0.3 baseline=ppo_clip)")
        seeds = _seeds_arg(args)
        common = dict(suite=args.get("suite", "mujoco"), results_dir=args.get("results_dir", "results"),
                      jobs=args.get("jobs"), reps=args.get("reps", stats.DEFAULT_REPS), threads=args.get("threads"),
                      protocol={k: args[k] for k in PROTOCOL_KEYS if k in args},
                      allow_protocol_diff=args.get("allow_protocol_diff", False), plan=args.get("plan", False),
                      archive=args.get("archive"), json_path=args.get("json"))
        if seeds == "auto":
            comparison = run_sequential(args["candidate"], args["baseline"], alpha=args.get("alpha", 0.05),
                                        max_seeds=args.get("max_seeds", 15),
                                        round_seeds=args.get("round_seeds", "auto"), **common)
        else:
            comparison = run_compare(args["candidate"], args["baseline"], seeds=seeds, **common)
        return 0 if comparison is None else comparison.exit_code
    except AnalysisError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130


# ---------------------------------------------------------------------------------------
# planning

def plan_label(label: str, words: dict[str, str]) -> list[RunConfig]:
    """The runs of one label (``algo+key=value+...``) planned as ``./run_all.sh <words>`` would,
    with the label's parts as ``algo.<key>=``, ``suite.<key>=`` and ``preset=``."""
    algo, top, algo_o, suite_o = candidate_overrides(label)
    words = {**words, "algo": algo, **top}
    argv = ([f"{k}={v}" for k, v in words.items()] + [f"algo.{k}={v}" for k, v in algo_o.items()]
            + [f"suite.{k}={v}" for k, v in suite_o.items()])
    try:
        top_args, algo_args, suite_args = split_args(argv)
        return plan_runs(parse_sweep(top_args), algo_args, suite_args)
    except ConfigError as exc:
        raise AnalysisError(f"cannot plan the runs of {label}: {exc}") from None


def _stored_runs(root: Path, suite: str, labels: tuple[str, ...], must_exist: bool) -> pd.DataFrame:
    """The run table of ``labels`` (done or not); reads their episodes.csv, so a corrupt file stops
    compare before anything runs. Empty when no run is stored there yet; a missing folder is an
    error when ``must_exist``."""
    if (not must_exist or (root / suite).is_dir()) and not any((root / suite).rglob("run.json")):
        return pd.DataFrame(columns=["label", "env", "seed", "done", "steps", "config", "path", "run_id"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResultsWarning)
        return load_results(root, suite, sources=("episodes.csv",), require_done=False, labels=labels).runs


def _clash(run: RunConfig) -> str | None:
    """Why the done run stored where ``run`` goes is not ``run`` (None: it is, or none is done there).
    In compare's own folder that means the code changed (a default, an option) since the run was made."""
    if not is_done(run.run_dir):
        return None
    stored = protocol_settings((read_run_json(run.run_dir) or {}).get("config"))
    planned = protocol_settings(dataclasses.asdict(run))
    differ = [k for k in dict.fromkeys(list(planned) + list(stored)) if planned.get(k) != stored.get(k)]
    if not differ:
        return None
    what = "; ".join(f"{k} {stored.get(k, '(not recorded)')}, not {planned.get(k, '(not recorded)')}"
                     for k in differ[:4]) + ("; ..." if len(differ) > 4 else "")
    kind = "another budget" if "steps" in differ else "another protocol"
    return (f"{run.label} already has a done run at {kind} where compare would run one ({run.run_dir}: {what}); "
            f"compare never overwrites a done run: move it away or use another results_dir")


# ---------------------------------------------------------------------------------------
# the command

def run_compare(candidate: str, baseline: str, suite: str = "mujoco", results_dir: str | Path = "results",
                jobs: int | None = None, seeds: int | None = None, reps: int = stats.DEFAULT_REPS,
                out: TextIO | None = None, err: TextIO | None = None, executor: Callable | None = None,
                measure_random: Callable[[str], dict] | None = None, protocol: dict | None = None,
                threads: int | None = None, allow_protocol_diff: bool = False, plan: bool = False,
                archive: str | Path | None = None, json_path: str | Path | None = None,
                canaries: dict | None = None, seeds_exactly: bool = False,
                environments_known: Callable[[list[str]], None] | None = None) -> Comparison | None:
    """Make sure both sides' runs exist at one protocol (see the module docstring), run the missing
    ones with ``executor`` (default ``harness.executor.run_local``), then compare the stored results.
    Raises AnalysisError on bad input or a refused protocol; nothing stored is deleted or overwritten.
    ``plan``: check everything, print the plan run by run, and return None: nothing run or written.
    ``seeds_exactly``: seeds 0..seeds-1 and no other, even where the baseline has more stored (a
    round of ``seeds=auto``); otherwise ``seeds`` adds to the seeds the baseline's stored runs have.
    ``environments_known(envs)``: called with the environments compared as soon as they are known
    (before anything is printed, checked for clashes, run or written; it may raise to stop there)."""
    out, err = out or sys.stdout, err or sys.stderr
    if candidate == baseline:
        raise AnalysisError(f"candidate and baseline are the same setting ({candidate})")
    root = Path(results_dir)
    try:   # a results_dir that is a file is refused before anything is planned or printed
        check_results_folder(root)
    except ResultsDirError as exc:
        raise AnalysisError(str(exc)) from None
    protocol = {k: str(v) for k, v in (protocol or {}).items()}
    unknown = sorted(set(protocol) - set(PROTOCOL_KEYS))
    if unknown:
        raise AnalysisError(f"compare: {', '.join(unknown)} do not fix a protocol; valid: {', '.join(PROTOCOL_KEYS)}")
    common = {"suite": suite, "results_dir": str(root)}
    if json_path is not None:
        _check_json_path(Path(json_path))
    if archive is not None:
        return _compare_with_archive(candidate, baseline, suite, root, Path(archive), jobs, seeds, reps, out, err,
                                     executor, measure_random, protocol, threads, allow_protocol_diff, plan,
                                     json_path, {} if canaries is None else canaries, environments_known)

    if protocol:
        words = {**common, **protocol, **({"seeds": str(seeds)} if seeds else {})}
        planned_x, planned_y = plan_label(candidate, words), plan_label(baseline, words)
        candidate, baseline = _canonical(candidate, planned_x, err), _canonical(baseline, planned_y, err)
        if candidate == baseline:
            raise AnalysisError(f"candidate and baseline are the same setting ({candidate})")
        wanted = {(r.env, r.seed) for r in planned_x}
        if environments_known is not None:
            environments_known(sorted({e for e, _ in wanted}))
        steps = planned_x[0].steps
        source = "the sweep keys " + " ".join(f"{k}={v}" for k, v in protocol.items())
        described = dataclasses.asdict(planned_y[0]) if planned_y else {}
        home = compare_home(root, described)
    else:
        runs = _stored_runs(root, suite, (candidate, baseline), must_exist=True)
        base = runs[(runs["label"] == baseline) & runs["done"]]
        if base.empty:
            have = sorted(runs.loc[runs["done"], "label"].unique()) if len(runs) else []
            raise AnalysisError(f"baseline {baseline} has no done runs in {root / suite}"
                                + (f" (settings with done runs: {', '.join(have)})" if have else "")
                                + "; give sweep keys (e.g. scale=quick) to run both sides")
        budgets = base["steps"].dropna().astype(int).value_counts()
        steps = int(budgets.index[0])
        if len(budgets) > 1:
            print(f"note: baseline {baseline} has runs at several budgets ({', '.join(f'{s:,}' for s in budgets.index)}); "
                  f"comparing at steps={steps:,} (its most common)", file=err)
        base = base[base["steps"] == steps]
        wanted = set(zip(base["env"], base["seed"].astype(int)))
        if environments_known is not None:
            environments_known(sorted(set(base["env"])))
        if seeds is not None:
            wanted = ({p for p in wanted if p[1] < seeds} if seeds_exactly else wanted) | \
                {(e, s) for e in set(base["env"]) for s in range(seeds)}
        config = base.iloc[0]["config"] or {}
        words = {**common, "env": ",".join(sorted({e for e, _ in wanted})),
                 "seeds": str(max(s for _, s in wanted) + 1), "steps": str(steps)}
        for key in ("eval_every", "eval_episodes", "checkpoint_every", "device"):
            if config.get(key) is not None:
                words[key] = str(config[key])
        home = compare_home(root, config)
        mine = _stored_runs(home, suite, (candidate, baseline), must_exist=False)
        planned_x = _plan_if_needed(candidate, words, [runs, mine], wanted, steps)
        renamed = _canonical(candidate, planned_x, err)
        if renamed != candidate:
            candidate = renamed
            runs = _stored_runs(root, suite, (candidate, baseline), must_exist=True)
            mine = _stored_runs(home, suite, (candidate, baseline), must_exist=False)
        planned_y = _plan_if_needed(baseline, words, [runs, mine], wanted, steps)
        source = f"the baseline's done runs ({len(base)} at steps={steps:,})"
        described = config
    # compare makes its runs in its own folder, where no sweep's run can be (a sweep's done run of
    # this very protocol is used as it is; compare never writes into a sweep's folder)
    planned_x, planned_y = ([dataclasses.replace(r, results_dir=str(home)) for r in planned]
                            for planned in (planned_x, planned_y))

    # what exists, what runs, and whether a stored run is of another protocol
    sides = []
    for label, planned in ((candidate, planned_x), (baseline, planned_y)):
        planned = [r for r in planned if (r.env, r.seed) in wanted]
        exists: dict[tuple[str, int], tuple[Path, str]] = {}     # (env, seed) -> (run folder, where)
        if not protocol:    # the done runs at the baseline's budget count as they are: the protocol check judges them
            for table, where in ((runs, STORED), (mine, OWN)):
                done = table[(table["label"] == label) & table["done"] & (table["steps"] == steps)] if len(table) else table
                for r in done.to_dict("records"):
                    if (r["env"], int(r["seed"])) in wanted:
                        exists.setdefault((r["env"], int(r["seed"])), (Path(r["path"]), where))
        found, todo = _existing_or_todo([r for r in planned if (r.env, r.seed) not in exists], root,
                                        use_stored=bool(protocol))
        sides.append((label, planned, {**exists, **found}, todo))

    # the protocol of the runs about to be made, against the other side's (before anything runs)
    configs = [{**{k: (read_run_json(path) or {}).get("config") for k, (path, _) in side[2].items()},
                **{(r.env, r.seed): dataclasses.asdict(r) for r in side[3]}} for side in sides]
    diffs = protocol_differences(candidate, baseline, suite, configs[0], configs[1])
    todo = sides[0][3] + sides[1][3]
    if todo:   # where the missing runs go must take them: refused before the plan is printed
        try:
            check_results_dir(home, len(todo))
        except ResultsDirError as exc:
            raise AnalysisError(str(exc)) from None
    units, jobs = _processes(todo, jobs, threads) if todo else ([], 1)
    _print_plan(out, suite, source, steps, wanted, sides, described, units, jobs, root, home, detail=plan)
    if (todo or plan) and refused(diffs) and not allow_protocol_diff:   # plan: as compare_stored would refuse
        print(format_protocol(diffs, candidate, baseline), file=out)
        raise protocol_error(diffs, candidate)
    if plan:
        print("plan=true: nothing was run or written (without it, compare "
              + (f"runs the {len(todo)} missing run(s), then compares" if todo else "compares the stored runs now")
              + ")", file=out)
        return None
    if todo:
        _run(units, jobs, executor)
    run_dirs = [path for side in sides for path, _ in side[2].values()] + [r.run_dir for r in todo]
    comparison = compare_stored(candidate, baseline, suite, root, pairs=wanted, steps=steps, reps=reps,
                                allow_protocol_diff=allow_protocol_diff, out=out, err=err,
                                measure_random=measure_random, run_dirs=run_dirs)
    if json_path is not None:
        write_verdict_json(Path(json_path), comparison, alpha=None)
    return comparison


# ---------------------------------------------------------------------------------------
# baselines from an archive

ARCHIVED = "the archive"


def _compare_with_archive(candidate: str, baseline: str, suite: str, root: Path, archive: Path, jobs, seeds, reps,
                          out: TextIO, err: TextIO, executor, measure_random, protocol: dict, threads,
                          allow_protocol_diff: bool, plan: bool, json_path, canaries: dict,
                          environments_known: Callable[[list[str]], None] | None = None) -> Comparison | None:
    """``compare ... archive=DIR``: the baseline's runs are the archive's done runs of it (their
    resolved configs fix the protocol), only the candidate's missing runs are made, and the
    baseline's canaries (``harness/canary.py``) decide whether the archive's runs are what today's
    code would make. Every refusal comes before anything runs or is written."""
    from analysis.archive import load_archive
    from core.archived import ArchiveError, archived_runs
    from harness.canary import CanaryError, check_canaries
    extra = sorted(set(protocol) - {"env"})
    if extra:
        raise AnalysisError(f"compare: archive= takes the protocol from the archived baseline; {', '.join(extra)} "
                            f"cannot change it (env= and seeds= narrow it)")
    if not archive.is_dir():
        raise AnalysisError(f"archive {archive} does not exist (e.g. archive=docs/paper_mujoco/archive)")
    try:
        records = archived_runs(archive, suite)
    except ArchiveError as exc:
        raise AnalysisError(str(exc)) from None
    base = [r for r in records.values() if r.get("label") == baseline and r.get("status") == "done"]
    if not base:
        have = sorted({r["label"] for r in records.values() if r.get("status") == "done" and "+" not in r["label"]})
        raise AnalysisError(f"archive {archive} holds no done run of baseline {baseline}"
                            + (f"; its algorithms: {', '.join(have)}" if have else ""))
    budgets = pd.Series([int(r["steps"]) for r in base]).value_counts()
    steps = int(budgets.index[0])
    base = [r for r in base if int(r["steps"]) == steps]
    envs = sorted({r["env"] for r in base})
    if "env" in protocol:
        asked = [e.strip() for e in protocol["env"].split(",") if e.strip()]
        missing = [e for e in asked if e not in envs]
        if missing:
            raise AnalysisError(f"archive {archive} holds no done run of {baseline} on {', '.join(missing)}; "
                                f"valid: {', '.join(envs)}")
        envs = asked
    if environments_known is not None:
        environments_known(list(envs))
    summary = load_archive(archive)     # AnalysisError where its tables are missing or unreadable
    held = sorted({int(r["seed"]) for r in base})
    count = len(held) if seeds is None else seeds
    if held[:min(count, len(held))] != list(range(min(count, len(held)))):
        raise AnalysisError(f"archive {archive} holds seeds {', '.join(map(str, held))} of {baseline}, not seeds "
                            f"0..{len(held) - 1}: give seeds= at most {next(i for i, s in enumerate(held) if s != i)}")
    base = [r for r in base if r["env"] in envs and int(r["seed"]) < count]
    archived_pairs = {(r["env"], int(r["seed"])) for r in base}
    wanted = {(e, s) for e in envs for s in range(count)}
    config = base[0]["config"]
    words = {"suite": suite, "results_dir": str(root), "env": ",".join(envs), "seeds": str(count),
             "steps": str(steps)}
    for key in ("eval_every", "eval_episodes", "checkpoint_every", "device"):
        if config.get(key) is not None:
            words[key] = str(config[key])
    planned_x = plan_label(candidate, words)
    candidate = _canonical(candidate, planned_x, err)
    if candidate == baseline:
        raise AnalysisError(f"candidate and baseline are the same setting ({candidate})")
    home = compare_home(root, config)
    # past the seeds the archive holds, the baseline runs too (planned as the candidate, at the archive's protocol)
    planned_y = plan_label(baseline, words) if wanted - archived_pairs else []
    planned_x, planned_y = ([dataclasses.replace(r, results_dir=str(home)) for r in planned if (r.env, r.seed) in pairs]
                            for planned, pairs in ((planned_x, wanted), (planned_y, wanted - archived_pairs)))
    exists, todo = _existing_or_todo(planned_x, root)
    exists_y, todo_y = _existing_or_todo(planned_y, root)
    sides = [(candidate, planned_x, exists, todo),
             (baseline, planned_y, {**{(r["env"], int(r["seed"])): (Path(r["path"]), ARCHIVED) for r in base},
                                    **exists_y}, todo_y)]
    y_configs = {(r["env"], int(r["seed"])): r["config"] for r in base}
    diffs = protocol_differences(candidate, baseline, suite, _configs(exists, todo),
                                 {**y_configs, **_configs(exists_y, todo_y)})
    x_dirs = [path for path, _ in exists.values()] + [r.run_dir for r in todo]
    y_dirs = [path for path, _ in exists_y.values()] + [r.run_dir for r in todo_y]
    todo = todo + todo_y
    if todo:
        try:
            check_results_dir(home, len(todo))
        except ResultsDirError as exc:
            raise AnalysisError(str(exc)) from None
    units, jobs = _processes(todo, jobs, threads) if todo else ([], 1)
    source = f"the archive {archive} ({len(base)} done run(s) of {baseline} at steps={steps:,})"
    _print_plan(out, suite, source, steps, wanted, sides, config, units, jobs, root, home, detail=plan)
    if refused(diffs) and not allow_protocol_diff:
        print(format_protocol(diffs, candidate, baseline), file=out)
        raise protocol_error(diffs, candidate)
    key = (str(archive), baseline, suite, tuple(envs))
    if key in canaries:     # checked in an earlier round of this command (seeds=auto)
        stale = canaries[key]
    else:
        print(f"  canaries: rerunning {baseline}'s short runs on {len(envs)} environment(s) with today's code",
              file=out)
        try:
            stale = canaries[key] = check_canaries(archive, baseline, suite, envs, plan_label)
        except CanaryError as exc:
            raise AnalysisError(str(exc)) from None
    if stale and not allow_protocol_diff:
        raise AnalysisError(f"the archive's {baseline} runs are not what today's code makes: {stale[0]}"
                            + (f" (and {len(stale) - 1} more)" if len(stale) > 1 else "")
                            + "; rerun the baseline, or allow_protocol_diff=true to compare anyway")
    if plan:
        print("plan=true: nothing else was run or written (without it, compare "
              + (f"runs the {len(todo)} missing run(s), then compares" if todo else "compares now") + ")", file=out)
        return None
    if todo:
        _run(units, jobs, executor)
    comparison = _compare_archived(candidate, baseline, suite, root, archive, summary, wanted, archived_pairs, steps,
                                   x_dirs, y_dirs, reps, out, err, measure_random, diffs, stale)
    if json_path is not None:
        write_verdict_json(Path(json_path), comparison, alpha=None, archive=archive)
    return comparison


def _existing_or_todo(planned: list[RunConfig], root: Path, use_stored: bool = True) -> tuple[dict, list[RunConfig]]:
    """Which planned runs exist done (``use_stored``: a sweep's of this protocol under ``root``; or
    compare's own) and which are to run; a done run of another protocol where one goes is refused."""
    exists, todo = {}, []
    for r in planned:
        stored = dataclasses.replace(r, results_dir=str(root))   # where a sweep with these keys keeps it
        if use_stored and is_done(stored.run_dir) and _clash(stored) is None:
            exists[(r.env, r.seed)] = (stored.run_dir, STORED)
            continue
        problem = _clash(r)
        if problem:
            raise AnalysisError(problem)
        if is_done(r.run_dir):
            exists[(r.env, r.seed)] = (r.run_dir, OWN)
        else:
            todo.append(r)
    return exists, todo


def _configs(exists: dict, todo: list[RunConfig]) -> dict:
    """The resolved configs of a side's runs by (env, seed): stored ones' run.json, planned ones'."""
    return {**{k: (read_run_json(path) or {}).get("config") for k, (path, _) in exists.items()},
            **{(r.env, r.seed): dataclasses.asdict(r) for r in todo}}


def _compare_archived(candidate: str, baseline: str, suite: str, root: Path, archive: Path, summary, wanted: set,
                      archived_pairs: set, steps: int, x_dirs: list, y_dirs: list, reps: int, out: TextIO,
                      err: TextIO, measure_random, diffs, stale: list[str]) -> Comparison:
    """The comparison of the candidate's run folders against the archive's scores of the baseline
    (and the baseline's own runs past the seeds the archive holds, ``y_dirs``)."""
    from analysis.compare import compare_scores, format_comparison, normalising_scores
    from analysis.scores import run_scores, score_sources, scoring
    score_kind = scoring(suite)["score"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResultsWarning)
        results = load_results(root, suite, steps=steps, sources=score_sources(score_kind),
                               labels=(candidate, baseline), run_dirs=x_dirs + y_dirs)
    fresh = run_scores(results, score_kind, suite)
    archived = run_scores(summary, score_kind, suite)
    archived = archived[archived["label"] == baseline]

    def pick(t, pairs):
        return t[[(e, int(s)) in pairs for e, s in zip(t["env"], t["seed"])]]
    scores = pd.concat([pick(fresh[fresh["label"] == candidate], wanted),
                        pick(fresh[fresh["label"] == baseline], wanted - archived_pairs),
                        pick(archived, archived_pairs)], ignore_index=True)
    for label in (candidate, baseline):
        if not (scores["label"] == label).any():
            raise AnalysisError(f"{label} has no score ({scoring(suite)['name']}) on the compared runs")
    random = normalising_scores(suite, archive, sorted(set(scores["env"])), measure_random, err)
    comparison = compare_scores(scores, candidate, baseline, random, reps, suite, steps)
    comparison.scores = scores
    comparison.protocol = diffs
    comparison.protocol_overridden = bool(refused(diffs)) or bool(stale)
    same = _same_as_archived(results, summary, candidate, baseline, suite, archived_pairs)
    mark_identical(comparison, list(same), len(archived_pairs), wanted == archived_pairs,
                   f"the archive's {baseline} runs", "the same training episodes: every score and the learning curve at "
                   "each of the archive's points, to the last bit")
    comparison.notes.append(f"baseline {baseline}: the archive's runs ({archive}, {len(archived_pairs)} of them)"
                            + (f" and {len(wanted) - len(archived_pairs)} run(s) past the seeds it holds"
                               if wanted - archived_pairs else "")
                            + (", its canaries rerun and matched" if not stale else ""))
    if stale:
        comparison.notes.append(f"allow_protocol_diff=true: the archive's {baseline} runs are NOT what today's code "
                                f"makes ({stale[0]}); this verdict compares against another code's baseline")
    print(format_comparison(comparison), file=out)
    return comparison


def _same_as_archived(results, summary, candidate: str, baseline: str, suite: str, pairs: set) -> set:
    """The (env, seed) pairs where the candidate's fresh run has exactly what the archive keeps of
    the baseline's run: every score (the last 100 episodes', all episodes', with their counts)
    and the learning curve at every point of the archive's grid. The archive holds no per-episode
    rows, so this is its fingerprint of a run's training episodes (``same_learning`` compares
    whole run folders); floats survive its CSV round trip exactly."""
    from analysis.archive import summarize
    mine = summarize(results, suite)

    def table(frame, label, columns):
        if frame is None or not len(frame):
            return {}
        part = frame[frame["label"] == label]
        return {(env, int(seed)): (g.sort_values("step") if "step" in columns else g)[list(columns)].to_numpy().tolist()
                for (env, seed), g in part.groupby(["env", "seed"])}

    same = set(pairs)
    for kind in ("last100", "all"):
        if kind not in summary.scores:
            continue
        x = table(mine.scores.get(kind), candidate, ("score", "episodes"))
        y = table(summary.scores[kind], baseline, ("score", "episodes"))
        same &= {p for p in pairs if p in x and p in y and _equal_rows(x[p], y[p])}
    x, y = table(mine.curves, candidate, ("step", "value")), table(summary.curves, baseline, ("step", "value"))
    return {p for p in same if p in x and p in y and _equal_rows(x[p], y[p])}


def _equal_rows(a: list, b: list) -> bool:
    """Row lists equal value for value (NaN equal to NaN: a curve before its first episode)."""
    import math
    return len(a) == len(b) and all(
        len(ra) == len(rb) and all(u == v or (isinstance(u, float) and isinstance(v, float) and math.isnan(u)
                                              and math.isnan(v)) for u, v in zip(ra, rb))
        for ra, rb in zip(a, b))


def _check_json_path(path: Path) -> None:
    """A json= path that cannot be written is refused before anything runs."""
    if path.is_dir():
        raise AnalysisError(f"json={path} is a folder; give a file path")
    if not path.parent.exists() and str(path.parent) not in ("", "."):
        raise AnalysisError(f"json={path}: the folder {path.parent} does not exist")


def write_verdict_json(path: Path, c: Comparison, alpha: float | None, archive: Path | None = None,
                       test=None) -> None:
    """The verdict for machines (a research group's CI): what the exit code says and why."""
    import json
    from core.results import atomic_write_text

    def triple(t):
        return None if t is None else {"value": t[0], "low": t[1], "high": t[2]}
    doc = {
        "candidate": c.candidate, "baseline": c.baseline, "suite": c.suite, "steps": c.steps,
        "verdict": c.verdict, "exit_code": c.exit_code, "reason": c.reason,
        "test": ("group-sequential permutation test (AdaStop, Mathieu et al. 2023), two-sided, stratified by "
                 "environment" if test is not None else
                 "stratified bootstrap of P(X > Y) (rliable), 95% CI; better/worse when the CI excludes 0.5"),
        "alpha": alpha, "seeds": {"candidate": _seeds_used(c, c.candidate), "baseline": _seeds_used(c, c.baseline)},
        "rounds": None if test is None else [{"statistic": s, "boundary": b}
                                             for s, b in zip(test.statistics, test.boundaries)],
        "seeds_needed": c.seeds_needed,
        "baseline_source": str(archive) if archive is not None else "runs",
        "verdict_on": "all environments together" if test is not None else "the aggregate P(X > Y)",
        "aggregate": {"difference": triple(c.aggregate_diff), "candidate_mean": c.aggregate_mean_x,
                      "baseline_mean": c.aggregate_mean_y, "probability_of_improvement": triple(c.poi)},
        "environments": [dataclasses.asdict(e) if dataclasses.is_dataclass(e) else e for e in c.envs],
        "protocol": {"differences": [dataclasses.asdict(d) for d in c.protocol],
                     "overridden": c.protocol_overridden},
        "notes": list(c.notes),
    }
    atomic_write_text(path, json.dumps(doc, indent=1, default=float) + "\n")


def _seeds_used(c: Comparison, label: str) -> int:
    """The seeds of ``label`` the comparison used on every one of its environments (the sides may
    differ: a baseline with more stored seeds than the candidate's)."""
    if c.scores is None or not len(c.scores):
        return c.seeds
    mine = c.scores[c.scores["label"] == label]
    per_env = [set(group["seed"]) for _, group in mine.groupby("env")]
    return len(set.intersection(*per_env)) if per_env else 0


def compare_home(root: Path, config: dict) -> Path:
    """Where compare keeps the runs it makes at the protocol of ``config`` (a planned or stored run's
    config): ``<root>/compare/steps=S+eval_every=E+eval_episodes=N+device=D/``, a results folder of its
    own (``<suite>/<env>/<label>/seed<k>`` below it). The name holds every setting a compare command
    can change besides the labels, the environments and the seeds, so runs of two protocols never
    share a folder, and no sweep writes there."""
    key = "+".join(f"{k}={config.get(k)}" for k in ("steps", "eval_every", "eval_episodes", "device"))
    return Path(root) / COMPARE_DIR / key.replace("/", "_")


def _plan_if_needed(label: str, words: dict[str, str], tables: list[pd.DataFrame], wanted: set,
                    steps: int) -> list[RunConfig]:
    """``label``'s runs planned at ``words``; a label that cannot be planned any more (its algorithm's
    file is gone) is fine when every wanted run of it is stored (in one of ``tables``): results
    outlive code."""
    try:
        return plan_label(label, words)
    except AnalysisError:
        have = set()
        for runs in tables:
            done = runs[(runs["label"] == label) & runs["done"] & (runs["steps"] == steps)] if len(runs) else runs
            have |= set(zip(done["env"], done["seed"].astype(int)))
        if wanted <= have:
            return []
        raise


def _canonical(label: str, planned: list[RunConfig], err: TextIO) -> str:
    if planned and planned[0].label != label:       # e.g. clip_eps=.3 is stored as clip_eps=0.3
        print(f"note: {label} is stored as {planned[0].label}", file=err)
        return planned[0].label
    return label


def _print_plan(out: TextIO, suite: str, source: str, steps: int, wanted, sides, config: dict,
                units: list[list[RunConfig]], jobs: int, root: Path, home: Path, detail: bool = False) -> None:
    """What exists and what runs, per side (``detail``: every run, with where it would start or where
    it exists), where compare's runs go, and the wall-time estimate of the runs to run, by the
    sweep's model (``estimated_minutes``)."""
    envs = sorted({e for e, _ in wanted})
    seeds = sorted({s for _, s in wanted})
    print(f"compare plan: suite {suite}, protocol from {source}", file=out)
    details = [f"{steps:,} steps"]
    if config.get("eval_every"):
        details.append(evaluations(steps, int(config["eval_every"]), config.get("eval_episodes")))
    if config.get("device"):
        details.append(f"device {config['device']}")
    print(f"  {'; '.join(details)}; environments {', '.join(envs)}; seeds {', '.join(map(str, seeds))}", file=out)
    print(f"  compare's runs: {home} (done runs in {root / suite} are used where they are this protocol; "
          f"compare writes no run there)", file=out)
    for name, (label, planned, exists, todo) in zip(("X", "Y"), sides):
        starts = {r.run_id: run_start(r) for r in todo}
        print(f"  {name} = {label}: {counts(len(exists), len(wanted), [step for step, _ in starts.values()])}",
              file=out)
        if detail:
            todo_at = {(r.env, r.seed): r for r in todo}
            for env, seed in sorted(wanted):
                run = todo_at.get((env, seed))
                what = starts[run.run_id][1] if run is not None else f"done (exists in {exists[(env, seed)][1]})"
                print(f"    {suite}/{env}/{label}/seed{seed}: {what}", file=out)
            continue
        for r in todo[:20]:
            print(f"    run {r.run_id}: {starts[r.run_id][1]}", file=out)
        if len(todo) > 20:
            print(f"    ... and {len(todo) - 20} more", file=out)
    if units:
        stacks = [u for u in units if len(u) > 1]
        print(f"  {sum(map(len, units))} run(s) to run in {len(units)} process(es)"
              + (f", {sum(map(len, stacks))} of them in {len(stacks)} stack(s)" if stacks else "")
              + f"; estimated time: ~{estimated_minutes(units, min(jobs, len(units))):.0f} min with "
              f"jobs={min(jobs, len(units))}, {units[0][0].threads} torch thread{'s' if units[0][0].threads > 1 else ''} "
              f"per process", file=out)


def evaluations(steps: int, eval_every: int, episodes) -> str:
    """What a run of ``steps`` evaluating every ``eval_every`` steps does (``harness/train.py``): an
    evaluation at step 0, one at the first update past each multiple of ``eval_every`` while it
    trains, and one at the end."""
    if eval_every >= steps:
        return (f"evaluated at step 0 and at the end only"
                + (f" (eval_every={eval_every:,} is past the budget)" if eval_every > steps else "")
                + f", {episodes} episode(s) each")
    return f"evaluated at step 0, after every {eval_every:,} steps and at the end, {episodes} episode(s) each"


def counts(exist: int, wanted: int, starts: list[int | None]) -> str:
    """``k of n run(s) exist, m resume (from step ...), r new``: ``starts`` holds the step each run to
    run resumes from (None: it starts from step 0)."""
    steps = sorted({s for s in starts if s is not None})
    resumes = sum(s is not None for s in starts)
    where = ""
    if steps:
        where = (f" (from step {steps[0]:,})" if len(steps) == 1
                 else f" (from steps {', '.join(f'{s:,}' for s in steps)})" if len(steps) <= 4
                 else f" (from steps {steps[0]:,} to {steps[-1]:,})")
    return f"{exist} of {wanted} run(s) exist, {resumes} resume{where}, {len(starts) - resumes} new"


def _processes(todo: list[RunConfig], jobs: int | None, threads: int | None) -> tuple[list[list[RunConfig]], int]:
    """The processes of the missing runs, as a sweep plans them (stacks where runs can), with their
    torch threads; and the jobs to run them on."""
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(todo)))
    units = plan_batches(todo, None, jobs)
    per_run = threads_per_run(SweepConfig(suite=todo[0].suite, jobs=jobs, threads=threads), len(units))
    return [[dataclasses.replace(r, threads=per_run) for r in unit] for unit in units], jobs


def _run(units: list[list[RunConfig]], jobs: int, executor: Callable | None) -> None:
    todo = [r for unit in units for r in unit]
    if executor is None:
        from harness.executor import run_local
        executor = functools.partial(run_local, batches=units)
        jobs = min(jobs, len(units))
    from harness.executor import RUNNING_ELSEWHERE
    results = executor(todo, jobs)
    elsewhere = [r for r in results if r.get("status") == RUNNING_ELSEWHERE]
    failed = [r for r in results if r.get("status") not in ("done", RUNNING_ELSEWHERE)]
    if failed:
        raise AnalysisError(f"{len(failed)} of the missing run(s) failed (e.g. {failed[0]['run_id']}: "
                            f"{failed[0].get('error')}); nothing to compare on them")
    if elsewhere:
        raise AnalysisError(f"{len(elsewhere)} of the missing run(s) are being run by another sweep (e.g. "
                            f"{elsewhere[0]['run_id']}); compare again when it has finished")


# ---------------------------------------------------------------------------------------
# seeds until settled

def run_sequential(candidate: str, baseline: str, alpha: float = 0.05, max_seeds: int = 15,
                   round_seeds: int | str = "auto", out: TextIO | None = None, json_path=None, plan: bool = False,
                   **compare_args) -> Comparison | None:
    """``compare ... seeds=auto``: rounds of ``round_seeds`` seeds per side and environment (the
    runs the archive or the results folder hold count), each round's missing runs made as compare
    makes them, then the group-sequential permutation test (``analysis.sequential``) on every
    environment's scores of the seeds so far. Stops at its first decision; ``inconclusive`` after
    ``max_seeds // round_seeds`` rounds (``max_seeds`` rounded down to whole rounds); ``round_seeds="auto"``:
    the fewest seeds with which round 1 can decide on the environments compared
    (``analysis.sequential.first_deciding_round``). The verdict is
    taken on all environments together (each environment a stratum, scaled by the pooled spread of
    its first round); the per-environment rows are the last round's intervals (Welch's for X - Y,
    the bootstrap's for P(X > Y)), for reading."""
    from analysis.sequential import SequentialTest, first_deciding_round
    out = out or sys.stdout
    if json_path is not None:   # refused before any round runs, not after the last
        _check_json_path(Path(json_path))
    why = ""
    if round_seeds == "auto":
        strata = _environment_count(candidate, baseline, compare_args)
        round_seeds = first_deciding_round(strata, max_seeds, alpha)
        why = f" (round_seeds=auto: the fewest with which round 1 can decide on {strata} environment(s))"
    round_seeds = min(round_seeds, max_seeds)
    rounds = max_seeds // round_seeds
    test = SequentialTest(n=round_seeds, rounds=rounds, alpha=alpha)
    design = (f"seeds=auto: up to {rounds} round(s) of {round_seeds} seed(s) per side and environment "
              f"(at most {rounds * round_seeds}){why}; after each, a sequential permutation test at alpha={alpha:g} "
              f"(AdaStop, Mathieu et al. 2023)")
    # these lines go out with round 1's first line of plan: input that compare refuses (a missing
    # archive, the same setting twice) gets its one error line and nothing on stdout
    if plan:
        stream = _RoundOutput(out, whole_plan=True, header=[design, f"round 1 of {rounds}:"])
        try:
            return run_compare(candidate, baseline, seeds=round_seeds, out=stream, plan=True, seeds_exactly=True,
                               **compare_args)
        finally:
            stream.flush_line()
            stream.table.seek(0)
            out.write(stream.table.read())
    comparison, canaries = None, {}
    for k in range(rounds):
        seeds = (k + 1) * round_seeds
        round_line = f"round {k + 1} of {rounds}: seeds 0-{seeds - 1} per side"
        if k:
            print(round_line, file=out)
        # the plan as it is printed, before the runs (round 1 whole, later rounds their X/Y lines); the
        # round's table is held back: only the last round's is shown, with the test's verdict
        stream = _RoundOutput(out, whole_plan=k == 0, header=None if k else [design, round_line])
        try:
            comparison = run_compare(candidate, baseline, seeds=seeds, out=stream, canaries=canaries, seeds_exactly=True,
                                     **compare_args)
        finally:
            stream.flush_line()
        table = stream.table.getvalue().partition("compare: X = ")[2]
        candidate = comparison.candidate
        if comparison.verdict == "identical":
            print("compare: X = " + table, file=out, end="")
            break
        x, y = _score_matrix(comparison.scores, candidate, seeds), _score_matrix(comparison.scores, baseline, seeds)
        decision = test.update(x, y)
        print(f"  sequential test: S = {test.statistics[-1]:+.3f} (sum over environments and rounds of X - Y in "
              f"units of each environment's spread), boundary |S| > {test.boundaries[-1]:.3f}: {decision}", file=out)
        if decision != "continue":    # the last round's table, for reading; its bootstrap verdict gives way
            print("compare: X = " + "\n".join(line for line in table.splitlines() if not line.startswith("verdict:")),
                  file=out)
            break
    if comparison.verdict != "identical":
        _sequential_verdict(comparison, test, alpha, round_seeds)
        print(f"sequential verdict: {comparison.verdict} — {comparison.reason}", file=out)
    if json_path is not None:
        write_verdict_json(Path(json_path), comparison, alpha=alpha, archive=compare_args.get("archive"),
                           test=test if comparison.verdict != "identical" else None)
    return comparison


class _EnvironmentsKnown(Exception):
    def __init__(self, envs: list[str]):
        super().__init__(f"{len(envs)} environment(s)")
        self.envs = envs


def _environment_count(candidate: str, baseline: str, compare_args: dict) -> int:
    """How many environments compare would compare (``round_seeds=auto``): its planning up to the
    point where they are known, then stopped there (nothing printed, run or written; bad input
    raises here as in the round itself)."""
    def stop(envs: list[str]) -> None:
        raise _EnvironmentsKnown(envs)
    args = {**compare_args, "plan": True, "json_path": None}
    try:
        run_compare(candidate, baseline, seeds=2, out=io.StringIO(), err=io.StringIO(), seeds_exactly=True,
                    environments_known=stop, **args)
    except _EnvironmentsKnown as known:
        return len(known.envs)
    raise AnalysisError(f"compare: could not tell which environments {candidate} and {baseline} are compared on")


class _RoundOutput(io.TextIOBase):
    """What compare prints in one round of ``seeds=auto``, line by line as it comes: the plan goes
    through to ``out`` at once (all of it, or only its ``X =``, ``Y =`` and canary lines), the
    comparison table from its ``compare: X = `` line on is kept in ``table``."""

    def __init__(self, out: TextIO, whole_plan: bool, header: list[str] | None = None):
        super().__init__()
        self.out, self.whole_plan, self.header = out, whole_plan, list(header or [])
        self.table, self._line = io.StringIO(), ""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self._line += text
        *lines, self._line = self._line.split("\n")
        for line in lines:
            self._route(line)
        return len(text)

    def flush_line(self) -> None:
        if self._line:
            self._route(self._line)
            self._line = ""

    def _route(self, line: str) -> None:
        while self.header:   # held until compare has something to say: a refusal prints none of it
            print(self.header.pop(0), file=self.out, flush=True)
        if self.table.tell() or line.startswith("compare: X = "):
            self.table.write(line + "\n")
        elif self.whole_plan or line.lstrip().startswith(("X =", "Y =", "canaries")):
            print(line, file=self.out, flush=True)


def _score_matrix(scores: pd.DataFrame, label: str, seeds: int) -> "np.ndarray":
    """``[environments, seeds]`` scores of ``label`` (environments sorted): every run must be there."""
    import numpy as np
    part = scores[scores["label"] == label]
    envs = sorted(set(scores["env"]))
    table = part.pivot_table(index="env", columns="seed", values="score").reindex(index=envs, columns=range(seeds))
    if table.isna().any().any():
        missing = [f"{e} seed {s}" for e in envs for s in range(seeds) if pd.isna(table.loc[e, s])]
        raise AnalysisError(f"{label} has no score for {', '.join(missing[:4])}; the sequential test needs every run")
    return table.to_numpy(dtype=np.float64)


def _sequential_verdict(c: Comparison, test, alpha: float, round_seeds: int) -> None:
    """The comparison's verdict replaced by the sequential test's."""
    seeds = test.k * round_seeds
    c.verdict = test.decision
    c.seeds = seeds
    c.seeds_needed = None
    stat, bound = test.statistics[-1], test.boundaries[-1]
    if test.decision in ("better", "worse"):
        c.reason = (f"after {seeds} seed(s) per side (round {test.k} of {test.rounds}): |S| = {abs(stat):.3f} > "
                    f"{bound:.3f}, the round's boundary; the chance of a wrong better/worse is at most "
                    f"alpha = {alpha:g} over all rounds")
    else:
        c.reason = (f"no difference detected in {test.rounds} round(s), {seeds} seed(s) per side "
                    f"(|S| = {abs(stat):.3f}, last boundary {bound:.3f}); more seeds (max_seeds=) may settle it")
    c.notes.append("verdict: the sequential test on all environments together (each scaled by its first "
                   "round's pooled spread); the rows above are the last round's intervals, for reading")
