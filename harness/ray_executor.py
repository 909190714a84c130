"""The Ray executor (``executor=ray``): every run one Ray task; results come back to the driver.

Each attempt of a run is one Ray task (a generator) with ``num_cpus=1`` and, for
``device=cuda``, a fraction of a GPU (``ray_num_gpus``, so several small runs share one).
By default no shared filesystem is needed: the driver sends the run folder's files (a
checkpoint, when there is one) with the task; the worker trains in a temporary folder and
streams back progress and, after every checkpoint and at the end, the folder's files, which
the driver writes under ``results/`` (atomically, ``run.json`` last). A worker that dies
(SIGKILL, out of memory, a lost node) fails its task; the driver (``harness/executor.py``)
starts a new one with the latest checkpoint it received, so the run resumes rather than
restarts. With ``ray_shared=true`` the workers write straight into ``results_dir`` (a
path every node sees) and only progress travels.

The code reaches the workers as ``py_modules`` (the harness, algos and suites packages),
so a cluster needs only the dependencies installed (``pip install 'pg-arena[ray]'``).
The per-run lock is held by the driver (see ``harness/locks.py``).

A cluster with Ray's token authentication (the default of a Ray 2.5x head started while
``~/.ray/auth_token`` exists) needs ``RAY_AUTH_MODE=token`` (and the token, in
``RAY_AUTH_TOKEN`` / ``RAY_AUTH_TOKEN_PATH`` or ``~/.ray/auth_token``) in the driver's
environment; scripts/ci_ray.sh shows the whole setup on loopback.
"""
from __future__ import annotations

import dataclasses
import os
import queue
import shutil
import socket
import tempfile
import threading
from pathlib import Path
from typing import Any, Iterator

from harness.config import ConfigError, RunConfig
from harness.executor import RETRIES, WorkerDied, run_sweep, summarize
from core.results import mirror_run_dir, snapshot_run_dir

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("core", "harness", "algos", "suites")

# A Ray instance started for the sweep (no ray_address): a small object store and no
# dashboard (what travels is kilobytes of files; the dashboard costs memory and a port).
LOCAL_OBJECT_STORE_BYTES = 300 * 2 ** 20


def is_loopback(address: str | None) -> bool:
    """No address (a Ray instance started for the sweep) or one on this machine's loopback."""
    if not address:
        return True
    host = address.rsplit(":", 1)[0].strip("[]")
    return host in ("localhost", "::1") or host.startswith("127.")


def import_ray(address: str | None = None):
    """Import Ray (a clear error if it is missing). For a loopback address (or none), Ray is
    told to stay on loopback: by default it replaces 127.0.0.1 with the address of the
    machine's default route, for its own processes and for the address it connects to.
    This must happen before the first import of Ray."""
    if is_loopback(address):
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    try:
        import ray
    except ImportError:
        raise ConfigError("executor=ray needs Ray: pip install -e '.[ray]' (or pip install 'ray[default]')") from None
    return ray


# ---------------------------------------------------------------------------------------
# the worker side

WORK_PREFIX = "pg-arena-ray-"   # + the worker's pid: the temporary run folders of attempts


def _remove_stale_work_dirs() -> None:
    """A worker killed mid-run cannot remove its temporary folder: the next attempt on the
    node removes those whose worker process is gone."""
    for path in Path(tempfile.gettempdir()).glob(f"{WORK_PREFIX}*-*"):
        try:
            pid = int(path.name[len(WORK_PREFIX):].split("-")[0])
            os.kill(pid, 0)
        except ValueError:
            continue
        except ProcessLookupError:
            shutil.rmtree(path, ignore_errors=True)
        except PermissionError:  # alive, another user's
            continue

def train_task(runs_fields: list[dict], files: list[dict[str, bytes]], shared: bool) -> Iterator[tuple[str, Any]]:
    """One attempt of a run or of a stack of runs (``harness.train.train_batch``), inside a Ray
    worker: yields ``("started", None, info)``, ``("progress", i, global_step)``,
    ``("files", i, {name: bytes})`` and last one ``("result", i, summary)`` per run."""
    os.environ["OMP_NUM_THREADS"] = "1"
    import torch
    torch.set_num_threads(1)
    from harness.train import train_batch

    runs = [RunConfig(**fields) for fields in runs_fields]
    tmp = None
    if shared:
        run_dirs = [run.run_dir for run in runs]
    else:
        _remove_stale_work_dirs()
        tmp = Path(tempfile.mkdtemp(prefix=f"{WORK_PREFIX}{os.getpid()}-"))
        run_dirs = [tmp / f"run{i}" for i in range(len(runs))]
        for run_dir, run_files in zip(run_dirs, files):
            run_dir.mkdir()
            for name, data in run_files.items():
                (run_dir / name).write_bytes(data)
    events: queue.Queue = queue.Queue()

    def target() -> None:
        try:
            records = train_batch(runs, progress=lambda i, step: events.put(("progress", i, step)),
                                  on_checkpoint=None if shared else (
                                      lambda i, d: events.put(("files", i, snapshot_run_dir(d)))),
                                  run_dirs=run_dirs)
            for i, record in enumerate(records):
                if not shared:
                    events.put(("files", i, snapshot_run_dir(run_dirs[i])))
                events.put(("result", i, summarize(record)))
        except BaseException as exc:  # outside train's own handling
            for i, run in enumerate(runs):
                events.put(("result", i, {"run_id": run.run_id, "status": "failed",
                                          "error": f"{type(exc).__name__}: {exc}", "resumed_from": None}))
        events.put(("end", None, None))

    try:
        yield ("started", None, {"pid": os.getpid(), "host": socket.gethostname()})
        thread = threading.Thread(target=target, daemon=True)
        thread.start()
        while True:
            kind, i, value = events.get()
            if kind == "end":
                break
            if kind == "progress":  # only the latest of a burst of progress reports of a run travels
                try:
                    while events.queue and events.queue[0][:2] == ("progress", i):
                        kind, i, value = events.get_nowait()
                except queue.Empty:
                    pass
            yield (kind, i, value)
        thread.join()
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


# ---------------------------------------------------------------------------------------
# the driver side

class RayBackend:
    def __init__(self, shared: bool, num_gpus: float):
        ray = import_ray()
        self.ray, self.shared, self.num_gpus = ray, shared, num_gpus
        self._remote = ray.remote(train_task)
        self._tasks: set = set()
        self._lock = threading.Lock()

    def attempt(self, runs: list[RunConfig]) -> Iterator[tuple[str, int, Any]]:
        ray = self.ray
        # the checkpoints to resume from
        files = [{} if self.shared else snapshot_run_dir(run.run_dir) for run in runs]
        name = f"pg-arena {runs[0].run_id}" + (f" +{len(runs) - 1}" if len(runs) > 1 else "")
        options = {"num_cpus": 1, "max_retries": 0, "name": name}
        if runs[0].device.startswith("cuda"):
            options["num_gpus"] = self.num_gpus
        gen = self._remote.options(**options).remote([dataclasses.asdict(r) for r in runs], files, self.shared)
        with self._lock:
            self._tasks.add(gen)
        results = set()
        try:
            while True:
                try:
                    ref = next(gen)
                    kind, i, value = ray.get(ref)
                except StopIteration:
                    break
                except ray.exceptions.RayTaskError as exc:  # our code raised in the worker
                    for i, run in enumerate(runs):
                        if i not in results:
                            results.add(i)
                            yield ("result", i, {"run_id": run.run_id, "status": "failed", "error": _short(exc),
                                                 "resumed_from": None})
                    break
                except ray.exceptions.RayError as exc:  # the worker or its node died
                    raise WorkerDied(f"Ray task {type(exc).__name__}: {_short(exc)}") from None
                if kind == "files":
                    mirror_run_dir(runs[i].run_dir, value)
                    continue
                if kind == "result":
                    results.add(i)
                if kind in ("progress", "result"):
                    yield (kind, i, value)
        finally:
            with self._lock:
                self._tasks.discard(gen)
        if len(results) < len(runs):
            raise WorkerDied("the Ray task ended without a result")

    def shutdown(self) -> None:
        with self._lock:
            for gen in list(self._tasks):
                try:
                    self.ray.cancel(gen, force=True)
                except Exception:
                    pass


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[-1][:300] if text else type(exc).__name__


def connect(address: str | None, num_cpus: int | None = None) -> None:
    """Connect to the cluster at ``address`` (host:port or auto), or start a local instance;
    the project's packages travel to the workers as ``py_modules``."""
    ray = import_ray(address)
    if ray.is_initialized():
        return
    runtime_env = {"py_modules": [str(ROOT / p) for p in PACKAGES],
                   "env_vars": {"OMP_NUM_THREADS": "1"}}
    kwargs: dict[str, Any] = dict(runtime_env=runtime_env, log_to_driver=False, configure_logging=False)
    if address:
        ray.init(address=address, **kwargs)
    else:
        # "local": a new instance even when another one runs on this machine (ray.init()
        # alone would join that one, or the one RAY_ADDRESS names).
        ray.init(address="local", num_cpus=num_cpus, include_dashboard=False,
                 object_store_memory=LOCAL_OBJECT_STORE_BYTES, **kwargs)


def run_ray(runs: list[RunConfig], address: str | None = None, jobs: int | None = None, shared: bool = False,
            num_gpus: float = 0.25, show_progress: bool = True, retries: int = RETRIES,
            batches: list[list[RunConfig]] | None = None) -> list[dict]:
    """Run every run as Ray tasks, at most ``jobs`` at a time (default: the cluster's CPUs); a
    task trains one run, or one stack of ``batches``."""
    ray = import_ray(address)
    if shared:  # the workers' working folders differ from the driver's
        resolve = lambda r: dataclasses.replace(r, results_dir=str(Path(r.results_dir).resolve()))  # noqa: E731
        runs = [resolve(r) for r in runs]
        batches = None if batches is None else [[resolve(r) for r in b] for b in batches]
    started_here = not ray.is_initialized()
    connect(address, num_cpus=jobs if not address else None)
    try:
        if jobs is None:
            jobs = max(1, int(ray.cluster_resources().get("CPU", 1)))
        return run_sweep(runs, RayBackend(shared, num_gpus), max_in_flight=jobs, retries=retries,
                         show_progress=show_progress, batches=batches)
    finally:
        if started_here:
            ray.shutdown()
