"""ISO 3166 codes: countries (``MT``, Malta) and prefixed subdivisions (``US-MT``, Montana).

Codes are checked against pycountry's copy of the ISO tables, never a regex,
so that a subdivision always carries its country and ``MT`` and ``US-MT`` can
never be confused. Shared: the geo service parses rules, requests and database
answers with it, and accounts checks a player's declared residence with it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import pycountry

# pycountry's lookups are untyped; these names say what they are and keep mypy strict.
_COUNTRIES: Any = pycountry.countries
_SUBDIVISIONS: Any = pycountry.subdivisions


class InvalidCode(ValueError):
    """A text that is not an ISO 3166-1 alpha-2 country or ISO 3166-2 subdivision code."""


@dataclass(frozen=True, slots=True)
class Place:
    """A country and, when known, one of its subdivisions (``region`` includes the prefix)."""

    country: str
    region: str | None = None

    def codes(self) -> tuple[str, ...]:
        """The codes a rule may name for this place, most specific first."""
        return (self.region, self.country) if self.region else (self.country,)


def is_country(code: str) -> bool:
    """True if ``code`` is an upper-case ISO 3166-1 alpha-2 country code."""
    return len(code) == 2 and code.isupper() and _COUNTRIES.get(alpha_2=code) is not None


def is_subdivision(code: str) -> bool:
    """True if ``code`` is an upper-case ISO 3166-2 code such as ``US-MT``."""
    return "-" in code and code.isupper() and _SUBDIVISIONS.get(code=code) is not None


def name_of(code: str) -> str:
    """The ISO English name of a country or subdivision code (already validated)."""
    table, key = (_SUBDIVISIONS, "code") if "-" in code else (_COUNTRIES, "alpha_2")
    found = table.get(**{key: code})
    if found is None:
        raise InvalidCode(f"{code!r} is not an ISO 3166 country or subdivision code")
    return str(found.name)


# ISO has a few thousand codes: the caches hold them all and spare the lookups per call.
@lru_cache(maxsize=8192)
def parse_place(code: str) -> Place:
    """``"US-FL"`` -> Place("US", "US-FL"); ``"MT"`` -> Place("MT"); anything else is refused."""
    text = code.strip().upper()
    if is_country(text):
        return Place(text)
    if is_subdivision(text):
        return Place(text.split("-", 1)[0], text)
    raise InvalidCode(
        f"{code!r} is not an ISO 3166-1 country (e.g. MT) "
        "or ISO 3166-2 subdivision with its country prefix (e.g. US-MT)"
    )


@lru_cache(maxsize=8192)
def place_from_parts(country: str | None, region: str | None) -> Place | None:
    """A place from a database's country and subdivision codes; None if the country is unknown.

    MaxMind gives the subdivision without its prefix (``FL``); it is prefixed
    here and dropped if ISO does not know it (the country alone still counts).
    """
    if not country or not is_country(country.upper()):
        return None
    country = country.upper()
    if region:
        prefixed = f"{country}-{region.upper()}"
        if is_subdivision(prefixed):
            return Place(country, prefixed)
    return Place(country)
