"""Synthetic results in the real layout, for tests and demonstrations: ``write_run`` makes one run
folder exactly as ``harness.train`` would (run.json with status and file row counts, episodes.csv,
evals.csv, metrics.csv), with episode returns you choose."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from core.results import EPISODE_COLUMNS, EVAL_COLUMNS, write_csv

DEFAULT_ALGO_CFG = {
    "ppo_clip": {"num_envs": 1, "num_steps": 2048, "gamma": 0.99, "lr": 0.0003, "num_epochs": 10,
                 "minibatch_size": 64, "lam": 0.95, "clip_eps": 0.2},
    "ppo_kl": {"num_envs": 1, "num_steps": 2048, "gamma": 0.99, "lr": 0.0003, "num_epochs": 10,
               "minibatch_size": 64, "lam": 0.95, "clip_eps": 0.2, "kl_coef": 1.0, "kl_target": 0.01,
               "adaptive": True, "kl_estimator": "analytic"},
}


def parse_variant(variant: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for part in filter(None, variant.split("+")):
        key, value = part.split("=", 1)
        if value in ("true", "false"):
            out[key] = value == "true"
        else:
            try:
                out[key] = int(value) if value.lstrip("-").isdigit() else float(value)
            except ValueError:
                out[key] = value
    return out


def write_run(results_dir: str | Path, env: str, label: str, seed: int, returns: Sequence[float],
              steps: int = 10_000, suite: str = "mujoco", status: str = "done", algo_cfg: dict | None = None,
              metrics: dict[str, Sequence[float]] | None = None, evals: Sequence[float] | None = None,
              episode_steps: Sequence[int] | None = None, wall_seconds: float = 1.0,
              eval_extra: dict[str, Sequence[float]] | None = None) -> Path:
    """One run folder ``<results_dir>/<suite>/<env>/<label>/seed<seed>/``.

    ``returns``: the training episode returns in order (spread evenly over ``steps`` unless
    ``episode_steps``); ``metrics``: per-update columns (default: a made-up kl / policy_loss);
    ``evals``: evaluation means (default: two, from the first and last returns)."""
    algo, _, rest = label.partition("+")
    variant = "+" + rest if rest else ""
    cfg = dict(DEFAULT_ALGO_CFG.get(algo, {"gamma": 0.99}))
    cfg.update({k: v for k, v in parse_variant(variant).items() if "." not in k and k != "preset"})
    if algo_cfg:
        cfg.update(algo_cfg)
    run_dir = Path(results_dir) / suite / env / label / f"seed{seed}"
    run_dir.mkdir(parents=True, exist_ok=True)
    returns = [float(r) for r in returns]
    n = len(returns)
    at = list(episode_steps) if episode_steps is not None else [int(round((i + 1) * steps / max(n, 1))) for i in range(n)]
    episodes = [{"global_step": s, "episode_return": r, "episode_length": max(1, steps // max(n, 1))}
                for s, r in zip(at, returns)]
    evals = list(evals) if evals is not None else ([returns[0], returns[-1]] if returns else [])
    eval_extra = eval_extra or {}
    eval_rows = [{"global_step": int(i * steps / max(len(evals) - 1, 1)), "eval_return_mean": v,
                  "eval_return_std": 0.0, "eval_episodes": 5, **{k: x[i] for k, x in eval_extra.items()}}
                 for i, v in enumerate(evals)]
    metrics = metrics if metrics is not None else {"policy_loss": [-0.01, -0.02], "kl": [0.01, 0.012]}
    updates = max((len(v) for v in metrics.values()), default=0)
    metric_rows = [{"update": u + 1, "global_step": int((u + 1) * steps / max(updates, 1)), "wall_seconds": u + 1.0,
                    "sps": 1000.0, **{k: v[u] for k, v in metrics.items()}} for u in range(updates)]
    columns = ["update", "global_step", "wall_seconds", "sps", *metrics]
    write_csv(run_dir / "episodes.csv", episodes, EPISODE_COLUMNS)
    write_csv(run_dir / "evals.csv", eval_rows, EVAL_COLUMNS + list(eval_extra))
    write_csv(run_dir / "metrics.csv", metric_rows, columns)
    checksums = {name: hashlib.sha256((run_dir / name).read_bytes()).hexdigest()
                 for name in ("episodes.csv", "evals.csv", "metrics.csv")}
    config = {"suite": suite, "env": env, "algo": algo, "variant": variant, "seed": seed, "steps": steps,
              "eval_every": steps, "eval_episodes": 5, "checkpoint_every": 20, "algo_cfg": cfg,
              "suite_cfg": {"obs_norm": True}, "results_dir": str(results_dir), "device": "cpu"}
    record = {"run_id": f"{suite}/{env}/{label}/seed{seed}", "suite": suite, "env": env, "algo": algo,
              "variant": variant, "seed": seed, "config": config,
              "versions": {"python": "3.11", "torch": "synthetic"}, "git_commit": "synthetic", "device": "cpu",
              "host": "test", "start_time": "2026-01-01T00:00:00+00:00", "end_time": "2026-01-01T00:01:00+00:00",
              "status": status, "error": None if status != "failed" else "NonFiniteError: synthetic",
              "global_step": steps, "wall_seconds": wall_seconds}
    if status == "done":
        record["files"] = {"episodes.csv": len(episodes), "evals.csv": len(eval_rows), "metrics.csv": len(metric_rows)}
        record["checksums"] = checksums
    (run_dir / "run.json").write_text(json.dumps(record, indent=2))
    return run_dir


def write_setting(results_dir: str | Path, label: str, means: dict[str, float], seeds: int = 3, spread: float = 1.0,
                  episodes: int = 120, steps: int = 10_000, suite: str = "mujoco", rng_seed: int = 0,
                  **kwargs) -> list[Path]:
    """Every (env, seed) run of one setting: episode returns rising linearly to ``means[env]`` over the
    first half, then flat with seed noise, so the last-100 score is ``means[env]`` + a per-seed
    offset drawn from N(0, spread)."""
    rng = np.random.default_rng(rng_seed)
    paths = []
    for env, mean in means.items():
        for seed in range(seeds):
            offset = float(rng.normal(0.0, spread))
            ramp = np.linspace(0.0, mean, episodes // 2)
            flat = np.full(episodes - episodes // 2, mean)
            returns = np.concatenate([ramp, flat]) + offset
            paths.append(write_run(results_dir, env, label, seed, returns, steps=steps, suite=suite, **kwargs))
    return paths


def write_random_cache(results_dir: str | Path, scores: dict[str, float], suite: str = "mujoco",
                       std: dict[str, float] | None = None) -> Path:
    """A ``random_scores.json`` cache, so the analysis need not measure the random policy; ``std``: the
    standard deviation of its episode returns per environment (left out of the cache where not given)."""
    path = Path(results_dir) / suite / "random_scores.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    std = std or {}
    path.write_text(json.dumps({env: {"score": s, "episodes": 100, "policy": "uniform random actions (synthetic)",
                                      **({"std": std[env]} if env in std else {})}
                                for env, s in scores.items()}, indent=2))
    return path
