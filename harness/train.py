"""One training run: collect, update, log, evaluate, checkpoint. The same for every algorithm."""
from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import math
import os
import random
import time
import traceback
from pathlib import Path
from typing import Callable

import numpy as np
import torch

import algos
import suites
from core.results import (EPISODE_COLUMNS, EVAL_COLUMNS, METRIC_LEADING, algorithm_source, atomic_write_bytes,
                          atomic_write_text, comparable_config, git_commit, hardware, now, package_versions,
                          read_run_json, write_csv)
from algos.stack import RunStack
from core.rollout import collect_together
from harness.config import RunConfig
from harness.tracking import RunTrackers

# Validation of distribution arguments costs a few microseconds per call in the hot loop.
torch.distributions.Distribution.set_default_validate_args(False)

# Losses whose non-finite value stops a run (the update at which it happened is recorded).
WATCHED_METRICS = ("policy_loss", "value_loss")


class NonFiniteError(RuntimeError):
    pass


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


class RunState:
    """The rows so far and the counters: what a checkpoint must restore."""

    def __init__(self):
        self.resumes: list[dict] = []      # one entry per resume: where it continued from
        self.update = 0
        self.wall_seconds = 0.0
        self.episodes: list[dict] = []
        self.evals: list[dict] = []
        self.metrics: list[dict] = []
        self.next_eval = 0
        self.metric_columns: list[str] = list(METRIC_LEADING)
        self.eval_columns: list[str] = list(EVAL_COLUMNS)
        self.tracked: dict[str, int] = {}  # rows of each file handed to the trackers (harness/tracking.py)


def train(run: RunConfig, progress: Callable[[int], None] | None = None,
          on_checkpoint: Callable[[Path], None] | None = None, run_dir: Path | None = None) -> dict:
    """Train one run to completion (or failure); returns its final ``run.json`` record.

    ``progress(global_step)`` is called after every update, ``on_checkpoint(run_dir)`` after
    every checkpoint is on disk (the Ray executor sends the folder back to the driver then).
    ``run_dir`` overrides ``run.run_dir`` (a Ray worker trains in a temporary folder).
    """
    return train_batch([run], None if progress is None else (lambda i, step: progress(step)),
                       None if on_checkpoint is None else (lambda i, d: on_checkpoint(d)),
                       None if run_dir is None else [run_dir])[0]


def train_batch(runs: list[RunConfig], progress: Callable[[int, int], None] | None = None,
                on_checkpoint: Callable[[int, Path], None] | None = None,
                run_dirs: list[Path] | None = None) -> list[dict]:
    """Train ``runs`` in this process, as one stack when there are several (the batched engine,
    ``algos/stack.py``; the planner groups only runs that can stack: ``harness.config.stack_key``);
    returns each run's final ``run.json`` record.

    Every run keeps its own folder, ``run.json``, rows, evaluations and checkpoint, written as a
    lone run writes them (a run checkpointed in a stack resumes alone, and the other way round).
    A run that fails (a non-finite loss or parameter) is marked failed and leaves the stack; the
    others go on. ``progress(i, global_step)`` / ``on_checkpoint(i, run_dir)`` name run ``i``.
    Timing columns (``wall_seconds``, ``collect_seconds``, ``update_seconds``, ``sps``) are the
    stack's: each run's steps per second is the stack's total divided by its runs.
    """
    torch.set_num_threads(runs[0].threads)
    dirs = [Path(d) for d in run_dirs] if run_dirs is not None else [r.run_dir for r in runs]
    members = [_Member(i, run, d) for i, (run, d) in enumerate(zip(runs, dirs))]
    try:
        _train_members(members, progress, on_checkpoint)
    except Exception as exc:   # outside any one run (building the stack, collecting): every unfinished run
        for m in members:
            if m.record["status"] == "running":
                m.fail(exc)
    for m in members:
        m.close()
    return [m.record for m in members]


class _Member:
    """One run of ``train_batch``: its record, rows and objects."""

    def __init__(self, index: int, run: RunConfig, run_dir: Path):
        self.index, self.run, self.run_dir = index, run, run_dir
        run_dir.mkdir(parents=True, exist_ok=True)
        self.record = {
            "run_id": run.run_id, "suite": run.suite, "env": run.env, "algo": run.algo, "variant": run.variant,
            "seed": run.seed, "config": dataclasses.asdict(run), "versions": package_versions(),
            "git_commit": git_commit(), "device": run.device, "hardware": hardware(run.device),
            "host": os.uname().nodename, "pid": os.getpid(),
            "start_time": now(), "end_time": None, "status": "running", "error": None, "global_step": 0,
            "resumed_from": None, "warnings": [],
            # the algorithm's own files (a variant's may be untracked, so the commit alone does not identify it)
            "algo_source": algorithm_source(algos.get(run.algo)),
        }
        previous = read_run_json(run_dir)
        if previous and comparable_config(previous.get("config")) == comparable_config(self.record["config"]):
            self.record["start_time"] = previous.get("start_time", self.record["start_time"])
        atomic_write_text(run_dir / "run.json", json.dumps(self.record, indent=2))
        self.state = RunState()
        self.checkpoint = run_dir / CHECKPOINT

    def build(self, suite, suite_cfg, cfg) -> None:
        """The evaluation environment and the agent, seeded as a lone run seeds them."""
        seed_everything(self.run.seed)
        self.cfg = cfg
        self.eval_env = suite.make_env(self.run.env, suite_cfg, train=False)
        self.agent = suite.make_agent(self.eval_env, suite_cfg).to(self.run.device)

    def start(self, algo_cls, collector, steps_per_batch: int) -> None:
        run = self.run
        self.collector = collector
        self.algo = algo_cls(self.agent, self.cfg, total_updates=math.ceil(run.steps / steps_per_batch), seed=run.seed)
        if self.checkpoint.exists():
            _restore(self.checkpoint, run, self.agent, self.algo, collector, self.state, self.record)
            atomic_write_text(self.run_dir / "run.json", json.dumps(self.record, indent=2))
        self.trackers = RunTrackers(run, self.record, self.state) if run.track else None
        self.eval_seed = 1_000_000 + 10_000 * run.seed
        self.start_time = time.perf_counter() - self.state.wall_seconds

    @property
    def training(self) -> bool:
        return self.record["status"] == "running" and self.collector.global_step < self.run.steps

    def evaluate_if_due(self, suite) -> None:
        if self.collector.global_step >= self.state.next_eval:
            _evaluate(suite, self.agent, self.eval_env, self.run, self.eval_seed, self.collector.global_step,
                      self.state)

    def after_update(self, batch, episodes, extra: dict, metrics: dict | None, progress, on_checkpoint) -> None:
        """Check, log and checkpoint one update (``metrics`` None: there was no batch to learn from)."""
        state, run, agent, collector = self.state, self.run, self.agent, self.collector
        state.episodes += [{"global_step": e.global_step, "episode_return": e.ret, "episode_length": e.length}
                           for e in episodes]
        if metrics is None:
            metrics = {}
        else:
            for key in WATCHED_METRICS:
                if key in metrics and not math.isfinite(metrics[key]):
                    raise NonFiniteError(f"{key} is {metrics[key]} at update {state.update + 1}")
            if not all(torch.isfinite(p).all() for p in agent.parameters()):
                raise NonFiniteError(f"non-finite parameters after update {state.update + 1}")
            valid = batch.mask > 0
            # a full batch is passed as a view: boolean indexing would copy every frame (Atari: 29 MB)
            agent.observe(batch.obs.flatten(0, 1) if bool(valid.all()) else batch.obs[valid])
        state.update += 1
        state.wall_seconds = time.perf_counter() - self.start_time
        row = {"update": state.update, "global_step": collector.global_step,
               "wall_seconds": round(state.wall_seconds, 3),
               "sps": round(collector.global_step / max(state.wall_seconds, 1e-9), 1), **metrics, **extra}
        for key in row:
            if key not in state.metric_columns:
                state.metric_columns.append(key)
        state.metrics.append(row)
        if progress is not None:
            progress(self.index, collector.global_step)
        # The resume point: the end of an update, before the next evaluation. Everything the
        # next iteration reads is saved here, so a resumed run repeats it bit-for-bit.
        if state.update % run.checkpoint_every == 0:
            self.track()   # before the checkpoint, which records how many rows the trackers have
            _save(self.checkpoint, run, agent, self.algo, collector, state)
            if on_checkpoint is not None:
                on_checkpoint(self.index, self.run_dir)

    def finish(self, suite) -> None:
        _evaluate(suite, self.agent, self.eval_env, self.run, self.eval_seed, self.collector.global_step, self.state)
        self.state.wall_seconds = time.perf_counter() - self.start_time
        self.record["checksums"] = _write_rows(self.run_dir, self.state)
        self.track()
        self.record.update(status="done", end_time=now(), files={
            "episodes.csv": len(self.state.episodes), "evals.csv": len(self.state.evals),
            "metrics.csv": len(self.state.metrics)})

    def fail(self, exc: BaseException) -> None:
        """The run stops here, marked failed with where it stopped (its batch-mates go on)."""
        self.record.update(status="failed", end_time=now(), failed_update=self.state.update + 1,
                           error=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc(limit=8))
        _write_rows(self.run_dir, self.state)
        self.track()

    def track(self) -> None:
        """Hand the rows written so far to the run's trackers (``track=``), each row once."""
        if getattr(self, "trackers", None) is not None:
            self.trackers.write(self.state)

    def close(self) -> None:
        state, record = self.state, self.record
        if getattr(self, "trackers", None) is not None:
            self.trackers.close()
        record["global_step"] = state.episodes[-1]["global_step"] if state.episodes else record["global_step"]
        record["wall_seconds"] = round(state.wall_seconds, 3)
        record["resumes"] = state.resumes
        atomic_write_text(self.run_dir / "run.json", json.dumps(record, indent=2))
        if record["status"] == "done":  # only now: a kill before this line resumes from the checkpoint
            self.checkpoint.unlink(missing_ok=True)


def _train_members(members: list[_Member], progress, on_checkpoint) -> None:
    """The training loop of ``train_batch``: one path for a run alone and for a stack of K (a run
    alone is a stack of one: ``algos/stack.py``, tested in tests/test_invariance.py)."""
    first = members[0].run
    suite = suites.get(first.suite)
    suite_cfg = suite.Config(**{k: tuple(v) if isinstance(v, list) else v for k, v in first.suite_cfg.items()})
    algo_cls = algos.get(first.algo)
    cfgs = [algo_cls.Config(**m.run.algo_cfg) for m in members]
    needs = algo_cls.needs(cfgs[0])
    # where the algorithm and the suite can stack, even a lone run trains through the suite's stacked
    # agent (of one), the kernels of every stack; otherwise (Atari, llm_toy) it never shares a stack
    stacks = algo_cls.stackable(cfgs[0]) and suite.stackable(first.env, suite_cfg)
    for m, cfg in zip(members, cfgs):
        m.build(suite, suite_cfg, cfg)
    collectors = suite.make_collectors(first.env, suite_cfg, needs, cfgs, [m.run.seed for m in members])
    for m, (collector, steps_per_batch) in zip(members, collectors):
        m.start(algo_cls, collector, steps_per_batch)

    while active := [m for m in members if m.training]:
        for m in active:
            m.evaluate_if_due(suite)
        collect_start = time.perf_counter()
        results = _collect(active, needs)
        for m, (_, _, extra) in zip(active, results):
            # A collector may report its own per-batch numbers (LLM: generation tokens/s, KL to the reference).
            extra.update(m.collector.metrics() if hasattr(m.collector, "metrics") else {})
        update_start = time.perf_counter()
        updates = _update(algo_cls, suite, stacks, active, [b for b, _, _ in results])
        update_end = time.perf_counter()
        for m, (batch, episodes, extra), metrics in zip(active, results, updates):
            if metrics is not None:
                metrics["collect_seconds"] = round(update_start - collect_start, 4)
                metrics["update_seconds"] = round(update_end - update_start, 4)
            try:
                m.after_update(batch, episodes, extra, metrics, progress, on_checkpoint)
            except Exception as exc:
                m.fail(exc)
        for m in active:
            if m.record["status"] == "running" and not m.training:
                m.finish(suite)
    for m in members:   # resumed from a checkpoint written after its last update: only the end is left
        if m.record["status"] == "running":
            m.finish(suite)


def _collect(active: list[_Member], needs) -> list[tuple]:
    """One batch of each active run: ``(batch, finished episodes, extra metrics)``. Fixed-horizon
    runs of a stack step their environments together (``collect_together``, which is also what a
    lone run's collector does); group rollouts collect run by run, through the algorithm's
    ``collect`` (DAPO's dynamic sampling draws until its batch is full)."""
    if len(active) > 1 and needs.rollout == "horizon":
        return [(b, e, {}) for b, e in collect_together([m.collector for m in active], [m.agent for m in active])]
    return [m.algo.collect(m.collector, m.agent) for m in active]


def _update(algo_cls, suite, stacks: bool, active: list[_Member], batches: list) -> list[dict | None]:
    """Each active run's update metrics (None where it has no batch to learn from this time): the
    runs with a batch, as stacks of runs whose batches have one shape (a DAPO batch may keep fewer
    columns than its stack-mates'), each through ``update_runs``."""
    updates: list[dict | None] = [None] * len(active)
    shapes: dict[tuple, list[int]] = {}
    for i, batch in enumerate(batches):
        if batch is not None:
            shapes.setdefault(tuple(batch.mask.shape), []).append(i)
    for part in shapes.values():
        runs = [active[i] for i in part]
        agent = suite.stack_agents([m.agent for m in runs]) if stacks else None
        if agent is None and len(runs) > 1:
            raise RuntimeError(f"{algo_cls.name} on suite {suite.name} cannot train runs as a stack")
        stack = (RunStack([m.algo for m in runs], agent, [batches[i] for i in part]) if agent is not None
                 else RunStack.of_one(runs[0].algo, batches[part[0]]))
        for i, metrics in zip(part, algo_cls.update_runs(stack)):
            updates[i] = metrics
    return updates


def _write_rows(run_dir: Path, state: RunState) -> dict[str, str]:
    """Write the CSVs; returns their SHA-256 digests (``run.json`` keeps them, see ``is_done``)."""
    return {"episodes.csv": write_csv(run_dir / "episodes.csv", state.episodes, EPISODE_COLUMNS),
            "evals.csv": write_csv(run_dir / "evals.csv", state.evals, state.eval_columns),
            "metrics.csv": write_csv(run_dir / "metrics.csv", state.metrics, state.metric_columns)}


def _evaluate(suite, agent, eval_env, run, eval_seed, global_step, state: RunState) -> None:
    row = {"global_step": global_step, **suite.evaluate(agent, eval_env, run.eval_episodes, eval_seed)}
    for key in row:
        if key not in state.eval_columns:
            state.eval_columns.append(key)
    state.evals.append(row)
    state.next_eval = (global_step // run.eval_every + 1) * run.eval_every


# ---------------------------------------------------------------------------------------
# checkpoints: ``checkpoint.pt`` = a header line, the SHA-256 of the body, then the body
# (a torch.save payload). torch.load reads a flipped byte without complaint; the digest
# makes any corruption a clear "start over" instead of a resume from garbage.

CHECKPOINT = "checkpoint.pt"
_MAGIC = b"pg-arena checkpoint v1\n"


class CheckpointError(ValueError):
    """A checkpoint that cannot be used (truncated, corrupt, another run's)."""


def write_checkpoint(path: Path, payload: dict) -> None:
    buf = io.BytesIO()
    torch.save(payload, buf)
    body = buf.getvalue()
    atomic_write_bytes(path, _MAGIC + hashlib.sha256(body).hexdigest().encode() + b"\n" + body)


def read_checkpoint(path: Path, data: bytes | None = None) -> dict:
    """The payload of the checkpoint at ``path`` (``data``: its bytes, when they are not there,
    e.g. unzipped from an archive); ``CheckpointError`` when it cannot be used."""
    data = Path(path).read_bytes() if data is None else data
    if not data.startswith(_MAGIC) or len(data) < len(_MAGIC) + 65:
        raise CheckpointError(f"{path.name} is not a pg-arena checkpoint (or is truncated)")
    digest, body = data[len(_MAGIC):len(_MAGIC) + 64], data[len(_MAGIC) + 65:]
    if hashlib.sha256(body).hexdigest().encode() != digest:
        raise CheckpointError(f"{path.name} is corrupt (its checksum does not match)")
    try:
        return torch.load(io.BytesIO(body), weights_only=False)
    except Exception as exc:
        raise CheckpointError(f"{path.name} cannot be read: {type(exc).__name__}: {exc}") from None


def _save(path: Path, run, agent, algo, collector, state: RunState) -> None:
    payload = {
        "config": comparable_config(dataclasses.asdict(run)), "agent": agent.state_dict(),
        "algo": algo.state_dict(), "collector": collector.state_dict(),
        "torch_rng": torch.get_rng_state(), "numpy_rng": np.random.get_state(), "python_rng": random.getstate(),
        "cuda_rng": torch.cuda.get_rng_state_all() if run.device.startswith("cuda") else None,
        "state": vars(state),
    }
    # The CSVs first: a kill between the two leaves rows ahead of the checkpoint, which the
    # resume overwrites; the reverse order could leave a checkpoint whose rows are missing.
    _write_rows(path.parent, state)
    write_checkpoint(path, payload)


def resumable_checkpoint(path: Path, run, data: bytes | None = None) -> dict:
    """The payload of the checkpoint at ``path`` if ``run`` resumes from it: readable, intact and
    written by a run of the same config; ``CheckpointError`` (why not) otherwise."""
    payload = read_checkpoint(path, data)
    if payload.get("config") != comparable_config(dataclasses.asdict(run)):
        raise CheckpointError(f"{Path(path).name} was written by a run with another config")
    return payload


def checkpoint_position(payload: dict) -> tuple[int, int]:
    """``(global_step, update)`` a run resumes at from a checkpoint's payload."""
    return int(payload["collector"]["global_step"]), int(payload["state"]["update"])


def _restore(path: Path, run, agent, algo, collector, state: RunState, record: dict) -> None:
    """Continue from ``path``; a checkpoint that is corrupt or belongs to another config is
    dropped (noted in ``run.json``'s warnings) and the run starts from step 0."""
    try:
        payload = resumable_checkpoint(path, run)
    except (OSError, CheckpointError) as exc:
        record["warnings"].append(f"{exc}; started from step 0")
        path.unlink(missing_ok=True)
        return
    agent.load_state_dict(payload["agent"])
    algo.load_state_dict(payload["algo"])
    collector.load_state_dict(payload["collector"])
    torch.set_rng_state(payload["torch_rng"])
    np.random.set_state(payload["numpy_rng"])
    random.setstate(payload["python_rng"])
    if payload.get("cuda_rng") is not None:
        torch.cuda.set_rng_state_all(payload["cuda_rng"])
    vars(state).update(payload["state"])
    resumed = {"update": state.update, "global_step": collector.global_step, "time": now(),
               "env_state_exact": bool(getattr(collector, "env_state_exact", True))}
    if not resumed["env_state_exact"]:
        record["warnings"].append(f"resumed at step {collector.global_step} without the environments' state "
                                  f"(this environment type cannot be saved): not bit-identical to an "
                                  f"uninterrupted run from here on")
    state.resumes.append(resumed)
    record["resumed_from"] = resumed
    record["resumes"] = state.resumes
