"""Geo use cases: check a location, list the rules. No protobuf here.

The service owns the open databases and the rule set; every check parses its
inputs (a bad address or code is an ``InvalidArgument`` naming it), looks the
address up, and applies the pure decision.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from services.geo.domain.decision import Check, Decision, NetworkFlags, decide
from services.geo.domain.purposes import Purpose
from services.geo.domain.rules import Jurisdiction, Rules
from services.geo.lookup import AnonymousDatabase, CityDatabase, InvalidAddress, parse_address
from services.kit.errors import InvalidArgument
from services.kit.iso3166 import InvalidCode, Place, parse_place


@dataclass(frozen=True, slots=True)
class Checked:
    """A decision and what it was made from."""

    check_id: str
    decision: Decision
    ip_address: str
    declared: Place | None
    network: NetworkFlags | None


class GeoService:
    def __init__(
        self, rules: Rules, city: CityDatabase, anonymous: AnonymousDatabase | None
    ) -> None:
        self._rules = rules
        self._city = city
        self._anonymous = anonymous

    def check_location(self, *, ip_address: str, purpose: Purpose, declared: str) -> Checked:
        try:
            address = parse_address(ip_address)
        except InvalidAddress as error:
            raise InvalidArgument(f"ip_address: {error}") from None
        try:
            residence = parse_place(declared) if declared.strip() else None
        except InvalidCode as error:
            raise InvalidArgument(f"declared_residence: {error}") from None
        network = self._anonymous.flags(address) if self._anonymous else None
        check = Check(purpose, self._city.locate(address), residence, network)
        decision = decide(check, self._rules)
        return Checked(str(uuid.uuid4()), decision, str(address), residence, network)

    def jurisdictions(self) -> tuple[str, list[Jurisdiction]]:
        """The rules version and its entries, ordered by code."""
        entries = sorted(self._rules.jurisdictions.values(), key=lambda j: j.code)
        return self._rules.version, entries

    def refresh_databases(self) -> None:
        """Swap in any database file replaced on disk since the last look."""
        self._city.refresh()
        if self._anonymous is not None:
            self._anonymous.refresh()

    def close(self) -> None:
        self._city.close()
        if self._anonymous is not None:
            self._anonymous.close()
