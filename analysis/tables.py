"""The paper's tables, regenerated with 95% stratified-bootstrap CIs (rliable's resampling, fixed seed;
Table 1's expanded and t-adjusted for few seeds).

Each function returns a numeric ``pandas.DataFrame`` (for tests and further analysis); ``Table``
turns one into text for the HTML and Markdown reports.
"""
from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from typing import Iterable

import numpy as np
import pandas as pd

from analysis import stats
from core.results import describe_hardware
from analysis.load import Results, order_labels, split_label, variant_overrides
from analysis.reference import TABLE1, TABLE1_KEYS, TABLE2, TABLE2_METRICS, Table1Row
from analysis.scores import score_dict, score_matrix, win_counts


# ---------------------------------------------------------------------------------------
# a presentable table

@dataclass
class Table:
    title: str
    columns: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)
    anchor: str = ""
    numeric: set[int] = field(default_factory=set)      # right-aligned columns
    row_classes: list[str] = field(default_factory=list)

    def html(self) -> str:
        head = "".join(f"<th{' class=num' if i in self.numeric else ''}>{html.escape(c)}</th>"
                       for i, c in enumerate(self.columns))
        body = []
        for k, row in enumerate(self.rows):
            cls = self.row_classes[k] if k < len(self.row_classes) and self.row_classes[k] else ""
            cells = "".join(f"<td{' class=num' if i in self.numeric else ''}>{html.escape(str(c))}</td>"
                            for i, c in enumerate(row))
            body.append(f"<tr{f' class={cls}' if cls else ''}>{cells}</tr>")
        notes = "".join(f"<p class=note>{html.escape(n)}</p>" for n in self.notes)
        return (f"<table id=\"{html.escape(self.anchor)}\" data-rows=\"{len(self.rows)}\"><caption>"
                f"{html.escape(self.title)}</caption><thead><tr>{head}</tr></thead><tbody>{''.join(body)}"
                f"</tbody></table>{notes}")

    def markdown(self) -> str:
        def cell(c):
            return str(c).replace("|", "\\|").replace("\n", " ")
        lines = [f"**{self.title}**", "", "| " + " | ".join(cell(c) for c in self.columns) + " |",
                 "|" + "|".join("---:" if i in self.numeric else "---" for i in range(len(self.columns))) + "|"]
        lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in self.rows]
        lines += [""] + [f"_{n}_" for n in self.notes]
        return "\n".join(lines).rstrip() + "\n"


def fmt(x, digits: int = 2) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "–"
    return f"{x:.{digits}f}"


def fmt_ci(point, low, high, digits: int = 2, sign: bool = False) -> str:
    if point is None or not math.isfinite(point):
        return "–"
    p = f"{point:+.{digits}f}" if sign else f"{point:.{digits}f}"
    if low is None or not math.isfinite(low) or (low == high == point):
        return p
    if sign:
        return f"{p} [{low:+.{digits}f}, {high:+.{digits}f}]"
    return f"{p} [{low:.{digits}f}, {high:.{digits}f}]"


def digits_for(values: Iterable[float]) -> int:
    """Decimals that show returns sensibly (0.12, 12.3, 1234)."""
    vals = [abs(v) for v in values if v is not None and math.isfinite(v)]
    if not vals:
        return 2
    m = max(vals)
    return 0 if m >= 1000 else 1 if m >= 10 else 2


# ---------------------------------------------------------------------------------------
# per-environment scores

def env_score_table(scores: pd.DataFrame, labels: list[str] | None = None, value: str = "score",
                    reps: int = stats.DEFAULT_REPS) -> pd.DataFrame:
    """Mean ``value`` over seeds per (label, env), with its 95% CI (rliable, per task):
    columns label, env, mean, low, high, n."""
    labels = order_labels(scores["label"].unique()) if labels is None else labels
    rows = []
    for label in labels:
        mine = scores[(scores["label"] == label) & scores[value].notna()]
        # one bootstrap per group of environments sharing the same seeds (a rectangular matrix)
        groups: dict[tuple, list[str]] = {}
        for env, g in mine.groupby("env"):
            groups.setdefault(tuple(sorted(g["seed"])), []).append(env)
        for seeds, envs in groups.items():
            matrix = np.array([[mine[(mine["env"] == e) & (mine["seed"] == s)][value].iloc[0] for e in envs]
                               for s in seeds], dtype=float)
            point, ci = stats.task_means(matrix, reps)
            for i, env in enumerate(envs):
                rows.append({"label": label, "env": env, "mean": point[i], "low": ci[0, i], "high": ci[1, i],
                             "n": len(seeds)})
    return pd.DataFrame(rows, columns=["label", "env", "mean", "low", "high", "n"])


def env_score_presentable(table: pd.DataFrame, title: str, constants: pd.DataFrame | None = None,
                          anchor: str = "scores", unused: Iterable[str] = ()) -> Table:
    """Settings x environments of ``env_score_table``'s frame; with ``constants`` (the normalisation's:
    env, random, best, best_label), two reference rows, the best marked "not used" on the environments
    in ``unused`` (those without a normalised score: an untrained anchor)."""
    unused = set(unused)
    envs = sorted(table["env"].unique())
    labels = order_labels(table["label"].unique())
    cells = {(r.label, r.env): r for r in table.itertuples()}
    digits = {env: digits_for(table.loc[table["env"] == env, "mean"]) for env in envs}
    same_n = table["n"].nunique() == 1
    rows = []
    for label in labels:
        row = [label]
        for env in envs:
            r = cells.get((label, env))
            if r is None:
                row.append("–")
                continue
            row.append(fmt_ci(r.mean, r.low, r.high, digits[env]) + ("" if same_n else f" (n={r.n})"))
        rows.append(row)
    classes = [""] * len(rows)
    if constants is not None and not constants.empty:
        c = constants.set_index("env")
        rows.append(["random policy (= 0)"] + [fmt(c.loc[e, "random"], digits[e]) if e in c.index else "–"
                                               for e in envs])
        rows.append(["best setting (= 1)"] + [f"{fmt(c.loc[e, 'best'], digits[e])} ({c.loc[e, 'best_label']}"
                                              + ("; untrained: not used" if e in unused else "") + ")"
                                              if e in c.index else "–" for e in envs])
        classes += ["ref", "ref"]
    if same_n and len(table):
        title += f"; n = {int(table['n'].iloc[0])} seed(s) each"
    else:
        title += " (n seeds)"
    return Table(title, ["setting"] + envs, rows, anchor=anchor, numeric=set(range(1, len(envs) + 1)),
                 row_classes=classes)


# ---------------------------------------------------------------------------------------
# Table 1

def _resolved(results: Results, suite: str, label: str) -> dict | None:
    runs = results.analysed[(results.analysed["suite"] == suite) & (results.analysed["label"] == label)]
    for config in runs["config"]:
        if isinstance(config, dict) and isinstance(config.get("algo_cfg"), dict):
            return config["algo_cfg"]
    return None


def table1_label(results: Results, suite: str, row: Table1Row, labels: list[str], counts: dict[str, int]) -> str | None:
    """The label whose runs are this Table 1 setting: algorithm ``row.algo``, a variant made only of
    Table 1 keys, and resolved ``algo_cfg`` values equal to the row's. With several (``ppo_clip`` and
    ``ppo_clip+clip_eps=0.2``), the one with the most runs, then the explicit variant."""
    matches = []
    for label in labels:
        algo, variant = split_label(label)
        if algo != row.algo:
            continue
        try:
            keys = set(variant_overrides(variant))
        except Exception:
            continue
        if not keys <= TABLE1_KEYS:
            continue
        cfg = _resolved(results, suite, label)
        if cfg is None:
            continue
        if all(k in cfg and _same(cfg[k], v) for k, v in row.params):
            matches.append(label)
    if not matches:
        return None
    return max(matches, key=lambda lab: (counts.get(lab, 0), lab == row.label, lab != row.algo))


def _same(a, b) -> bool:
    if isinstance(b, bool) or isinstance(a, bool):
        return a is b or a == b and type(a) is type(b)
    try:
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
    except (TypeError, ValueError):
        return a == b


def table1(results: Results, suite: str, normalised: pd.DataFrame, envs: list[str],
           reps: int = stats.DEFAULT_REPS) -> pd.DataFrame:
    """The paper's Table 1 rows, then every other label (the algorithms, other variants).

    ``normalised``: run scores with a ``normalised`` column; ``envs``: the environments it covers.
    Columns: section, setting, label, mean, low, high, runs, envs, paper. ``mean`` is the average
    normalised score over the runs x environments matrix (seeds present on every environment), with
    its 95% CI (``stats.small_sample_interval``: the expanded stratified bootstrap at the t-adjusted
    level, as Table 1's verdicts take it); a label lacking an environment gets NaN (``envs`` says how many
    it has)."""
    labels = order_labels(normalised["label"].unique())
    counts = normalised.groupby("label").size().to_dict()
    rows, used = [], set()
    for row in TABLE1:
        label = table1_label(results, suite, row, labels, counts)
        rows.append({"section": "Table 1", "setting": row.name, "label": label, "paper": row.paper,
                     "suggested": row.label})
        if label:
            used.add(label)
    for label in labels:
        if label not in used:
            algo, variant = split_label(label)
            rows.append({"section": "algorithms" if not variant else "other variants", "setting": label,
                         "label": label, "paper": np.nan, "suggested": None})
    out = []
    for r in rows:
        label = r["label"]
        mean = low = high = np.nan
        runs = n_envs = 0
        if label:
            mine = normalised[(normalised["label"] == label) & normalised["normalised"].notna()]
            n_envs = mine["env"].nunique()
            matrix, _ = score_matrix(normalised, label, envs, "normalised")
            if matrix is not None:
                # the interval and the draws of paper.table1_beside_paper: one CI per setting in the report
                name = r["setting"] if r["section"] == "Table 1" else label
                mean, low, high = stats.small_sample_interval(matrix, reps,
                                                              stats.label_rng(stats.BOOTSTRAP_SEED, "table1", name))
                runs = matrix.size
        out.append({**r, "mean": mean, "low": low, "high": high, "runs": runs, "envs": n_envs})
    return pd.DataFrame(out, columns=["section", "setting", "label", "mean", "low", "high", "runs", "envs",
                                      "paper", "suggested"])


def table1_presentable(t1: pd.DataFrame, total_envs: int, anchor: str = "table1", paper: bool = True,
                       notes: Iterable[str] = ()) -> Table:
    """``table1``'s frame as a table. ``total_envs``: the environments with a normalised score (0: none,
    and no setting has a score); ``paper``: with the paper's column (only where the runs' budget is the
    paper's); ``notes``: under the table (why environments have no normalised score)."""
    rows, classes = [], []
    for r in t1.itertuples():
        run = isinstance(r.label, str)
        if not run:
            score, label = "not run (grid=table1 runs it)", f"({r.suggested})"
        elif total_envs == 0:
            score, label = "no normalised score (below)", r.label
        elif not math.isfinite(r.mean):
            score, label = f"– (runs on {r.envs} of {total_envs} envs)", r.label
        else:
            score, label = fmt_ci(r.mean, r.low, r.high), r.label
        name = r.setting if r.section == "Table 1" else ("algorithm" if r.section == "algorithms" else "variant")
        rows.append([name, label, score, str(r.runs) if r.runs else "–"] + ([fmt(r.paper)] if paper else []))
        classes.append("t1" if r.section == "Table 1" else "")
    return Table("Table 1 — average normalised score (random policy = 0, best setting = 1), 95% CI",
                 ["setting", "label", "normalised score [95% CI]", "runs"] + (["paper"] if paper else []), rows,
                 notes=list(notes), anchor=anchor, numeric={2, 3, 4} if paper else {2, 3}, row_classes=classes)


# ---------------------------------------------------------------------------------------
# rliable aggregates and probability of improvement

def aggregate_table(sd: dict[str, np.ndarray], reps: int = stats.DEFAULT_REPS) -> pd.DataFrame:
    """Median, IQM, mean, optimality gap (rliable) with 95% CIs: label, metric, point, low, high."""
    est = stats.aggregate_estimates(sd, reps)
    return pd.DataFrame([{"label": lab, "metric": m, "point": v[0], "low": v[1], "high": v[2]}
                         for lab, d in est.items() for m, v in d.items()],
                        columns=["label", "metric", "point", "low", "high"])


def aggregate_presentable(agg: pd.DataFrame, title: str, anchor: str = "aggregates") -> Table:
    rows = []
    for label in order_labels(agg["label"].unique()) if not agg.empty else []:
        mine = agg[agg["label"] == label].set_index("metric")
        rows.append([label] + [fmt_ci(*mine.loc[m, ["point", "low", "high"]]) for m in stats.AGGREGATES])
    return Table(title, ["setting"] + [stats.AGGREGATE_NAMES[m] for m in stats.AGGREGATES], rows, anchor=anchor,
                 numeric={1, 2, 3, 4})


def poi_table(sd: dict[str, np.ndarray], reps: int = stats.DEFAULT_REPS) -> pd.DataFrame:
    """P(row > column) for every ordered pair: x, y, point, low, high."""
    labels, p, lo, hi = stats.poi_matrix(sd, reps)
    return pd.DataFrame([{"x": labels[i], "y": labels[j], "point": p[i, j], "low": lo[i, j], "high": hi[i, j]}
                         for i in range(len(labels)) for j in range(len(labels))],
                        columns=["x", "y", "point", "low", "high"])


def poi_presentable(poi: pd.DataFrame, anchor: str = "poi") -> Table:
    labels = list(dict.fromkeys(poi["x"]))
    cell = {(r.x, r.y): r for r in poi.itertuples()}
    rows = []
    for x in labels:
        row = [x]
        for y in labels:
            if x == y:
                row.append("–")
                continue
            r = cell[(x, y)]
            mark = " ▲" if r.low > 0.5 else " ▼" if r.high < 0.5 else ""
            row.append(f"{r.point:.2f} [{r.low:.2f}, {r.high:.2f}]{mark}")
        rows.append(row)
    short = [f"({i + 1})" for i in range(len(labels))]
    rows = [[f"{short[i]} {r[0]}"] + r[1:] for i, r in enumerate(rows)]
    return Table("Probability of improvement P(row > column) [95% CI]; ▲ CI above 0.5, ▼ below",
                 ["row \\ column"] + short, rows, anchor=anchor, numeric=set(range(1, len(labels) + 1)))


# ---------------------------------------------------------------------------------------
# Table 2 (Atari)

def table2(scores_all: pd.DataFrame, scores_last: pd.DataFrame, labels: list[str] | None = None) -> pd.DataFrame:
    """Games won per label under the paper's two metrics (mean over seeds of the mean episode reward
    over all of training / over the last 100 episodes), with the paper's counts beside.
    Rows: metric (all, last100); columns: the labels, Tie, games."""
    labels = order_labels(scores_last["label"].unique()) if labels is None else labels
    rows = []
    for metric, scores in (("all", scores_all), ("last100", scores_last)):
        by = "game" if "game" in scores.columns else "env"
        counts = win_counts(scores, by=by, labels=labels)
        rows.append({"metric": metric, "description": TABLE2_METRICS[metric], **counts.to_dict(),
                     "games": int(counts.sum()), "paper": TABLE2[metric]})
    return pd.DataFrame(rows)


def table2_presentable(t2: pd.DataFrame, labels: list[str], anchor: str = "table2") -> Table:
    rows = []
    for r in t2.to_dict("records"):
        paper = r["paper"]
        rows.append([r["description"]] + [str(r[lab]) for lab in labels] + [str(r["Tie"]), str(r["games"]),
                     ", ".join(f"{k} {v}" for k, v in paper.items())])
    return Table("Table 2 — games won (metric averaged over seeds)", ["metric", *labels, "Tie", "games",
                 "paper (A2C, ACER, PPO, Tie)"], rows, anchor=anchor, numeric=set(range(1, len(labels) + 3)))


# ---------------------------------------------------------------------------------------
# LLM table

def llm_table(results: Results, suite: str, reps: int = stats.DEFAULT_REPS) -> pd.DataFrame:
    """Per (label, task): the held-out score (``eval_return_mean``: success rate or gold score) at
    the first and the last evaluation, the KL to the reference policy at the last evaluation
    (``eval_kl_ref``; else the training ``kl_ref`` / ``kl`` over the last 10% of updates) and the
    generation throughput (``gen_tokens_per_s`` / ``tokens_per_second`` / ``sps`` over the last 10%
    of updates), each the mean over seeds with a 95% CI (rliable, per task)."""
    frame = results.frame[results.frame["suite"] == suite]
    present = set(frame["metric"].unique())

    def per_run(metric, how):
        rows = frame[frame["metric"] == metric]
        g = rows.groupby(["label", "env", "seed"], observed=True)["value"]
        if how == "first":
            return g.first()
        if how == "last":
            return g.last()
        return g.apply(lambda v: float(np.mean(v.to_numpy()[-max(1, len(v) // 10):])))

    def first_present(*options):
        return next(((m, how) for m, how in options if m in present), None)

    sources = {"start": first_present(("eval_return_mean", "first")), "end": first_present(("eval_return_mean", "last")),
               "kl": first_present(("eval_kl_ref", "last"), ("kl_ref", "tail"), ("kl", "tail")),
               "throughput": first_present(("gen_tokens_per_s", "tail"), ("tokens_per_second", "tail"), ("sps", "tail"))}
    out = []
    for name, source in sources.items():
        if source is None:
            continue
        df = per_run(*source).reset_index().rename(columns={"value": "score"})
        df = df.astype({"label": str, "env": str})
        t = env_score_table(df, reps=reps)
        t["quantity"] = name
        t["source"] = source[0]
        out.append(t)
    if not out:
        return pd.DataFrame(columns=["label", "env", "quantity", "source", "mean", "low", "high", "n"])
    return pd.concat(out, ignore_index=True)[["label", "env", "quantity", "source", "mean", "low", "high", "n"]]


def llm_presentable(t: pd.DataFrame, anchor: str = "llm") -> Table:
    rows = []
    cell = {(r.label, r.env, r.quantity): r for r in t.itertuples()}
    for (label, env), _ in t.groupby(["label", "env"], sort=False):
        def show(q, d=2):
            r = cell.get((label, env, q))
            return fmt_ci(r.mean, r.low, r.high, d) if r is not None else "–"
        start, end = show("start"), show("end")
        n = max(r.n for r in t[(t["label"] == label) & (t["env"] == env)].itertuples())
        rows.append([label, env, f"{start} → {end}", show("kl", 4), show("throughput", 0), str(n)])
    used = dict(zip(t["quantity"], t["source"]))
    notes = [f"KL: {used['kl']}" if "kl" in used else "KL: not logged",
             f"throughput: {used['throughput']}" if "throughput" in used else "throughput: not logged"]
    return Table("LLM tasks — held-out score (first → last evaluation), KL to the reference, throughput; "
                 "mean [95% CI] over seeds", ["algorithm", "task", "score: start → end", "KL", "tokens/s", "seeds"],
                 rows, anchor=anchor, numeric={3, 4, 5}, notes=["; ".join(notes)])


# ---------------------------------------------------------------------------------------
# runtime (CleanRL's benchmark pages have one): how long each setting took, and on what

def runtime_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per setting and environment: the runs, their mean wall time and steps per second (a run's
    steps over its ``run.json`` wall seconds; runs trained as one stack share their process's time)
    and the machines they ran on. ``runs``: ``Results.analysed`` rows."""
    rows = []
    for (label, env), g in runs.groupby(["label", "env"], sort=False):
        wall = pd.to_numeric(g["wall_seconds"], errors="coerce")
        steps = pd.to_numeric(g["steps"], errors="coerce")
        sps = (steps / wall).replace([np.inf, -np.inf], np.nan)
        machines = sorted({describe_hardware(h) for h in g.get("hardware", pd.Series([None] * len(g)))})
        rows.append({"label": label, "env": env, "runs": len(g), "wall_minutes": wall.mean() / 60,
                     "wall_minutes_sd": wall.std() / 60 if len(g) > 1 else np.nan, "steps_per_s": sps.mean(),
                     "hardware": "; ".join(machines)})
    return pd.DataFrame(rows, columns=["label", "env", "runs", "wall_minutes", "wall_minutes_sd", "steps_per_s",
                                       "hardware"])


def runtime_presentable(rt: pd.DataFrame, labels: list[str], anchor: str = "runtime") -> Table:
    order = {label: i for i, label in enumerate(labels)}
    rt = rt.assign(_o=rt["label"].map(order)).sort_values(["_o", "env"], kind="stable")
    rows = [[r.label, r.env, str(r.runs),
             fmt(r.wall_minutes, 1) + ("" if not np.isfinite(r.wall_minutes_sd) else f" ± {fmt(r.wall_minutes_sd, 1)}"),
             f"{r.steps_per_s:,.0f}" if np.isfinite(r.steps_per_s) else "–", r.hardware] for r in rt.itertuples()]
    machines = sorted({m for h in rt["hardware"] for m in h.split("; ")})
    notes = ["Wall time from each run's run.json (mean ± sd over seeds); steps/s = a run's steps / its wall time. "
             "Runs trained as one stack (the batched engine) each report the stack's wall time."]
    if len(machines) > 1:
        notes.append(f"These runs ran on {len(machines)} different machines ({'; '.join(machines)}): "
                     f"their runtimes are not comparable with each other.")
    return Table("Runtime per setting and environment", ["setting", "environment", "runs", "wall minutes",
                                                          "steps/s per run", "hardware"], rows, notes, anchor,
                 numeric={2, 3, 4})
