"""Options as text and as dataclass fields: shared by the sweep's planner, ``help``, the suites'
defaults and the ``report`` / ``compare`` commands."""
from __future__ import annotations

import dataclasses
import difflib
from typing import Any, Iterable

TRUE_WORDS = ("true", "1", "yes", "on")
FALSE_WORDS = ("false", "0", "no", "off")


def format_value(value: Any) -> str:
    """Canonical text of a value, used in variant labels (``+clip_eps=0.1``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (tuple, list)):
        return ",".join(format_value(v) for v in value)
    if value is None:
        return "none"
    return str(value)


def did_you_mean(word: str, choices: Iterable[str], prefix: str = "") -> str:
    """`` (did you mean seeds?)`` when ``choices`` hold names close to a mistyped ``word``
    (``difflib.get_close_matches``), else ``""``: what an "unknown key" message puts after the key.
    ``prefix`` (``algo.``, ``suite.``) is written before each match, not matched."""
    close = difflib.get_close_matches(word, list(dict.fromkeys(choices)), n=3, cutoff=0.75)
    return f" (did you mean {' or '.join(prefix + c for c in close)}?)" if close else ""


def field_defaults(config_cls: type) -> dict[str, Any]:
    """Each field's default (``default_factory`` called); ``dataclasses.MISSING`` where it has none."""
    out = {}
    for f in dataclasses.fields(config_cls):
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
            out[f.name] = f.default_factory()  # type: ignore[misc]
        else:
            out[f.name] = dataclasses.MISSING
    return out


def parse_key_values(command: str, words: list[str], valid: dict[str, type],
                     error: type[Exception]) -> dict[str, Any]:
    """``key=value`` words of a command into ``{key: value}``, typed by ``valid`` (int: positive;
    float; bool; str: non-empty). Any problem raises ``error`` with one line that names the valid keys."""
    out: dict[str, Any] = {}
    for word in words:
        if "=" not in word:
            raise error(f"{command}: argument {word!r} is not key=value; valid keys: {', '.join(valid)}")
        key, value = word.split("=", 1)
        if key not in valid:
            raise error(f"{command}: unknown key {key!r}{did_you_mean(key, valid)}; valid: {', '.join(valid)}")
        if key in out:
            raise error(f"{command}: {key} given twice")
        if valid[key] is int:
            try:
                out[key] = int(value)
            except ValueError:
                raise error(f"{command}: {key}={value!r}: expected an integer") from None
            if out[key] <= 0:
                raise error(f"{command}: {key}={value} must be a positive integer")
        elif valid[key] is float:
            try:
                out[key] = float(value)
            except ValueError:
                raise error(f"{command}: {key}={value!r}: expected a number") from None
        elif valid[key] is bool:
            if value.lower() not in TRUE_WORDS + FALSE_WORDS:
                raise error(f"{command}: {key}={value!r}: expected true or false")
            out[key] = value.lower() in TRUE_WORDS
        else:
            if not value:
                raise error(f"{command}: {key}= is empty")
            out[key] = value
    return out
