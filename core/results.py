"""Results I/O: one folder per run, every file written atomically.

``results/<suite>/<env>/<algo>[+<variant>]/seed<k>/``:
  run.json      resolved config, versions, git commit, device, times, status
  episodes.csv  global_step, episode_return, episode_length   (every training episode)
  evals.csv     global_step, eval_return_mean, eval_return_std, eval_episodes
  metrics.csv   update, global_step, wall_seconds, sps, <algorithm metrics...>
  checkpoint.pt the resume point (model, optimisers, RNG states, environment state,
                counters, the rows so far); removed once the run is done
  .lock         held (fcntl) by the sweep running the run (``harness/locks.py``)

A file is written to a temporary name in the same folder and renamed over the old one,
so a killed run never leaves a truncated file; only ``status: done`` marks completion, and
``is_done`` also checks every file it lists (row count, complete last line, SHA-256), so a
file truncated or damaged afterwards makes the run not done (it is redone).
"""
from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import platform
import shutil
import subprocess
import tempfile
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

EPISODE_COLUMNS = ["global_step", "episode_return", "episode_length"]
EVAL_COLUMNS = ["global_step", "eval_return_mean", "eval_return_std", "eval_episodes"]
METRIC_LEADING = ["update", "global_step", "wall_seconds", "sps"]
STATUSES = ("running", "done", "failed")
# Columns that measure time, not learning: they differ between two otherwise identical runs.
TIMING_COLUMNS = ("wall_seconds", "sps", "collect_seconds", "update_seconds")


def is_timing_column(name: str) -> bool:
    return name in TIMING_COLUMNS or name.endswith("_per_s")


def _umask() -> int:
    # Read, not set: os.umask() changes the process's mask, a race with the executor's threads.
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022


_FILE_MODE = 0o666 & ~_umask()


def atomic_write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, _FILE_MODE)  # mkstemp makes 0600; results are ordinary files
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode())


def write_csv(path: Path, rows: list[dict[str, Any]], columns: list[str]) -> str:
    """Write ``rows`` atomically; returns the SHA-256 of the file's bytes."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    data = buf.getvalue().encode()
    atomic_write_bytes(path, data)
    return hashlib.sha256(data).hexdigest()


# <results_dir>/compare/<protocol>/ holds the runs ``./run_all.sh compare`` makes (harness/compare.py),
# apart from a sweep's <results_dir>/<suite>/ so the two never collide; not a suite's folder.
COMPARE_DIR = "compare"

# Config keys that do not change what a run computes: where it is stored, how often it checkpoints,
# how many torch threads it uses, which trackers it also logs to.
NOT_PROTOCOL = ("results_dir", "checkpoint_every", "threads", "track")


def comparable_config(config: dict[str, Any] | None) -> dict[str, Any] | None:
    """A run's config without the keys that do not change what it computes (where its folder is,
    how often it checkpoints, how many torch threads it uses): a checkpoint or record moved
    elsewhere, or resumed by a sweep with another ``jobs=``, still matches."""
    if not isinstance(config, dict):
        return None
    # through JSON: a config read back from run.json has lists where the dataclass has tuples
    return json.loads(json.dumps({k: v for k, v in config.items() if k not in NOT_PROTOCOL}))


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def read_run_json(run_dir: Path) -> dict[str, Any] | None:
    """The run's record, or None if missing or unreadable (then the run is not done)."""
    try:
        return json.loads((Path(run_dir) / "run.json").read_text())
    except (OSError, ValueError):
        return None


def is_done(run_dir: Path) -> bool:
    """Done = ``run.json`` says so and every result file it lists is present and complete."""
    return done_problem(run_dir) is None


def done_problem(run_dir: Path) -> str | None:
    """None if the run is done and intact; otherwise why not (for messages)."""
    record = read_run_json(run_dir)
    if record is None:
        return "run.json missing or unreadable"
    if not isinstance(record, dict) or record.get("status") != "done":
        return f"status {record.get('status') if isinstance(record, dict) else record!r}"
    files, checksums = record.get("files"), record.get("checksums") or {}
    if not isinstance(files, dict) or not files:
        return "run.json lists no result files"
    for name, rows in files.items():
        try:
            data = (Path(run_dir) / name).read_bytes()
        except OSError:
            return f"{name} missing"
        if not data.endswith(b"\n"):
            return f"{name} cut mid-line"
        found = data.count(b"\n") - 1
        if found != rows:
            return f"{name} has {found} rows, run.json says {rows}"
        if name in checksums and hashlib.sha256(data).hexdigest() != checksums[name]:
            return f"{name} differs from what the run wrote (checksum)"
    return None


# ---------------------------------------------------------------------------------------
# before a sweep: can results be written there at all?

# Free space a sweep needs before it starts: a run of the paper's protocol writes ~1-5 MB
# (CSV rows, a checkpoint of tens of kB per environment); the floor leaves room for the rest.
MIN_FREE_BYTES = 200 * 2 ** 20
BYTES_PER_RUN = 20 * 2 ** 20


class ResultsDirError(OSError):
    """The results folder cannot take this sweep (no permission, not a folder, no space)."""


def check_results_folder(root: Path) -> Path:
    """Raise ``ResultsDirError`` if ``root`` is, or lies under, something that is not a folder (a
    regular file); returns the nearest folder that exists (``root`` itself, or the ancestor it
    would be made in). Reads only."""
    root = Path(root)
    probe_dir = root.absolute()
    while not probe_dir.exists():
        probe_dir = probe_dir.parent
    if not probe_dir.is_dir():
        raise ResultsDirError(f"results_dir={root}: {probe_dir} is not a folder")
    return probe_dir


def check_results_dir(root: Path, num_runs: int) -> None:
    """Raise ``ResultsDirError`` with a clear message if ``root`` cannot take ``num_runs``
    runs; writes nothing (the write probe is an unnamed temporary file)."""
    root = Path(root)
    probe_dir = check_results_folder(root)
    if not os.access(probe_dir, os.W_OK | os.X_OK):
        raise ResultsDirError(f"results_dir={root}: no permission to write in {probe_dir}")
    try:  # os.access passes for root on a read-only mount or under an immutable folder
        with tempfile.TemporaryFile(dir=probe_dir):
            pass
    except OSError as exc:
        raise ResultsDirError(f"results_dir={root}: cannot write in {probe_dir} ({exc.strerror or exc})") from None
    need = MIN_FREE_BYTES + BYTES_PER_RUN * max(0, num_runs)
    free = shutil.disk_usage(probe_dir).free
    if free < need:
        raise ResultsDirError(f"results_dir={root}: only {free / 2 ** 20:.0f} MiB free on {probe_dir}; "
                              f"{num_runs} run(s) need at least {need / 2 ** 20:.0f} MiB")


# ---------------------------------------------------------------------------------------
# a run folder as bytes (the Ray executor sends it between driver and worker)

RUN_FILES = ("run.json", "episodes.csv", "evals.csv", "metrics.csv", "checkpoint.pt")


def snapshot_run_dir(run_dir: Path) -> dict[str, bytes]:
    """The run folder's result files (those present), name -> bytes."""
    out = {}
    for name in RUN_FILES:
        try:
            out[name] = (Path(run_dir) / name).read_bytes()
        except FileNotFoundError:
            pass
    return out


def mirror_run_dir(run_dir: Path, files: dict[str, bytes]) -> None:
    """Make ``run_dir``'s result files equal ``files``: each written atomically, ``run.json``
    last (so that it never says done before the rows are there), then the checkpoint removed
    if the snapshot has none."""
    run_dir = Path(run_dir)
    for name in sorted(files, key=lambda n: n == "run.json"):
        if name not in RUN_FILES:
            raise ValueError(f"unexpected file {name!r} in a run snapshot")
        atomic_write_bytes(run_dir / name, files[name])
    if "checkpoint.pt" not in files:
        (run_dir / "checkpoint.pt").unlink(missing_ok=True)


_VERSIONS: dict[str, str] | None = None


def package_versions() -> dict[str, str]:
    global _VERSIONS
    if _VERSIONS is None:
        _VERSIONS = {"python": platform.python_version()}
        for name in ("torch", "numpy", "gymnasium", "mujoco", "envpool", "ale-py", "transformers", "pandas"):
            try:
                _VERSIONS[name] = metadata.version(name)
            except metadata.PackageNotFoundError:
                pass
    return _VERSIONS


_HARDWARE: dict[str, Any] | None = None


def hardware(device: str = "cpu") -> dict[str, Any]:
    """The machine a run ran on, for ``run.json`` (runtimes from different machines must not be mixed
    silently): CPU model, logical cores (and those this process may use), memory, and the GPU when
    the run is on one."""
    global _HARDWARE
    if _HARDWARE is None:
        model = None
        try:
            with open("/proc/cpuinfo") as f:
                model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), None)
        except OSError:
            pass
        memory = None
        try:
            with open("/proc/meminfo") as f:
                kb = next(int(line.split()[1]) for line in f if line.startswith("MemTotal"))
            memory = round(kb / 2 ** 20, 1)
        except (OSError, StopIteration, ValueError):
            pass
        usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        _HARDWARE = {"cpu": model or platform.processor() or platform.machine(), "cores": os.cpu_count(),
                     "usable_cores": usable, "memory_gib": memory, "machine": platform.machine(),
                     "system": platform.system()}
    out = dict(_HARDWARE)
    if device.startswith("cuda"):
        try:
            import torch
            index = torch.device(device).index or 0
            out["gpu"] = torch.cuda.get_device_name(index)
            out["gpu_memory_gib"] = round(torch.cuda.get_device_properties(index).total_memory / 2 ** 30, 1)
        except Exception as exc:  # noqa: BLE001 - the record says why it has no GPU name
            out["gpu"] = f"unknown ({type(exc).__name__})"
    return out


def describe_hardware(hw: dict | None) -> str:
    """One line: 'CPU model, N cores[, GPU]' ('unknown' for runs stored before it was recorded)."""
    if not isinstance(hw, dict) or not hw:
        return "unknown"
    text = f"{hw.get('cpu') or '?'}, {hw.get('cores') or '?'} cores"
    return text + (f", {hw['gpu']}" if hw.get("gpu") else "")


def git_commit() -> str | None:
    try:
        root = Path(__file__).resolve().parent.parent
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=5)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=5)
        if out.returncode != 0:
            return None
        return out.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return None


# ---------------------------------------------------------------------------------------
# the code that produced a run, and whether two runs learned the same thing

REPO_ROOT = Path(__file__).resolve().parent.parent


def _git(*args: str) -> subprocess.CompletedProcess | None:
    try:
        return subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None


def source_file_record(path: Path) -> dict[str, Any]:
    """One source file as ``run.json`` records it: ``path`` (relative to the repository when inside
    it), ``sha256`` of its bytes, ``tracked`` (git tracks it and it is unchanged from HEAD, staged
    changes included; None when git cannot tell) and, unless tracked, its full ``text``: a file git
    does not hold at HEAD is otherwise not identifiable from the commit."""
    path = Path(path).resolve()
    data = path.read_bytes()
    try:
        rel = path.relative_to(REPO_ROOT).as_posix()
    except ValueError:
        rel = None
    tracked: bool | None = False
    if rel is not None:
        listed = _git("ls-files", "--error-unmatch", "--", rel)
        status = _git("status", "--porcelain", "--untracked-files=all", "--", rel)
        if listed is None or status is None or status.returncode != 0:
            tracked = None
        else:
            tracked = listed.returncode == 0 and not status.stdout.strip()
    entry: dict[str, Any] = {"path": rel if rel is not None else str(path),
                             "sha256": hashlib.sha256(data).hexdigest(), "tracked": tracked}
    if tracked is not True:
        entry["text"] = data.decode("utf-8", errors="replace")
    return entry


def algorithm_source(cls: type) -> list[dict[str, Any]]:
    """The source of an algorithm class, for ``run.json``'s ``algo_source``: one entry for ``cls``
    and one for each ancestor class defined in ``algos/`` (its MRO), each ``{"class", "path",
    "sha256", "tracked"}`` plus ``"text"`` (the whole file) when git does not track the file unchanged
    (a new variant's file, a modified built-in). ``cls`` itself is recorded wherever it is defined.
    Never raises: a class whose file cannot be read is recorded with an ``error``."""
    import inspect
    algos_dir = REPO_ROOT / "algos"
    out = []
    for klass in inspect.getmro(cls):
        name = f"{klass.__module__}.{klass.__qualname__}"
        try:
            file = inspect.getsourcefile(klass)
        except (TypeError, OSError):   # built into Python (object, ABC), or its module is not in sys.modules
            # a method's code object still names the file the class was defined in
            codes = [getattr(v, "__code__", None) for v in vars(klass).values()]
            file = next((c.co_filename for c in codes if c is not None), None)
        if file is None:
            if klass is cls:
                out.append({"class": name, "error": "no source file"})
            continue
        path = Path(file).resolve()
        if klass is not cls and not path.is_relative_to(algos_dir):
            continue
        try:
            out.append({"class": name, **source_file_record(path)})
        except OSError as exc:
            out.append({"class": name, "path": str(path), "error": f"cannot read: {exc.strerror or exc}"})
    return out


LEARNING_FILES = ("episodes.csv", "evals.csv", "metrics.csv")


def learning_rows(path: Path) -> tuple[list[str], list[list[str]]] | None:
    """A result CSV's header and rows as text, without its timing columns (``is_timing_column``);
    None if the file is missing."""
    try:
        text = Path(path).read_text()
    except OSError:
        return None
    rows = list(csv.reader(io.StringIO(text)))
    if not rows:
        return [], []
    keep = [i for i, column in enumerate(rows[0]) if not is_timing_column(column)]
    return [rows[0][i] for i in keep], [[row[i] if i < len(row) else "" for i in keep] for row in rows[1:]]


def same_learning(run_dir_a: Path, run_dir_b: Path, files: tuple[str, ...] = LEARNING_FILES) -> bool:
    """Whether two runs wrote the same episodes, evaluations and per-update metrics, cell for cell
    as written, on the columns both have (a variant may log a metric of its own, e.g. how often
    its change acted), ignoring the columns that measure time (they differ between identical runs)."""
    for name in files:
        a, b = learning_rows(Path(run_dir_a) / name), learning_rows(Path(run_dir_b) / name)
        if a is None or b is None:
            if a is not b:
                return False
            continue
        shared = [c for c in a[0] if c in b[0]]
        if not shared or len(a[1]) != len(b[1]):
            return False
        ia, ib = [a[0].index(c) for c in shared], [b[0].index(c) for c in shared]
        if any([ra[i] for i in ia] != [rb[i] for i in ib] for ra, rb in zip(a[1], b[1])):
            return False
    return True
