"""Typed configuration: ``key=value`` arguments into validated run configs.

Everything is checked before any run starts and before anything is written: an unknown
key, a wrong type or an unknown name raises ``ConfigError`` with the valid choices.
"""
from __future__ import annotations

import dataclasses
import importlib.util
import os
import re
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.errors import ConfigError
from core.options import did_you_mean, format_value


EXECUTORS = ("local", "ray", "slurm")
TRACKERS = {"tensorboard": "tensorboard", "wandb": "wandb"}   # track=: name -> the package it needs
TRACKING_INSTALL = "pip install -e '.[tracking]'"
# Slurm's time formats: MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS.
SLURM_TIME = re.compile(r"^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$")


@dataclass
class SweepConfig:
    """The top-level keys of ``./run_all.sh key=value ...``."""
    suite: str = "mujoco"                 # which suite: see ``suites.names()``
    algo: tuple[str, ...] = ()            # comma-separated algorithm names; default the seven built-ins (a variant runs when named)
    env: tuple[str, ...] = ()             # comma-separated environments / tasks; default the scale's list
    seeds: int | None = None              # number of seeds (0..seeds-1); default the scale's
    steps: int | None = None              # environment steps per run; default the scale's
    scale: str = "paper"                  # budget preset: smoke | quick | paper
    preset: str | None = None             # a named bundle of overrides the suite defines (e.g. cleanrl)
    grid: str | None = None               # a named list of algorithm settings the suite defines (e.g. table1)
    jobs: int = field(default_factory=lambda: max(1, os.cpu_count() or 1))  # processes in parallel
    batch_runs: int | None = None         # runs trained together in one process as one stacked model; default: the planner's (see plan_batches); 1: one run per process
    threads: int | None = None            # torch threads per run; default: cores / runs in parallel (see threads_per_run)
    results_dir: str = "results"          # where run folders go
    archive: str | None = None            # a compact archive (core/archived.py): its done runs are not run again, its unfinished ones resume from its checkpoints
    eval_every: int | None = None         # steps between deterministic evaluations; default the scale's
    eval_episodes: int | None = None      # episodes per evaluation; default the scale's
    checkpoint_every: int = 20            # updates between checkpoints (resume point of a killed run)
    report: bool = True                   # render results_dir/reports/<suite>/ at the end of the sweep
    plan: bool = False                    # print the plan (each process's runs: done, in the archive, resuming from step N, new; the time estimate) and exit 0, running and writing nothing
    executor: str = "local"               # local (processes on this machine) | ray | slurm: one task per process (a run or a stack)
    ray_address: str | None = None        # executor=ray: the cluster (host:port, or auto); default a local Ray instance
    ray_shared: bool = False              # executor=ray: results_dir is on a filesystem every worker sees; write there directly
    ray_num_gpus: float = 0.25            # executor=ray, device=cuda: GPUs per run (a fraction: small runs share a GPU)
    device: str = "cpu"                   # torch device of the runs: cpu | cuda[:k] | auto (CUDA if present)
    track: tuple[str, ...] = ()           # also log each run to tensorboard and/or wandb (offline); the CSVs stay the source
    slurm_partition: str | None = None    # executor=slurm: the partition (default: the cluster's default)
    slurm_time: str | None = None         # executor=slurm: time limit per task (Slurm's forms, e.g. 4:00:00); default the partition's
    slurm_cpus_per_task: int = 1          # executor=slurm: CPUs per task (a run or stack: its torch threads)
    slurm_gpus_per_task: int | None = None  # executor=slurm: GPUs per task (default 1 with device=cuda, else none)
    slurm_mem: str | None = None          # executor=slurm: memory per node of a task, e.g. 4G
    slurm_array_parallelism: int | None = None  # executor=slurm: at most this many tasks of the array at once
    slurm_account: str | None = None      # executor=slurm: the account charged
    slurm_qos: str | None = None          # executor=slurm: the quality of service
    slurm_extra: str | None = None        # executor=slurm: more #SBATCH options, ';'-separated, e.g. --constraint=v100;--exclusive
    slurm_setup: str | None = None        # executor=slurm: a shell line run on the node first, e.g. 'source ~/venv/bin/activate'
    slurm_python: str | None = None       # executor=slurm: the Python on the nodes (default: this one; same path on a shared FS)


@dataclass
class RunConfig:
    """One run: everything needed to reproduce it; stored in ``run.json``."""
    suite: str
    env: str
    algo: str
    variant: str                          # "" or "+key=value+..." (what differs from the defaults)
    seed: int
    steps: int
    eval_every: int
    eval_episodes: int
    checkpoint_every: int
    algo_cfg: dict[str, Any]
    suite_cfg: dict[str, Any]
    results_dir: str
    device: str = "cpu"
    threads: int = 1                      # torch intra-op threads (how fast, not what: not compared on resume)
    track: tuple[str, ...] = ()           # trackers the run also logs to (harness/tracking.py; not what it computes)

    @property
    def label(self) -> str:
        return self.algo + self.variant

    @property
    def run_dir(self) -> Path:
        return Path(self.results_dir) / self.suite / self.env / self.label / f"seed{self.seed}"

    @property
    def run_id(self) -> str:
        return f"{self.suite}/{self.env}/{self.label}/seed{self.seed}"


# ---------------------------------------------------------------------------------------
# parsing values by their annotated type

def _field_types(cls: type) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls)}


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


def parse_value(key: str, text: str, tp: Any) -> Any:
    """Parse ``text`` as type ``tp`` (bool, int, float, str, tuple[...], X | None)."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if text.lower() in ("none", "null", ""):
            return None
        return parse_value(key, text, args[0])
    if origin is tuple:
        (inner, *_rest) = typing.get_args(tp)
        return tuple(parse_value(key, part, inner) for part in text.split(",") if part != "")
    if tp is bool:
        lowered = text.lower()
        if lowered in ("true", "1", "yes", "on"):
            return True
        if lowered in ("false", "0", "no", "off"):
            return False
        raise ConfigError(f"{key}={text!r}: expected a boolean (true/false)")
    if tp is int:
        try:
            return int(float(text)) if "e" in text.lower() and float(text).is_integer() else int(text)
        except ValueError:
            raise ConfigError(f"{key}={text!r}: expected an integer") from None
    if tp is float:
        try:
            return float(text)
        except ValueError:
            raise ConfigError(f"{key}={text!r}: expected a number") from None
    if tp is str:
        return text
    raise ConfigError(f"{key}: unsupported option type {_type_name(tp)}")


def apply_overrides(cls: type, base: dict[str, Any], overrides: dict[str, str], owner: str,
                    prefix: str) -> dict[str, Any]:
    """Parse ``overrides`` (text) against ``cls``'s fields on top of ``base``; validate by building it."""
    types_ = _field_types(cls)
    merged = dict(base)
    for key in list(overrides) + list(merged):
        if key not in types_:
            raise ConfigError(f"{prefix}{key} is not an option of {owner}"
                              f"{did_you_mean(key, types_, prefix)}; valid: "
                              f"{', '.join(prefix + k for k in types_)}")
    for key, text in overrides.items():
        merged[key] = parse_value(prefix + key, text, types_[key]) if isinstance(text, str) else text
    try:
        return dataclasses.asdict(cls(**merged))
    except TypeError as exc:
        raise ConfigError(f"{owner}: {exc}") from None


# ---------------------------------------------------------------------------------------
# the command line

# Other names for top-level keys (the LLM suite says task= for env=).
ALIASES = {"task": "env"}
# Top-level words that set a suite option: model=X is short for suite.model=X.
SUITE_SHORTCUTS = ("model",)


def split_args(argv: list[str]) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """``key=value`` words into (top-level, ``algo.*``, ``suite.*``) dicts of text."""
    top: dict[str, str] = {}
    algo: dict[str, str] = {}
    suite: dict[str, str] = {}
    for word in argv:
        if "=" not in word:
            raise ConfigError(f"argument {word!r} is not key=value")
        key, value = word.split("=", 1)
        key = ALIASES.get(key, key)
        if key in SUITE_SHORTCUTS:
            if key in suite:
                raise ConfigError(f"{key} given twice (as {key}= and suite.{key}=)")
            suite[key] = value
        elif key.startswith("algo."):
            algo[key[5:]] = value
        elif key.startswith("suite."):
            if key[6:] in SUITE_SHORTCUTS and key[6:] in suite:
                raise ConfigError(f"{key[6:]} given twice (as {key[6:]}= and {key}=)")
            suite[key[6:]] = value
        else:
            if key in top:
                raise ConfigError(f"{key} given twice" + (" (task= is another name for env=)" if key == "env" else ""))
            top[key] = value
    return top, algo, suite


def parse_sweep(top: dict[str, str]) -> SweepConfig:
    types_ = _field_types(SweepConfig)
    values = {}
    for key, text in top.items():
        if key not in types_:
            raise ConfigError(f"unknown key {key!r}{did_you_mean(key, [*types_, *ALIASES, *SUITE_SHORTCUTS])}; "
                              f"valid: {', '.join(types_)}, algo.<option>, suite.<option>")
        values[key] = parse_value(key, text, types_[key])
    sweep = SweepConfig(**values)
    if sweep.device == "auto":  # CUDA when this machine has it, else the CPU (resolved before the runs start)
        import torch
        sweep.device = "cuda" if torch.cuda.is_available() else "cpu"
    for key in ("seeds", "steps", "jobs", "batch_runs", "threads", "eval_every", "eval_episodes", "checkpoint_every"):
        value = getattr(sweep, key)
        if value is not None and value <= 0:
            raise ConfigError(f"{key}={value} must be a positive integer")
    if sweep.executor not in EXECUTORS:
        raise ConfigError(f"unknown executor {sweep.executor!r}; valid: {', '.join(EXECUTORS)}")
    if sweep.executor != "ray" and (sweep.ray_address is not None or sweep.ray_shared):
        raise ConfigError("ray_address= and ray_shared= need executor=ray")
    slurm_keys = [k for k in top if k.startswith("slurm_")]
    if sweep.executor != "slurm" and slurm_keys:
        raise ConfigError(f"{', '.join(k + '=' for k in slurm_keys)} need{'s' if len(slurm_keys) == 1 else ''} executor=slurm")
    for key in ("slurm_cpus_per_task", "slurm_array_parallelism"):
        if getattr(sweep, key) is not None and getattr(sweep, key) <= 0:
            raise ConfigError(f"{key}={getattr(sweep, key)} must be a positive integer")
    if sweep.slurm_gpus_per_task is not None and sweep.slurm_gpus_per_task < 0:
        raise ConfigError(f"slurm_gpus_per_task={sweep.slurm_gpus_per_task} must be 0 or more")
    if sweep.slurm_time is not None:
        parse_slurm_time(sweep.slurm_time)
    g = sweep.ray_num_gpus
    if not (g > 0 and (g <= 1 or float(g).is_integer())):
        raise ConfigError(f"ray_num_gpus={sweep.ray_num_gpus} must be a fraction in (0, 1] or a whole number")
    check_device(sweep.device, local=sweep.executor == "local")
    sweep.track = tuple(dict.fromkeys(sweep.track))
    check_trackers(sweep.track)
    return sweep


def parse_slurm_time(text: str) -> int | None:
    """A Slurm time limit in seconds (None: unlimited); ``ConfigError`` for a malformed one."""
    if text.strip().upper() in ("UNLIMITED", "INFINITE"):
        return None
    m = SLURM_TIME.match(text.strip())
    if not m:
        raise ConfigError(f"slurm_time={text!r} is not a Slurm time; valid forms: MM, MM:SS, HH:MM:SS, D-HH, "
                          f"D-HH:MM, D-HH:MM:SS")
    days, a, b, c = m.groups()
    if days is not None:   # D-HH[:MM[:SS]]
        return int(days) * 86400 + int(a) * 3600 + int(b or 0) * 60 + int(c or 0)
    if c is not None:      # HH:MM:SS
        return int(a) * 3600 + int(b) * 60 + int(c)
    return int(a) * 60 + int(b or 0)   # MM or MM:SS


def check_trackers(names) -> None:
    """``track=``: known names whose package is installed; ``ConfigError`` (one line) otherwise."""
    for name in names:
        if name not in TRACKERS:
            raise ConfigError(f"unknown tracker {name!r} in track=; valid: {', '.join(TRACKERS)}")
        if not _installed(TRACKERS[name]):
            raise ConfigError(f"track={name} needs the {TRACKERS[name]} package, which is not installed: "
                              f"{TRACKING_INSTALL}")


def _installed(package: str) -> bool:
    try:
        return importlib.util.find_spec(package) is not None
    except (ValueError, ImportError):   # blocked (sys.modules[package] = None) or a broken install
        return False


def check_device(device: str, local: bool = True) -> None:
    """``device=``: cpu or cuda[:k]; ``local`` (the runs run on this machine): CUDA must be here, with
    that many GPUs. Ray workers may have GPUs the driver lacks: there only the form is checked."""
    import torch
    try:
        parsed = torch.device(device)
    except (RuntimeError, ValueError):
        parsed = None
    if parsed is None or parsed.type not in ("cpu", "cuda") or (parsed.type == "cpu" and parsed.index):
        raise ConfigError(f"device={device!r} is not valid; valid: cpu, cuda, cuda:<k>, auto")
    if parsed.type == "cuda" and local:
        if not torch.cuda.is_available():
            raise ConfigError(f"device={device}: this machine has no CUDA device (torch.cuda.is_available() "
                              f"is false); use device=cpu, or device=auto for CUDA where present")
        if parsed.index is not None and parsed.index >= torch.cuda.device_count():
            raise ConfigError(f"device={device}: this machine has {torch.cuda.device_count()} CUDA device(s); "
                              f"valid: cuda:0..cuda:{torch.cuda.device_count() - 1}")


def threads_per_run(sweep: SweepConfig, runs_in_parallel: int) -> int:
    """torch threads for each process (one run or one stack): ``threads=`` when given; else this
    machine's cores shared by the processes that run at once (one each when they fill the machine,
    as two busy processes with two threads each ran 20-60x slower on 2 cores; a lone process gets
    every core, which halves the Atari CNN's update), but never more than the suite's
    ``max_threads`` (MuJoCo's small MLPs gain nothing from a second thread and lose 3x when another
    process is busy: docs/BENCHMARKS.md). Ray workers sit on machines of unknown size: one thread
    unless given."""
    if sweep.threads is not None:
        return sweep.threads
    if sweep.executor == "ray":
        return 1
    import suites
    if sweep.executor == "slurm":   # a task's CPUs are what it asked Slurm for
        limit = getattr(suites.get(sweep.suite), "max_threads", None) if sweep.suite in suites.names() else None
        return min(sweep.slurm_cpus_per_task, limit) if limit else sweep.slurm_cpus_per_task
    share = max(1, (os.cpu_count() or 1) // max(1, min(sweep.jobs, runs_in_parallel)))
    limit = getattr(suites.get(sweep.suite), "max_threads", None) if sweep.suite in suites.names() else None
    return min(share, limit) if limit else share


def plan_runs(sweep: SweepConfig, algo_overrides: dict[str, str], suite_overrides: dict[str, str]) -> list[RunConfig]:
    """Every run of the sweep, fully resolved and validated (writes nothing)."""
    import algos
    import suites

    suite = suites.get(sweep.suite)
    if sweep.scale not in suite.scales:
        raise ConfigError(f"unknown scale {sweep.scale!r}; valid: {', '.join(suite.scales)}")
    scale = suite.scales[sweep.scale]
    preset: dict[str, Any] = {}
    if sweep.preset is not None:
        if sweep.preset not in suite.presets:
            raise ConfigError(f"unknown preset {sweep.preset!r} for suite {suite.name}; valid: "
                              f"{', '.join(suite.presets) or '(none)'}")
        preset = suite.presets[sweep.preset]
    preset_algo = {k[5:]: v for k, v in preset.items() if k.startswith("algo.")}
    preset_suite = {k[6:]: v for k, v in preset.items() if k.startswith("suite.")}

    if sweep.grid is not None:
        if sweep.grid not in suite.grids:
            raise ConfigError(f"unknown grid {sweep.grid!r} for suite {suite.name}; valid: "
                              f"{', '.join(suite.grids) or '(none)'}")
        if sweep.algo or algo_overrides:
            raise ConfigError("grid= fixes the algorithms and their options; drop algo= and algo.<option>=")
        entries = [(name, {k: format_value(v) for k, v in options.items()}) for name, options in suite.grids[sweep.grid]]
    else:
        # no algo=: the seven built-ins; a variant in algos/ runs only when named
        entries = [(name, algo_overrides) for name in (list(sweep.algo) or algos.builtin_names())]
    algo_classes = {name: algos.get(name) for name, _ in entries}
    env_ids = list(sweep.env) or list(scale.envs)
    for env_id in dict.fromkeys(env_ids):
        suite.validate_env(env_id)
    env_ids = list(dict.fromkeys(suite.canonical_env(e) for e in env_ids))  # Pong-v5, Pong -> one folder

    suite_cfg = apply_overrides(suite.Config, {}, {**preset_suite, **suite_overrides}, f"suite {suite.name}", "suite.")
    # A run's identity is its resolved config: an override equal to the default it replaces is no
    # variant (grid=table1's clip_eps=0.2 is ppo_clip's own run, stored once).
    suite_default = apply_overrides(suite.Config, {}, preset_suite, f"suite {suite.name}", "suite.")
    variant_parts = []
    if sweep.preset is not None:
        variant_parts.append(f"preset={sweep.preset}")
    variant_parts += [f"suite.{k}={format_value(suite_cfg[k])}"
                      for k in sorted(suite_overrides) if suite_cfg[k] != suite_default[k]]

    runs: list[RunConfig] = []
    planned: set[tuple[str, str, str, int]] = set()
    steps = sweep.steps or scale.steps
    seeds = sweep.seeds or scale.seeds
    for name, overrides in entries:
        cls = algo_classes[name]
        base = {**suite.defaults_for(cls),   # the suite's protocol, resolved along cls's class hierarchy
                **{k: v for k, v in preset_algo.items() if k in _field_types(cls.Config)}}
        algo_cfg = apply_overrides(cls.Config, base, overrides, name, "algo.")
        sequence_option = cls.needs(cls.Config(**algo_cfg)).sequence_level
        if sequence_option is not None and not suite.sequence_columns:
            valid = [s for s in suites.names() if suites.get(s).sequence_columns]
            raise ConfigError(f"{name}: {sequence_option} is a sequence-level option: it needs every column to be "
                              f"one generated sequence, and suite {suite.name}'s columns are episodes; "
                              f"valid suites: {', '.join(valid)}")
        algo_default = apply_overrides(cls.Config, base, {}, name, "algo.")
        parts = variant_parts[:1] + [f"{k}={format_value(algo_cfg[k])}"
                                     for k in sorted(overrides) if algo_cfg[k] != algo_default[k]] + variant_parts[1:]
        variant = "".join("+" + p.replace("/", "_") for p in parts)
        for env_id in env_ids:
            for seed in range(seeds):
                if (name, variant, env_id, seed) in planned:   # the same run named twice (algo=X,X)
                    continue
                planned.add((name, variant, env_id, seed))
                runs.append(RunConfig(
                    suite=suite.name, env=env_id, algo=name, variant=variant, seed=seed, steps=steps,
                    eval_every=sweep.eval_every or scale.eval_every,
                    eval_episodes=sweep.eval_episodes or scale.eval_episodes,
                    checkpoint_every=sweep.checkpoint_every, algo_cfg=algo_cfg, suite_cfg=suite_cfg,
                    results_dir=sweep.results_dir, device=sweep.device, track=sweep.track))
    return runs


# ---------------------------------------------------------------------------------------
# the batched engine: which runs train together (harness/train.py's train_batch)

# Past this many runs a stack gains little: the update is bound by arithmetic by then (one
# process, Hopper: 16 runs 3.5x a lone run's steps/s, 32 runs 3.6x; docs/BENCHMARKS.md, "Many
# runs, one process").
MAX_BATCH_RUNS = 16


def stack_key(run: RunConfig) -> tuple | None:
    """Runs with equal keys can train as one stack: one suite, environment, algorithm class,
    network and schedule (steps, evaluations, checkpoints), device and threads, their algorithm
    configs equal but for the algorithm's ``per_run_options``. None: this run trains alone (its
    algorithm or suite cannot stack, or its config is one the stacked update does not cover)."""
    import algos
    import suites
    algo_cls, suite = algos.get(run.algo), suites.get(run.suite)
    suite_cfg = suite.Config(**{k: tuple(v) if isinstance(v, list) else v for k, v in run.suite_cfg.items()})
    if not (algo_cls.stackable(algo_cls.Config(**run.algo_cfg)) and suite.stackable(run.env, suite_cfg)):
        return None
    shared = {k: v for k, v in run.algo_cfg.items() if k not in algo_cls.per_run_options}
    return (run.suite, run.env, run.algo, run.steps, run.eval_every, run.eval_episodes, run.checkpoint_every,
            run.device, run.threads, run.results_dir, repr(sorted(run.suite_cfg.items())), repr(sorted(shared.items())))


def plan_batches(runs: list[RunConfig], batch_runs: int | None, jobs: int) -> list[list[RunConfig]]:
    """The processes of a sweep: lists of runs trained together (``batch_runs=1``: each run alone).

    Runs that can stack (``stack_key``) are grouped; a group is split into stacks of at most
    ``batch_runs`` runs, sizes differing by one at most. By default the planner weighs two splits
    and takes the one with the shorter estimated wall time on ``jobs`` processes
    (``estimated_minutes``): whole groups (at most ``MAX_BATCH_RUNS`` a stack: the largest stacks,
    the fastest per run), or each group spread over the jobs (``ceil(n / jobs)`` a stack: smaller
    stacks that keep every core busy to the end; Table 1 on one environment). Runs keep the
    sweep's order within a stack; the processes start longest first by the estimate
    (``unit_seconds``: steps, stack size and the environment's weight), so that the cores finish
    together."""
    if batch_runs == 1:
        return [[r] for r in runs]
    groups: dict = {}
    units: list[list[RunConfig]] = []
    for run in runs:
        key = stack_key(run)
        if key is None:
            units.append([run])
        else:
            if key not in groups:
                groups[key] = []
                units.append(groups[key])   # filled below; split after
            groups[key].append(run)

    def split(unit: list[RunConfig], size: int) -> list[list[RunConfig]]:
        parts = -(-len(unit) // size)
        bounds = [round(i * len(unit) / parts) for i in range(parts + 1)]
        return [unit[lo:hi] for lo, hi in zip(bounds[:-1], bounds[1:])]

    def plan(size_of) -> list[list[RunConfig]]:
        out = [part for unit in units for part in split(unit, size_of(len(unit)))]
        # longest first (LPT): the stacks that take longest start first, so that the cores finish together
        return sorted(out, key=lambda u: -unit_seconds(u))   # stable: the sweep's order among equals

    if batch_runs is not None:
        return plan(lambda n: batch_runs)
    candidates = [plan(lambda n: MAX_BATCH_RUNS), plan(lambda n: min(MAX_BATCH_RUNS, -(-n // max(1, jobs))))]
    return min(candidates, key=lambda c: estimated_minutes(c, jobs))


# Rough training speed of one run on one core of the development machine while the other core is
# busy too (a sweep fills the machine), for the plan's time estimate only (docs/BENCHMARKS.md has the
# measured numbers). MuJoCo: a lone ppo_clip run makes ~3.0k steps/s with the other core idle, but
# 1.8k (Hopper) to 2.0k (HalfCheetah) per process with jobs=2 (bench/batched.py, one run per process);
# 3000 here underestimated Table 1's grid by 1.4-1.9x.
ESTIMATED_SPS = {"mujoco": 1900, "atari": 150,   # atari, one thread: ppo ~560 (fp32), ~40 trpo, ~170 groups
                 "llm_toy": 100}                  # llm_toy: completions per second
# Group rollouts (grpo, rloo, dapo) make more steps per second: a group's episodes step as one
# vectorised environment with one policy call per step, and an update comes only once per
# num_groups x group_size episodes. MuJoCo: the main job's 56 group runs at 1M steps, jobs=2, made
# ~10.4k steps/s per process (44.1 min, 2026-12-04, docs/paper_mujoco; 1900 planned them 5.5x too
# long). Per environment it ranges from ~3.5k to ~30k (more updates where episodes are short).
# llm_toy: completions per second of a group run at scale=quick, jobs=2 (2026-12-07, the LLM archive's
# grpo, rloo and dapo runs: 55-76 s for 40,960 completions, ~600-750/s; ESTIMATED_SPS' 100 planned
# them 6x too long).
ESTIMATED_GROUP_SPS = {"mujoco": 10000, "atari": 170, "llm_toy": 600}
# A stack of K runs (the batched engine) steps K / (1 + (K - 1) * c) times as fast as a lone run:
# each further run costs about c of a lone run's time (one process, Hopper: 8 runs 2.9x, 16 runs
# 3.5x a lone run; docs/BENCHMARKS.md, "Many runs, one process").
STACK_RUN_COST = 0.24


# How long a run takes on each environment, relative to the suite's average (the rates above are
# averages over environments): MuJoCo, ppo_clip's runs of docs/paper_mujoco/archive (Table 1's
# stacks, both cores busy, 2026-12-07): HalfCheetah 18.7 min, Hopper 26.3, InvertedDoublePendulum
# 21.4, InvertedPendulum 13.7, Reacher 16.5, Swimmer 23.9, Walker2d 37.5; each over their mean,
# 22.6. The physics sets most of the spread (bench/physics_floor.py: Walker2d's is 5x
# InvertedPendulum's). Other environments: 1.
ESTIMATED_ENV_WEIGHT = {"mujoco": {"HalfCheetah-v5": 0.83, "Hopper-v5": 1.16, "InvertedDoublePendulum-v5": 0.95,
                                   "InvertedPendulum-v5": 0.61, "Reacher-v5": 0.73, "Swimmer-v5": 1.06,
                                   "Walker2d-v5": 1.66}}


def unit_seconds(unit: list[RunConfig]) -> float:
    """The estimated wall time of one process (a run, or a stack of K): its steps at the rate
    measured for its kind (a lone run at ``ESTIMATED_SPS``, or ``ESTIMATED_GROUP_SPS`` for a group
    rollout), a stack of K faster by ``STACK_RUN_COST``'s rule, times its environment's weight."""
    import algos
    suite = unit[0].suite
    lone = ESTIMATED_SPS.get(suite, 3000)
    if algos.get(unit[0].algo).rollout == "groups":
        lone = ESTIMATED_GROUP_SPS.get(suite, lone)
    weight = ESTIMATED_ENV_WEIGHT.get(suite, {}).get(unit[0].env, 1.0)
    return weight * sum(r.steps for r in unit) / (lone * len(unit) / (1 + (len(unit) - 1) * STACK_RUN_COST))


def estimated_minutes(units: list[list[RunConfig]], jobs: int) -> float:
    """The plan's wall-time estimate: each process's ``unit_seconds``, spread over ``jobs``
    processes in the order given, each starting on the first free job."""
    load = [0.0] * max(1, jobs)
    for u in units:
        load[load.index(min(load))] += unit_seconds(u)
    return max(load) / 60
