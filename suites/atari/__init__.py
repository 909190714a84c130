"""Atari-49 suite: the 49 games of the PPO paper's Atari experiment (Appendix B, Table 6).

Environments, with the preprocessing of the paper's era (Mnih et al. 2015; OpenAI baselines'
``wrap_deepmind``, which the paper's code used), the same under both backends:

- up to 30 no-op frames at the start of a game (random count, drawn from the environment's seed);
- frame skip 4, the observation the pixel-wise max of the last two frames (flicker);
- 84x84 grayscale, the last 4 observations stacked: ``uint8 [4, 84, 84]``;
- no sticky actions (``repeat_action_probability=0``, as the paper; ALE v5's default is 0.25);
- FIRE after every reset where the game has a FIRE action (baselines' FireResetEnv);
- for training: the loss of a life ends the episode (not the game: the next reset continues it)
  and rewards are clipped to their sign;
- games are cut at 27,000 agent steps (108,000 frames).

Every training episode recorded (``VecStep.episodes``, ``episodes.csv``) is a whole game with its
raw, unclipped score, so the paper's metrics (mean over all of training, last 100 episodes) and
human-normalised scores come straight from the stored runs. Evaluation plays whole games with raw
rewards.

Backends (``suite.backend``):

- ``envpool`` (default) for the training environments of fixed-horizon collection: envpool's C++
  thread pool steps all N games in parallel. envpool resets a finished environment on the *next*
  call to ``step``; ``EnvpoolVecEnv`` steps just the finished ids once more right away, so that the
  collector sees the reset observation in the same step (as ``core/envs.py`` specifies).
- ``gymnasium``: ale-py's ``ALE/<Game>-v5`` with gymnasium's ``AtariPreprocessing`` and the
  wrappers below. Always used for evaluation and for group rollouts (G games reset with one seed:
  the same no-op count, hence the same start), and the reference in the tests.

The backends stack frames alike (a new game starts from 4 copies of its first frame after FIRE; a
game continued after a lost life keeps its earlier frames) but draw their no-ops differently: at a
new game gymnasium takes 1-30 no-op frames and envpool 0-29 before its FIRE frame, and after a lost
life gymnasium takes one no-op agent step (4 frames) where envpool takes 0-29 no-op frames again.

Network: the Nature-DQN CNN (Mnih et al. 2015; the default of the paper's released code) with a
policy and a value head on one shared trunk, orthogonal initialisation as baselines / CleanRL.
Parameters by role (``policy_parameters`` / ``value_parameters``): see ``AtariAgent``.

The pieces (see each module):

- ``games``: the 49 games (``suites/data/atari49.csv``: random, human and the paper's PPO scores),
  ``game_of``;
- ``envpool_env``: the envpool backend, ``EnvpoolVecEnv``;
- ``wrappers``: the gymnasium / ale-py backend, ``make_gymnasium_env`` and baselines' wrappers;
- ``agent``: the Nature-DQN CNN agent, ``AtariAgent``;
- here: the options (``AtariConfig``), the suite (scales, the paper's hyper-parameters, presets,
  collectors, evaluation).
"""
from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from core.errors import ConfigError
from suites.atari.agent import AtariAgent, nature_cnn
from suites.atari.envpool_env import EnvpoolVecEnv, envpool_options
from suites.atari.games import ATARI5_IN_49, DATA, GAMES, PAPER_GAMES, SMOKE_GAMES, Game, game_of
from suites.atari.wrappers import (CONTINUED_GAME, ClipReward, EpisodicLife, FireReset, RecordScore, StackFrames,
                                   make_gymnasium_env)
from suites.base import Scale, Suite

__all__ = ["ATARI5_IN_49", "CONTINUED_GAME", "DATA", "GAMES", "PAPER_GAMES", "SMOKE_GAMES", "AtariAgent",
           "AtariConfig", "AtariSuite", "ClipReward", "EnvpoolVecEnv", "EpisodicLife", "FireReset", "Game",
           "RecordScore", "StackFrames", "envpool_options", "game_of", "make_gymnasium_env", "nature_cnn"]


# The valid values of AtariConfig's options (checked in its __post_init__).
CHOICES: dict[str, tuple[str, ...]] = {
    "backend": ("envpool", "gymnasium"),
    "value_network": ("auto", "shared", "separate"),
    "precision": ("fp32", "bf16"),
    "eval_policy": ("sample", "greedy"),
}
FLAGS: tuple[str, ...] = ("episodic_life", "fire_reset", "reward_clip")
# integer options: the least valid value, and why where it is not obvious
MINIMA: dict[str, tuple[int, str]] = {
    "num_threads": (0, " (0: min(num_envs, CPU cores))"),
    "noop_max": (1, " (envpool draws 0 to noop_max - 1 no-ops)"),
    "frame_skip": (1, ""),
    "frame_stack": (1, ""),
    "screen_size": (36, " (the Nature CNN's three convolutions need 36x36 frames at least)"),
    "max_episode_steps": (1, ""),
    "group_max_steps": (1, ""),
}


@dataclass
class AtariConfig:
    """Environment-side and network options shared by every algorithm on this suite."""
    backend: str = "envpool"                 # training envs of fixed-horizon collection: envpool | gymnasium
    num_threads: int = 0                     # envpool worker threads; 0: min(num_envs, CPU cores)
    noop_max: int = 30                       # Mnih et al. 2015 / baselines NoopResetEnv: up to 30 no-ops at the start
    frame_skip: int = 4                      # baselines MaxAndSkipEnv: repeat each action 4 frames, max of the last 2
    frame_stack: int = 4                     # Mnih et al. 2015: the last 4 frames are the state
    screen_size: int = 84                    # Mnih et al. 2015: 84x84 grayscale
    episodic_life: bool = True               # baselines EpisodicLifeEnv: a lost life ends a *training* episode
    fire_reset: bool = True                  # baselines FireResetEnv: press FIRE after reset where the game has it
    reward_clip: bool = True                 # baselines ClipRewardEnv: training rewards clipped to their sign
    repeat_action_probability: float = 0.0   # the paper: no sticky actions (Machado et al. 2018 suggest 0.25)
    max_episode_steps: int = 27000           # 108,000 frames (Machado et al. 2018; envpool's default)
    group_max_steps: int = 4500              # group rollouts: games cut here (8 x 4500 frames ~ 1 GB per batch)
    value_network: str = "auto"              # shared | separate | auto (see AtariAgent)
    precision: str = "fp32"                  # the CNN trunk's arithmetic: fp32 | bf16 (autocast; fast only on
                                             # CPUs with AMX / AVX512-BF16; weights, heads and losses stay fp32)
    eval_policy: str = "sample"              # evaluation actions: sample from the policy | greedy (argmax)

    def __post_init__(self):
        # Every option checked here, so that a sweep naming one no run can use fails at planning,
        # before anything is written.
        for name, choices in CHOICES.items():
            if getattr(self, name) not in choices:
                raise ConfigError(f"suite.{name}={getattr(self, name)!r} is not valid; valid: {', '.join(choices)}")
        for name in FLAGS:
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"suite.{name}={getattr(self, name)!r} is not valid; valid: true, false")
        for name, (least, why) in MINIMA.items():
            value = getattr(self, name)
            if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < least:
                raise ConfigError(f"suite.{name}={value!r} is not valid; valid: an integer >= {least}{why}")
        p = self.repeat_action_probability
        if not isinstance(p, (int, float, np.number)) or isinstance(p, bool) or not 0.0 <= p < 1.0:
            raise ConfigError(f"suite.repeat_action_probability={p!r} is not valid; valid: a number in [0, 1) "
                              "(0: no sticky actions, the paper's setting; 0.25: Machado et al. 2018)")
        missing = [m for m in ("ale_py", "cv2") + (("envpool",) if self.backend == "envpool" else ())
                   if importlib.util.find_spec(m) is None]
        if missing:
            hint = " (envpool has Linux wheels only; elsewhere use suite.backend=gymnasium)" if "envpool" in missing else ""
            raise ConfigError(f"the atari suite needs {', '.join(missing)}: .venv/bin/pip install -e '.[atari]'{hint}")


class AtariSuite(Suite):
    name = "atari"
    Config = AtariConfig
    default_envs = PAPER_GAMES
    scales = {
        # every algorithm on 2 short games for seconds: a first look, and CI
        "smoke": Scale(envs=SMOKE_GAMES, steps=1024, seeds=1, eval_every=1024, eval_episodes=1),
        # Atari-5 less Phoenix (not among the 49), 1 seed, 32k steps (131k frames): about an hour for all
        # seven algorithms with jobs=2 on 2 cores (measured per-algorithm speeds: ppo_clip ~250 steps/s
        # per core, group methods ~170, TRPO ~40 (its Fisher-vector products through the CNN) takes
        # half of the hour); ppo_clip alone takes ~5 minutes, so steps=250000 algo=ppo_clip ~35 minutes.
        "quick": Scale(envs=ATARI5_IN_49, steps=32_768, seeds=1, eval_every=16_384, eval_episodes=2),
        # the paper's protocol: 49 games x 3 seeds x 10M steps (40M frames)
        "paper": Scale(envs=PAPER_GAMES, steps=10_000_000, seeds=3, eval_every=1_000_000, eval_episodes=10),
    }

    # The paper's Table 5 for PPO; baselines' Atari settings for TRPO; the others as stated.
    _TABLE5 = {
        "num_envs": 8,            # Table 5: 8 actors
        "num_steps": 128,         # Table 5: horizon T = 128
        "lr": 2.5e-4,             # Table 5: Adam step size 2.5e-4 x alpha
        "lr_anneal": True,        # Table 5: alpha annealed linearly from 1 to 0
        "num_epochs": 3,          # Table 5: 3 epochs
        "minibatch_size": 256,    # Table 5: minibatch 32 x 8
        "gamma": 0.99,            # Table 5
        "lam": 0.95,              # Table 5: GAE lambda 0.95
        "vf_coef": 1.0,           # Table 5: c1 = 1
        "ent_coef": 0.01,         # Table 5: c2 = 0.01
        "adv_norm": "minibatch",  # baselines ppo2 (the paper's Atari code) normalises per minibatch
        "max_grad_norm": 0.5,     # baselines ppo2: gradient norm clipped at 0.5
        # kl / entropy / explained variance logged from the last epoch's minibatches, as ppo2's
        # approxkl: the exact after-update pass is one more CNN forward over the batch (~15% of a run)
        "diagnostics": "last_epoch",
    }
    algo_defaults = {
        "ppo_clip": {**_TABLE5,
                     "clip_eps": 0.1,          # Table 5: epsilon 0.1 x alpha
                     "clip_anneal": True},     # Table 5: alpha annealed linearly from 1 to 0
        # PPO-KL on Table 5's settings with the paper's best adaptive-KL setting of Table 1
        "ppo_kl": {**_TABLE5,
                   "kl_target": 0.01,          # Table 1: d_targ 0.01 (adaptive), beta initialised at 1
                   "kl_coef": 1.0},
        # baselines trpo_mpi/run_atari.py: timesteps_per_batch=512, max_kl=0.001, cg_iters=10,
        # cg_damping=1e-3, gamma=0.98, lam=1.0, vf_iters=3, vf_stepsize=1e-4 (value fitted in minibatches of 64)
        "trpo": {"num_envs": 8, "num_steps": 64, "max_kl": 0.001, "cg_iters": 10, "cg_damping": 1e-3,
                 "gamma": 0.98, "lam": 1.0, "vf_epochs": 3, "vf_lr": 1e-4, "vf_minibatch_size": 64},
        # No published Atari setting for REINFORCE with Adam: Table 5's batch (8 x 128) and step size,
        # one step per batch; the value baseline fitted as PPO's critic (3 epochs, minibatch 256).
        "reinforce": {"num_envs": 8, "num_steps": 128, "gamma": 0.99, "lr": 2.5e-4, "max_grad_norm": 0.5,
                      "vf_lr": 2.5e-4, "vf_epochs": 3, "vf_minibatch_size": 256},
        # Group methods: G whole games from one start (same seed, same no-op count), rewards clipped as
        # for the others; Table 5's step size and epochs, epsilon 0.1, gradient clipping as ppo2.
        "grpo": {"group_size": 8,           # G = 8
                 "num_groups": 1,
                 "gamma": 0.99,
                 "lr": 2.5e-4,              # Table 5
                 "num_epochs": 3,           # Table 5
                 "num_minibatches": 8,      # one game per minibatch
                 "clip_eps": 0.1,           # Table 5
                 "max_grad_norm": 0.5,      # ppo2
                 "kl_coef": 0.0},           # no reference policy: no SFT model here (as MuJoCo; docs/BENCHMARKS.md)
        "dapo": {"group_size": 8, "num_groups": 1, "gamma": 0.99,
                 "lr": 2.5e-4, "num_epochs": 3, "num_minibatches": 8, "max_grad_norm": 0.5,  # as grpo above
                 # DAPO's clip_eps_low 0.2 / clip_eps_high 0.28 kept (its defining asymmetry). Overlong
                 # shaping off: it penalises long LLM responses, but a long game is not a defect.
                 "overlong_coef": 0.0},
        "rloo": {"group_size": 4,           # k = 4 (Ahmadian et al. 2024)
                 "num_groups": 2,           # 8 games per batch, as grpo
                 "gamma": 0.99,
                 "lr": 2.5e-4,              # Table 5
                 "max_grad_norm": 0.5,      # ppo2
                 "kl_coef": 0.0},           # no reference policy: no SFT model here (as MuJoCo; docs/BENCHMARKS.md)
    }
    # The code-level options of CleanRL's ppo_atari_envpool.py (its defaults), behind CleanRL's
    # published Atari numbers (CleanRL's docs, https://docs.cleanrl.dev/rl-algorithms/ppo/,
    # `ppo_atari_envpool.py`, "Experiment results": Open RL Benchmark,
    # openrlbenchmark/cleanrl/ppo_atari_envpool, tag pr-424): 4 epochs, value clipping, no clip
    # annealing, value loss 0.5 * MSE with vf_coef 0.5, i.e. 0.25 on our plain MSE.
    presets = {
        "cleanrl": {"algo.num_epochs": 4, "algo.value_clip": True, "algo.clip_anneal": False,
                    "algo.vf_coef": 0.25},
    }

    def validate_env(self, env_id: str) -> None:
        game_of(env_id)

    def canonical_env(self, env_id: str) -> str:
        """Results go under the paper's game name, whichever id named it."""
        return game_of(env_id).name

    def make_env(self, env_id: str, cfg: AtariConfig, train: bool = True) -> gym.Env:
        """One gymnasium/ale-py game: ``train=True`` with episodic life and clipped rewards (as
        configured), ``train=False`` whole games with raw rewards (evaluation)."""
        return make_gymnasium_env(game_of(env_id), cfg, episodic_life=cfg.episodic_life and train,
                                  reward_clip=cfg.reward_clip and train, max_steps=cfg.max_episode_steps)

    def make_vec_env(self, env_id: str, cfg: AtariConfig, num_envs: int):
        if cfg.backend == "envpool":
            return EnvpoolVecEnv(game_of(env_id), cfg, num_envs)
        from core.envs import ListVecEnv
        return ListVecEnv([self.make_env(env_id, cfg) for _ in range(num_envs)], episode_stats="info")

    def make_agent(self, env, cfg: AtariConfig) -> AtariAgent:
        return AtariAgent(int(env.action_space.n), cfg)

    def make_collector(self, env_id: str, cfg: AtariConfig, needs: Any, algo_cfg: Any, seed: int):
        if needs.rollout == "horizon":
            return super().make_collector(env_id, cfg, needs, algo_cfg, seed)
        from core.rollout import GroupCollector
        # Whole games (a group member's score is its game's), clipped rewards for the update, cut at
        # group_max_steps; reset with one seed per group, so every member starts identically.
        game = game_of(env_id)
        envs = [make_gymnasium_env(game, cfg, episodic_life=False, reward_clip=cfg.reward_clip,
                                   max_steps=cfg.group_max_steps) for _ in range(algo_cfg.group_size)]
        collector = GroupCollector(envs, algo_cfg.num_groups, seed, cfg.group_max_steps)
        return collector, algo_cfg.group_size * algo_cfg.num_groups * cfg.group_max_steps

    def evaluate(self, agent, env, episodes: int, seed: int) -> dict[str, float]:
        """``episodes`` whole games with raw scores, played side by side (one batched forward pass
        per step), game k from seed ``seed + k``. ``suite.eval_policy=sample`` (default) samples
        the policy's actions: a greedy policy can stall a game for its 27,000 steps (Breakout
        never serving again after a lost life)."""
        envs = self._eval_envs(env, episodes)
        cfg: AtariConfig = env.atari_cfg
        rng = np.random.default_rng(seed)
        obs = np.stack([e.reset(seed=seed + k)[0] for k, e in enumerate(envs)])
        scores = np.zeros(episodes)
        lengths = np.zeros(episodes, dtype=np.int64)
        active = np.ones(episodes, dtype=bool)
        while active.any():
            idx = np.flatnonzero(active)
            actions = agent.act(obs[idx], rng, deterministic=cfg.eval_policy == "greedy")
            for a, i in zip(actions, idx):
                o, r, terminated, truncated, _ = envs[i].step(int(a))
                scores[i] += r
                lengths[i] += 1
                obs[i] = o
                if terminated or truncated:
                    active[i] = False
        mean = float(scores.mean())
        return {"eval_return_mean": mean, "eval_return_std": float(scores.std()), "eval_episodes": episodes,
                "eval_length_mean": float(lengths.mean()),
                "eval_human_normalized": env.atari_game.human_normalized(mean)}

    @staticmethod
    def _eval_envs(env, n: int) -> list:
        """``env`` and n - 1 more like it, built once and kept with it."""
        copies = env.__dict__.setdefault("atari_eval_copies", [])
        while len(copies) < n - 1:
            copies.append(make_gymnasium_env(env.atari_game, env.atari_cfg, episodic_life=False,
                                             reward_clip=False, max_steps=env.atari_cfg.max_episode_steps))
        return [env, *copies[: n - 1]]
