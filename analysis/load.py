"""Loading stored runs into one tidy frame.

``load_results(results_dir)`` walks ``<results_dir>/<suite>/.../run.json`` (the identity of a run is
read from its ``run.json``, so nested environment ids such as ``ALE/Pong-v5`` work too) and returns a
``Results``:

- ``runs``: one row per run folder found, done or not (status, budget, config, versions, ...);
- ``frame``: the tidy frame of the done runs, one row per (run, step, metric):
  ``suite, env, algo, variant, label, seed, step, metric, value``. ``episodes.csv`` gives the metrics
  ``episode_return`` and ``episode_length``, ``evals.csv`` gives ``eval_return_mean`` /
  ``eval_return_std`` (and whatever else a suite evaluates, e.g. ``eval_kl_ref``), ``metrics.csv``
  every algorithm metric (``policy_loss``, ``kl``, ``sps``, ...);
  rows keep the order in which they were written;
- ``warnings``: what was left out and why (runs not done, mixed budgets, missing seeds). Each is
  also issued as a ``ResultsWarning``.

Nothing is ever silently averaged: runs that are not ``done`` are excluded and counted; when one
suite holds runs of different budgets (``steps``) only one budget is kept (the one with the most
done runs unless ``steps=`` says which) and the others are named; missing seeds and environments
are listed.
"""
from __future__ import annotations

import json
import warnings
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd

from core.results import COMPARE_DIR, EPISODE_COLUMNS, EVAL_COLUMNS, NOT_PROTOCOL, is_done, read_run_json

REPORTS_DIR = "reports"          # <results_dir>/reports/<suite>/ holds rendered reports, not runs
NOT_SUITE_DIRS = (REPORTS_DIR, COMPARE_DIR)   # ... and <results_dir>/compare/ compare's own runs
RUN_KEYS = ["suite", "env", "algo", "variant", "label", "seed"]
FRAME_COLUMNS = RUN_KEYS + ["step", "metric", "value"]
SOURCES = {  # file -> (columns that must be there, columns that become metrics)
    "episodes.csv": (EPISODE_COLUMNS, ["episode_return", "episode_length"]),
    "evals.csv": (EVAL_COLUMNS[:2], None),       # eval_return_mean/std and any suite extras (eval_kl_ref, ...)
    "metrics.csv": (["update", "global_step"], None),  # None: every column but update/global_step
}
SKIP_METRIC_COLUMNS = {"update", "global_step", "eval_episodes"}


class AnalysisError(Exception):
    """Bad input to the analysis (missing/empty results, corrupt files, unknown labels): one line."""


class ResultsWarning(UserWarning):
    """Something was left out of an analysis (runs not done, mixed budgets, missing seeds)."""


@dataclass
class Results:
    root: Path
    runs: pd.DataFrame                  # every run folder found (done or not), one row each
    frame: pd.DataFrame                 # tidy rows of the runs analysed (done, selected budget)
    warnings: list[str] = field(default_factory=list)
    budgets: dict[str, int] = field(default_factory=dict)   # suite -> steps analysed
    # What a report reads, reduced from ``frame`` by ``analysis.archive.summarize`` (or read back
    # from an archive): run scores by kind (``run_scores``' rows) and episode-return curves on a
    # fixed step grid (``figures.run_curves``' rows). Empty until summarised.
    scores: dict[str, pd.DataFrame] = field(default_factory=dict)
    curves: pd.DataFrame | None = None
    wall_curves: pd.DataFrame | None = None    # the curves against wall-clock seconds (``step`` in seconds)
    source: str | None = None           # what the rows came from, when not the folder ``root``
    sweeps: list[dict] = field(default_factory=list)   # the sweeps' wall-time records (core/sweeplog.py)
    # the archive writes these rows passed through, oldest first: {"made": ISO time, "from": the
    # results folder folded in}; kept flat so a report names every fold without nesting them
    folds: list[dict] = field(default_factory=list)

    @property
    def analysed(self) -> pd.DataFrame:
        """The runs whose rows are in ``frame``."""
        return self.runs[self.runs["analysed"]]

    def suites(self) -> list[str]:
        return sorted(self.analysed["suite"].unique())

    def labels(self, suite: str | None = None) -> list[str]:
        runs = self.analysed if suite is None else self.analysed[self.analysed["suite"] == suite]
        return order_labels(runs["label"].unique())

    def envs(self, suite: str | None = None) -> list[str]:
        runs = self.analysed if suite is None else self.analysed[self.analysed["suite"] == suite]
        return sorted(runs["env"].unique())

    def metric(self, name: str) -> pd.DataFrame:
        """The rows of one metric (all analysed runs), in written order."""
        return self.frame[self.frame["metric"] == name]


def order_labels(labels: Iterable[str]) -> list[str]:
    """Registered algorithms in registry order first (plain label before its variants), then the rest."""
    try:
        import algos
        order = {name: i for i, name in enumerate(algos.names())}
    except Exception:  # the analysis must work on results alone
        order = {}

    def value_key(text: str):
        try:
            return (0, float(text), "")
        except ValueError:
            return (1, 0.0, text)

    def key(label: str):
        algo, variant = split_label(label)
        parts = [p.partition("=") for p in variant.split("+") if p]
        return (order.get(algo, len(order)), algo, variant != "", [(k, value_key(v)) for k, _, v in parts])
    return sorted(dict.fromkeys(labels), key=key)


def split_label(label: str) -> tuple[str, str]:
    """``"ppo_kl+adaptive=false+kl_coef=3.0"`` -> ``("ppo_kl", "+adaptive=false+kl_coef=3.0")``."""
    algo, sep, rest = label.partition("+")
    return algo, sep + rest


def variant_overrides(variant: str) -> dict[str, str]:
    """``"+adaptive=false+kl_coef=3.0"`` -> ``{"adaptive": "false", "kl_coef": "3.0"}`` (text values).
    Keys keep their prefix (``preset``, ``suite.obs_norm``)."""
    out = {}
    for part in variant.split("+"):
        if not part:
            continue
        if "=" not in part:
            raise AnalysisError(f"variant part {part!r} of {variant!r} is not key=value")
        key, value = part.split("=", 1)
        out[key] = value
    return out


# ---------------------------------------------------------------------------------------
# the run table

def _find_run_files(suite_dir: Path) -> list[Path]:
    return sorted(p for p in suite_dir.rglob("run.json") if p.is_file())


def _status(run_dir: Path, record: dict | None) -> str:
    if record is None:
        return "unreadable"
    status = record.get("status")
    if status == "done" and not is_done(run_dir):
        return "corrupt"      # says done, but a result file is missing or has the wrong row count
    return str(status) if status in ("running", "done", "failed") else "unreadable"


def _damage(run_dir: Path, record: dict) -> str:
    """Why a run whose run.json says done fails ``is_done`` (files are written before that status)."""
    try:
        from core.results import done_problem     # the harness's own words, where it has them
        problem = done_problem(run_dir)
        if problem:
            return problem
    except ImportError:
        pass
    for name, rows in (record.get("files") or {}).items():
        path = Path(run_dir) / name
        try:
            with open(path, "rb") as f:
                have = sum(1 for _ in f) - 1
        except OSError:
            return f"{name} is missing"
        if have != rows:
            return f"{name} has {have} data line(s), run.json lists {rows}"
    return "its result files do not match run.json"


def _run_row(path: Path, suite_dir: Path) -> dict:
    run_dir = path.parent
    record = read_run_json(run_dir)
    rel = run_dir.relative_to(suite_dir).parts
    config = (record or {}).get("config") or {}
    seed_text = rel[-1][4:] if rel and rel[-1].startswith("seed") else ""
    algo = (record or {}).get("algo") or (split_label(rel[-2])[0] if len(rel) >= 2 else "?")
    variant = (record or {}).get("variant")
    if variant is None:
        variant = split_label(rel[-2])[1] if len(rel) >= 2 else ""
    seed = (record or {}).get("seed")
    if seed is None:
        seed = int(seed_text) if seed_text.isdigit() else -1
    row = {
        "suite": (record or {}).get("suite") or suite_dir.name,
        "env": (record or {}).get("env") or "/".join(rel[:-2]) or "?",
        "algo": algo, "variant": variant, "label": algo + variant, "seed": int(seed),
        "status": _status(run_dir, record), "path": str(run_dir),
        "steps": config.get("steps"), "config": config,
        "versions": (record or {}).get("versions") or {}, "git_commit": (record or {}).get("git_commit"),
        "device": (record or {}).get("device"), "host": (record or {}).get("host"),
        "hardware": (record or {}).get("hardware"),
        "start_time": (record or {}).get("start_time"), "end_time": (record or {}).get("end_time"),
        "wall_seconds": (record or {}).get("wall_seconds"), "error": (record or {}).get("error"),
        "run_id": (record or {}).get("run_id") or "/".join((suite_dir.name, *rel)),
    }
    row["done"] = row["status"] == "done"
    return row


def _suite_dirs(root: Path, suite: str | None) -> list[Path]:
    if suite is not None:
        suite_dir = root / suite
        if not suite_dir.is_dir():
            have = [d.name for d in _suite_dirs(root, None)]
            raise AnalysisError(f"no results for suite {suite!r} in {root}"
                                + (f" (suites with results: {', '.join(have)})" if have else " (it holds no runs)"))
        return [suite_dir]
    return sorted(d for d in root.iterdir() if d.is_dir() and d.name not in NOT_SUITE_DIRS and not d.name.startswith("."))


# ---------------------------------------------------------------------------------------
# reading result files

def _read_csv(path: Path, required: list[str]) -> pd.DataFrame:
    try:
        table = pd.read_csv(path)
    except pd.errors.EmptyDataError:
        raise AnalysisError(f"corrupt results file {path}: it is empty (no header)") from None
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise AnalysisError(f"corrupt results file {path}: {reason}") from None
    except OSError as exc:
        raise AnalysisError(f"cannot read results file {path}: {exc.strerror or exc}") from None
    missing = [c for c in required if c not in table.columns]
    if missing:
        raise AnalysisError(f"corrupt results file {path}: missing column(s) {', '.join(missing)} "
                            f"(has {', '.join(map(str, table.columns)) or 'none'})")
    for column in table.columns:
        if table[column].dtype == object:
            converted = pd.to_numeric(table[column], errors="coerce")
            bad = table[column][converted.isna() & table[column].notna() & (table[column].astype(str) != "")]
            if len(bad):
                raise AnalysisError(f"corrupt results file {path}: column {column!r} has the non-numeric value "
                                    f"{str(bad.iloc[0])[:40]!r} (row {bad.index[0] + 1})")
            table[column] = converted
    if table["global_step"].isna().any():
        raise AnalysisError(f"corrupt results file {path}: empty global_step in row "
                            f"{int(np.flatnonzero(table['global_step'].isna())[0]) + 1}")
    return table


def _long_rows(run: dict, sources: Iterable[str]) -> list[pd.DataFrame]:
    parts = []
    for name in sources:
        path = Path(run["path"]) / name
        if not path.exists():
            continue   # is_done only checks the files run.json lists
        required, metrics = SOURCES[name]
        table = _read_csv(path, required)
        columns = metrics if metrics is not None else [c for c in table.columns if c not in SKIP_METRIC_COLUMNS]
        columns = [c for c in columns if c in table.columns]
        if not columns or table.empty:
            continue
        values = table[columns].to_numpy(dtype=float)        # rows in written order, metric-major below
        n = len(table)
        parts.append(pd.DataFrame({
            "step": np.tile(table["global_step"].to_numpy(dtype=np.int64), len(columns)),
            "metric": np.repeat(np.array(columns, dtype=object), n),
            "value": values.T.reshape(-1),
        }))
    return parts


def _frame(runs: pd.DataFrame, sources: Iterable[str]) -> pd.DataFrame:
    records = runs.to_dict("records")
    chunks, owners = [], []
    for k, run in enumerate(records):
        for part in _long_rows(run, sources):
            chunks.append(part)
            owners.append(np.full(len(part), k, dtype=np.int64))
    if not chunks:
        return pd.DataFrame({c: pd.Series(dtype=float if c == "value" else object) for c in FRAME_COLUMNS})
    frame = pd.concat(chunks, ignore_index=True)
    owner = np.concatenate(owners)
    for key in RUN_KEYS:   # the run's identity, as categoricals indexed by the owning run
        values = [r[key] for r in records]
        if key == "seed":
            frame[key] = np.asarray(values, dtype=np.int64)[owner]
        else:
            categories = sorted(set(values))
            codes = np.asarray([categories.index(v) for v in values], dtype=np.int32)[owner]
            frame[key] = pd.Categorical.from_codes(codes, categories=categories)
    frame["metric"] = frame["metric"].astype("category")
    return frame[FRAME_COLUMNS]


# ---------------------------------------------------------------------------------------
# what is left out, and why

def _not_done_warning(runs: pd.DataFrame) -> str | None:
    bad = runs[~runs["done"]]
    if bad.empty:
        return None
    counts = Counter(bad["status"])
    what = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    examples = "; ".join(f"{r.run_id} ({r.status}{': ' + str(r.error)[:80] if r.error else ''})"
                         for r in bad.head(5).itertuples())
    more = f"; ... {len(bad) - 5} more" if len(bad) > 5 else ""
    return f"{len(bad)} run(s) not done were excluded ({what}): {examples}{more}"


def _pick_budget(runs: pd.DataFrame, suite: str, steps: int | None) -> tuple[int | None, str | None]:
    done = runs[runs["done"] & (runs["suite"] == suite)]
    counts = Counter(int(s) for s in done["steps"].dropna())
    if not counts:
        return None, None
    if steps is not None:
        if steps not in counts:
            raise AnalysisError(f"suite {suite}: no done runs with steps={steps} "
                                f"(budgets present: {', '.join(f'{s:,}' for s in sorted(counts))})")
        chosen = steps
    else:
        chosen = max(counts, key=lambda s: (counts[s], s))
    if len(counts) == 1:
        return chosen, None
    others = ", ".join(f"{n} run(s) at steps={s:,}" for s, n in sorted(counts.items()) if s != chosen)
    return chosen, (f"suite {suite} mixes budgets: this analysis uses the {counts[chosen]} done run(s) at "
                    f"steps={chosen:,} and leaves out {others} (never averaged together; pass steps=<n> "
                    f"to analyse another budget)")


def coverage_warnings(runs: pd.DataFrame) -> list[str]:
    """Missing environments and seeds among the analysed runs of one suite, one line per label."""
    if runs.empty:
        return []
    envs = sorted(runs["env"].unique())
    seeds = sorted(runs["seed"].unique())
    have = defaultdict(set)
    for r in runs.itertuples():
        have[(r.label, r.env)].add(int(r.seed))
    out = []
    for label in order_labels(runs["label"].unique()):
        gaps = []
        for env in envs:
            got = have.get((label, env), set())
            if not got:
                gaps.append(f"{env} (no runs)")
            elif len(got) < len(seeds):
                missing = [s for s in seeds if s not in got]
                gaps.append(f"{env} seed{'s' if len(missing) > 1 else ''} {','.join(map(str, missing))}")
        if gaps:
            out.append(f"{label}: missing {'; '.join(gaps)} (the other runs of the suite have seeds "
                       f"{','.join(map(str, seeds))} on {len(envs)} environment(s))")
    return out


def _config_drift(runs: pd.DataFrame) -> list[str]:
    """Runs of one label and environment whose resolved configs differ (other than seed/paths)."""
    out = []
    for (label, env), group in runs.groupby(["label", "env"], sort=False):
        keys = set()
        for config in group["config"]:
            # what is not the protocol (threads, tracking, checkpoint interval, paths) may differ
            c = {k: v for k, v in (config or {}).items() if k != "seed" and k not in NOT_PROTOCOL}
            keys.add(json.dumps(c, sort_keys=True, default=str))
        if len(keys) > 1:
            out.append(f"{label} on {env}: its {len(group)} runs were made with {len(keys)} different configs "
                       f"(code or defaults changed between them?); they are analysed together")
    return out


def select_analysed(runs: pd.DataFrame, steps: int | None = None) -> tuple[pd.DataFrame, dict[str, int], list[str]]:
    """Which of ``runs`` (one row per run folder) an analysis uses: the done runs at each suite's
    budget (``steps``, or the most common). Returns the runs with ``analysed`` set, the budgets and
    what was left out and why (one line each)."""
    runs = runs.assign(analysed=False)
    messages = []
    note = _not_done_warning(runs)
    if note:
        messages.append(note)
    budgets = {}
    for name in sorted(runs["suite"].unique()):
        chosen, note = _pick_budget(runs, name, steps)
        if note:
            messages.append(note)
        if chosen is None:
            continue
        budgets[name] = chosen
        mask = runs["done"] & (runs["suite"] == name) & (runs["steps"] == chosen)
        runs.loc[mask, "analysed"] = True
        messages += [f"suite {name}: {m}" for m in coverage_warnings(runs[mask])]
        messages += [f"suite {name}: {m}" for m in _config_drift(runs[mask])]
    return runs, budgets, messages


def _suite_dir_of(run_dir: Path, suite: str | None) -> Path:
    """The ``<results_dir>/<suite>`` folder a run folder (``.../<suite>/<env>/<label>/seed<k>``) lies in."""
    for parent in list(run_dir.parents)[2:]:
        if suite is None or parent.name == suite:
            return parent
    return run_dir.parents[2]


def load_results(results_dir: str | Path, suite: str | None = None, steps: int | None = None,
                 sources: Iterable[str] = ("episodes.csv", "evals.csv", "metrics.csv"),
                 require_done: bool = True, labels: Iterable[str] | None = None,
                 run_dirs: Iterable[str | Path] | None = None) -> Results:
    """Every run under ``results_dir`` (or its ``suite``; of ``labels`` only, if given) into a
    ``Results``; see the module docstring. ``run_dirs``: exactly these run folders instead (wherever
    they lie, e.g. compare's runs beside a sweep's), ``results_dir`` being the root they belong to.

    Raises ``AnalysisError`` (one line) for a missing or empty folder, a folder with no done runs
    (when ``require_done``), or a corrupt CSV of a done run."""
    root = Path(results_dir)
    if not root.exists():
        raise AnalysisError(f"results folder {root} does not exist")
    if not root.is_dir():
        raise AnalysisError(f"results folder {root} is not a folder")
    rows = []
    if run_dirs is not None:
        rows = [_run_row(Path(d) / "run.json", _suite_dir_of(Path(d), suite)) for d in run_dirs
                if (Path(d) / "run.json").is_file()]
    else:
        for suite_dir in _suite_dirs(root, suite):
            rows += [_run_row(p, suite_dir) for p in _find_run_files(suite_dir)]
    if not rows:
        raise AnalysisError(f"no runs under {root / suite if suite else root} (no run.json found)")
    runs = pd.DataFrame(rows)
    corrupt = [r for r in rows if r["status"] == "corrupt" and (labels is None or r["label"] in labels)]
    if corrupt:
        r = corrupt[0]
        more = f" (and {len(corrupt) - 1} more damaged run(s))" if len(corrupt) > 1 else ""
        raise AnalysisError(f"corrupt results in {r['path']}: run.json says done but "
                            f"{_damage(Path(r['path']), read_run_json(Path(r['path'])) or {})}{more}")
    if labels is not None:
        runs = runs[runs["label"].isin(list(labels))].reset_index(drop=True)
        if runs.empty:
            return Results(root=root, runs=runs.assign(analysed=pd.Series(dtype=bool)), frame=_frame(runs, ()),
                           warnings=[], budgets={})
    if require_done and not runs["done"].any():
        raise AnalysisError(f"no completed runs under {root / suite if suite else root}: "
                            f"{len(runs)} run(s), none done ({', '.join(f'{n} {s}' for s, n in Counter(runs['status']).items())})")
    runs, budgets, messages = select_analysed(runs, steps)
    frame = _frame(runs[runs["analysed"]], sources)
    for message in messages:
        warnings.warn(message, ResultsWarning, stacklevel=2)
    return Results(root=root, runs=runs, frame=frame, warnings=messages, budgets=budgets)


def wall_times(runs: pd.DataFrame) -> pd.DataFrame:
    """Each run's wall clock: the tidy rows (RUN_KEYS + step, value) of metrics.csv's ``wall_seconds``
    against ``global_step``, read alone (the report's wall-clock curves need no other metric). Runs
    whose metrics.csv lacks the column or cannot be read are left out."""
    parts = []
    for run in runs.to_dict("records"):
        try:
            table = pd.read_csv(Path(run["path"]) / "metrics.csv", usecols=["global_step", "wall_seconds"])
        except (OSError, ValueError, pd.errors.ParserError):
            continue
        part = pd.DataFrame({"step": table["global_step"].to_numpy(dtype=np.int64),
                             "value": table["wall_seconds"].to_numpy(dtype=float)})
        for key in RUN_KEYS:
            part[key] = run[key]
        parts.append(part)
    if not parts:
        return pd.DataFrame(columns=RUN_KEYS + ["step", "value"])
    return pd.concat(parts, ignore_index=True)[RUN_KEYS + ["step", "value"]]
