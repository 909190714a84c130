"""The algorithm registry: ``algos.names()``, ``algos.get(name)``, ``algos.builtin_names()``.

A new variant is one file that defines an ``Algorithm`` subclass and registers it
with ``register`` (see the README, "Checking a new variant"). It is listed by ``names()``
and runs when named (``algo=my_variant``); a sweep without ``algo=`` runs the seven
built-ins (``builtin_names()``) only.
"""
from __future__ import annotations

import importlib
import pkgutil

from core.errors import ConfigError

_REGISTRY: dict[str, type] = {}


def register(cls: type) -> type:
    """Class decorator (or call) adding an algorithm under ``cls.name``.

    The class must set ``name`` in its own body (a subclass that forgets it would inherit its
    parent's and take the parent's place), and the name must be free: a variant can neither
    replace a built-in nor another variant. Registering the same class again is a no-op."""
    where = f"{cls.__module__}.{cls.__qualname__}"
    if "name" not in vars(cls):
        inherited = f" (it would inherit {cls.name!r})" if isinstance(getattr(cls, "name", None), str) else ""
        raise ConfigError(f"algorithm class {where} does not set its own name{inherited}; "
                          f"add name = \"my_variant\" to its class body")
    _load_builtin()   # the built-ins hold their names before any variant registers
    taken = _REGISTRY.get(cls.name)
    if taken is not None and taken is not cls:
        raise ConfigError(f"algorithm name {cls.name!r} of {where} is taken by "
                          f"{taken.__module__}.{taken.__qualname__}; give the variant a name of its own")
    _REGISTRY[cls.name] = cls
    return cls


_BUILTIN = ("reinforce", "trpo", "ppo_clip", "ppo_kl", "grpo", "rloo", "dapo")
_SHARED = {"advantages", "losses", "base"}
_loaded = False


def _load_builtin() -> None:
    """Import every module of this package once: built-ins register below, a variant
    file (``algos/my_variant.py``) registers itself with ``@register``."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    from algos.dapo import DAPO
    from algos.grpo import GRPO
    from algos.ppo_clip import PPOClip
    from algos.ppo_kl import PPOKL
    from algos.reinforce import Reinforce
    from algos.rloo import RLOO
    from algos.trpo import TRPO
    for cls in (Reinforce, TRPO, PPOClip, PPOKL, GRPO, RLOO, DAPO):
        _REGISTRY[cls.name] = cls
    for module in pkgutil.iter_modules(__path__):
        if module.name not in _SHARED and module.name not in _BUILTIN:
            importlib.import_module(f"{__name__}.{module.name}")


def names() -> list[str]:
    """The registered algorithm names: the built-ins, then every variant found in ``algos/``."""
    _load_builtin()
    return list(_REGISTRY)


def builtin_names() -> list[str]:
    """The seven built-in algorithms: what a sweep without ``algo=`` runs."""
    _load_builtin()
    return list(_BUILTIN)


def get(name: str) -> type:
    """The algorithm class registered as ``name``; a ConfigError lists the valid names."""
    _load_builtin()
    if name not in _REGISTRY:
        raise ConfigError(f"unknown algorithm {name!r}; valid: {', '.join(_REGISTRY)}")
    return _REGISTRY[name]
