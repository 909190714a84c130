"""The Slurm executor (``executor=slurm``): every process of the sweep (one run, or one stack of
runs: ``harness.config.plan_batches``) is one task of a Slurm job array, submitted with ``sbatch``.

``results_dir`` is the shared filesystem: the tasks write their run folders there as a local
process does, and the driver follows them through files, so it can be stopped (Ctrl-C detaches)
and started again (the same command re-attaches). Each submission has a folder::

    <results_dir>/.slurm/<submission>/
        units.json                 task i trains units[i] (the runs' RunConfig fields)
        submit.sh                  the batch script as submitted
        job                        the array's job id (written once sbatch returned)
        task<i>.progress.json      {run_id: global_step}, rewritten about once a second
        task<i>.result.json        {run_id: summary} when the task ends
        slurm-<job>_<i>.out        the task's output (appended to by every attempt)

A task takes each run's lock (``harness/locks.py``) on the node and trains the runs it holds
with ``harness.train.train_batch``; a run another sweep holds is reported "running elsewhere",
one found done is not run again. The driver attaches to a live submission of this results
folder that holds a run instead of submitting it again, so two sweeps on one results folder
never queue a run twice.

Preemption and time limits: the array is submitted with ``--requeue`` (a preempted task goes
back to the queue) and ``--signal=B:USR1@<grace>``: shortly before its time limit, a task asks
Slurm to requeue it (``scontrol requeue``). Either way the task starts again from the top, and
``train_batch`` resumes each run from its last checkpoint: on the CPU the run ends with the
numbers of an uninterrupted one (tests/test_slurm.py requeues a task mid-run on a real Slurm).
A task that ends without a result (node failure, out of memory, ``scancel``) is submitted
again, up to ``RETRIES`` times, as a local process that dies is started again.
"""
from __future__ import annotations

import dataclasses
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from core.errors import ConfigError
from core.results import atomic_write_text, comparable_config, is_done
from harness.config import RunConfig, estimated_minutes, parse_slurm_time
from harness.executor import RETRIES, RUNNING_ELSEWHERE, mark_failed, progress_bar, summarize

ROOT = Path(__file__).resolve().parent.parent
STATE_DIR = ".slurm"
POLL_SECONDS = 2.0
# The requeue signal comes this long before the time limit (Slurm may send it up to 60 s
# earlier than asked); a quarter of the limit for limits under 6 minutes.
REQUEUE_GRACE = 90


# ---------------------------------------------------------------------------------------
# checks before anything is submitted

def requeue_grace(limit: int) -> int:
    return REQUEUE_GRACE if limit >= 4 * REQUEUE_GRACE else max(1, limit // 4)


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise ConfigError(f"executor=slurm needs Slurm's {name} on the PATH (not found): run on a Slurm login "
                          f"node, or see the README (scripts/slurm_cluster.sh starts a one-node Slurm here)")
    return path


def _slurm(*args: str, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), capture_output=True, text=True, timeout=timeout)


def _first_line(text: str) -> str:
    """The message of a Slurm tool's error output, on one line (without the "Try --help" hint)."""
    lines = [line.strip() for line in text.strip().splitlines()
             if line.strip() and not line.strip().startswith("Try ")]
    return "; ".join(dict.fromkeys(lines))[:400] if lines else "(no message)"


def partitions() -> dict[str, dict[str, str]]:
    """The cluster's partitions, name -> ``scontrol show partition`` fields."""
    proc = _slurm(_tool("scontrol"), "show", "partition", "--oneliner")
    if proc.returncode != 0:
        raise ConfigError(f"executor=slurm: scontrol cannot reach the cluster: {_first_line(proc.stderr)}")
    out = {}
    for line in proc.stdout.splitlines():
        fields = dict(word.split("=", 1) for word in line.split() if "=" in word)
        if "PartitionName" in fields:
            out[fields["PartitionName"]] = fields
    return out


def steps_per_update(run: RunConfig) -> int:
    """A lower bound on the environment steps of one update, from the algorithm's config (the
    time-limit check must reject only what cannot work)."""
    cfg = run.algo_cfg
    if "num_envs" in cfg and "num_steps" in cfg:
        return int(cfg["num_envs"]) * int(cfg["num_steps"])
    return int(cfg.get("group_size", 1)) * int(cfg.get("num_groups", 1))


def checkpoint_interval_seconds(unit: list[RunConfig]) -> float:
    """The estimated training time from one checkpoint to the next (or to the end, when sooner)
    of a task, at the plan's speed estimate (``estimated_minutes``)."""
    total = estimated_minutes([unit], 1) * 60
    run = unit[0]
    return total * min(1.0, run.checkpoint_every * steps_per_update(run) / max(1, run.steps))


def check_submission(sweep, units: list[list[RunConfig]]) -> None:
    """Everything that can be checked before ``sbatch``: Slurm's tools, the partition, the time limit
    against a checkpoint interval, then ``sbatch --test-only`` with the array's options (an unknown
    account or QOS, a malformed extra line). Raises ``ConfigError`` (one line)."""
    for tool in ("sbatch", "squeue", "scontrol"):
        _tool(tool)
    parts = partitions()
    if sweep.slurm_partition is not None:
        for name in sweep.slurm_partition.split(","):
            if name not in parts:
                raise ConfigError(f"unknown slurm_partition {name!r}; valid: {', '.join(parts) or '(none)'}")
        partition = parts[sweep.slurm_partition.split(",")[0]]
    else:
        partition = next((p for p in parts.values() if p.get("Default") == "YES"), None)
        if partition is None:
            raise ConfigError(f"the cluster has no default partition: give slurm_partition=; valid: {', '.join(parts)}")
    limit = parse_slurm_time(sweep.slurm_time) if sweep.slurm_time is not None else None
    where = f"slurm_time={sweep.slurm_time}"
    if limit is None:   # the partition's default, or its maximum
        for key in ("DefaultTime", "MaxTime"):
            value = partition.get(key, "NONE")
            if value not in ("NONE", "UNLIMITED", "INFINITE"):
                limit = parse_slurm_time(value)
                where = f"partition {partition['PartitionName']}'s {key} {value}"
                break
    if limit is not None and units:
        usable = limit - requeue_grace(limit)
        worst = max(units, key=lambda u: min(checkpoint_interval_seconds(u),
                                             estimated_minutes([u], 1) * 60))
        need = min(checkpoint_interval_seconds(worst), estimated_minutes([worst], 1) * 60)
        if usable < need:
            raise ConfigError(
                f"{where} leaves ~{usable} s of training per task (the requeue signal comes "
                f"{requeue_grace(limit)} s before the limit), less than one checkpoint interval of "
                f"{worst[0].run_id} (~{need:.0f} s estimated: checkpoint_every={worst[0].checkpoint_every} updates "
                f"of {steps_per_update(worst[0]):,} steps): no task could ever reach a checkpoint; "
                f"raise slurm_time or lower checkpoint_every")
    if units:
        with _TempScript(batch_script(sweep, len(units), Path("/dev/null"), limit)) as script:
            proc = _slurm(_tool("sbatch"), "--test-only", str(script))
        if proc.returncode != 0:
            raise ConfigError(f"sbatch refuses the array: {_first_line(proc.stderr)}")


class _TempScript:
    def __init__(self, text: str):
        import tempfile
        fd, self.path = tempfile.mkstemp(prefix="pg-arena-sbatch-", suffix=".sh")
        os.write(fd, text.encode())
        os.close(fd)

    def __enter__(self) -> str:
        return self.path

    def __exit__(self, *exc) -> None:
        os.unlink(self.path)


def extra_lines(text: str | None) -> list[str]:
    """``slurm_extra``: ``;``-separated sbatch options, each with or without ``#SBATCH``."""
    out = []
    for part in (text or "").split(";"):
        part = part.strip()
        if part.startswith("#SBATCH"):
            part = part[len("#SBATCH"):].strip()
        if part:
            if not part.startswith("-"):
                raise ConfigError(f"slurm_extra: {part!r} is not an sbatch option (e.g. --constraint=v100)")
            out.append(part)
    return out


def batch_script(sweep, num_tasks: int, folder: Path, limit: int | None) -> str:
    """The array's batch script: ``#SBATCH`` lines from the sweep's ``slurm_*`` keys, then the task."""
    options = [f"--job-name=pg-arena-{sweep.suite}", f"--array=0-{num_tasks - 1}"
               + (f"%{sweep.slurm_array_parallelism}" if sweep.slurm_array_parallelism else ""),
               f"--output={folder}/slurm-%A_%a.out", "--open-mode=append", "--requeue",
               f"--cpus-per-task={sweep.slurm_cpus_per_task}", "--ntasks=1", "--nodes=1"]
    if limit is not None:
        options.append(f"--signal=B:USR1@{requeue_grace(limit)}")
    for key, flag in (("slurm_partition", "partition"), ("slurm_time", "time"), ("slurm_mem", "mem"),
                      ("slurm_account", "account"), ("slurm_qos", "qos")):
        if getattr(sweep, key) is not None:
            options.append(f"--{flag}={getattr(sweep, key)}")
    gpus = sweep.slurm_gpus_per_task
    if gpus is None and sweep.device.startswith("cuda"):
        gpus = 1
    if gpus:
        options.append(f"--gpus-per-task={gpus}")
    options += extra_lines(sweep.slurm_extra)
    python = sweep.slurm_python or sys.executable
    lines = ["#!/bin/bash"] + [f"#SBATCH {o}" for o in options] + [
        "# pg-arena: one task of the array trains units[SLURM_ARRAY_TASK_ID] of units.json",
        "export OMP_NUM_THREADS=1",
        *([sweep.slurm_setup] if sweep.slurm_setup else []),
        f"cd {shlex.quote(str(ROOT))}",
        # exec: the batch shell becomes Python, so the requeue signal (B:USR1) reaches it
        f"exec {shlex.quote(python)} -m harness.slurm_executor task {shlex.quote(str(folder))}",
    ]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------
# the task (on a compute node)

def _requeue_self(signum, frame) -> None:
    """The time limit is near: back to the queue; the next attempt resumes from the checkpoints."""
    job = os.environ.get("SLURM_JOB_ID")
    print(f"pg-arena: signal {signum} before the time limit: requeueing job {job}", file=sys.stderr, flush=True)
    if job:
        subprocess.run(["scontrol", "requeue", job], check=False)


def run_task(folder: Path, index: int) -> int:
    """Train ``units[index]`` of the submission in ``folder``; writes task<index>.result.json."""
    from harness.locks import RunLock
    signal.signal(signal.SIGUSR1, _requeue_self)
    os.environ["OMP_NUM_THREADS"] = "1"
    import torch
    torch.set_num_threads(1)
    from harness.train import train_batch

    units = json.loads((folder / "units.json").read_text())["units"]
    runs = [RunConfig(**fields) for fields in units[index]]
    results: dict[str, dict] = {}
    locks, pending = [], []
    progress: dict[str, int] = {}
    last_write = [0.0]

    def report(i: int, step: int) -> None:
        progress[pending[i].run_id] = step
        if time.monotonic() - last_write[0] >= 1.0:
            last_write[0] = time.monotonic()
            atomic_write_text(folder / f"task{index}.progress.json", json.dumps(progress))

    try:
        for run in runs:
            lock = RunLock(run.run_dir)
            if not lock.acquire():
                results[run.run_id] = {"run_id": run.run_id, "status": RUNNING_ELSEWHERE,
                                       "error": "another sweep holds this run's lock", "resumed_from": None}
            elif is_done(run.run_dir):
                lock.release()
                results[run.run_id] = {"run_id": run.run_id, "status": "done", "error": None,
                                       "resumed_from": None, "note": "already done"}
            else:
                locks.append(lock)
                pending.append(run)
        if pending:
            try:
                records = train_batch(pending, progress=report)
                results.update({r.run_id: summarize(rec) for r, rec in zip(pending, records)})
            except Exception as exc:   # outside train's own handling (the run folder cannot be made)
                results.update({r.run_id: {"run_id": r.run_id, "status": "failed", "resumed_from": None,
                                           "error": f"{type(exc).__name__}: {exc}"} for r in pending})
        atomic_write_text(folder / f"task{index}.progress.json", json.dumps(progress))
        atomic_write_text(folder / f"task{index}.result.json", json.dumps(results))
    finally:
        for lock in locks:
            lock.release()
    return 0


# ---------------------------------------------------------------------------------------
# the driver

@dataclasses.dataclass
class _Task:
    folder: Path
    index: int
    runs: list[RunConfig]
    job: str | None = None

    @property
    def name(self) -> str:
        return f"{self.job}_{self.index}"


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def live_tasks() -> dict[str, dict[int, str]]:
    """This user's array tasks Slurm still holds (pending, running, requeued): job id -> {task index: state}."""
    proc = _slurm(_tool("squeue"), "--me", "--array", "--noheader", "--format=%F|%K|%T")
    if proc.returncode != 0:
        raise RuntimeError(f"squeue failed: {_first_line(proc.stderr)}")
    out: dict[str, dict[int, str]] = {}
    for line in proc.stdout.splitlines():
        parts = line.strip().split("|")
        if len(parts) == 3 and parts[1].isdigit():
            out.setdefault(parts[0], {})[int(parts[1])] = parts[2]
    return out


def _job_state(task: _Task) -> str:
    """How Slurm says a task ended (while it still remembers the job: MinJobAge)."""
    proc = _slurm(_tool("scontrol"), "show", "job", task.name, "--oneliner")
    m = re.search(r"JobState=(\S+)", proc.stdout)
    reason = re.search(r"Reason=(\S+)", proc.stdout)
    if not m:
        return "state unknown (Slurm no longer lists it)"
    return m.group(1) + (f" ({reason.group(1)})" if reason and reason.group(1) != "None" else "")


def submit(sweep, units: list[list[RunConfig]], root: Path) -> list[_Task]:
    """One array of ``units``: writes its folder, then ``sbatch``; returns its tasks."""
    folder = root / f"{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}"
    folder.mkdir(parents=True)
    atomic_write_text(folder / "units.json", json.dumps(
        {"units": [[dataclasses.asdict(r) for r in unit] for unit in units]}, indent=1))
    limit = parse_slurm_time(sweep.slurm_time) if sweep.slurm_time else _partition_limit(sweep)
    script = batch_script(sweep, len(units), folder, limit)
    atomic_write_text(folder / "submit.sh", script)
    proc = _slurm(_tool("sbatch"), "--parsable", str(folder / "submit.sh"), timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(f"sbatch failed: {_first_line(proc.stderr)}")
    job = proc.stdout.strip().split(";")[0]
    atomic_write_text(folder / "job", job + "\n")
    return [_Task(folder, i, unit, job) for i, unit in enumerate(units)]


def _partition_limit(sweep) -> int | None:
    parts = partitions()
    name = (sweep.slurm_partition or "").split(",")[0]
    partition = parts.get(name) or next((p for p in parts.values() if p.get("Default") == "YES"), {})
    for key in ("DefaultTime", "MaxTime"):
        value = partition.get(key, "NONE")
        if value not in ("NONE", "UNLIMITED", "INFINITE"):
            return parse_slurm_time(value)
    return None


def attachable(root: Path, runs: list[RunConfig], alive: dict[str, dict[int, str]]) -> list[_Task]:
    """Tasks of earlier submissions to this results folder that Slurm still holds and that train
    some of ``runs`` with the same config: the driver follows them instead of submitting again."""
    wanted = {r.run_id: comparable_config(dataclasses.asdict(r)) for r in runs}
    out = []
    for folder in sorted(root.glob("*/")) if root.is_dir() else []:
        job = (folder / "job").read_text().strip() if (folder / "job").is_file() else None
        if job not in alive:
            continue
        units = (_read_json(folder / "units.json") or {}).get("units", [])
        for index, fields in enumerate(units):
            if index not in alive[job]:
                continue
            unit = [RunConfig(**f) for f in fields]
            if any(wanted.get(r.run_id) == comparable_config(dataclasses.asdict(r)) for r in unit):
                out.append(_Task(folder, index, unit, job))
    return out


def run_slurm(runs: list[RunConfig], sweep, batches: list[list[RunConfig]], show_progress: bool = True,
              retries: int = RETRIES) -> list[dict]:
    """Run ``batches`` (the processes of the sweep) as tasks of Slurm job arrays and follow them
    to the end; returns one outcome per run as ``harness.executor.run_sweep`` does. Ctrl-C
    detaches (the array goes on; the same command re-attaches)."""
    # the tasks start in the repository's folder, perhaps not this one
    resolve = lambda r: dataclasses.replace(r, results_dir=str(Path(r.results_dir).resolve()))  # noqa: E731
    runs, batches = [resolve(r) for r in runs], [[resolve(r) for r in u] for u in batches]
    root = Path(sweep.results_dir).resolve() / STATE_DIR
    wanted = {r.run_id for r in runs}
    alive = live_tasks()
    tasks = attachable(root, runs, alive)
    configs = {r.run_id: comparable_config(dataclasses.asdict(r)) for r in runs}
    covered = {r.run_id for t in tasks for r in t.runs
               if configs.get(r.run_id) == comparable_config(dataclasses.asdict(r))}
    rest = [u for u in batches if not any(r.run_id in covered for r in u)]
    # a unit split between an attached task and the rest: its remaining runs go alone
    rest += [[r] for u in batches if any(r.run_id in covered for r in u) for r in u if r.run_id not in covered]
    if tasks:
        jobs = sorted({t.job for t in tasks})
        print(f"slurm: attached to job {', '.join(jobs)} ({len(tasks)} task(s) queued or running, "
              f"{len(covered & wanted)} run(s) of this sweep)", file=sys.stderr)
    if rest:
        new = submit(sweep, rest, root)
        print(f"slurm: submitted job {new[0].job}: an array of {len(new)} task(s) ({new[0].folder})",
              file=sys.stderr)
        tasks += new
    attempts = {r.run_id: 1 for r in runs}
    results: dict[str, dict] = {}
    done_steps: dict[str, int] = {}
    steps_of = {r.run_id: r.steps for r in runs}
    bar = progress_bar(sum(r.steps for r in runs), len(runs), show_progress)
    missing_since: dict[tuple, float] = {}
    try:
        while len(results) < len(runs):
            alive = live_tasks()
            states: dict[str, int] = {}
            retry: list[list[RunConfig]] = []
            for task in list(tasks):
                state = alive.get(task.job, {}).get(task.index)
                mine = [r for r in task.runs if r.run_id in wanted and r.run_id not in results]
                progress = _read_json(task.folder / f"task{task.index}.progress.json") or {}
                for run_id, step in progress.items():
                    if run_id in wanted and run_id not in results:
                        step = min(int(step), steps_of[run_id])
                        bar.update(max(0, step - done_steps.get(run_id, 0)))
                        done_steps[run_id] = max(step, done_steps.get(run_id, 0))
                outcome = _read_json(task.folder / f"task{task.index}.result.json")
                if isinstance(outcome, dict) and state is None:
                    for run in mine:
                        value = outcome.get(run.run_id) or {"run_id": run.run_id, "status": "failed",
                                                            "error": "the task reported no result for it"}
                        results[run.run_id] = {"error": None, "resumed_from": None, **value,
                                               "attempts": attempts[run.run_id]}
                        bar.update(max(0, steps_of[run.run_id] - done_steps.get(run.run_id, 0)))
                        done_steps[run.run_id] = steps_of[run.run_id]
                    tasks.remove(task)
                elif state is None:
                    # gone from the queue without a result: wait one more poll (a result may be on its way
                    # through the shared filesystem), then it died
                    key = (task.job, task.index)
                    if time.monotonic() - missing_since.setdefault(key, time.monotonic()) < 2 * POLL_SECONDS:
                        continue
                    tasks.remove(task)
                    why = f"Slurm task {task.name} ended without a result: {_job_state(task)}"
                    again = [r for r in mine if attempts[r.run_id] <= retries]
                    for run in mine:
                        if run not in again:
                            error = f"{why} ({attempts[run.run_id]} attempts)"
                            mark_failed(run, error)
                            results[run.run_id] = {"run_id": run.run_id, "status": "failed", "error": error,
                                                   "resumed_from": None, "attempts": attempts[run.run_id]}
                    if again:
                        print(f"slurm: {why}; submitting its {len(again)} run(s) again", file=sys.stderr)
                        for run in again:
                            attempts[run.run_id] += 1
                        retry.append(again)
                else:
                    states[state] = states.get(state, 0) + 1
            if retry:
                tasks += submit(sweep, retry, root)
            bar.set_postfix_str(f"{len(results)}/{len(runs)} runs; tasks: "
                                + (", ".join(f"{n} {s.lower()}" for s, n in sorted(states.items())) or "none"))
            if len(results) < len(runs):
                if not tasks:   # cannot happen unless a task held runs it did not report
                    for run in runs:
                        results.setdefault(run.run_id, {"run_id": run.run_id, "status": "failed", "error":
                                                        "no Slurm task holds this run", "resumed_from": None,
                                                        "attempts": attempts[run.run_id]})
                    break
                time.sleep(POLL_SECONDS)
    except KeyboardInterrupt:
        bar.close()
        jobs = sorted({t.job for t in tasks if t.job})
        print(f"\nslurm: detached; job {', '.join(jobs) or '(none)'} keeps running. The same command "
              f"re-attaches; scancel {' '.join(jobs)} stops it.", file=sys.stderr)
        raise SystemExit(130) from None
    bar.close()
    return [results[r.run_id] for r in runs]


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "task":
        index = int(os.environ.get("SLURM_ARRAY_TASK_ID", "0"))
        return run_task(Path(argv[1]), index)
    print("usage: python -m harness.slurm_executor task <submission folder>  (inside a Slurm array task)",
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
