"""What every suite provides to the harness (see DESIGN.md, "The one idea")."""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar


@dataclass(frozen=True)
class Scale:
    """A budget preset: ``scale=smoke|quick|paper``."""
    envs: tuple[str, ...]
    steps: int
    seeds: int
    eval_every: int
    eval_episodes: int


class Suite(ABC):
    name: ClassVar[str]
    Config: ClassVar[type]                    # dataclass of environment/network options (``suite.<key>=``)
    default_envs: ClassVar[tuple[str, ...]]
    scales: ClassVar[dict[str, Scale]]
    # Per-algorithm defaults that differ from the algorithm's own (the suite's paper table).
    algo_defaults: ClassVar[dict[str, dict[str, Any]]] = {}
    # Named bundles of overrides, e.g. the code-level options of another implementation.
    presets: ClassVar[dict[str, dict[str, Any]]] = {}
    # Named lists of (algorithm, {option: value}) settings, e.g. the rows of a paper's table.
    grids: ClassVar[dict[str, list[tuple[str, dict[str, Any]]]]] = {}

    @abstractmethod
    def validate_env(self, env_id: str) -> None:
        """Raise ``ConfigError`` naming the valid choices if ``env_id`` cannot run here."""

    def canonical_env(self, env_id: str) -> str:
        """The name results are stored under, for a valid ``env_id`` (e.g. Atari: ``Pong-v5`` -> ``Pong``)."""
        return env_id

    @abstractmethod
    def make_env(self, env_id: str, cfg: Any, train: bool = True):
        """One gymnasium-API environment (``reset(seed=)``, ``step(action)``); ``train=False``
        gives the evaluation form (e.g. Atari: whole games, raw scores)."""

    def make_vec_env(self, env_id: str, cfg: Any, num_envs: int):
        """The vectorised training environments of fixed-horizon collection (``core/envs.py``)."""
        from core.envs import ListVecEnv
        return ListVecEnv([self.make_env(env_id, cfg) for _ in range(num_envs)])

    @abstractmethod
    def make_agent(self, env, cfg: Any):
        """The agent (see ``core/agent.py``) for this environment."""

    def make_collector(self, env_id: str, cfg: Any, needs: Any, algo_cfg: Any, seed: int):
        """The rollout collector the algorithm asks for (``needs``: ``algos.base.Needs``, from the
        algorithm's resolved config), and the steps one batch takes (for schedules). Fixed horizon:
        N environments x T steps; groups: G environments reset to one shared state per group. A
        suite with its own notion of a rollout (LLM generation) overrides this."""
        from core.rollout import GroupCollector, HorizonCollector, RewardScaler
        if needs.rollout == "horizon":
            vec_env = self.make_vec_env(env_id, cfg, algo_cfg.num_envs)
            scaler = (RewardScaler(vec_env.num_envs, algo_cfg.gamma, getattr(cfg, "reward_clip", 10.0))
                      if getattr(cfg, "reward_scale", False) else None)
            collector = HorizonCollector(vec_env, algo_cfg.num_steps, algo_cfg.gamma, seed, needs.critic, scaler)
            return collector, algo_cfg.num_envs * algo_cfg.num_steps
        envs = [self.make_env(env_id, cfg) for _ in range(algo_cfg.group_size)]
        limit = getattr(getattr(envs[0], "spec", None), "max_episode_steps", None)
        collector = GroupCollector(envs, algo_cfg.num_groups, seed, limit)
        # Episodes vary in length; the length limit gives a lower bound on the number of updates.
        return collector, algo_cfg.group_size * algo_cfg.num_groups * (limit or 1000)

    def evaluate(self, agent, env, episodes: int, seed: int) -> dict[str, float]:
        """One evaluation: ``eval_return_mean``, ``eval_return_std``, ``eval_episodes`` and any
        further columns of ``evals.csv`` the suite reports."""
        import numpy as np
        from core.rollout import evaluate
        returns = evaluate(agent, env, episodes, seed)
        return {"eval_return_mean": float(np.mean(returns)), "eval_return_std": float(np.std(returns)),
                "eval_episodes": len(returns)}
