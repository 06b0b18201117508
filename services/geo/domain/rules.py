"""Jurisdiction rules: versioned data the operator can change, and their parser.

Rule sets ship as TOML files in ``jurisdictions/`` next to this module. Each
entry names an ISO code (country or prefixed subdivision) and the purposes it
blocks. Every decision records the ``version`` it used, so a file is never
edited in place: a change is a new file with a new version.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from services.geo.domain.purposes import Purpose
from services.kit.iso3166 import InvalidCode, Place, name_of, parse_place

RULES_DIRECTORY = "jurisdictions"
CURRENT_RULES = "tavla-2026-12"


class InvalidRules(ValueError):
    """A rule file that is malformed or ambiguous."""


@dataclass(frozen=True, slots=True)
class Jurisdiction:
    """One restricted country or subdivision and the purposes it blocks."""

    code: str
    name: str
    purposes: frozenset[Purpose]
    note: str


@dataclass(frozen=True, slots=True)
class Rules:
    """A versioned rule set, indexed by code."""

    version: str
    jurisdictions: Mapping[str, Jurisdiction]

    def restriction(self, place: Place, purpose: Purpose) -> Jurisdiction | None:
        """The most specific entry that blocks ``purpose`` at ``place``, if any."""
        for code in place.codes():
            entry = self.jurisdictions.get(code)
            if entry is not None and purpose in entry.purposes:
                return entry
        return None

    def has_restricted_regions(self, country: str, purpose: Purpose) -> bool:
        """True if some subdivision of ``country`` blocks ``purpose``: the region then matters."""
        prefix = f"{country}-"
        entries = self.jurisdictions.items()
        return any(code.startswith(prefix) and purpose in j.purposes for code, j in entries)


def parse_rules(text: str) -> Rules:
    """Parse a rule file; refuses unknown codes, unknown purposes and duplicates."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise InvalidRules(f"rules are not valid TOML: {error}") from error
    version = data.get("version")
    if not isinstance(version, str) or not version.strip():
        raise InvalidRules("rules need a non-empty string `version`")
    entries = data.get("jurisdiction", [])
    if not isinstance(entries, list):
        raise InvalidRules("`jurisdiction` must be an array of tables ([[jurisdiction]])")
    jurisdictions: dict[str, Jurisdiction] = {}
    for entry in entries:
        jurisdiction = _parse_entry(entry)
        if jurisdiction.code in jurisdictions:
            raise InvalidRules(f"jurisdiction {jurisdiction.code} is listed twice")
        jurisdictions[jurisdiction.code] = jurisdiction
    return Rules(version, jurisdictions)


def _parse_entry(entry: Any) -> Jurisdiction:
    if not isinstance(entry, dict):
        raise InvalidRules("each [[jurisdiction]] must be a table")
    code = entry.get("code")
    if not isinstance(code, str) or code != code.strip().upper():
        raise InvalidRules(f"jurisdiction code {code!r} must be an upper-case ISO code")
    try:
        place = parse_place(code)
    except InvalidCode as error:
        raise InvalidRules(str(error)) from error
    purposes = entry.get("purposes")
    if not isinstance(purposes, list) or not purposes:
        raise InvalidRules(f"jurisdiction {code} needs a non-empty list of `purposes`")
    try:
        parsed = frozenset(Purpose(p) for p in purposes)
    except ValueError as error:
        known = ", ".join(p.value for p in Purpose)
        raise InvalidRules(f"jurisdiction {code}: {error}; purposes are {known}") from error
    note = entry.get("note", "")
    if not isinstance(note, str):
        raise InvalidRules(f"jurisdiction {code}: `note` must be a string")
    return Jurisdiction(place.region or place.country, name_of(code), parsed, note)


def load_rules_file(path: Path) -> Rules:
    """Parse a rule file from disk (the operator's own, e.g. ``--rules PATH``)."""
    return parse_rules(path.read_text(encoding="utf-8"))


@cache
def shipped_rules(version: str = CURRENT_RULES) -> Rules:
    """A rule set shipped with the service, by version."""
    resource = resources.files(__package__).joinpath(RULES_DIRECTORY, f"{version}.toml")
    if not resource.is_file():
        raise InvalidRules(f"no shipped rules with version {version!r}")
    rules = parse_rules(resource.read_text(encoding="utf-8"))
    if rules.version != version:
        raise InvalidRules(f"file {version}.toml declares version {rules.version!r}")
    return rules
