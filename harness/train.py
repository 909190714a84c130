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
                          atomic_write_text, comparable_config, git_commit, now, package_versions, read_run_json,
                          write_csv)
from harness.config import RunConfig

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


def train(run: RunConfig, progress: Callable[[int], None] | None = None,
          on_checkpoint: Callable[[Path], None] | None = None, run_dir: Path | None = None) -> dict:
    """Train one run to completion (or failure); returns its final ``run.json`` record.

    ``progress(global_step)`` is called after every update, ``on_checkpoint(run_dir)`` after
    every checkpoint is on disk (the Ray executor sends the folder back to the driver then).
    ``run_dir`` overrides ``run.run_dir`` (a Ray worker trains in a temporary folder).
    """
    torch.set_num_threads(run.threads)
    seed_everything(run.seed)
    run_dir = Path(run_dir) if run_dir is not None else run.run_dir
    run_dir.mkdir(parents=True, exist_ok=True)
    record = {
        "run_id": run.run_id, "suite": run.suite, "env": run.env, "algo": run.algo, "variant": run.variant,
        "seed": run.seed, "config": dataclasses.asdict(run), "versions": package_versions(),
        "git_commit": git_commit(), "device": run.device, "host": os.uname().nodename, "pid": os.getpid(),
        "start_time": now(), "end_time": None, "status": "running", "error": None, "global_step": 0,
        "resumed_from": None, "warnings": [],
        # the algorithm's own files (a variant's may be untracked, so the commit alone does not identify it)
        "algo_source": algorithm_source(algos.get(run.algo)),
    }
    previous = read_run_json(run_dir)
    if previous and comparable_config(previous.get("config")) == comparable_config(record["config"]):
        record["start_time"] = previous.get("start_time", record["start_time"])
    atomic_write_text(run_dir / "run.json", json.dumps(record, indent=2))
    state = RunState()
    try:
        _train_loop(run, run_dir, record, state, progress, on_checkpoint)
        record.update(status="done", end_time=now(), files={
            "episodes.csv": len(state.episodes), "evals.csv": len(state.evals), "metrics.csv": len(state.metrics)})
    except Exception as exc:  # the sweep goes on; this run is marked failed with where it stopped
        record.update(status="failed", end_time=now(), failed_update=state.update + 1,
                      error=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc(limit=8))
        _write_rows(run_dir, state)
    record["global_step"] = state.episodes[-1]["global_step"] if state.episodes else record["global_step"]
    record["wall_seconds"] = round(state.wall_seconds, 3)
    record["resumes"] = state.resumes
    atomic_write_text(run_dir / "run.json", json.dumps(record, indent=2))
    if record["status"] == "done":  # only now: a kill before this line resumes from the checkpoint
        (run_dir / CHECKPOINT).unlink(missing_ok=True)
    return record


def _write_rows(run_dir: Path, state: RunState) -> dict[str, str]:
    """Write the CSVs; returns their SHA-256 digests (``run.json`` keeps them, see ``is_done``)."""
    return {"episodes.csv": write_csv(run_dir / "episodes.csv", state.episodes, EPISODE_COLUMNS),
            "evals.csv": write_csv(run_dir / "evals.csv", state.evals, state.eval_columns),
            "metrics.csv": write_csv(run_dir / "metrics.csv", state.metrics, state.metric_columns)}


def _train_loop(run: RunConfig, run_dir: Path, record: dict, state: RunState, progress, on_checkpoint) -> None:
    suite = suites.get(run.suite)
    suite_cfg = suite.Config(**{k: tuple(v) if isinstance(v, list) else v for k, v in run.suite_cfg.items()})
    algo_cls = algos.get(run.algo)
    cfg = algo_cls.Config(**run.algo_cfg)

    eval_env = suite.make_env(run.env, suite_cfg, train=False)
    agent = suite.make_agent(eval_env, suite_cfg).to(run.device)
    collector, steps_per_batch = suite.make_collector(run.env, suite_cfg, algo_cls.needs(cfg), cfg, run.seed)
    algo = algo_cls(agent, cfg, total_updates=math.ceil(run.steps / steps_per_batch), seed=run.seed)

    checkpoint = run_dir / CHECKPOINT
    if checkpoint.exists():
        _restore(checkpoint, run, agent, algo, collector, state, record)
        atomic_write_text(run_dir / "run.json", json.dumps(record, indent=2))

    eval_seed = 1_000_000 + 10_000 * run.seed
    start = time.perf_counter() - state.wall_seconds
    while collector.global_step < run.steps:
        if collector.global_step >= state.next_eval:
            _evaluate(suite, agent, eval_env, run, eval_seed, collector.global_step, state)
        collect_start = time.perf_counter()
        batch, episodes, extra = algo.collect(collector, agent)
        # A collector may report its own per-batch numbers (LLM: generation tokens/s, KL to the reference).
        extra.update(collector.metrics() if hasattr(collector, "metrics") else {})
        update_start = time.perf_counter()
        state.episodes += [{"global_step": e.global_step, "episode_return": e.ret, "episode_length": e.length}
                           for e in episodes]
        if batch is None:
            metrics = {}
        else:
            metrics = algo.update(batch)
            metrics["collect_seconds"] = round(update_start - collect_start, 4)
            metrics["update_seconds"] = round(time.perf_counter() - update_start, 4)
            for key in WATCHED_METRICS:
                if key in metrics and not math.isfinite(metrics[key]):
                    raise NonFiniteError(f"{key} is {metrics[key]} at update {state.update + 1}")
            if not all(torch.isfinite(p).all() for p in agent.parameters()):
                raise NonFiniteError(f"non-finite parameters after update {state.update + 1}")
            valid = batch.mask > 0
            # a full batch is passed as a view: boolean indexing would copy every frame (Atari: 29 MB)
            agent.observe(batch.obs.flatten(0, 1) if bool(valid.all()) else batch.obs[valid])
        state.update += 1
        state.wall_seconds = time.perf_counter() - start
        row = {"update": state.update, "global_step": collector.global_step,
               "wall_seconds": round(state.wall_seconds, 3),
               "sps": round(collector.global_step / max(state.wall_seconds, 1e-9), 1), **metrics, **extra}
        for key in row:
            if key not in state.metric_columns:
                state.metric_columns.append(key)
        state.metrics.append(row)
        if progress is not None:
            progress(collector.global_step)
        # The resume point: the end of an update, before the next evaluation. Everything the
        # next iteration reads is saved here, so a resumed run repeats it bit-for-bit.
        if state.update % run.checkpoint_every == 0:
            _save(checkpoint, run, agent, algo, collector, state)
            if on_checkpoint is not None:
                on_checkpoint(run_dir)
    _evaluate(suite, agent, eval_env, run, eval_seed, collector.global_step, state)
    state.wall_seconds = time.perf_counter() - start
    record["checksums"] = _write_rows(run_dir, state)


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


def read_checkpoint(path: Path) -> dict:
    data = Path(path).read_bytes()
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


def _restore(path: Path, run, agent, algo, collector, state: RunState, record: dict) -> None:
    """Continue from ``path``; a checkpoint that is corrupt or belongs to another config is
    dropped (noted in ``run.json``'s warnings) and the run starts from step 0."""
    try:
        payload = read_checkpoint(path)
        if payload.get("config") != comparable_config(dataclasses.asdict(run)):
            raise CheckpointError(f"{path.name} was written by a run with another config")
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
