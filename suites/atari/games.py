"""The Atari-49 game table: the 49 games of the PPO paper's Atari experiment (Schulman et al.
2017, Appendix B, Table 6), read from ``suites/data/atari49.csv`` (its header gives the sources:
DQN Zoo's random and human scores for human normalisation, the paper's PPO scores), the named
subsets the scales play (Atari-5, smoke), and ``game_of``: a game from any of its ids.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from core.errors import ConfigError

# the suites package's data folder (package data: suites = ["data/*.csv"])
DATA = Path(__file__).resolve().parent.parent / "data" / "atari49.csv"


@dataclass(frozen=True)
class Game:
    """One row of ``suites/data/atari49.csv`` (its header has the sources)."""
    name: str              # the paper's name, e.g. "Breakout"
    random: float          # DQN Zoo random score (no-op starts)
    human: float           # DQN Zoo human score
    ppo_last100: float     # the paper's Table 6: PPO, mean of the last 100 episodes at 10M steps
    envpool_id: str        # "Breakout-v5"
    gymnasium_id: str      # "ALE/Breakout-v5"
    ale_rom_id: str        # "breakout"

    def human_normalized(self, score: float) -> float:
        return (score - self.random) / (self.human - self.random)


def _load_games() -> dict[str, Game]:
    with open(DATA, newline="") as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    return {r["game"]: Game(r["game"], float(r["random"]), float(r["human"]), float(r["ppo_last100"]),
                            r["envpool_id"], r["gymnasium_id"], r["ale_rom_id"]) for r in rows}


GAMES: dict[str, Game] = _load_games()
PAPER_GAMES: tuple[str, ...] = tuple(GAMES)
# Atari-5 (Aitchison et al. 2022, "Atari-5: Distilling the Arcade Learning Environment down to Five
# Games"): BattleZone, DoubleDunk, NameThisGame, Phoenix, Qbert, whose scores predict the median over
# the 57 games. Phoenix is not one of the paper's 49, so the quick scale plays the other four.
ATARI5_IN_49: tuple[str, ...] = ("BattleZone", "DoubleDunk", "NameThisGame", "Qbert")
# Short random-play games for the smoke scale: a random policy ends a game of either in ~100-250 steps.
SMOKE_GAMES: tuple[str, ...] = ("Breakout", "Qbert")


def game_of(env_id: str) -> Game:
    """The game an environment id names: the paper's name (``Breakout``), envpool's id
    (``Breakout-v5``) or gymnasium's (``ALE/Breakout-v5``); a ``ConfigError`` lists the 49."""
    for game in GAMES.values():
        if env_id in (game.name, game.envpool_id, game.gymnasium_id):
            return game
    raise ConfigError(f"unknown Atari game {env_id!r}; the suite's 49 games (by name, or as envpool's "
                      f"<Game>-v5): {', '.join(PAPER_GAMES)}")
