"""Geo use cases: check a location, list the rules. No protobuf here.

The service owns the open databases and the rule set; every check parses its
inputs (a bad address or code is an ``InvalidArgument`` naming it), looks the
address up, and applies the pure decision. A check without an address (register,
login or play money from a caller whose address is unknown) still applies the
rules to the declared residence, with the location unplaced; real money always
needs an address.

What follows a lookup is pure: the decision depends only on the purpose, the
raw City answer (country and subdivision codes), the raw Anonymous-IP answer
(its flags) and the declared residence text, given the rules. So the service
remembers decisions by those values (an LRU of ``DECISION_CACHE_SIZE``; the
:class:`Decision` it returns is immutable and shared), never by address: each
call still looks its address up in both databases, so a database swapped in by
:meth:`GeoService.refresh_databases` answers the very next call. The cache is
emptied on a swap all the same, so nothing computed before a reload outlives it.
Per call there is then only the parsing, the two lookups, one cache probe, a
check id and the :class:`Checked` tuple.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import lru_cache
from typing import NamedTuple

from services.geo.domain.decision import Check, Decision, NetworkFlags, decide
from services.geo.domain.purposes import REAL_MONEY, Purpose
from services.geo.domain.rules import Jurisdiction, Rules
from services.geo.lookup import (
    AnonymousDatabase,
    CityDatabase,
    InvalidAddress,
    Listing,
    PlaceCodes,
    canonical_address,
    network_flags,
)
from services.kit.errors import InvalidArgument
from services.kit.iso3166 import InvalidCode, Place, parse_place, place_from_parts

# Distinct (purpose, place, network flags, residence) combinations remembered.
DECISION_CACHE_SIZE = 65_536


class Checked(NamedTuple):
    """A decision and what it was made from."""

    check_id: str
    decision: Decision
    ip_address: str
    declared: Place | None
    network: NetworkFlags | None


class Decided(NamedTuple):
    """What the pure part yields for one combination of raw answers."""

    decision: Decision
    declared: Place | None
    network: NetworkFlags | None


def new_check_id() -> str:
    """A random (version 4) UUID as text, a third of the cost of ``str(uuid.uuid4())``."""
    digits = os.urandom(16).hex()
    variant = "89ab"[int(digits[16], 16) & 3]  # RFC 4122 variant: 10xx
    return (
        f"{digits[:8]}-{digits[8:12]}-4{digits[13:16]}-{variant}{digits[17:20]}-{digits[20:]}"
    )


class GeoService:
    def __init__(
        self, rules: Rules, city: CityDatabase, anonymous: AnonymousDatabase | None
    ) -> None:
        self._rules = rules
        self._city = city
        self._anonymous = anonymous
        # Per instance: the cache belongs to these rules and these databases.
        self._decided: Callable[[Purpose, PlaceCodes | None, Listing, str], Decided] = (
            lru_cache(maxsize=DECISION_CACHE_SIZE)(self._decide)
        )

    def check_location(self, *, ip_address: str, purpose: Purpose, declared: str) -> Checked:
        if not ip_address.strip() and purpose not in REAL_MONEY:
            return self._residence_only(purpose, declared)
        try:
            address = canonical_address(ip_address)
        except InvalidAddress as error:
            raise InvalidArgument(f"ip_address: {error}") from None
        codes = self._city.place_codes(address)
        listing = self._anonymous.listing(address) if self._anonymous is not None else None
        try:
            decided = self._decided(purpose, codes, listing, declared)
        except InvalidCode as error:  # not cached: every bad residence is refused anew
            raise InvalidArgument(f"declared_residence: {error}") from None
        return Checked(new_check_id(), decided.decision, address, decided.declared, decided.network)

    def _residence_only(self, purpose: Purpose, declared: str) -> Checked:
        """A call with no known address (one that did not come through the gateway): the
        declared residence is still checked, the location counts as unplaced. Real money
        never gets here: it needs an address."""
        try:
            decided = self._decided(purpose, None, None, declared)
        except InvalidCode as error:
            raise InvalidArgument(f"declared_residence: {error}") from None
        return Checked(new_check_id(), decided.decision, "", decided.declared, decided.network)

    def _decide(
        self, purpose: Purpose, codes: PlaceCodes | None, listing: Listing, declared: str
    ) -> Decided:
        """The pure part: places and flags from the raw answers, then the rules."""
        residence = parse_place(declared) if declared.strip() else None
        location = place_from_parts(*codes) if codes else None
        network = network_flags(listing) if self._anonymous is not None else None
        decision = decide(Check(purpose, location, residence, network), self._rules)
        return Decided(decision, residence, network)

    def jurisdictions(self) -> tuple[str, list[Jurisdiction]]:
        """The rules version and its entries, ordered by code."""
        entries = sorted(self._rules.jurisdictions.values(), key=lambda j: j.code)
        return self._rules.version, entries

    def uses_c_extension(self) -> bool:
        """True if both databases are read by maxminddb's C extension (memory-mapped)."""
        files = [self._city.file, *([self._anonymous.file] if self._anonymous else [])]
        return all(file.uses_c_extension for file in files)

    def cached_decisions(self) -> int:
        """How many combinations the decision cache holds now."""
        info = self._decided.cache_info()  # type: ignore[attr-defined]
        return int(info.currsize)

    def refresh_databases(self) -> bool:
        """Swap in any database file replaced on disk since the last look; True if one was."""
        swapped = self._city.refresh()
        if self._anonymous is not None:
            swapped = self._anonymous.refresh() or swapped
        if swapped:
            self._decided.cache_clear()  # type: ignore[attr-defined]
        return swapped

    def close(self) -> None:
        self._city.close()
        if self._anonymous is not None:
            self._anonymous.close()
