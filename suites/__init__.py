"""Suite registry: ``suites.get("mujoco")``."""
from __future__ import annotations

from core.errors import ConfigError


def _registry():
    from suites.atari import AtariSuite
    from suites.mujoco import MujocoSuite
    from suites.llm_toy import LLMToySuite
    return {"mujoco": MujocoSuite, "atari": AtariSuite, "llm_toy": LLMToySuite}


def names() -> list[str]:
    return list(_registry())


def get(name: str):
    registry = _registry()
    if name not in registry:
        raise ConfigError(f"unknown suite {name!r}; valid: {', '.join(registry)}")
    return registry[name]()
