"""The geo service's settings: where its databases and rules are.

``TAVLA_GEO_CITY_DB`` (City-format database) and ``TAVLA_GEO_ANONYMOUS_DB``
(Anonymous-IP-format database) go together: once the first is set the second is
required, since without it a VPN would pass for a home line. With neither set
(``tavla dev`` and the chart until they ship databases) there are no settings
and the service does not serve ``GeoService`` at all, so callers get an
error and real money fails closed. ``TAVLA_GEO_RULES`` is an optional
rule file; unset, the shipped current rules. ``TAVLA_GEO_RELOAD_SECONDS``
(default 60) is how often the files are checked for a newer copy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from services.kit.config import Env

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
    def from_env(cls, environ: Mapping[str, str] | None = None) -> GeoSettings | None:
        env = Env(environ)
        if env.optional_text(CITY_DB) is None and env.optional_text(ANONYMOUS_DB) is None:
            return None
        rules = env.optional_text(RULES)
        return cls(
            city_db=Path(env.text(CITY_DB)),
            anonymous_db=Path(env.text(ANONYMOUS_DB)),
            rules=Path(rules) if rules else None,
            reload_seconds=env.number(RELOAD_SECONDS, 60.0, low=0.1, high=86400.0),
        )
