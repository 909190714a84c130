"""Figures (seaborn style, matplotlib Agg): learning curves, aggregate metrics, performance profiles,
probability-of-improvement matrix. Each is a ``Figure`` saved as PNG and SVG and embedded in the HTML."""
from __future__ import annotations

import base64
import io
import math
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.artist import setp
from matplotlib.figure import Figure as MplFigure
from matplotlib.lines import Line2D

from analysis import stats
from analysis.load import RUN_KEYS, order_labels, split_label
from analysis.scores import LAST_EPISODES

DPI = 110
CURVE_POINTS = 100
LINESTYLES = ["-", "--", "-.", ":"]


@dataclass
class Figure:
    name: str            # file stem: <name>.png, <name>.svg
    title: str
    caption: str
    figure: object       # matplotlib Figure
    png: bytes = b""

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        with style():
            buf = io.BytesIO()
            self.figure.savefig(buf, format="png", dpi=DPI, bbox_inches="tight")
            self.png = buf.getvalue()
            _atomic(folder / f"{self.name}.png", self.png)
            buf = io.BytesIO()
            # no date and fixed element ids: the same figure gives the same bytes (committed reports diff cleanly)
            with matplotlib.rc_context({"svg.hashsalt": "pg-arena"}):
                self.figure.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
            _atomic(folder / f"{self.name}.svg", buf.getvalue())

    def data_uri(self) -> str:
        return "data:image/png;base64," + base64.b64encode(self.png).decode()


def _atomic(path: Path, data: bytes) -> None:
    from core.results import atomic_write_bytes
    atomic_write_bytes(path, data)


@contextmanager
def style():
    """seaborn's whitegrid look for the figures made inside, without touching the caller's global
    matplotlib settings (figures are built on matplotlib.figure.Figure: no pyplot, no backend)."""
    rc = {**sns.axes_style("whitegrid"), **sns.plotting_context("notebook", font_scale=0.9),
          "svg.fonttype": "none", "axes.titleweight": "bold",
          "svg.hashsalt": "pg-arena"}       # svg.hashsalt: the same figure gives the same SVG bytes
    with matplotlib.rc_context(rc):
        yield


def styled(func):
    """Run a figure function inside ``style()``."""
    import functools

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with style():
            return func(*args, **kwargs)
    return wrapper


def _figure(rows: int = 1, cols: int = 1, figsize=(6, 4), **kw):
    fig = MplFigure(figsize=figsize)
    return fig, fig.subplots(rows, cols, **kw)


def label_styles(labels: list[str]) -> dict[str, dict]:
    """One colour (and, past 10 labels, a line style) per label, the same in every figure."""
    labels = order_labels(labels)
    palette = sns.color_palette("tab10" if len(labels) <= 10 else "tab20", n_colors=max(len(labels), 1))
    return {lab: {"color": palette[i % len(palette)], "linestyle": LINESTYLES[(i // 20) % 4] if len(labels) > 20 else "-"}
            for i, lab in enumerate(labels)}


def _grid_shape(n: int, max_cols: int = 4) -> tuple[int, int]:
    cols = min(max_cols, max(1, n))
    return math.ceil(n / cols), cols


# ---------------------------------------------------------------------------------------
# learning curves (Figure 3 of the paper)

def _read_at(times: np.ndarray, values: np.ndarray, grid: np.ndarray, key: tuple) -> pd.DataFrame:
    """One run's step function (``values[i]`` from ``times[i]`` on) read at ``grid``: the last value
    at or before each point, NaN before the first. Returns RUN_KEYS (from ``key``) + [step, value]."""
    idx = np.searchsorted(times, grid, side="right") - 1
    part = pd.DataFrame({"step": grid, "value": np.where(idx >= 0, values[np.clip(idx, 0, None)], np.nan)})
    for k, v in zip(RUN_KEYS, key):
        part[k] = v
    return part


def _concat_runs(parts: list[pd.DataFrame]) -> pd.DataFrame:
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=RUN_KEYS + ["step", "value"])


def _running_mean(returns: pd.Series, window: int) -> np.ndarray:
    return pd.Series(returns.to_numpy()).rolling(window, min_periods=1).mean().to_numpy()


def run_curves(episodes: pd.DataFrame, steps: int, points: int = CURVE_POINTS, window: int = LAST_EPISODES) -> pd.DataFrame:
    """Per run, the running mean of the last ``window`` training episode returns, read at ``points``
    evenly spaced steps up to ``steps`` (NaN before the first finished episode).
    ``episodes``: the tidy rows of ``episode_return``. Returns RUN_KEYS + [step, value]."""
    grid = np.linspace(0, steps, points + 1)[1:]
    return _concat_runs([_read_at(g["step"].to_numpy(), _running_mean(g["value"], window), grid, key)
                         for key, g in episodes.groupby(RUN_KEYS, observed=True, sort=False)])


def wall_clock_curves(episodes: pd.DataFrame, walls: pd.DataFrame, points: int = CURVE_POINTS,
                      window: int = LAST_EPISODES) -> pd.DataFrame:
    """``run_curves`` against wall-clock seconds instead of steps, each run on its own grid: an
    episode's wall time is interpolated between the updates' ``(global_step, wall_seconds)``
    (``walls``: the tidy rows of metrics.csv's ``wall_seconds``), and the run is read at ``points``
    times up to its own end. A run's curve depends on that run alone, so archives made on different
    machines merge (``setting_wall_curves`` lines the seeds of a setting up for a figure).
    Returns RUN_KEYS + [step, value] with ``step`` in seconds."""
    clock = {key: (g["step"].to_numpy(dtype=float), g["value"].to_numpy(dtype=float))
             for key, g in walls.groupby(RUN_KEYS, observed=True, sort=False)}
    out = []
    for key, g in episodes.groupby(RUN_KEYS, observed=True, sort=False):
        if key not in clock:
            continue
        steps, seconds = clock[key]
        at = np.interp(g["step"].to_numpy(dtype=float), np.concatenate([[0.0], steps]), np.concatenate([[0.0], seconds]))
        out.append(_read_at(at, _running_mean(g["value"], window), np.linspace(0, seconds.max(), points + 1)[1:], key))
    return _concat_runs(out)


def setting_wall_curves(curves: pd.DataFrame, points: int = CURVE_POINTS) -> pd.DataFrame:
    """Per-run wall-clock curves (``wall_clock_curves``) on one grid per setting and environment,
    so that seeds can be averaged: ``points`` times up to the end of the setting's shortest seed,
    each run's value there the last value of its own curve at or before that time (NaN before its
    first point)."""
    out = []
    for _, setting in curves.groupby(["suite", "env", "label"], observed=True, sort=False):
        until = setting.groupby(RUN_KEYS, observed=True, sort=False)["step"].max().min()
        grid = np.linspace(0, until, points + 1)[1:]
        out += [_read_at(run["step"].to_numpy(dtype=float), run["value"].to_numpy(dtype=float), grid, key)
                for key, run in setting.groupby(RUN_KEYS, observed=True, sort=False)]
    return _concat_runs(out)


def learning_curves(curves: pd.DataFrame, envs: list[str], labels: list[str], styles: dict[str, dict],
                    name: str, title: str, caption: str, ylabel: str = "episode return",
                    xlabel: str = "environment steps") -> Figure:
    """One axis per environment; per label the mean over seeds and a 95% bootstrap band."""
    with style():
        return _learning_curves(curves, envs, labels, styles, name, title, caption, ylabel, xlabel)


def _learning_curves(curves, envs, labels, styles, name, title, caption, ylabel, xlabel="environment steps") -> Figure:
    rows, cols = _grid_shape(len(envs))
    fig, axes = _figure(rows, cols, figsize=(4.3 * cols, 3.3 * rows), squeeze=False)
    for ax in axes.flat[len(envs):]:
        ax.set_visible(False)
    for ax, env in zip(axes.flat, envs):
        mine = curves[curves["env"] == env]
        for label in labels:
            runs = mine[mine["label"] == label]
            if runs.empty:
                continue
            table = runs.pivot_table(index="seed", columns="step", values="value", aggfunc="first", dropna=False)
            mean, low, high = stats.bootstrap_mean_band(table.to_numpy())
            x = table.columns.to_numpy(dtype=float)
            st = styles[label]
            ax.plot(x, mean, label=label, color=st["color"], linestyle=st["linestyle"], linewidth=1.5,
                    marker="o" if len(x) == 1 else None)   # a single point (one update) shows too
            if len(table) > 1:
                ax.fill_between(x, low, high, color=st["color"], alpha=0.18, linewidth=0)
        ax.set_title(env, fontsize=10)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.ticklabel_format(axis="x", style="sci", scilimits=(0, 3))
    handles = [Line2D([], [], color=styles[lab]["color"], linestyle=styles[lab]["linestyle"], linewidth=2)
               for lab in labels]
    fig.suptitle(title, fontsize=12, fontweight="bold")
    fig.tight_layout()
    spare = list(axes.flat[len(envs):])
    if spare and len(labels) <= 12 * len(spare):     # the legend in the empty panel
        spare[0].set_visible(True)
        spare[0].axis("off")
        spare[0].legend(handles, labels, loc="center", frameon=False, fontsize=8.5,
                        ncol=1 if len(labels) <= 12 else 2)
    else:                                           # below the panels (savefig's tight bbox keeps it)
        fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=min(4, len(labels)),
                   frameon=False, fontsize=9)
    return Figure(name, title, caption, fig)


# ---------------------------------------------------------------------------------------
# over-optimisation (LLM preference tasks)

@styled
def gold_vs_proxy(evals: pd.DataFrame, env: str, labels: list[str], styles: dict[str, dict], name: str,
                  title: str, caption: str) -> Figure:
    """Gold and proxy (reward-model) score against KL(pi || pi_ref), the axes of Gao et al. 2023's
    over-optimisation curves. ``evals``: one row per (label, seed, step) with columns ``kl``,
    ``gold`` and ``proxy``. Faint dots: single runs; lines: the mean over seeds at each evaluation,
    joined in training order."""
    fig, axes = _figure(1, 2, figsize=(10, 3.8), sharex=True, squeeze=False)
    for ax, column, ylabel in zip(axes[0], ("gold", "proxy"), ("gold score (held out)", "reward-model score")):
        for label in labels:
            runs = evals[evals["label"] == label]
            if runs.empty:
                continue
            st = styles[label]
            ax.scatter(runs["kl"], runs[column], s=8, color=st["color"], alpha=0.25, linewidth=0)
            mean = runs.groupby("step")[["kl", column]].mean().sort_index()
            ax.plot(mean["kl"], mean[column], marker="o", markersize=3, label=label, color=st["color"],
                    linestyle=st["linestyle"], linewidth=1.5)
        ax.set_xlabel("KL(π ‖ π_ref) per completion (nats)")
        ax.set_ylabel(ylabel)
        ax.set_title(f"{env}: {column}", fontsize=10)
    axes[0][1].legend(frameon=False, fontsize=8.5, loc="best")
    fig.suptitle(title, fontsize=12, fontweight="bold")
    fig.tight_layout()
    return Figure(name, title, caption, fig)


# ---------------------------------------------------------------------------------------
# rliable figures

@styled
def aggregates_figure(agg: pd.DataFrame, styles: dict[str, dict], name: str, title: str, caption: str,
                      xlabel: str = "normalised score") -> Figure:
    """Point estimate and 95% CI of median, IQM, mean and optimality gap, one panel each (rliable's
    ``plot_interval_estimates`` layout)."""
    labels = order_labels(agg["label"].unique())
    fig, axes = _figure(1, 4, figsize=(13, 0.42 * len(labels) + 1.4), sharey=True, squeeze=False)
    for ax, metric in zip(axes[0], stats.AGGREGATES):
        mine = agg[agg["metric"] == metric].set_index("label")
        for y, label in enumerate(labels):
            if label not in mine.index:
                continue
            p, lo, hi = mine.loc[label, ["point", "low", "high"]]
            c = styles[label]["color"]
            ax.barh(y, hi - lo, left=lo, height=0.6, color=c, alpha=0.75)
            ax.plot([p, p], [y - 0.3, y + 0.3], color="black", linewidth=1.5)
        ax.set_title(stats.AGGREGATE_NAMES[metric], fontsize=10)
        ax.set_yticks(range(len(labels)))
        ax.set_yticklabels(labels)
        ax.set_xlabel(xlabel)
    axes[0, 0].set_ylim(len(labels) - 0.5, -0.5)     # first label on top (the axes share y)
    fig.suptitle(title, fontsize=12, fontweight="bold")
    fig.tight_layout()
    return Figure(name, title, caption, fig)


@styled
def profiles_figure(profiles: dict[str, tuple], taus: np.ndarray, styles: dict[str, dict], name: str, title: str,
                    caption: str, xlabel: str = "normalised score (τ)") -> Figure:
    fig, ax = _figure(1, 1, figsize=(7.5, 4.6))
    for label, (profile, low, high) in profiles.items():
        st = styles[label]
        ax.plot(taus, profile, color=st["color"], linestyle=st["linestyle"], linewidth=1.6, label=label)
        ax.fill_between(taus, low, high, color=st["color"], alpha=0.15, linewidth=0)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("fraction of runs with score > τ")
    ax.set_ylim(-0.02, 1.02)
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False, fontsize=8)
    ax.set_title(title, fontsize=12, fontweight="bold")
    fig.tight_layout()
    return Figure(name, title, caption, fig)


@styled
def poi_figure(poi: pd.DataFrame, name: str, title: str, caption: str) -> Figure:
    labels = list(dict.fromkeys(poi["x"]))
    matrix = poi.pivot(index="x", columns="y", values="point").reindex(index=labels, columns=labels)
    n = len(labels)
    size = max(4.5, 0.55 * n + 2.5)
    fig, ax = _figure(1, 1, figsize=(size + 1.2, size))
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PendingDeprecationWarning)    # seaborn 0.13 on matplotlib 3.11
        sns.heatmap(matrix, vmin=0, vmax=1, center=0.5, cmap="RdBu_r", annot=n <= 14, fmt=".2f", square=True,
                    cbar_kws={"label": "P(row > column)", "shrink": 0.7}, ax=ax, annot_kws={"fontsize": 7})
    ax.set_xlabel("column (Y)")
    ax.set_ylabel("row (X)")
    ax.set_title(title, fontsize=12, fontweight="bold")
    setp(ax.get_xticklabels(), rotation=45, ha="right")
    fig.tight_layout()
    return Figure(name, title, caption, fig)


def split_for_curves(labels: list[str], limit: int = 10) -> list[tuple[str, list[str]]]:
    """All labels on one figure; past ``limit``, the plain algorithms on one and the variants (with
    their base algorithm for reference) on another."""
    if len(labels) <= limit:
        return [("", labels)]
    plain = [lab for lab in labels if not split_label(lab)[1]]
    variants = [lab for lab in labels if split_label(lab)[1]]
    bases = [lab for lab in plain if any(split_label(v)[0] == lab for v in variants)]
    return [("algorithms", plain), ("variants", order_labels(bases + variants))]
