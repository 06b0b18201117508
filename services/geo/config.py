"""The geo service's settings: where its databases and rules are.

``TAVLA_GEO_CITY_DB`` (City-format database) and ``TAVLA_GEO_ANONYMOUS_DB``
(Anonymous-IP-format database) are both required: without the first no address
is placed, without the second a VPN would pass for a home line. A production
setting never defaults to "no decision", so a process missing either stops at
start naming the variables (``tavla serve geo`` exits 2); ``tavla dev`` and the
tests build small databases (``services/geo/devdata.py``), the chart mounts the
real ones. ``TAVLA_GEO_RULES`` is an optional rule file; unset, the shipped
current rules. ``TAVLA_GEO_RELOAD_SECONDS`` (default 60) is how often the files
are checked for a newer copy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from services.kit.config import ConfigError, Env

CITY_DB = "TAVLA_GEO_CITY_DB"
ANONYMOUS_DB = "TAVLA_GEO_ANONYMOUS_DB"
RULES = "TAVLA_GEO_RULES"
RELOAD_SECONDS = "TAVLA_GEO_RELOAD_SECONDS"


@dataclass(frozen=True, slots=True)
class GeoSettings:
    city_db: Path
    anonymous_db: Path
    rules: Path | None = None
    reload_seconds: float = 60.0

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> GeoSettings:
        env = Env(environ)
        missing = [name for name in (CITY_DB, ANONYMOUS_DB) if env.optional_text(name) is None]
        if missing:
            raise ConfigError(
                f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} required but "
                "not set: the paths of the MaxMind-format City and Anonymous-IP databases "
                "(geo makes no decision without them)"
            )
        rules = env.optional_text(RULES)
        return cls(
            city_db=Path(env.text(CITY_DB)),
            anonymous_db=Path(env.text(ANONYMOUS_DB)),
            rules=Path(rules) if rules else None,
            reload_seconds=env.number(RELOAD_SECONDS, 60.0, low=0.1, high=86400.0),
        )
