"""Run many training runs: the local executor (``jobs=N`` processes, one torch thread each)."""
from __future__ import annotations

import multiprocessing as mp
import os
import queue
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from harness.config import RunConfig


def _worker(run: RunConfig, progress_queue) -> dict:
    # One torch thread per run: small MLPs are fastest on one thread, and two busy
    # processes with two threads each ran 20-60x slower on this 2-core machine.
    os.environ["OMP_NUM_THREADS"] = "1"
    import torch
    torch.set_num_threads(1)
    from harness.train import train
    last = [0]

    def report(global_step: int) -> None:
        progress_queue.put((run.run_id, global_step - last[0]))
        last[0] = global_step

    record = train(run, progress=report)
    report(max(run.steps, last[0]))
    return {"run_id": run.run_id, "status": record["status"], "error": record.get("error")}


def run_local(runs: list[RunConfig], jobs: int, show_progress: bool = True) -> list[dict]:
    """Run every run, ``jobs`` at a time in fresh processes; a failed run never stops the others."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    total_steps = sum(r.steps for r in runs)
    bar = _progress_bar(total_steps, len(runs), show_progress)
    ctx = mp.get_context("spawn")
    manager = ctx.Manager()
    progress_queue = manager.Queue()
    results = []
    with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
        futures = {pool.submit(_worker, run, progress_queue): run for run in runs}
        pending = set(futures)
        while pending:
            _drain(progress_queue, bar)
            done = [f for f in pending if f.done()]
            for f in done:
                pending.discard(f)
                run = futures[f]
                try:
                    results.append(f.result())
                except BrokenProcessPool as exc:
                    results.append({"run_id": run.run_id, "status": "failed", "error": f"worker died: {exc}"})
                except Exception as exc:  # an error outside train() (e.g. pickling)
                    results.append({"run_id": run.run_id, "status": "failed", "error": f"{type(exc).__name__}: {exc}"})
                bar.set_postfix_str(f"{len(results)}/{len(runs)} runs")
            if pending:
                time.sleep(0.2)
    _drain(progress_queue, bar)
    bar.close()
    manager.shutdown()
    return results


def _drain(progress_queue, bar) -> None:
    while True:
        try:
            _, delta = progress_queue.get_nowait()
        except (queue.Empty, EOFError, OSError):
            return
        bar.update(delta)


def _progress_bar(total_steps: int, num_runs: int, enabled: bool):
    from tqdm import tqdm
    return tqdm(total=total_steps, unit="step", unit_scale=True, dynamic_ncols=True, file=sys.stderr,
                disable=not enabled, desc=f"{num_runs} runs", smoothing=0.05)
