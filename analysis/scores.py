"""Scores as the PPO paper defines them, and their normalisations.

- MuJoCo (Table 1): score of a run = mean return of its last 100 training episodes; per environment
  shifted and scaled so that the random policy gives 0 and the best setting 1. The random policy's
  score is measured here (100 episodes of uniform random actions) and cached in
  ``<results_dir>/<suite>/random_scores.json``.
- Atari: the last evaluation's whole games (to 27,000 steps, raw score; the same protocol for
  every algorithm, group methods included), human-normalised (score - random) / (human - random)
  from the published per-game table. Table 2's training-episode metrics (mean episode reward over
  all of training and over the last 100 episodes; games won under each) for the settings whose
  training episodes are whole games.
- LLM: the held-out success rate / gold score of the last evaluation (``evals.csv``).
"""
from __future__ import annotations

import json
import math
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterable

import numpy as np
import pandas as pd

from analysis.load import RUN_KEYS, AnalysisError, Results, order_labels
from analysis.reference import atari49, atari_game

LAST_EPISODES = 100
RANDOM_EPISODES = 100
RANDOM_SEED = 0
RANDOM_CACHE = "random_scores.json"

# How each suite scores a run: which score, its name in tables, and which normalisation. One
# protocol per suite, the same for every algorithm on it: the sweep's end table, the report and
# ``compare`` all read it from here. Unknown suites get the MuJoCo score without normalisation.
SUITE_SCORING = {
    # horizon and group algorithms alike play whole episodes to the 1000-step time limit
    "mujoco": {"score": "last100", "normalise": "random-best",
               "name": "mean return of the last 100 training episodes"},
    # Evaluation games, not training episodes: the group algorithms (grpo, rloo, dapo) train on games
    # cut at suite.group_max_steps (4,500 steps, for a batch's memory), the others on games to 27,000;
    # the last 100 training episodes would score the cut, not the play. Every algorithm's evaluation
    # plays whole games to suite.max_episode_steps (27,000 steps = 108k frames) with raw scores.
    "atari": {"score": "final_eval", "normalise": "human",
              "name": "mean raw score of the last evaluation's whole games (to 27,000 steps; the same for "
                      "every algorithm)"},
    # held-out prompts scored by the task: exact-match success (task=sort, add), or the hidden gold score,
    # not the reward model the policy was trained on (task=keywords)
    "llm_toy": {"score": "final_eval", "normalise": None,
                "name": "held-out gold score of the last evaluation (task=sort, add: exact-match success; "
                        "task=keywords: gold, not the reward model's proxy)"},
    "llm": {"score": "final_eval", "normalise": None, "name": "held-out gold score of the last evaluation"},
}
SCORE_NAMES = {
    "last100": "mean return of the last 100 training episodes",
    "all": "mean return over all training episodes",
    "final_eval": "held-out score of the last evaluation",
}


def scoring(suite: str) -> dict:
    """``{"score": kind, "normalise": ..., "name": what the score is, in words}`` of ``suite``."""
    return SUITE_SCORING.get(suite, {"score": "last100", "normalise": None, "name": SCORE_NAMES["last100"]})


def score_sources(kind: str) -> tuple[str, ...]:
    """The CSV files a score of ``kind`` is computed from (what ``load_results`` must read for
    ``run_scores``): training episodes for ``last100`` and ``all``, evaluations for ``final_eval``."""
    if kind in ("last100", "all"):
        return ("episodes.csv",)
    if kind == "final_eval":
        return ("evals.csv",)
    raise ValueError(f"unknown score kind {kind!r}; valid: last100, all, final_eval")


def run_scores(results: Results, kind: str = "last100", suite: str | None = None) -> pd.DataFrame:
    """One row per analysed run: ``suite, env, algo, variant, label, seed, score, episodes``.

    ``kind``: ``last100`` (mean of the last 100 training episode returns; all of them if fewer),
    ``all`` (mean over every training episode), ``final_eval`` (last ``eval_return_mean``).
    Runs without a single episode / evaluation get no row (and are named in ``results.warnings``).
    Summarised results (``analysis.archive``) return the scores they hold."""
    if kind in results.scores:
        out = results.scores[kind]
        return (out if suite is None else out[out["suite"] == suite]).reset_index(drop=True)
    metric = "eval_return_mean" if kind == "final_eval" else "episode_return"
    rows = results.metric(metric)
    if suite is not None:
        rows = rows[rows["suite"] == suite]
    keys = RUN_KEYS
    grouped = rows.groupby(keys, observed=True, sort=False)["value"]
    if kind == "last100":
        score = grouped.apply(lambda v: float(np.mean(v.to_numpy()[-LAST_EPISODES:])))
    elif kind == "all":
        score = grouped.mean()
    elif kind == "final_eval":
        score = grouped.last()
    else:
        raise ValueError(f"unknown score kind {kind!r}; valid: last100, all, final_eval")
    out = pd.DataFrame({"score": score, "episodes": grouped.size()}).reset_index()
    for key in keys[:-1]:
        out[key] = out[key].astype(str)
    out["seed"] = out["seed"].astype(int)
    analysed = results.analysed if suite is None else results.analysed[results.analysed["suite"] == suite]
    scored = set(zip(out["label"], out["env"], out["seed"]))
    empty = [f"{r.label} on {r.env} seed {r.seed}" for r in analysed.itertuples()
             if (r.label, r.env, int(r.seed)) not in scored]
    if empty:
        what = "evaluation" if kind == "final_eval" else "finished training episode"
        used = f"no {SCORE_NAMES[kind]}" if suite is not None and scoring(suite)["score"] != kind else "no score"
        note = (f"{len(empty)} done run(s) have no {what} and {used}: "
                f"{'; '.join(empty[:5])}{' ...' if len(empty) > 5 else ''}")
        if note not in results.warnings:
            results.warnings.append(note)
    if kind == "last100":
        short = out[out["episodes"] < LAST_EPISODES]
        if len(short):
            note = (f"{len(short)} run(s) finished fewer than {LAST_EPISODES} training episodes (fewest: "
                    f"{int(short['episodes'].min())}); their score is the mean of all their episodes")
            if note not in results.warnings:
                results.warnings.append(note)
    return out.sort_values(["env", "label", "seed"], kind="stable").reset_index(drop=True)


# ---------------------------------------------------------------------------------------
# the random policy (MuJoCo normalisation)

def measure_random_score(env_id: str, suite: str = "mujoco", episodes: int = RANDOM_EPISODES,
                         seed: int = RANDOM_SEED) -> dict:
    """Mean return of ``episodes`` episodes of uniform random actions (the suite's own environment)."""
    try:
        import suites
        suite_obj = suites.get(suite)
        suite_obj.validate_env(env_id)
        env = suite_obj.make_env(env_id, suite_obj.Config())
    except Exception as exc:
        raise AnalysisError(f"cannot measure the random policy on {env_id}: {exc}") from None
    returns = []
    try:
        env.action_space.seed(seed)
        for episode in range(episodes):
            env.reset(seed=seed + episode)
            total, done = 0.0, False
            while not done:
                _, reward, terminated, truncated, _ = env.step(env.action_space.sample())
                total += float(reward)
                done = terminated or truncated
            returns.append(total)
    finally:
        env.close()
    import gymnasium
    return {"score": float(np.mean(returns)), "std": float(np.std(returns)), "episodes": episodes, "seed": seed,
            "policy": "uniform random actions", "gymnasium": gymnasium.__version__,
            "measured": datetime.now(timezone.utc).isoformat(timespec="seconds")}


def random_scores(results_dir: str | Path, suite: str, envs: Iterable[str],
                  measure: Callable[[str], dict] | None = None) -> tuple[dict[str, float], list[str]]:
    """The random policy's score per environment, from ``<results_dir>/<suite>/random_scores.json``;
    environments not in it are measured (``measure(env_id)``, default ``measure_random_score``) and
    added. Returns (scores, problems): an environment that cannot be measured is left out and named."""
    from core.results import atomic_write_text
    path = Path(results_dir) / suite / RANDOM_CACHE
    cache: dict = {}
    if path.exists():
        try:
            cache = json.loads(path.read_text())
            if not isinstance(cache, dict):
                raise ValueError("not an object")
        except (OSError, ValueError) as exc:
            raise AnalysisError(f"corrupt random-policy cache {path}: {exc} (delete it to measure again)") from None
    measure = measure or (lambda env_id: measure_random_score(env_id, suite))
    out, problems, changed = {}, [], False
    for env in envs:
        entry = cache.get(env)
        if not (isinstance(entry, dict) and isinstance(entry.get("score"), (int, float))):
            try:
                entry = measure(env)
            except AnalysisError as exc:
                problems.append(str(exc))
                continue
            cache[env] = entry
            changed = True
        out[env] = float(entry["score"])
    if changed:
        try:
            atomic_write_text(path, json.dumps(cache, indent=2, sort_keys=True))
        except OSError as exc:
            problems.append(f"could not cache random-policy scores in {path}: {exc}")
    return out, problems


def normalise_random_best(scores: pd.DataFrame, random: dict[str, float],
                          labels: Iterable[str] | None = None) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """The paper's Table 1 normalisation, per environment: (score - random) / (best - random), where
    ``best`` is the highest mean score (over seeds) among ``labels`` (default: all labels present).

    Returns (scores with a ``normalised`` column, constants [env, random, best, best_label],
    problems). Environments without a random score, or where no setting beats the random policy,
    get NaN and are named in problems."""
    out = scores.copy()
    out["normalised"] = np.nan
    pool = out if labels is None else out[out["label"].isin(list(labels))]
    means = pool.groupby(["env", "label"])["score"].mean()
    constants, problems = [], []
    for env in sorted(out["env"].unique()):
        if env not in means.index.get_level_values(0):
            continue
        env_means = means.loc[env]
        best_label = str(env_means.idxmax())
        best = float(env_means.max())
        rnd = random.get(env)
        constants.append({"env": env, "random": rnd if rnd is not None else np.nan, "best": best,
                          "best_label": best_label})
        if rnd is None:
            problems.append(f"{env}: no random-policy score, left out of normalised scores")
            continue
        if not best > rnd:
            problems.append(f"{env}: no setting beats the random policy (best {best:.4g} by {best_label}, "
                            f"random {rnd:.4g}); left out of normalised scores")
            continue
        mask = out["env"] == env
        out.loc[mask, "normalised"] = (out.loc[mask, "score"] - rnd) / (best - rnd)
    return out, pd.DataFrame(constants, columns=["env", "random", "best", "best_label"]), problems


# ---------------------------------------------------------------------------------------
# Atari

def human_normalise(scores: pd.DataFrame, table: pd.DataFrame | None = None) -> tuple[pd.DataFrame, list[str]]:
    """Adds ``game`` and ``normalised`` = (score - random) / (human - random) from the published table
    (``suites/data/atari49.csv`` unless ``table``); environments that are not one of the 49
    games get NaN and are named."""
    table = atari49() if table is None else table
    per_game = table.set_index("game")
    out = scores.copy()
    out["game"] = [atari_game(e) for e in out["env"]]
    problems = sorted({f"{e}: not one of the paper's 49 games; left out of human-normalised scores"
                       for e, g in zip(out["env"], out["game"]) if g is None or g not in per_game.index})
    rnd = out["game"].map(per_game["random"])
    human = out["game"].map(per_game["human"])
    out["normalised"] = (out["score"] - rnd) / (human - rnd)
    return out, problems


def win_counts(scores: pd.DataFrame, by: str = "env", value: str = "score",
               labels: Iterable[str] | None = None) -> pd.Series:
    """Games won per label: per ``by`` (game/env), the label with the highest mean ``value`` over its
    seeds wins; when several share the highest mean exactly, the game counts as a ``Tie``.
    Only games where every label in ``labels`` has a score count. Returns counts per label + ``Tie``."""
    labels = list(labels) if labels is not None else order_labels(scores["label"].unique())
    means = scores[scores["label"].isin(labels)].groupby([by, "label"])[value].mean().unstack("label")
    means = means.reindex(columns=labels).dropna(axis=0, how="any")
    counts = pd.Series(0, index=[*labels, "Tie"], dtype=int)
    for _, row in means.iterrows():
        best = row.max()
        winners = row.index[row == best]
        if len(winners) == 1:
            counts[winners[0]] += 1
        else:
            counts["Tie"] += 1
    return counts


def published_atari_scores() -> pd.DataFrame:
    """The paper's per-game last-100 scores as a score frame (label A2C/ACER/PPO, env = game, seed 0)."""
    table = atari49()
    rows = []
    for name, column in (("A2C", "a2c_last100"), ("ACER", "acer_last100"), ("PPO", "ppo_last100")):
        rows.append(pd.DataFrame({"env": table["game"], "label": name, "seed": 0, "score": table[column]}))
    return pd.concat(rows, ignore_index=True)


# ---------------------------------------------------------------------------------------
# score matrices for rliable: {label: scores[runs x tasks]}

def score_matrix(scores: pd.DataFrame, label: str, envs: list[str], value: str = "score") -> tuple[np.ndarray | None, str | None]:
    """``label``'s scores as a runs x envs matrix (rows: the seeds it has on every env). Returns
    (matrix, note); matrix is None when the label lacks an env entirely."""
    mine = scores[(scores["label"] == label) & scores[value].notna()]
    per_env = {env: dict(zip(g["seed"], g[value])) for env, g in mine.groupby("env")}
    lacking = [e for e in envs if e not in per_env]
    if lacking:
        return None, f"{label}: no runs on {', '.join(lacking)}; left out of aggregates"
    common = sorted(set.intersection(*(set(per_env[e]) for e in envs))) if envs else []
    if not common:
        return None, f"{label}: no seed has runs on every environment; left out of aggregates"
    note = None
    if any(len(per_env[e]) != len(common) for e in envs):
        note = f"{label}: aggregates use the {len(common)} seed(s) present on every environment ({','.join(map(str, common))})"
    return np.array([[per_env[e][s] for e in envs] for s in common], dtype=float), note


def score_dict(scores: pd.DataFrame, envs: list[str], labels: Iterable[str] | None = None,
               value: str = "score") -> tuple[dict[str, np.ndarray], list[str]]:
    """``{label: runs x envs}`` for every label with runs on all ``envs``; notes for the others."""
    labels = order_labels(scores["label"].unique()) if labels is None else list(labels)
    out, notes = {}, []
    for label in labels:
        matrix, note = score_matrix(scores, label, envs, value)
        if note:
            notes.append(note)
        if matrix is not None:
            out[label] = matrix
    return out, notes


def finite(x: float) -> bool:
    return x is not None and isinstance(x, (int, float, np.floating)) and math.isfinite(x)

