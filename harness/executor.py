"""Run many training runs and survive what long sweeps meet.

``run_sweep`` is shared by both executors: it keeps up to ``max_in_flight`` runs going,
each driven by one thread of the driver that

1. takes the run's lock (``harness/locks.py``); a run another sweep holds is skipped and
   reported as ``running elsewhere``; a run found done once locked is not run again;
2. starts an *attempt* on a backend -- a fresh local process (``run_local``) or a Ray task
   (``harness/ray_executor.py``) -- and follows its events (progress, result);
3. if the worker dies without a result (SIGKILL, out of memory, a lost node), starts a new
   attempt, which resumes from the run's last checkpoint; after ``retries`` retries the
   run is marked failed with how its workers died.

A run that raises or produces NaN fails inside ``train`` (``run.json`` says so, with the
error) and the others carry on. A worker dies with the driver (Linux ``PR_SET_PDEATHSIG``;
elsewhere it exits at its next progress report), so a killed driver leaves no orphan
writing into a run folder, and the same command started again runs only what is unfinished.

An interrupt (Ctrl-C: SIGINT to the process group, or to the driver alone) stops the sweep: the
driver kills its workers and starts no attempt after that (a worker it killed is not a worker
that died), so every run is left as its last checkpoint left it, as when the group is
interrupted; the ``KeyboardInterrupt`` goes on to the command, which says ``error: interrupted``
and exits 130.
"""
from __future__ import annotations

import ctypes
import json
import multiprocessing as mp
import os
import queue
import signal
import sys
import threading
from typing import Any, Iterator

from harness.config import RunConfig
from harness.locks import RunLock
from core.results import atomic_write_text, is_done, now, read_run_json

# Retries of a run whose worker died (each resumes from the run's checkpoint).
RETRIES = 2

RUNNING_ELSEWHERE = "running elsewhere"


class WorkerDied(RuntimeError):
    """The worker of an attempt ended without reporting a result."""


class Stopped(WorkerDied):
    """The sweep was interrupted: the backend starts no attempt any more."""


def summarize(record: dict) -> dict:
    """What a worker reports back for a finished ``train`` call."""
    return {"run_id": record["run_id"], "status": record["status"], "error": record.get("error"),
            "resumed_from": record.get("resumed_from")}


# ---------------------------------------------------------------------------------------
# the sweep, common to both executors

def run_sweep(runs: list[RunConfig], backend, max_in_flight: int, retries: int = RETRIES,
              show_progress: bool = True, batches: list[list[RunConfig]] | None = None) -> list[dict]:
    """Run every run through ``backend``: ``attempt(runs)`` trains a list of runs in one worker
    (one run, or a stack of them: ``batches``, default each run alone) and yields
    ``(kind, i, value)`` events about ``runs[i]``: ``("progress", i, global_step)``,
    ``("result", i, summary)``; it raises ``WorkerDied`` when the worker dies.

    Returns one dict per run: ``run_id``, ``status`` (done, failed, or running elsewhere),
    ``error``, ``attempts``, ``resumed_from``.
    """
    units = batches if batches is not None else [[r] for r in runs]
    if sorted(r.run_id for u in units for r in u) != sorted(r.run_id for r in runs):
        raise ValueError("the batches must hold each run of the sweep once")
    total_steps = sum(r.steps for r in runs)
    bar = progress_bar(total_steps, len(runs), show_progress)
    events: queue.Queue = queue.Queue()
    todo = iter(list(units))
    todo_lock = threading.Lock()
    stopping = threading.Event()     # set on an interrupt: no new unit, attempt or retry

    def slot() -> None:
        while not stopping.is_set():
            with todo_lock:
                unit = next(todo, None)
            if unit is None:
                return
            try:
                _drive(unit, backend, retries, events, stopping)
            except BaseException as exc:  # a bug in the driver: report it, keep the sweep going
                for run in unit:
                    events.put(("outcome", run, {"run_id": run.run_id, "status": "failed", "attempts": 0,
                                                 "error": f"driver: {type(exc).__name__}: {exc}",
                                                 "resumed_from": None}))

    threads = [threading.Thread(target=slot, daemon=True, name=f"pg-arena-slot{i}")
               for i in range(max(1, min(max_in_flight, len(units))))]
    results: dict[str, dict] = {}
    done_steps: dict[str, int] = {}
    try:
        for t in threads:
            t.start()
        while len(results) < len(runs):
            kind, run, value = events.get()
            if kind == "progress":
                step = min(value, run.steps)
                bar.update(max(0, step - done_steps.get(run.run_id, 0)))
                done_steps[run.run_id] = max(step, done_steps.get(run.run_id, 0))
            elif kind == "outcome" and run.run_id not in results:
                bar.update(max(0, run.steps - done_steps.get(run.run_id, 0)))
                done_steps[run.run_id] = run.steps
                results[run.run_id] = value
                bar.set_postfix_str(f"{len(results)}/{len(runs)} runs")
    except BaseException:
        # Ctrl-C: stop the workers and start none again (their runs resume next time, from the
        # checkpoint they have now); a second Ctrl-C does not cut this short
        previous = _ignore_sigint()
        try:
            stopping.set()
            backend.shutdown()
            for t in threads:
                t.join(timeout=5)
        finally:
            _restore_sigint(previous)
        raise
    finally:
        bar.close()
    for t in threads:
        t.join(timeout=5)
    return [results[r.run_id] for r in runs]


def _ignore_sigint():
    """Ignore SIGINT (in the main thread, where Python handles it); returns the handler it replaced."""
    if threading.current_thread() is threading.main_thread():
        return signal.signal(signal.SIGINT, signal.SIG_IGN)
    return None


def _restore_sigint(previous) -> None:
    if previous is not None and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, previous)


def _drive(unit: list[RunConfig], backend, retries: int, events: queue.Queue,
           stopping: threading.Event | None = None) -> None:
    """Train the runs of ``unit`` in one worker at a time, each run under its lock; a worker that
    dies is replaced (its runs resume from their checkpoints) up to ``retries`` times. Puts one
    ``("outcome", run, outcome)`` event per run. Once ``stopping`` is set (an interrupt), a worker
    that ends is not replaced and no run is marked: they stay as their last checkpoint left them."""
    stopping = stopping or threading.Event()
    base = {"status": "failed", "error": None, "attempts": 0, "resumed_from": None}
    locks, pending = [], []
    try:
        for run in unit:
            lock = RunLock(run.run_dir)
            if not lock.acquire():
                events.put(("outcome", run, {**base, "run_id": run.run_id, "status": RUNNING_ELSEWHERE,
                                             "error": "another sweep holds this run's lock"}))
            elif is_done(run.run_dir):  # finished by another sweep between planning and now
                lock.release()
                events.put(("outcome", run, {**base, "run_id": run.run_id, "status": "done", "note": "already done"}))
            else:
                locks.append(lock)
                pending.append(run)
        deaths = []
        for attempt in range(1, retries + 2):
            if not pending or stopping.is_set():
                return
            reported = set()
            try:
                for kind, i, value in backend.attempt(pending):
                    if kind == "progress":
                        events.put(("progress", pending[i], value))
                    elif kind == "result":
                        reported.add(i)
                        events.put(("outcome", pending[i], {**base, "run_id": pending[i].run_id, **value,
                                                            "attempts": attempt}))
                if len(reported) < len(pending):
                    raise WorkerDied("the worker ended without a result")
                pending = []
            except WorkerDied as exc:
                if stopping.is_set() or isinstance(exc, Stopped):   # killed by the interrupt, not dead
                    return
                deaths.append(str(exc))
                pending = [r for i, r in enumerate(pending) if i not in reported]
        error = f"worker died {len(deaths)} times: {'; '.join(deaths)}"
        for run in pending:
            mark_failed(run, error)
            events.put(("outcome", run, {**base, "run_id": run.run_id, "error": error, "attempts": retries + 1}))
    finally:
        for lock in locks:
            lock.release()


def mark_failed(run: RunConfig, error: str) -> None:
    """Record in ``run.json`` a run given up on by the driver (its worker kept dying)."""
    record = read_run_json(run.run_dir)
    if not isinstance(record, dict):
        record = {"run_id": run.run_id, "suite": run.suite, "env": run.env, "algo": run.algo,
                  "variant": run.variant, "seed": run.seed}
    record.update(status="failed", end_time=now(), error=error)
    atomic_write_text(run.run_dir / "run.json", json.dumps(record, indent=2))


# ---------------------------------------------------------------------------------------
# the local executor: one fresh process per attempt

def _die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when its parent dies (no orphan keeps writing).
    The parent is the driver (spawn) or the fork server, which exits with the driver."""
    if sys.platform.startswith("linux"):
        parent = os.getppid()
        try:
            libc = ctypes.CDLL("libc.so.6", use_errno=True)
            libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except OSError:
            return
        if os.getppid() != parent:  # the parent died before the prctl took effect
            os._exit(1)


def _local_worker(runs: list[RunConfig], conn) -> None:
    _die_with_parent()
    # One OpenMP thread until train() sets the run's share of the cores (run.threads, planned by
    # threads_per_run): two busy processes with two threads each ran 20-60x slower on 2 cores.
    os.environ["OMP_NUM_THREADS"] = "1"
    import torch
    torch.set_num_threads(1)

    def send(event) -> None:
        try:
            conn.send(event)
        except OSError:  # the driver is gone: nobody waits for this run; stop without writing
            os._exit(1)

    try:
        from harness.train import train_batch
        records = train_batch(runs, progress=lambda i, step: send(("progress", i, step)))
        for i, record in enumerate(records):
            send(("result", i, summarize(record)))
    except Exception as exc:  # outside train's own handling (e.g. the run folder cannot be made)
        for i, run in enumerate(runs):
            send(("result", i, {"run_id": run.run_id, "status": "failed", "error": f"{type(exc).__name__}: {exc}",
                                "resumed_from": None}))
    except KeyboardInterrupt:  # Ctrl-C reached the whole group: stop as a kill stops it, quietly (the driver says it)
        os._exit(130)
    finally:
        conn.close()


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "did not exit"
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


class LocalBackend:
    """Each attempt is a fresh process, forked from a server that has imported torch and the
    harness once (``forkserver``): isolation per run at ~0.1 s of start-up."""

    def __init__(self):
        self._ctx = _context()
        self._procs: set = set()
        self._procs_lock = threading.Lock()
        self._closed = False

    def attempt(self, runs: list[RunConfig]) -> Iterator[tuple[str, int, Any]]:
        reader, writer = self._ctx.Pipe(duplex=False)
        proc = self._ctx.Process(target=_local_worker, args=(runs, writer), daemon=True,
                                 name=f"pg-arena {runs[0].run_id}" + (f" +{len(runs) - 1}" if len(runs) > 1 else ""))
        with self._procs_lock:
            if self._closed:     # shut down (interrupted): no new worker
                reader.close()
                writer.close()
                raise Stopped("the sweep was interrupted")
            proc.start()
            self._procs.add(proc)
        writer.close()
        results = 0
        try:
            while True:
                try:
                    event = reader.recv()
                except (EOFError, OSError):
                    break
                results += event[0] == "result"
                yield event
        finally:
            reader.close()
            proc.join()
            with self._procs_lock:
                self._procs.discard(proc)
        if results < len(runs):
            raise WorkerDied(f"worker {proc.pid} {_describe_exit(proc.exitcode)}")

    def shutdown(self) -> None:
        with self._procs_lock:
            self._closed = True
            for proc in list(self._procs):
                if proc.is_alive():
                    proc.kill()


_CONTEXT = None


def _context():
    global _CONTEXT
    if _CONTEXT is None:
        if "forkserver" in mp.get_all_start_methods():
            _CONTEXT = mp.get_context("forkserver")
            # Imported once in the server; every worker is forked with them loaded.
            _CONTEXT.set_forkserver_preload(["torch", "harness.train", "harness.executor", "suites", "algos"])
        else:
            _CONTEXT = mp.get_context("spawn")
    return _CONTEXT


def run_local(runs: list[RunConfig], jobs: int, show_progress: bool = True, retries: int = RETRIES,
              batches: list[list[RunConfig]] | None = None) -> list[dict]:
    """Run every run, ``jobs`` processes at a time, each process a fresh one that trains one run
    or one stack of ``batches``; a failed run never stops the others, and a run whose process is
    killed resumes from its checkpoint."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")  # inherited by the fork server
    return run_sweep(runs, LocalBackend(), max_in_flight=jobs, retries=retries, show_progress=show_progress,
                     batches=batches)


def progress_bar(total_steps: int, num_runs: int, enabled: bool):
    from tqdm import tqdm
    return tqdm(total=total_steps, unit="step", unit_scale=True, dynamic_ncols=True, file=sys.stderr,
                disable=not enabled, desc=f"{num_runs} runs", smoothing=0.05)
