"""TensorBoard and Weights & Biases logging (``track=tensorboard,wandb``), and ``export``.

The CSV files stay the source of truth: a tracker writes the rows the run writes to its CSVs,
no others, and never changes a result. Rows are handed over when they are on disk: at every
checkpoint and at the end of the run (``harness/train.py``), each row once. A run that starts
(or resumes from a checkpoint) writes its local logs anew from its first row, so a log never
holds the rows of an interval that a killed attempt wrote and the resumed one wrote again: at
the end TensorBoard's log and an offline W&B run hold exactly the CSVs' rows. An online W&B run
cannot be rewritten: a resumed one goes on from the rows the checkpoint counts (``tracked``),
so the rows of the one interval between the last checkpoint and a kill can appear twice.

Where the logs go, under ``results_dir``::

    tracking/tensorboard/<suite>/<env>/<algo>[+variant]/seed<k>/   one TensorBoard run per run
    tracking/wandb/wandb/offline-run-<time>-<id>/                  W&B runs (offline by default)

Names: a TensorBoard run is the run's id (``tensorboard --logdir results/tracking/tensorboard``
groups the seeds of a setting by their common folder); a W&B run is named by its id, its group
is ``<suite>/<env>/<algo>[+variant]`` and the seed is a tag (``seed<k>``). Scalars:
``episodes/episode_return`` and ``episodes/episode_length`` (every training episode),
``evals/<column>`` and ``metrics/<column>`` (every evaluation and update), all against
``global_step``; an event's wall time is the run's start plus its ``wall_seconds``
(TensorBoard's relative and wall-time axes; W&B logs ``wall_seconds`` beside each row). The
resolved config is the run's hyper-parameters (TensorBoard's HParams tab; W&B's config).

W&B runs offline (``WANDB_MODE=offline``) unless the environment says otherwise;
``wandb sync results/tracking/wandb/wandb/offline-run-*`` uploads later (README).

A tracker that fails while a run trains (disk full, a bug) is switched off for that run with a
warning in ``run.json``; the run goes on. One that is not installed is an error at planning.
``./run_all.sh export track=tensorboard results_dir=...`` writes the logs of stored runs.
"""
from __future__ import annotations

import bisect
import dataclasses
import hashlib
import json
import os
import shutil
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from core.errors import ConfigError
from harness.config import TRACKERS, RunConfig, check_trackers   # track= is checked when a sweep is planned

TRACKING_DIR = "tracking"
FILES = ("episodes", "evals", "metrics")


def setting(run) -> str:
    return f"{run.suite}/{run.env}/{run.algo}{run.variant}"


def hyperparameters(run) -> dict[str, Any]:
    """The run's resolved config as flat scalars (TensorBoard's HParams take no nesting)."""
    out: dict[str, Any] = {"suite": run.suite, "env": run.env, "algo": run.algo, "variant": run.variant or "-",
                           "seed": run.seed, "steps": run.steps, "device": run.device}
    for prefix, cfg in (("algo", run.algo_cfg), ("suite", run.suite_cfg)):
        for key, value in sorted(cfg.items()):
            out[f"{prefix}.{key}"] = value if isinstance(value, (int, float, str, bool)) else json.dumps(value)
    return out


def _number(text: Any) -> float | None:
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value


def _epoch(iso: str | None) -> float:
    try:
        return datetime.fromisoformat(iso).timestamp()
    except (TypeError, ValueError):
        return 0.0


class _Clock:
    """Wall time of a global step: the end of the update that reached it (``metrics`` rows)."""

    def __init__(self, start: float):
        self.start, self.steps, self.seconds = start, [], []

    def add(self, metrics_rows) -> None:
        for row in metrics_rows:
            step, wall = _number(row.get("global_step")), _number(row.get("wall_seconds"))
            if step is not None and wall is not None:
                self.steps.append(step)
                self.seconds.append(wall)

    def wall_seconds(self, step: float) -> float:
        i = bisect.bisect_left(self.steps, step)
        if i < len(self.seconds):
            return self.seconds[i]
        return self.seconds[-1] if self.seconds else 0.0


def rows_to_points(kind: str, rows, clock: _Clock):
    """``(global_step, wall_seconds, {tag: value})`` for every row of one CSV file, its numbers
    tagged ``<kind>/<column>``."""
    skip = {"global_step", "update"} if kind == "metrics" else {"global_step"}
    for row in rows:
        step = _number(row.get("global_step"))
        if step is None:
            continue
        wall = _number(row.get("wall_seconds")) if kind == "metrics" else clock.wall_seconds(step)
        values = {f"{kind}/{key}": _number(text) for key, text in row.items() if key not in skip}
        yield int(step), wall or 0.0, {tag: v for tag, v in values.items() if v is not None}


class _TensorBoard:
    def __init__(self, run, start: float, resumed: bool):
        from torch.utils.tensorboard import SummaryWriter
        from torch.utils.tensorboard.summary import hparams
        self.dir = Path(run.results_dir) / TRACKING_DIR / "tensorboard" / run.run_id
        shutil.rmtree(self.dir, ignore_errors=True)   # written anew from the first row (see above)
        self.writer = SummaryWriter(str(self.dir))
        self.start = start
        self.continues = False
        for summary in hparams(hyperparameters(run), {}):
            self.writer.file_writer.add_summary(summary)
        self.writer.add_text("config", "```\n" + json.dumps(dataclasses.asdict(run), indent=1, default=str) + "\n```")

    def write(self, points) -> None:
        for step, wall, values in points:
            for tag, value in values.items():
                self.writer.add_scalar(tag, value, step, walltime=self.start + wall)
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


def wandb_id(run) -> str:
    """A stable W&B run id: the same run (results folder and run id) resumes the same W&B run."""
    return hashlib.sha256(f"{Path(run.results_dir).resolve()}|{run.run_id}".encode()).hexdigest()[:16]


class _WandB:
    def __init__(self, run, start: float, resumed: bool):
        import wandb
        folder = Path(run.results_dir) / TRACKING_DIR / "wandb"
        folder.mkdir(parents=True, exist_ok=True)
        mode = os.environ.get("WANDB_MODE", "offline")
        self.continues = mode not in ("offline", "disabled", "dryrun")
        if not self.continues:   # written anew from the first row (see above)
            for old in (folder / "wandb").glob(f"offline-run-*-{wandb_id(run)}"):
                shutil.rmtree(old, ignore_errors=True)
        self.run = wandb.init(
            mode=mode, project=os.environ.get("WANDB_PROJECT", "pg-arena"),
            dir=str(folder), id=wandb_id(run), name=run.run_id, group=setting(run), job_type=run.env,
            tags=[f"seed{run.seed}", run.suite, run.env, run.algo + run.variant], config=hyperparameters(run),
            resume="allow", reinit="create_new",
            settings=wandb.Settings(console="off", quiet=True, silent=True, x_disable_stats=True,
                                    x_disable_machine_info=True, save_code=False))
        self.run.define_metric("global_step")
        self.run.define_metric("*", step_metric="global_step")

    def write(self, points) -> None:
        for step, wall, values in points:   # one W&B row per CSV row
            self.run.log({"global_step": step, "wall_seconds": wall, **values})

    def close(self) -> None:
        self.run.finish()


_MAKERS = {"tensorboard": _TensorBoard, "wandb": _WandB}


class RunTrackers:
    """The trackers of one run in ``harness/train.py``: ``write(state)`` hands over the rows not yet
    written (``state.tracked`` counts them); a tracker that raises is dropped with a warning."""

    def __init__(self, run, record: dict, state):
        self.run, self.record = run, record
        self.clock = _Clock(_epoch(record.get("start_time")))
        self.trackers: dict[str, Any] = {}
        self.written: dict[str, dict[str, int]] = {}   # tracker -> rows of each file it has
        resumed = bool(getattr(state, "resumes", None))
        for name in run.track:
            try:
                self.trackers[name] = tracker = _MAKERS[name](run, self.clock.start, resumed)
            except Exception as exc:  # noqa: BLE001 - tracking never stops a run
                self._warn(name, exc)
                continue
            tracked = getattr(state, "tracked", None) or {}
            self.written[name] = {k: tracked.get(k, 0) if tracker.continues else 0 for k in FILES}

    def _warn(self, name: str, exc: BaseException) -> None:
        message = (f"track={name} failed ({type(exc).__name__}: {exc}) and is off for this run; the CSVs are "
                   f"complete: ./run_all.sh export track={name} results_dir={self.run.results_dir} writes its logs")
        self.record.setdefault("warnings", []).append(message)
        print(f"warning: {self.run.run_id}: {message}", file=sys.stderr)

    def write(self, state) -> None:
        self.clock = _Clock(self.clock.start)   # wall times of every update so far
        self.clock.add(state.metrics)
        for name, tracker in list(self.trackers.items()):
            done = self.written[name]
            points = [p for kind in FILES for p in rows_to_points(kind, getattr(state, kind)[done[kind]:], self.clock)]
            try:
                tracker.write(points)
            except Exception as exc:  # noqa: BLE001
                self._warn(name, exc)
                self._close(name)
            self.written[name] = {kind: len(getattr(state, kind)) for kind in FILES}
        state.tracked = {kind: len(getattr(state, kind)) for kind in FILES}

    def _close(self, name: str) -> None:
        tracker = self.trackers.pop(name, None)
        try:
            if tracker is not None:
                tracker.close()
        except Exception as exc:  # noqa: BLE001 - its last rows may be missing: say so
            self._warn(name, exc)

    def close(self) -> None:
        for name in list(self.trackers):
            self._close(name)


# ---------------------------------------------------------------------------------------
# export: the logs of stored runs

def _read_csv(path: Path) -> list[dict]:
    import csv
    try:
        with open(path, newline="") as f:
            return list(csv.DictReader(f))
    except OSError:
        return []


class _Rows:
    """The rows of a stored run, in the shape ``RunTrackers.write`` takes."""

    def __init__(self, run_dir: Path):
        for kind in FILES:
            setattr(self, kind, _read_csv(run_dir / f"{kind}.csv"))
        self.tracked = {k: 0 for k in FILES}


def export_run(run_dir: Path, names, results_dir: Path) -> list[str]:
    """Write the ``names`` logs of the stored run in ``run_dir`` (replacing those it has); returns
    the warnings."""
    record = json.loads((run_dir / "run.json").read_text())
    fields = {f.name for f in dataclasses.fields(RunConfig)}
    config = {k: v for k, v in record["config"].items() if k in fields}
    run = RunConfig(**{**config, "results_dir": str(results_dir), "track": tuple(names)})
    record = dict(record, warnings=[])
    rows = _Rows(run_dir)
    trackers = RunTrackers(run, record, rows)
    trackers.write(rows)
    trackers.close()
    return record["warnings"]


USAGE = "usage: ./run_all.sh export track=tensorboard[,wandb] [results_dir=results] [suite=mujoco]"


def export_main(argv: list[str]) -> int:
    """``./run_all.sh export track=... [results_dir=...] [suite=...]``: the logs of every run stored
    as done (exit 2 for bad input, before anything is written)."""
    from core.results import is_done
    words = dict(w.split("=", 1) for w in argv if "=" in w)
    bad = [w for w in argv if "=" not in w] + [k for k in words if k not in ("track", "results_dir", "suite")]
    try:
        if bad:
            raise ConfigError(f"export takes track=, results_dir= and suite=; not {', '.join(bad)}")
        names = tuple(n for n in words.get("track", "").split(",") if n)
        if not names:
            raise ConfigError(f"export needs track=; valid: {', '.join(TRACKERS)}")
        check_trackers(names)
        root = Path(words.get("results_dir", "results"))
        if not root.is_dir():
            raise ConfigError(f"results_dir={root} is not a folder")
        run_dirs = sorted(p.parent for p in root.glob(f"{words.get('suite', '*')}/*/*/seed*/run.json")
                          if is_done(p.parent))
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    warnings = 0
    for run_dir in run_dirs:
        for message in export_run(run_dir, names, root):
            warnings += 1
            print(f"warning: {run_dir}: {message}", file=sys.stderr)
    print(f"exported {len(run_dirs)} run(s) to {root / TRACKING_DIR} ({', '.join(names)})")
    return 1 if warnings else 0


# ---------------------------------------------------------------------------------------
# reading the logs back (the tests; a researcher checking an export)

def read_tensorboard(run) -> dict[str, list[tuple[int, float, float]]]:
    """tag -> [(step, value, wall_time)] of a run's TensorBoard log, read with TensorBoard's own
    event reader."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    acc = EventAccumulator(str(Path(run.results_dir) / TRACKING_DIR / "tensorboard" / run.run_id),
                           size_guidance={"scalars": 0, "tensors": 0})
    acc.Reload()
    return {tag: [(e.step, e.value, e.wall_time) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def wandb_records(path: Path):
    """The records of a ``.wandb`` file (W&B's LevelDB-style log of ``wandb_internal_pb2.Record``
    protobufs), checksums checked."""
    import struct
    import zlib
    from wandb.proto import wandb_internal_pb2
    data = Path(path).read_bytes()
    ident, magic, version = struct.unpack("<4sHB", data[:7])
    if ident != b":W&B" or magic != 0xBEE1:
        raise ValueError(f"{path} is not a W&B run file")
    block, header = 32768, 7
    pos, pending = 7, b""
    while pos + header <= len(data):
        left = block - pos % block
        if left < header:   # the block's tail is padding
            pos += left
            continue
        checksum, length, kind = struct.unpack("<IHB", data[pos:pos + header])
        chunk = data[pos + header:pos + header + length]
        if checksum == 0 and length == 0 and kind == 0:
            break
        if zlib.crc32(chunk, zlib.crc32(bytes([kind]))) & 0xFFFFFFFF != checksum:
            raise ValueError(f"{path}: a record's checksum does not match at byte {pos}")
        pos += header + length
        pending = chunk if kind in (1, 2) else pending + chunk   # 1 full, 2 first, 3 middle, 4 last
        if kind in (1, 4):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            yield record


def read_wandb(run) -> tuple[dict, dict, list[dict]]:
    """(run fields: name, group, tags; config; history rows) of a run's offline W&B runs, in the
    order they were written."""
    folder = Path(run.results_dir) / TRACKING_DIR / "wandb" / "wandb"
    meta: dict = {}
    config: dict = {}
    rows: list[dict] = []
    for run_dir in sorted(folder.glob(f"offline-run-*-{wandb_id(run)}")):
        for record in wandb_records(next(run_dir.glob("*.wandb"))):
            kind = record.WhichOneof("record_type")
            if kind == "history":
                rows.append({item.key or "/".join(item.nested_key): json.loads(item.value_json)
                             for item in record.history.item})
            if kind == "run":
                meta = {"name": record.run.display_name, "group": record.run.run_group,
                        "tags": list(record.run.tags), "id": record.run.run_id}
            if kind in ("config", "run"):
                items = record.config.update if kind == "config" else record.run.config.update
                for item in items:
                    config[item.key or "/".join(item.nested_key)] = json.loads(item.value_json)
    return meta, config, rows
