"""Help text for configuration dataclasses, from their own source.

Each field's trailing comment is its documentation and names the source of its default
(CleanRL's one-line field docstrings, read here from the ``# ...`` comment instead), so
``./run_all.sh help algo=ppo_clip`` prints exactly what the code says.
"""
from __future__ import annotations

import dataclasses
import inspect
import io
import tokenize

from core.options import field_defaults


def field_comments(cls: type) -> dict[str, str]:
    """``{field: comment}`` for ``name: type = default  # comment`` lines of ``cls`` and its bases;
    a class that declares a field again without a comment drops its bases' comment for it (the
    comment was the source of a default that class may have changed)."""
    comments: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if not dataclasses.is_dataclass(klass):
            continue
        try:
            source = inspect.getsource(klass)
        except (OSError, TypeError):
            continue
        names = {f.name for f in dataclasses.fields(klass)} & set(vars(klass).get("__annotations__", {}))
        for line in source.splitlines():
            stripped = line.strip()
            name = stripped.split(":", 1)[0].strip()
            if name not in names:
                continue
            comment = _trailing_comment(stripped) if "#" in stripped else None
            if comment:
                comments[name] = comment
            else:
                comments.pop(name, None)
    return comments


def _trailing_comment(line: str) -> str | None:
    try:
        for tok in tokenize.generate_tokens(io.StringIO(line).readline):
            if tok.type == tokenize.COMMENT:
                return tok.string.lstrip("#").strip()
    except (tokenize.TokenError, IndentationError):
        return None
    return None


def describe(cls: type, prefix: str, defaults: dict | None = None, sources: dict | None = None) -> str:
    """One line per option: ``prefix.name=default   source``; ``defaults`` overrides the
    dataclass defaults (a suite's table for this algorithm, ``Suite.defaults_for``) and ``sources``
    the comments shown for them (``Suite.default_sources``): the source shown is always that of the
    value shown."""
    comments = {**field_comments(cls), **(sources or {})}
    instance_defaults = {k: v for k, v in field_defaults(cls).items() if v is not dataclasses.MISSING}
    instance_defaults.update(defaults or {})
    from harness.config import format_value
    rows = [(f"{prefix}{f.name}={format_value(instance_defaults.get(f.name))}", comments.get(f.name, ""))
            for f in dataclasses.fields(cls)]
    width = max(len(r[0]) for r in rows)
    return "\n".join(f"  {left.ljust(width)}  {right}".rstrip() for left, right in rows)
