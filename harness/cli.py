"""``./run_all.sh key=value ...``: plan, run what is missing, summarise.

Exit codes: 0 all runs done; 1 some run failed; 2 bad input or an unusable results folder
(nothing written); 3 none failed, but some runs are being run by another sweep (their lock
is held elsewhere) and were skipped here; 130 interrupted (Ctrl-C).
"""
from __future__ import annotations

import dataclasses
import sys
import textwrap
from collections import Counter
from pathlib import Path

from harness.config import (ConfigError, estimated_minutes, parse_sweep, plan_batches, plan_runs, split_args,
                            threads_per_run)
from harness.executor import RUNNING_ELSEWHERE
from core.archived import ArchiveError, archived_runs, carried_checkpoint, restore_checkpoint
from core.results import (ResultsDirError, check_results_dir, check_results_folder, comparable_config, done_problem,
                          is_done, read_run_json)

USAGE = """usage: ./run_all.sh [key=value ...]

  suite=mujoco            the suite to run
  algo=ppo_clip,trpo      algorithms (default: the seven built-ins; a variant in algos/ runs when named)
  env=Hopper-v5           environments (default: the scale's list)
  scale=smoke|quick|paper budget preset (default: paper)
  seeds=3 steps=1000000   override the scale's seeds and steps per run
  eval_every=100000 eval_episodes=10   override the scale's evaluation schedule
  device=cpu|cuda[:k]|auto  where the networks run (default cpu; auto: CUDA when there is one)
  task=sort model=small   the LLM suite's words for env= and suite.model=
  jobs=2                  processes in parallel (default: cores; executor=ray: the cluster's CPUs)
  batch_runs=8            runs trained together in one process as one stacked model (seeds and
                          numeric settings of one algorithm and environment; default: up to 16 a
                          process, split as the time estimate says is fastest); 1: one run per process
  threads=1               torch threads per process (default: cores / processes in parallel, so
                          one each when they fill the machine, at most the suite's cap (MuJoCo: 1);
                          executor=ray: 1; executor=slurm: slurm_cpus_per_task)
  executor=local|ray|slurm  local processes (default), one Ray task per process, or one task of a
                          Slurm job array per process (results_dir on the shared filesystem)
  slurm_partition=gpu slurm_time=4:00:00 slurm_cpus_per_task=1 slurm_gpus_per_task=1 slurm_mem=4G
  slurm_array_parallelism=50 slurm_account=lab slurm_qos=normal slurm_extra='--constraint=v100;--exclusive'
  slurm_setup='source venv/bin/activate' slurm_python=python3   executor=slurm's sbatch options and
                          the tasks' Python (Ctrl-C detaches; the same command re-attaches)
  ray_address=host:port   executor=ray: an existing cluster (or auto); default a local Ray
  ray_shared=true         executor=ray: results_dir is on storage every worker sees
  ray_num_gpus=0.25       executor=ray with device=cuda: the GPU share of each task
  checkpoint_every=20     updates between checkpoints (a killed run resumes from the last)
  results_dir=results     where results go
  archive=DIR             a compact archive made elsewhere (report save_archive=DIR): its done runs
                          are not run again, its unfinished ones resume from the checkpoints it carries
  preset=cleanrl          a named bundle of code-level options of the suite
  grid=table1             a named list of settings of the suite (the paper's Table 1)
  report=false            skip the report rendered at the end of the sweep
  plan=true               print the plan and exit: each process's runs (done, in the archive, resuming
                          from step N, or new) and the time estimate; checks everything, runs and writes nothing
  track=tensorboard,wandb each run also logs to TensorBoard / W&B (offline; pip install -e '.[tracking]')
  algo.<option>=value     an algorithm option, e.g. algo.clip_eps=0.1 (stored as a variant)
  suite.<option>=value    a suite option, e.g. suite.obs_norm=false

  ./run_all.sh help algo=ppo_clip [suite=mujoco]   every option, its default and its source
  ./run_all.sh report [suite=mujoco] [results_dir=results]   tables, figures, HTML/Markdown report
  ./run_all.sh report archive=docs/paper_mujoco/archive       the same report from a compact archive
  ./run_all.sh export track=tensorboard[,wandb] [results_dir=results]   logs of stored runs
  ./run_all.sh compare candidate=ppo_clip+clip_eps=0.3 baseline=ppo_clip [suite=mujoco]
"""



def main(argv: list[str] | None = None) -> int:
    """The command line; Ctrl-C (SIGINT to the process group, or to this process alone) is one line,
    ``error: interrupted``, and exit 130, the runs left as their last checkpoint left them."""
    try:
        return _main(sys.argv[1:] if argv is None else argv)
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130


def _main(argv: list[str]) -> int:
    if argv and argv[0] in ("-h", "--help", "help"):
        return _help(argv[1:])
    if argv and argv[0] == "compare":   # runs what either side is missing, then analysis compares
        from harness.compare import main as compare_main
        return compare_main(argv)
    if argv and argv[0] == "export":   # TensorBoard / W&B logs of stored runs
        from harness.tracking import export_main
        return export_main(argv[1:])
    if argv and argv[0] == "report":
        from analysis.cli import main as analysis_main
        return analysis_main(argv)
    try:
        top, algo_overrides, suite_overrides = split_args(argv)
        sweep = parse_sweep(top)
        check_results_folder(Path(sweep.results_dir))   # a file there: refused before anything is planned
        runs = plan_runs(sweep, algo_overrides, suite_overrides)
        results_root = Path(sweep.results_dir)
        archived = archived_runs(sweep.archive, sweep.suite) if sweep.archive else {}
        in_archive = [r for r in runs if not is_done(r.run_dir) and _done_in(archived.get(r.run_id), r)]
        todo = [r for r in runs if not is_done(r.run_dir) and r not in in_archive]
        units = plan_batches(todo, sweep.batch_runs, sweep.jobs)   # the processes: one run or a stack each
        threads = threads_per_run(sweep, len(units))
        units = [[dataclasses.replace(r, threads=threads) for r in unit] for unit in units]
        todo = [r for unit in units for r in unit]
        check_results_dir(results_root, len(todo))
        if todo and sweep.executor == "ray":
            from harness.ray_executor import import_ray
            import_ray(sweep.ray_address)  # Ray installed? (before anything is written)
        if todo and sweep.executor == "slurm":
            from harness.slurm_executor import check_submission
            check_submission(sweep, units)  # sbatch there, partition, time limit (before anything is submitted)
    except (ConfigError, ResultsDirError, ArchiveError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    if sweep.plan:   # what this sweep would do, and its time estimate; nothing is run or written
        carried = {r.run_id: path for r in todo if r.run_id in archived
                   for path in [carried_checkpoint(archived[r.run_id], r.run_dir)] if path is not None}
        _print_plan(sweep, runs, todo, units, in_archive, [r for r in todo if r.run_id in carried])
        from harness.plan import print_sweep_plan
        print_sweep_plan(sys.stdout, units, [r for r in runs if r not in todo and r not in in_archive], in_archive,
                         sweep.archive, carried)
        return 0

    # the archive's unfinished runs go on from where another machine left them
    restored = [r for r in todo if r.run_id in archived and restore_checkpoint(archived[r.run_id], r.run_dir)]
    _print_plan(sweep, runs, todo, units, in_archive, restored)
    if todo:
        # the sweep's wall time, piece by piece when it is killed and resumed (bench/sweep_wall_time.py)
        from core.sweeplog import SweepLog
        with SweepLog(results_root, sweep.suite, argv, [r.run_id for r in runs], len(todo)) as log:
            if sweep.executor == "ray":
                from harness.ray_executor import run_ray
                results = run_ray(todo, address=sweep.ray_address, jobs=sweep.jobs if "jobs" in top else None,
                                  shared=sweep.ray_shared, num_gpus=sweep.ray_num_gpus, batches=units)
            elif sweep.executor == "slurm":
                from harness.slurm_executor import run_slurm
                results = run_slurm(todo, sweep, batches=units)
            else:
                from harness.executor import run_local
                results = run_local(todo, min(sweep.jobs, len(units)), batches=units)
            log.exit_code = 1 if any(r["status"] not in ("done", RUNNING_ELSEWHERE) for r in results) else 0
    else:
        results = []
    failed = [r for r in results if r["status"] not in ("done", RUNNING_ELSEWHERE)]
    elsewhere = [r for r in results if r["status"] == RUNNING_ELSEWHERE]
    from harness.summary import summary_table
    print()
    print(summary_table([r for r in runs if r not in in_archive]))
    if in_archive:
        print(f"({len(in_archive)} run(s) done in archive {sweep.archive} are not in this table: "
              f"./run_all.sh report suite={sweep.suite} archive={sweep.archive} results_dir={sweep.results_dir})")
    print(f"\nresults: {results_root.resolve()}")
    ran = [r for r in results if r["status"] != RUNNING_ELSEWHERE and r.get("note") != "already done"]
    resumed = [r for r in ran if r.get("resumed_from")]
    print(f"this sweep: ran {len(ran)} run(s) ({len(resumed)} resumed from a checkpoint), "
          f"{len(runs) - len(todo) + len(results) - len(ran) - len(elsewhere)} already done, "
          f"{len(elsewhere)} running elsewhere")
    if elsewhere:
        print(f"\n{len(elsewhere)} run(s) running elsewhere (another sweep holds their lock; skipped here):",
              file=sys.stderr)
        for r in elsewhere:
            print(f"  {r['run_id']}", file=sys.stderr)
    if sweep.report:
        _render_report(sweep, runs, bool(in_archive))
    if failed:
        print(f"\n{len(failed)} run(s) failed:", file=sys.stderr)
        for r in failed:
            print(f"  {r['run_id']}: {r['error']}", file=sys.stderr)
        return 1
    return 3 if elsewhere else 0


def _done_in(record: dict | None, run) -> bool:
    """Whether an archive's record of ``run`` is that run, done (its resolved config equal)."""
    return (record is not None and record.get("status") == "done"
            and comparable_config(record.get("config")) == comparable_config(dataclasses.asdict(run)))


def _render_report(sweep, runs, with_archive: bool = False) -> None:
    """Every sweep ends with its report; a report problem never changes the sweep's exit code."""
    try:
        from analysis.report import render_report
        if with_archive:   # the archive's runs and this folder's, together
            from analysis.cli import main as report_main
            report_main(["report", f"suite={sweep.suite}", f"archive={sweep.archive}",
                         f"results_dir={sweep.results_dir}"])
            return
        path = render_report(sweep.results_dir, sweep.suite, steps=runs[0].steps)
        print(f"report: {path}")
    except Exception as exc:  # noqa: BLE001 - the runs are stored; the report can be rendered later
        print(f"warning: the report could not be rendered ({type(exc).__name__}: {exc}); "
              f"try ./run_all.sh report suite={sweep.suite} results_dir={sweep.results_dir}", file=sys.stderr)


def _help(argv: list[str]) -> int:
    """``help`` alone: the keys; ``help algo=X [suite=Y]``: X's options with the suite's defaults."""
    if not argv:
        print(USAGE)
        return 0
    try:
        top, _, _ = split_args(argv)
        unknown = set(top) - {"algo", "suite"}
        if unknown:
            raise ConfigError(f"help takes algo= and suite=; not {', '.join(sorted(unknown))}")
        import algos
        import suites
        from harness.options import describe
        suite = suites.get(top.get("suite", "mujoco"))
        classes = {name: algos.get(name) for name in top.get("algo", "").split(",") if name}
        print(f"suite {suite.name} (suite.<option>=value):")
        print(describe(suite.Config, "suite."))
        summaries = suite.env_summaries()
        print(f"\nenvironments of suite {suite.name} (env=; the default ones):")
        if any(summaries.values()):
            width = max(map(len, summaries))
            print("\n".join(f"  {env.ljust(width)}  {line}".rstrip() for env, line in summaries.items()))
        else:   # names alone (Atari's 57 games): wrapped, not a line each
            print(textwrap.fill(", ".join(summaries), width=100, initial_indent="  ", subsequent_indent="  "))
        for name, cls in classes.items():
            print(f"\n{name}, {cls.rollout} rollout (algo.<option>=value; defaults on suite {suite.name}, "
                  f"each with its source; [suite {suite.name}]: the suite's protocol):")
            print(describe(cls.Config, "algo.", suite.defaults_for(cls), suite.default_sources(cls)))
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


def _print_plan(sweep, runs, todo, units, in_archive=(), restored=()) -> None:
    per_algo = Counter(r.label for r in runs)
    envs = sorted({r.env for r in runs})
    jobs = max(1, min(sweep.jobs, len(units) or 1))
    minutes = estimated_minutes(units, jobs)
    print(f"pg-arena: suite={sweep.suite} scale={sweep.scale}")
    print(f"  algorithms: {', '.join(per_algo)}")
    print(f"  environments: {', '.join(envs)}")
    print(f"  runs: {len(runs)} ({len(runs) - len(todo)} already done, {len(todo)} to run), "
          f"{runs[0].steps:,} steps each" if runs else "  runs: 0")
    if in_archive:
        print(f"  {len(in_archive)} of the done runs are in archive {sweep.archive} (same config; not run again)")
    if restored:
        print(f"  {len(restored)} run(s) resume from the checkpoints archive {sweep.archive} carries")
    for r in todo:  # stored results that looked done but are damaged are redone, and said so
        record = read_run_json(r.run_dir)
        if isinstance(record, dict) and record.get("status") == "done":
            print(f"  redo {r.run_id}: its results are damaged ({done_problem(r.run_dir)})")
        elif record is None and (r.run_dir / "run.json").exists():
            print(f"  redo {r.run_id}: run.json is unreadable")
    if todo:
        stacks = [u for u in units if len(u) > 1]
        if stacks:
            print(f"  batched: {sum(map(len, stacks))} runs in {len(stacks)} stack(s) of "
                  f"{min(map(len, stacks))}-{max(map(len, stacks))} runs, one process each "
                  f"(batch_runs=1: one run per process)")
        print(f"  estimated time: ~{minutes:.0f} min with jobs={jobs}, {todo[0].threads} torch "
              f"thread{'s' if todo[0].threads > 1 else ''} per process")


if __name__ == "__main__":
    sys.exit(main())
