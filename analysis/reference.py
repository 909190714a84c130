"""Published numbers the analysis compares against, each with its source.

- ``TABLE1``: the PPO paper's Table 1 (MuJoCo, average normalised score of 11 settings).
- ``TABLE2``: the PPO paper's Table 2 (Atari, games won under two metrics).
- ``atari49()``: per-game random / human scores and the paper's A2C, ACER, PPO last-100 scores
  (``analysis/reference/atari49.csv``, whose header carries the sources).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pandas as pd

PAPER = 'Schulman et al. 2017, "Proximal Policy Optimization Algorithms", arXiv:1707.06347'


@dataclass(frozen=True)
class Table1Row:
    """One setting of the paper's Table 1 and the resolved ``algo_cfg`` values that define it."""
    name: str                     # as the paper prints it
    algo: str                     # pg-arena's algorithm
    params: tuple[tuple[str, object], ...]  # algo_cfg values a run must have
    paper: float                  # the paper's average normalised score
    variant: str                  # the variant label ``grid=table1`` gives it (keys sorted)

    @property
    def label(self) -> str:
        return self.algo + self.variant


# Table 1 (MuJoCo, 7 environments "-v1", 1M timesteps, 3 seeds, beta initialised at 1; score = mean
# return of the last 100 episodes, per environment shifted and scaled so that the random policy gives
# 0 and the best result 1, averaged over the 21 runs of a setting).
TABLE1: tuple[Table1Row, ...] = (
    Table1Row("No clipping or penalty", "ppo_kl", (("kl_coef", 0.0), ("adaptive", False)), -0.39,
              "+adaptive=false+kl_coef=0.0"),
    Table1Row("Clipping, ε = 0.1", "ppo_clip", (("clip_eps", 0.1),), 0.76, "+clip_eps=0.1"),
    Table1Row("Clipping, ε = 0.2", "ppo_clip", (("clip_eps", 0.2),), 0.82, "+clip_eps=0.2"),
    Table1Row("Clipping, ε = 0.3", "ppo_clip", (("clip_eps", 0.3),), 0.70, "+clip_eps=0.3"),
    Table1Row("Adaptive KL, d_targ = 0.003", "ppo_kl", (("adaptive", True), ("kl_target", 0.003), ("kl_coef", 1.0)),
              0.68, "+kl_target=0.003"),
    Table1Row("Adaptive KL, d_targ = 0.01", "ppo_kl", (("adaptive", True), ("kl_target", 0.01), ("kl_coef", 1.0)),
              0.74, "+kl_target=0.01"),
    Table1Row("Adaptive KL, d_targ = 0.03", "ppo_kl", (("adaptive", True), ("kl_target", 0.03), ("kl_coef", 1.0)),
              0.71, "+kl_target=0.03"),
    Table1Row("Fixed KL, β = 0.3", "ppo_kl", (("adaptive", False), ("kl_coef", 0.3)), 0.62,
              "+adaptive=false+kl_coef=0.3"),
    Table1Row("Fixed KL, β = 1", "ppo_kl", (("adaptive", False), ("kl_coef", 1.0)), 0.71,
              "+adaptive=false+kl_coef=1.0"),
    Table1Row("Fixed KL, β = 3", "ppo_kl", (("adaptive", False), ("kl_coef", 3.0)), 0.72,
              "+adaptive=false+kl_coef=3.0"),
    Table1Row("Fixed KL, β = 10", "ppo_kl", (("adaptive", False), ("kl_coef", 10.0)), 0.69,
              "+adaptive=false+kl_coef=10.0"),
)
# The only variant keys a label may carry and still be a Table 1 setting (anything else, a preset
# or a suite option, changes the protocol).
TABLE1_KEYS = frozenset({"clip_eps", "kl_coef", "kl_target", "adaptive"})

# Table 2 (Atari, 49 games, 40M frames, 3 seeds): games won, metric averaged over three trials.
TABLE2 = {
    "all": {"A2C": 1, "ACER": 18, "PPO": 30, "Tie": 0},      # average episode reward over all of training
    "last100": {"A2C": 1, "ACER": 28, "PPO": 19, "Tie": 1},  # average episode reward over last 100 episodes
}
TABLE2_METRICS = {"all": "average episode reward over all of training",
                  "last100": "average episode reward over last 100 episodes"}

ATARI_SOURCE = (f"{PAPER}, Appendix B, Table 6 (last-100-episode scores of A2C, ACER, PPO, 3 seeds each); "
                "random and human scores: DeepMind DQN Zoo dqn_zoo/atari_data.py (Atari-57, no-op starts)")
ATARI_CSV = Path(__file__).resolve().parent / "reference" / "atari49.csv"


@lru_cache(maxsize=1)
def atari49() -> pd.DataFrame:
    """The 49 games: game, random, human, a2c_last100, acer_last100, ppo_last100, envpool_id, gymnasium_id,
    ale_rom_id (one row per game, in the paper's order)."""
    return pd.read_csv(ATARI_CSV, comment="#")


def _game_key(name: str) -> str:
    key = name.strip().lower()
    key = re.sub(r"^ale[/_]", "", key)
    key = re.sub(r"-v\d+$", "", key)
    key = re.sub(r"(noframeskip|deterministic)$", "", key)
    return re.sub(r"[^a-z0-9]", "", key)


@lru_cache(maxsize=1)
def _game_index() -> dict[str, str]:
    index = {}
    for row in atari49().itertuples():
        for name in (row.game, row.envpool_id, row.gymnasium_id, row.ale_rom_id):
            index[_game_key(str(name))] = row.game
    return index


def atari_game(env_id: str) -> str | None:
    """The paper's game name for an environment id (``Pong-v5``, ``ALE/Pong-v5``, ``ALE_Pong-v5``,
    ``PongNoFrameskip-v4``, ``pong``), or None if it is not one of the 49."""
    return _game_index().get(_game_key(env_id))
