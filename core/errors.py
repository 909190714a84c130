"""Errors shared by every layer."""
from __future__ import annotations


class ConfigError(ValueError):
    """Bad user input; the CLI prints it on one line and exits with code 2."""
