"""Typed readers of ``TAVLA_*`` environment variables; every error names its variable.

:class:`ConfigError` is what a bad or missing value raises; ``tavla serve`` turns
it into a one-line message and exit status 2. ``services.kit.config`` re-exports
both names (most code imports them from there).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


class ConfigError(ValueError):
    """A configuration variable is missing or malformed."""


class Env:
    """Typed readers over an environment mapping; every error names its variable."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self._environ = os.environ if environ is None else environ

    def text(self, name: str, default: str | None = None) -> str:
        value = self._environ.get(name, default)
        if value is None or value == "":
            raise ConfigError(f"{name} is required but not set")
        return value

    def optional_text(self, name: str) -> str | None:
        return self._environ.get(name) or None

    def address(self, name: str, *, needed_to: str) -> str:
        """Another service's gRPC address (host:port), required; the error says what for."""
        value = self.optional_text(name)
        if value is None:
            raise ConfigError(
                f"{name} is required to {needed_to} (the service's gRPC address, host:port)"
            )
        return value

    def integer(self, name: str, default: int, *, low: int, high: int) -> int:
        raw = self._environ.get(name)
        if raw is None or raw == "":
            return default
        try:
            value = int(raw)
        except ValueError:
            raise ConfigError(f"{name}={raw!r} is not an integer") from None
        if not low <= value <= high:
            raise ConfigError(f"{name}={value} is outside {low}..{high}")
        return value

    def number(self, name: str, default: float, *, low: float, high: float) -> float:
        raw = self._environ.get(name)
        if raw is None or raw == "":
            return default
        try:
            value = float(raw)
        except ValueError:
            raise ConfigError(f"{name}={raw!r} is not a number") from None
        if not low <= value <= high:
            raise ConfigError(f"{name}={value} is outside {low}..{high}")
        return value

    def flag(self, name: str, default: bool) -> bool:
        raw = self._environ.get(name)
        if raw is None:
            return default
        if raw.lower() in _TRUE:
            return True
        if raw.lower() in _FALSE:
            return False
        raise ConfigError(f"{name}={raw!r} is not a boolean (use true or false)")

    def choice(self, name: str, default: str, choices: tuple[str, ...]) -> str:
        value = self._environ.get(name) or default
        if value.lower() not in choices:
            raise ConfigError(f"{name}={value!r} must be one of {', '.join(choices)}")
        return value.lower()
