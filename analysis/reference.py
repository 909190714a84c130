"""Published numbers the analysis compares against, each with its source.

- ``TABLE1``: the PPO paper's Table 1 (MuJoCo, average normalised score of 11 settings).
- ``TABLE2``: the PPO paper's Table 2 (Atari, games won under two metrics).
- ``atari49()``: per-game random / human scores and the paper's A2C, ACER, PPO last-100 scores
  (``suites/data/atari49.csv``, the Atari suite's game list, whose header carries the sources).
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


# The budget of the published MuJoCo numbers: the paper's Table 1 and Figure 3 (1M timesteps per
# run; Schulman et al. 2017, arXiv:1707.06347, §6.1 and §6.2) and CleanRL's PPO runs (1M steps;
# CLEANRL_PPO_SOURCE below). Runs of another budget are not compared with them
# (``analysis.paper.budget_gap``).
PAPER_MUJOCO_STEPS = 1_000_000
CLEANRL_PPO_STEPS = 1_000_000

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
# one table for the suite and the analysis: the Atari suite's game list (its header carries the sources)
ATARI_CSV = Path(__file__).resolve().parent.parent / "suites" / "data" / "atari49.csv"


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


# ---------------------------------------------------------------------------------------
# beside the paper's MuJoCo experiments (analysis/paper.py)

# CleanRL ppo_continuous_action.py, gymnasium MuJoCo v4, 1M steps, 3 seeds: the mean return of the
# last 100 training episodes, then mean ± std over seeds (Open RL Benchmark). Keyed by the
# environment's base name (no version): the runs compared against it are -v5.
CLEANRL_PPO_SOURCE = ("CleanRL ppo_continuous_action.py, gymnasium/MuJoCo v4, 1M steps, 3 seeds, mean of the last "
                      "100 episodes then mean ± std over seeds (Open RL Benchmark, "
                      "openrlbenchmark/cleanrl/ppo_continuous_action, tag pr-424); CleanRL's docs, "
                      "docs.cleanrl.dev/rl-algorithms/ppo, ppo_continuous_action.py, "
                      "\"Experiment results\", MuJoCo v4 table")
CLEANRL_PPO: dict[str, tuple[float, float]] = {
    "HalfCheetah": (1442.64, 46.03),
    "Hopper": (2382.86, 271.74),
    "Walker2d": (2287.95, 571.78),
    "InvertedPendulum": (963.09, 22.20),
}


def env_base(env_id: str) -> str:
    """``"Hopper-v5"`` -> ``"Hopper"`` (the version suffix dropped)."""
    return re.sub(r"-v\d+$", "", env_id.strip())


def cleanrl_ppo(env_id: str) -> tuple[float, float] | None:
    """CleanRL's published PPO (mean, std over seeds) for an environment id of any version, or None."""
    return CLEANRL_PPO.get(env_base(env_id))


# §6.2 of the paper, on Figure 3 (the figure itself is a plot only; no numbers are published).
FIGURE3_CLAIM = "outperforms the previous methods on almost all the continuous control environments"
FIGURE3_SOURCE = f"{PAPER}, §6.2 (Figure 3: MuJoCo, 1M timesteps)"
# Figure 3's algorithms that pg-arena also has -> its label here. The paper's "Vanilla PG, Adaptive"
# (policy gradient with an adaptive step size) is not the same algorithm as pg-arena's reinforce
# (REINFORCE with a learned value baseline, fixed Adam step size); it is the nearest one here.
FIGURE3_SHARED = {"PPO (Clip)": "ppo_clip", "TRPO": "trpo", "Vanilla PG, Adaptive": "reinforce"}

# The learning-rate / clipping schedule of the code released with the paper: openai/baselines
# da99706 (2017-07-20, "ppo and trpo"), baselines/pposgd/run_mujoco.py calls pposgd_simple.learn
# without a schedule, whose default is schedule='constant' (Adam 3e-4 and epsilon 0.2 for the whole
# run). From d9f194f (2017-08-27) on, baselines/ppo1/run_mujoco.py passes schedule='linear', which
# multiplies both the Adam stepsize and clip_param by 1 - t/T (pposgd_simple.py: "clip_param =
# clip_param * lrmult"). The paper itself gives MuJoCo a fixed Adam stepsize of 3e-4 (Table 3) and
# anneals only its Atari settings (Table 5, alpha from 1 to 0).
RELEASED_CODE_SCHEDULE = {"lr_anneal": False, "clip_anneal": False}
RELEASED_CODE_SOURCE = ("openai/baselines da99706 (2017-07-20), baselines/pposgd/run_mujoco.py: no schedule "
                        "argument, pposgd_simple.learn's default schedule='constant'")
LATER_BASELINES_SCHEDULE = {"lr_anneal": True, "clip_anneal": True}
LATER_BASELINES_SOURCE = ("openai/baselines d9f194f (2017-08-27) and later, baselines/ppo1/run_mujoco.py: "
                          "schedule='linear' (Adam stepsize and clip_param both scaled by 1 - t/T)")

# The paper's MuJoCo environments were gym's -v1 (mujoco-py < 1.50, i.e. MuJoCo 1.31); pg-arena runs
# gymnasium's -v5 (mujoco >= 2.3.3 bindings). What changed on the way that touches the dynamics,
# the reward or the observation, per environment (gymnasium 1.4.0, gymnasium/envs/mujoco/<env>_v5.py,
# "Version History"; v2 moved every environment to mujoco-py >= 1.50, v4 to the mujoco bindings).
MUJOCO_VERSION_SOURCE = "gymnasium 1.4.0, gymnasium/envs/mujoco/<env>_v5.py, \"Version History\""
MUJOCO_V5_CHANGES: dict[str, str] = {
    "HalfCheetah": "no change to dynamics or reward beyond the simulator (v5 renames info keys only)",
    # The episode ends on the first unhealthy step, so paying the healthy reward only while healthy
    # changes the return of an episode that ends by falling by exactly that one step's reward.
    "Hopper": ("v5: the healthy reward is paid only while healthy (v1-v4: on every step); as a fall ends the "
               "episode, a fallen episode's return is 1 lower, nothing else"),
    "Walker2d": ("v5: both feet have friction 1.9 (v2-v4: left 1.9, right 0.9), so the right foot slides less "
                 "(a change of the dynamics); the healthy reward is paid only while healthy (a fallen episode's "
                 "return is 1 lower)"),
    "InvertedPendulum": "v5: the reward of the terminal step (pole fallen) is 0, not 1: a failed episode's return is 1 lower",
    "InvertedDoublePendulum": ("v5: the healthy reward (10) is paid only while healthy: a failed episode's return is "
                               "10 lower; the always-zero constraint forces were removed from the observation"),
    "Reacher": ("v5: the distance reward is computed after the physics step (before it, up to v4), so every "
                "step's reward differs; the always-zero fingertip z was removed from the observation"),
    "Swimmer": "no change to dynamics or reward beyond the simulator (v5 adds options and renames info keys)",
}
