"""What a report needs of a results folder, small enough to commit: ``summarize`` and the archive.

A report never reads the raw training episodes directly: ``build_report`` first reduces the loaded
results with ``summarize`` (each run's scores of every kind, its episode-return curve on the
report's step grid) and renders from that summary alone. An archive is that summary on disk, so a
report rendered from an archive equals the report rendered from the results it was made of, number
for number, by construction (floats are written in their shortest round-trip form and read back
exactly).

Layout of an archive folder (``write_archive`` / ``load_archive``):

- ``archive.json``: format, suite, the budget analysed, the notes (what was left out and why), the
  results folder it was made from and when, the sweeps' wall-time records (``core/sweeplog.py``);
- ``runs.jsonl.gz``: one line per run folder found (done or not): identity, status, resolved
  config, package versions, git commit, host, start/end time, wall seconds;
- ``scores.csv.gz``: each analysed run's score of every kind (``last100``, ``all``, ``final_eval``);
- ``curves.csv.gz``: each analysed run's running mean of its last 100 episode returns at the
  report's ``CURVE_POINTS`` steps; ``wall_curves.csv.gz``: the same against wall-clock seconds (each
  run read at ``CURVE_POINTS`` times up to its own end, so that a run's rows depend on it alone);
- ``frame.csv.gz``: the other tidy rows the report reads (evaluations and metrics of the suites
  whose report uses them; none for MuJoCo);
- ``<suite>/random_scores.json``: the random-policy scores the normalisation used;
- ``unfinished/<run id>/``: for each run not done when the archive was written, its ``run.json``
  and ``checkpoint.pt.gz``, so that a sweep on another machine resumes it (``archive=``,
  ``core/archived.py``); gone once every run is done.

The gzip streams carry no timestamp, so the same summary gives the same bytes.
"""
from __future__ import annotations

import gzip
import json
import shutil
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.load import FRAME_COLUMNS, RUN_KEYS, AnalysisError, Results, select_analysed, wall_times
from core.archived import ARCHIVE_FILE, CARRIED, UNFINISHED_DIR, carry_checkpoint, gzip_bytes
from analysis.scores import RANDOM_CACHE, run_scores

ARCHIVE_FORMAT = 1
# reduced to scores and curves: the rows that make an archive large
EPISODE_METRICS = ("episode_return", "episode_length")
SCORE_KINDS = {"last100": "episode_return", "all": "episode_return", "final_eval": "eval_return_mean"}


def _keys_as_text(frame: pd.DataFrame) -> pd.DataFrame:
    """Run keys as plain str / int columns: the form they have after a round trip through CSV."""
    frame = frame.copy()
    for key in RUN_KEYS:
        if key in frame:
            frame[key] = frame[key].astype(int) if key == "seed" else frame[key].astype(str)
    return frame


def summarize(results: Results, suite: str) -> Results:
    """``results`` of one suite reduced to what a report reads (see the module docstring)."""
    from analysis.figures import run_curves, wall_clock_curves
    if results.scores:
        return results          # already a summary (read from an archive)
    have = set(results.frame["metric"].unique()) if len(results.frame) else set()
    scores = {}
    for kind, metric in SCORE_KINDS.items():
        if metric in have:
            scores[kind] = _keys_as_text(run_scores(results, kind, suite))
    episodes = results.metric("episode_return")
    episodes = episodes[episodes["suite"] == suite]
    steps = results.budgets.get(suite)
    curves = _keys_as_text(run_curves(episodes, steps)) if steps and len(episodes) else None
    walls = wall_times(results.analysed[results.analysed["suite"] == suite]) if len(episodes) else None
    wall_curves = (_keys_as_text(wall_clock_curves(episodes, walls)) if walls is not None and len(walls)
                   else None)
    frame = results.frame[(results.frame["suite"] == suite) & ~results.frame["metric"].isin(EPISODE_METRICS)]
    runs = results.runs[results.runs["suite"] == suite].reset_index(drop=True)
    from core.sweeplog import sweep_segments
    sweeps = [{k: v for k, v in piece.items() if k != "file"} for piece in sweep_segments(results.root, suite)]
    return Results(root=results.root, runs=runs, frame=_keys_as_text(frame).reset_index(drop=True),
                   warnings=list(results.warnings), budgets={suite: steps} if steps else {}, scores=scores,
                   curves=curves, wall_curves=wall_curves, source=results.source, sweeps=sweeps)


def merge_summaries(older: Results, newer: Results, suite: str) -> Results:
    """One summary of the runs of both, e.g. an archive made on other machines (``older``) and the
    results folder here (``newer``): a run found in both (same ``RUN_KEYS``) is taken from ``newer``
    unless only ``older`` has it done. Every row a summary holds is one run's, so the union is the
    summary the runs would give in one folder; what is analysed, and what is left out and why, are
    worked out again for the union. The budgets analysed must agree."""
    budgets = {s for s in (older.budgets.get(suite), newer.budgets.get(suite)) if s}
    if len(budgets) > 1:
        raise AnalysisError(f"the archive and the results analyse different budgets ({', '.join(map(str, sorted(budgets)))} "
                            f"steps); merge only runs of one budget")

    def key(row) -> tuple:
        return tuple(int(row[k]) if k == "seed" else str(row[k]) for k in RUN_KEYS)

    sides = [(newer, newer.runs[newer.runs["suite"] == suite]), (older, older.runs[older.runs["suite"] == suite])]
    done = [{key(r): bool(r["done"]) for r in runs.to_dict("records")} for _, runs in sides]
    best = {k: 0 if k in done[0] and (done[0][k] or not done[1].get(k, False)) else 1
            for k in [*done[0], *done[1]]}     # the side each run is taken from
    parts, analysed_before = [], []
    for i, (_, runs) in enumerate(sides):
        mine = runs[[best[key(r)] == i for r in runs.to_dict("records")]]
        parts.append(mine)
        analysed_before += list(mine["analysed"])
    runs = pd.concat(parts, ignore_index=True).assign(analysed=analysed_before)
    # in the order one folder lists them (load_results: sorted paths), so every table comes out alike
    runs = runs.iloc[sorted(range(len(runs)), key=lambda i: tuple(str(runs["run_id"].iat[i]).split("/")))]
    analysed_before = runs["analysed"].to_numpy(dtype=bool)
    runs, chosen, messages = select_analysed(runs.drop(columns="analysed").reset_index(drop=True),
                                             next(iter(budgets), None))
    runs["analysed"] = runs["analysed"].to_numpy(dtype=bool) & analysed_before
    keep = {key(r) for r in runs[runs["analysed"]].to_dict("records")}
    rank = {key(r): n for n, r in enumerate(runs.to_dict("records"))}

    def rows(i: int, table: pd.DataFrame | None) -> pd.DataFrame | None:
        if table is None or not len(table):
            return None
        mask = [best.get(k) == i and k in keep for k in map(key, table[RUN_KEYS].to_dict("records"))]
        return table[mask]

    def union(pick) -> pd.DataFrame | None:
        found = [t for i, (side, _) in enumerate(sides) if (t := rows(i, pick(side))) is not None]
        if not found:
            return None
        table = pd.concat(found, ignore_index=True)
        order = np.argsort([rank[k] for k in map(key, table[RUN_KEYS].to_dict("records"))], kind="stable")
        return _keys_as_text(table.iloc[order].reset_index(drop=True))

    scores = {kind: union(lambda side: side.scores.get(kind))
              for kind in dict.fromkeys([*newer.scores, *older.scores])}
    frame = union(lambda side: side.frame[side.frame["suite"] == suite] if len(side.frame) else None)
    pieces: dict[tuple, dict] = {}
    for piece in [*older.sweeps, *newer.sweeps]:   # a piece seen by both: the later look at it
        k = (piece.get("plan_id"), piece.get("start"), piece.get("pid"))
        if k not in pieces or piece.get("seconds", 0) >= pieces[k].get("seconds", 0):
            pieces[k] = piece
    return Results(root=newer.root, runs=runs, frame=frame if frame is not None else newer.frame.iloc[0:0],
                   warnings=messages, budgets=chosen, scores={k: v for k, v in scores.items() if v is not None},
                   curves=union(lambda side: side.curves), wall_curves=union(lambda side: side.wall_curves),
                   source=f"{newer.source or newer.root} and {older.source or older.root}",
                   sweeps=sorted(pieces.values(), key=lambda p: p.get("start", "")),
                   folds=[*older.folds, *newer.folds])


# ---------------------------------------------------------------------------------------
# writing and reading

def _write(path: Path, data: bytes) -> None:
    from core.results import atomic_write_bytes
    atomic_write_bytes(path, gzip_bytes(data) if path.suffix == ".gz" else data)


def _json_value(value):
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return float(value)
    if isinstance(value, float) and np.isnan(value):
        return None
    return value


def write_archive(summary: Results, suite: str, path: str | Path) -> Path:
    """Write the summary of ``suite`` to the folder ``path`` (created; files replaced atomically)."""
    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    root = Path(summary.root)
    runs = summary.runs[summary.runs["suite"] == suite]
    lines = []
    carry = out / (UNFINISHED_DIR + ".new")    # built beside the old, then swapped (it may be the source)
    shutil.rmtree(carry, ignore_errors=True)
    for row in runs.to_dict("records"):
        row = {k: _json_value(v) for k, v in row.items()}
        folder = Path(row["path"])
        try:   # where the run was, relative to the results folder (absolute paths mean nothing elsewhere)
            row["path"] = str(folder.relative_to(root))
        except (ValueError, TypeError):
            # a run folded from an archive (its folder is the archive's, never the results folder): its
            # place in any results layout, not the old archive's path, which the next load would prefix again
            row["path"] = str(row["run_id"])
        if row["status"] != "done" and ((folder / "checkpoint.pt").is_file() or (folder / CARRIED).is_file()):
            # an unfinished run carries its resume point, so a sweep elsewhere goes on from it (archive=)
            relative = Path(row["run_id"])
            (carry / relative).mkdir(parents=True, exist_ok=True)
            carry_checkpoint(folder, carry / relative)
            row["path"] = str(Path(UNFINISHED_DIR) / relative)
        lines.append(json.dumps(row, sort_keys=True))
    shutil.rmtree(out / UNFINISHED_DIR, ignore_errors=True)
    if carry.exists():
        carry.rename(out / UNFINISHED_DIR)
    _write(out / "runs.jsonl.gz", ("\n".join(lines) + "\n").encode())
    scores = [frame.assign(kind=kind) for kind, frame in summary.scores.items()]
    table = (pd.concat(scores, ignore_index=True) if scores
             else pd.DataFrame(columns=["kind", *RUN_KEYS, "score", "episodes"]))
    _write(out / "scores.csv.gz", table.to_csv(index=False).encode())
    curves = summary.curves if summary.curves is not None else pd.DataFrame(columns=RUN_KEYS + ["step", "value"])
    _write(out / "curves.csv.gz", curves.to_csv(index=False).encode())
    if summary.wall_curves is not None:
        _write(out / "wall_curves.csv.gz", summary.wall_curves.to_csv(index=False).encode())
    frame = summary.frame[summary.frame["suite"] == suite] if len(summary.frame) else summary.frame
    _write(out / "frame.csv.gz", frame[FRAME_COLUMNS].to_csv(index=False).encode())
    random = root / suite / RANDOM_CACHE
    if random.exists():
        (out / suite).mkdir(exist_ok=True)
        shutil.copyfile(random, out / suite / RANDOM_CACHE)
    made = datetime.now(timezone.utc).isoformat(timespec="seconds")
    meta = {"format": ARCHIVE_FORMAT, "suite": suite, "budget": summary.budgets.get(suite),
            "warnings": summary.warnings, "folds": [*summary.folds, {"made": made, "from": str(root.resolve())}],
            "score_kinds": sorted(summary.scores), "sweeps": summary.sweeps}
    _write(out / ARCHIVE_FILE, (json.dumps(meta, indent=1) + "\n").encode())
    return out


TEXT_COLUMNS = ("suite", "env", "algo", "variant", "label", "metric", "kind")


def _read_csv(path: Path) -> pd.DataFrame:
    # round_trip: the shortest repr written above reads back to the same double; text columns keep
    # "" (a run without a variant) as text, numeric columns read "" (NaN as written) as NaN
    columns = pd.read_csv(path, nrows=0).columns
    text = [c for c in columns if c in TEXT_COLUMNS]
    frame = pd.read_csv(path, float_precision="round_trip", dtype={c: str for c in text}, keep_default_na=False,
                        na_values={c: [""] for c in columns if c not in text})
    return _keys_as_text(frame) if len(frame) else frame


def load_archive(path: str | Path) -> Results:
    """The summary stored in the archive folder ``path``; its ``root`` is that folder (where the
    random-policy scores are), its ``source`` names the archive."""
    root = Path(path)
    meta_path = root / ARCHIVE_FILE
    if not meta_path.is_file():
        raise AnalysisError(f"{root} is not a pg-arena archive (no {ARCHIVE_FILE}; write one with "
                            f"./run_all.sh report save_archive=<folder>)")
    try:
        meta = json.loads(meta_path.read_text())
        if meta.get("format") != ARCHIVE_FORMAT:
            raise AnalysisError(f"archive {root} has format {meta.get('format')!r}; this pg-arena reads "
                                f"format {ARCHIVE_FORMAT}")
        with gzip.open(root / "runs.jsonl.gz", "rt") as f:
            rows = [json.loads(line) for line in f if line.strip()]
        scores_table = _read_csv(root / "scores.csv.gz")
        curves = _read_csv(root / "curves.csv.gz")
        wall_curves = _read_csv(root / "wall_curves.csv.gz") if (root / "wall_curves.csv.gz").exists() else None
        frame = _read_csv(root / "frame.csv.gz")
    except (OSError, ValueError, KeyError) as exc:
        raise AnalysisError(f"archive {root} is unreadable: {type(exc).__name__}: {exc}") from None
    runs = pd.DataFrame(rows)
    for column in ("analysed", "done"):
        runs[column] = runs[column].astype(bool)
    runs["seed"] = runs["seed"].astype(int)
    runs["path"] = [str(root / p) for p in runs["path"]]
    scores = {kind: part.drop(columns="kind").reset_index(drop=True)
              for kind, part in scores_table.groupby("kind", sort=False)} if len(scores_table) else {}
    if len(frame):
        frame["step"] = frame["step"].astype(np.int64)
    else:
        frame = pd.DataFrame({c: pd.Series(dtype=float if c == "value" else object) for c in FRAME_COLUMNS})
    budget = meta.get("budget")
    # archives written before "folds" existed recorded only their last write, as made / made_from
    folds = meta.get("folds") or [{"made": meta.get("made"), "from": meta.get("made_from")}]
    return Results(root=root, runs=runs, frame=frame, warnings=list(meta.get("warnings", [])),
                   budgets={meta["suite"]: int(budget)} if budget else {}, scores=scores,
                   curves=curves if len(curves) else None, sweeps=list(meta.get("sweeps", [])),
                   wall_curves=wall_curves if wall_curves is not None and len(wall_curves) else None,
                   source=archive_source(root, folds), folds=folds)


def archive_source(root: Path, folds: list[dict]) -> str:
    """One line naming the archive and every fold that wrote it, oldest first."""
    if len(folds) == 1:
        return f"archive {root} (made {folds[0]['made']} from {folds[0]['from']})"
    froms = sorted({f["from"] for f in folds})
    return (f"archive {root} (made in {len(folds)} folds of results from {', '.join(froms)}: "
            + ", ".join(f["made"] for f in folds) + ")")


def archive_suite(path: str | Path) -> str:
    """The suite an archive holds (for ``./run_all.sh report archive=...``)."""
    meta_path = Path(path) / ARCHIVE_FILE
    try:
        return json.loads(meta_path.read_text())["suite"]
    except (OSError, ValueError, KeyError):
        raise AnalysisError(f"{path} is not a pg-arena archive (no readable {ARCHIVE_FILE})") from None
