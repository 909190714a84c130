"""Canaries: does today's code still compute what the code that made an archive computed?

An archived run stands in for a fresh one only while the code would make the same run
(``compare ... archive=DIR``, issue 30). The commit alone cannot say so (a change to a comment
moves it; a change to a default may not show in a label), and rerunning the archive's runs is what
the archive is there to avoid. So each archived setting carries a canary per environment: the
update metrics of a short run of it (seed 0, ``CANARY_STEPS`` steps, every number of its
``metrics.csv`` but the timing columns), written by the code that made the archive
(``scripts/write_canaries.py``). Before compare takes a baseline from the archive it makes the same
short run with today's code (seconds per environment) and checks every number against the stored
one to ``CANARY_RTOL``: a changed loss, advantage, default, initialisation or environment moves
them far beyond that. Another machine's floating point (another CPU's kernels, the same package
versions) is expected to stay inside it over a few updates, but that is not measured: every
canary so far was written and checked on one kind of machine. A count among the metrics moves in
whole samples (``clip_fraction`` over a 16,000-step DAPO batch: steps of 6e-5, 3e-3 of a fraction
of 0.02), so a last-bit difference that moves one sample across the clip would refuse an archive
there; the refusal names the number, and ``allow_protocol_diff=true`` compares anyway.
"""
from __future__ import annotations

import csv
import json
import math
import tempfile
from pathlib import Path

CANARY_FILE = "canary.json"
CANARY_STEPS = 4096         # ppo_clip and ppo_kl on MuJoCo: 2 updates; trpo 4; the group algorithms several
CANARY_RTOL = 1e-3          # relative, and CANARY_ATOL absolute, per number
CANARY_ATOL = 1e-6


class CanaryError(ValueError):
    """The archive's code and today's compute another run (or the archive has no canary to tell)."""


def canary_run(label: str, suite: str, env: str, plan_label) -> dict:
    """The canary of ``label`` on ``env``: ``{"columns": [...], "rows": [[...], ...]}``, the update
    metrics of a run of ``CANARY_STEPS`` steps (seed 0, one evaluation episode at the end), trained
    in this process in a temporary folder (nothing else is written). ``plan_label(label, words)``:
    compare's planner (``harness.compare.plan_label``), which plans a label as a sweep would."""
    from harness.train import train_batch
    with tempfile.TemporaryDirectory(prefix="pg-arena-canary-") as tmp:
        words = {"suite": suite, "env": env, "seeds": "1", "steps": str(CANARY_STEPS),
                 "eval_every": str(CANARY_STEPS), "eval_episodes": "1", "results_dir": tmp, "threads": "1"}
        runs = plan_label(label, words)
        (record,) = train_batch(runs)
        if record["status"] != "done":
            raise CanaryError(f"the canary run of {label} on {env} failed: {record.get('error')}")
        return canary_of(runs[0].run_dir / "metrics.csv")


def canary_of(metrics_csv: Path) -> dict:
    """A run's ``metrics.csv`` as a canary: every column but the timing ones (``sps``, ``*_per_s``,
    ...: how fast, not what; ``core.results.is_timing_column``), numbers parsed."""
    from core.results import is_timing_column
    with open(metrics_csv, newline="") as f:
        rows = list(csv.reader(f))
    keep = [i for i, c in enumerate(rows[0]) if not is_timing_column(c)]
    return {"columns": [rows[0][i] for i in keep],
            "rows": [[_number(r[i]) for i in keep] for r in rows[1:]]}


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def differences(stored: dict, fresh: dict) -> list[str]:
    """Where a fresh canary differs from the stored one beyond the tolerance (empty: the same run)."""
    if stored["columns"] != fresh["columns"]:
        gone = [c for c in stored["columns"] if c not in fresh["columns"]]
        new = [c for c in fresh["columns"] if c not in stored["columns"]]
        return [f"it logs other metrics (gone: {', '.join(gone) or 'none'}; new: {', '.join(new) or 'none'})"]
    if len(stored["rows"]) != len(fresh["rows"]):
        return [f"{len(fresh['rows'])} updates in {CANARY_STEPS} steps, not {len(stored['rows'])}"]
    out = []
    for update, (a, b) in enumerate(zip(stored["rows"], fresh["rows"]), 1):
        for column, x, y in zip(stored["columns"], a, b):
            if column in (c for c, _ in out):
                continue
            if not _close(x, y):
                out.append((column, f"{column} at update {update}: {_show(y)} now, {_show(x)} archived"))
    return [text for _, text in out]


def _close(x: float | None, y: float | None) -> bool:
    if x is None or y is None or (isinstance(x, float) and math.isnan(x)) or (isinstance(y, float) and math.isnan(y)):
        return (x is None) == (y is None) and (x is None or math.isnan(x) == math.isnan(y))
    return abs(x - y) <= CANARY_ATOL + CANARY_RTOL * abs(x)


def _show(x: float | None) -> str:
    return "empty" if x is None else f"{x:.6g}"


def read_canaries(archive: str | Path) -> dict:
    """``{label: {env: canary}}`` of an archive (empty when it has none)."""
    path = Path(archive) / CANARY_FILE
    if not path.is_file():
        return {}
    try:
        return json.loads(path.read_text())["canaries"]
    except (OSError, ValueError, KeyError) as exc:
        raise CanaryError(f"{path} is unreadable: {type(exc).__name__}: {exc}") from None


def write_canaries(archive: str | Path, suite: str, labels: list[str], envs: list[str], commit: str | None,
                   plan_label) -> Path:
    """Make and store the canaries of ``labels`` on ``envs`` in the archive (kept: the others)."""
    from core.results import atomic_write_text
    canaries = read_canaries(archive)
    for label in labels:
        for env in envs:
            canaries.setdefault(label, {})[env] = canary_run(label, suite, env, plan_label)
    path = Path(archive) / CANARY_FILE
    atomic_write_text(path, json.dumps({"steps": CANARY_STEPS, "rtol": CANARY_RTOL, "commit": commit,
                                        "canaries": canaries}, indent=None, sort_keys=True) + "\n")
    return path


def check_canaries(archive: str | Path, label: str, suite: str, envs: list[str], plan_label) -> list[str]:
    """Run ``label``'s canary on each of ``envs`` with today's code; the problems found (empty: the
    archive's runs of ``label`` are what today's code makes). A missing canary is a problem."""
    stored = read_canaries(archive).get(label, {})
    problems = []
    for env in envs:
        if env not in stored:
            problems.append(f"the archive holds no canary of {label} on {env} (scripts/write_canaries.py "
                            f"{archive} {label} writes it, with the code that made the archive)")
            continue
        diff = differences(stored[env], canary_run(label, suite, env, plan_label))
        if diff:
            problems.append(f"{label} on {env}: " + "; ".join(diff[:3]) + ("; ..." if len(diff) > 3 else ""))
    return problems
