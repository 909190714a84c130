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

    @abstractmethod
    def make_env(self, env_id: str, cfg: Any, train: bool = True):
        """One gymnasium-API environment (``reset(seed=)``, ``step(action)``); ``train=False``
        gives the evaluation form (e.g. Atari: whole games, raw scores)."""

    def make_vec_env(self, env_id: str, cfg: Any, num_envs: int):
        """The vectorised training environments of fixed-horizon collection (``harness/envs.py``)."""
        from harness.envs import ListVecEnv
        return ListVecEnv([self.make_env(env_id, cfg) for _ in range(num_envs)])

    @abstractmethod
    def make_agent(self, env, cfg: Any):
        """The agent (see ``harness/agent.py``) for this environment."""
