"""The geo service's fast path: canonical addresses, check ids, and the decision cache.

The cache remembers decisions by the raw database answers (never by address)
and is emptied when a database is swapped: a reload must change the very next
answer, and a cached decision must equal the one the pure domain code makes.
"""

from __future__ import annotations

import itertools
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from services.geo.devdata import (
    FLORIDA_IP,
    FLORIDA_IPV6,
    LONDON_IP,
    MALTA_HOSTING_IPV6,
    MALTA_IP,
    MONTANA_IP,
    NEW_JERSEY_IP,
    NEW_JERSEY_TOR_IP,
    NEW_JERSEY_VPN_IP,
    UNPLACED_IP,
    US_UNKNOWN_STATE_IP,
    write_anonymous,
    write_city,
)
from services.geo.domain.decision import Check, Outcome, decide
from services.geo.domain.purposes import Purpose
from services.geo.domain.rules import shipped_rules
from services.geo.lookup import (
    AnonymousDatabase,
    CityDatabase,
    InvalidAddress,
    canonical_address,
    parse_address,
)
from services.geo.service import GeoService, new_check_id
from services.kit.errors import InvalidArgument
from services.kit.iso3166 import parse_place

FLORIDA_ONLY = {
    "192.0.2.0/24": {"country": {"iso_code": "US"}, "subdivisions": [{"iso_code": "FL"}]}
}
NEW_JERSEY_ONLY = {
    "192.0.2.0/24": {"country": {"iso_code": "US"}, "subdivisions": [{"iso_code": "NJ"}]}
}
NOBODY_LISTED: dict[str, dict[str, Any]] = {"203.0.113.0/24": {"is_anonymous": True}}
VPN_LISTED = {"192.0.2.0/24": {"is_anonymous": True, "is_anonymous_vpn": True}}


def _service(directory: Path, city: dict[str, Any], anonymous: dict[str, Any]) -> GeoService:
    return GeoService(
        shipped_rules(),
        CityDatabase.open(write_city(directory / "city.mmdb", city)),
        AnonymousDatabase.open(write_anonymous(directory / "anonymous.mmdb", anonymous)),
    )


def _replace(path: Path, write: Any, records: dict[str, Any]) -> None:
    # As geoipupdate does: a new file renamed over the old one.
    os.replace(write(path.with_suffix(".new"), records), path)


@pytest.fixture
def dev(tmp_path: Path) -> Iterator[GeoService]:
    service = GeoService(
        shipped_rules(),
        CityDatabase.open(write_city(tmp_path / "city.mmdb")),
        AnonymousDatabase.open(write_anonymous(tmp_path / "anonymous.mmdb")),
    )
    yield service
    service.close()


def test_a_reloaded_city_database_changes_the_next_answer(tmp_path: Path) -> None:
    service = _service(tmp_path, FLORIDA_ONLY, NOBODY_LISTED)
    try:
        deposit = {"ip_address": "192.0.2.10", "purpose": Purpose.DEPOSIT, "declared": "MT"}
        assert service.check_location(**deposit).decision.outcome is Outcome.BLOCK
        assert service.cached_decisions() == 1
        _replace(tmp_path / "city.mmdb", write_city, NEW_JERSEY_ONLY)
        assert service.refresh_databases() is True
        assert service.cached_decisions() == 0  # nothing computed before the reload survives it
        after = service.check_location(**deposit).decision
        assert (after.outcome, after.region) == (Outcome.ALLOW, "US-NJ")
    finally:
        service.close()


def test_a_reloaded_anonymous_database_changes_the_next_answer(tmp_path: Path) -> None:
    service = _service(tmp_path, NEW_JERSEY_ONLY, NOBODY_LISTED)
    try:
        play = {"ip_address": "192.0.2.10", "purpose": Purpose.PLAY_REAL, "declared": "US-NJ"}
        assert service.check_location(**play).decision.outcome is Outcome.ALLOW
        _replace(tmp_path / "anonymous.mmdb", write_anonymous, VPN_LISTED)
        assert service.refresh_databases() is True
        after = service.check_location(**play)
        assert (after.decision.outcome, after.decision.codes) == (Outcome.BLOCK, ["anonymous_vpn"])
        assert after.network is not None and after.network.is_anonymous_vpn
    finally:
        service.close()


def test_an_unchanged_file_keeps_the_cache(tmp_path: Path) -> None:
    service = _service(tmp_path, FLORIDA_ONLY, NOBODY_LISTED)
    try:
        service.check_location(ip_address="192.0.2.1", purpose=Purpose.LOGIN, declared="MT")
        assert service.refresh_databases() is False
        assert service.cached_decisions() == 1
    finally:
        service.close()


def test_decisions_are_remembered_by_place_not_by_address(dev: GeoService) -> None:
    # Two addresses in Florida, one in Malta: two combinations, whatever the address.
    for address in ("192.0.2.1", "192.0.2.10", "192.0.2.99", MALTA_IP):
        dev.check_location(ip_address=address, purpose=Purpose.DEPOSIT, declared="MT")
    assert dev.cached_decisions() == 2
    first = dev.check_location(ip_address="192.0.2.1", purpose=Purpose.DEPOSIT, declared="MT")
    second = dev.check_location(ip_address="192.0.2.99", purpose=Purpose.DEPOSIT, declared="MT")
    assert first.ip_address != second.ip_address  # the evidence is the call's own
    assert first.check_id != second.check_id


ADDRESSES = (
    FLORIDA_IP, NEW_JERSEY_IP, NEW_JERSEY_VPN_IP, NEW_JERSEY_TOR_IP, MALTA_IP, LONDON_IP,
    MONTANA_IP, US_UNKNOWN_STATE_IP, UNPLACED_IP, FLORIDA_IPV6, MALTA_HOSTING_IPV6,
)  # fmt: skip
RESIDENCES = ("MT", "US-NJ", "US-FL", "US-MT", "US", "GB", "CU", "")


def test_cached_decisions_equal_the_pure_domain_decision(tmp_path: Path, dev: GeoService) -> None:
    """Every address x purpose x residence, twice (cold, then from the cache), against
    the domain's decide() on the lookups made the documented way (locate, flags)."""
    rules = shipped_rules()
    city = CityDatabase.open(write_city(tmp_path / "reference-city.mmdb"))
    anonymous = AnonymousDatabase.open(write_anonymous(tmp_path / "reference-anonymous.mmdb"))
    try:
        for _ in range(2):
            for address, purpose, residence in itertools.product(ADDRESSES, Purpose, RESIDENCES):
                parsed = parse_address(address)
                declared = parse_place(residence) if residence else None
                network = anonymous.flags(parsed)
                check = Check(purpose, city.locate(parsed), declared, network)
                checked = dev.check_location(
                    ip_address=address, purpose=purpose, declared=residence
                )
                assert checked.decision == decide(check, rules), (address, purpose, residence)
                assert (checked.declared, checked.network) == (declared, network)
    finally:
        city.close()
        anonymous.close()


def test_a_bad_residence_is_refused_every_time(dev: GeoService) -> None:
    for _ in range(2):  # a refusal is not remembered as an answer
        with pytest.raises(InvalidArgument, match="declared_residence"):
            dev.check_location(ip_address=MALTA_IP, purpose=Purpose.LOGIN, declared="US-XX")
    assert dev.cached_decisions() == 0


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("192.0.2.1", "192.0.2.1"),
        (" 192.0.2.1\n", "192.0.2.1"),
        ("2001:DB8:0:0::1", "2001:db8::1"),
        ("2001:db8:1::5", "2001:db8:1::5"),
    ],
)
def test_addresses_are_recorded_canonically(text: str, canonical: str) -> None:
    assert canonical_address(text) == canonical


@pytest.mark.parametrize(
    "text", ["", "192.0.2", "192.0.2.256", "192.0.2.01", "1.2.3.4.5", "0x1.2.3.4", "example.org",
             "2001:db8::g", "192.0.2.1/24"],
)  # fmt: skip
def test_malformed_addresses_are_refused_as_ipaddress_refuses_them(text: str) -> None:
    with pytest.raises(InvalidAddress, match="not an IPv4 or IPv6 address"):
        canonical_address(text)
    with pytest.raises(ValueError):
        parse_address(text)  # the slow path agrees


def test_check_ids_are_distinct_version_4_uuids() -> None:
    ids = {new_check_id() for _ in range(2000)}
    assert len(ids) == 2000
    for text in list(ids)[:200]:
        parsed = uuid.UUID(text)
        assert str(parsed) == text
        assert (parsed.version, parsed.variant) == (4, uuid.RFC_4122)


@pytest.mark.parametrize("purpose", [Purpose.REGISTER, Purpose.LOGIN, Purpose.PLAY_MONEY])
def test_without_an_address_the_declared_residence_is_still_decided(
    dev: GeoService, purpose: Purpose
) -> None:
    """A caller whose address is unknown: a sanctioned residence is blocked all the same,
    an allowed one is not (the location is merely unplaced)."""
    sanctioned = dev.check_location(ip_address="", purpose=purpose, declared="IR")
    assert (sanctioned.decision.outcome, sanctioned.ip_address) == (Outcome.BLOCK, "")
    assert "residence_restricted" in sanctioned.decision.codes
    allowed = dev.check_location(ip_address="", purpose=purpose, declared="MT")
    assert allowed.decision.outcome is not Outcome.BLOCK


@pytest.mark.parametrize("purpose", [Purpose.DEPOSIT, Purpose.WITHDRAW, Purpose.PLAY_REAL])
def test_real_money_needs_an_address(dev: GeoService, purpose: Purpose) -> None:
    with pytest.raises(InvalidArgument, match="ip_address"):
        dev.check_location(ip_address="", purpose=purpose, declared="MT")
