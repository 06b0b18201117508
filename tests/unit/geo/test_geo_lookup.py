"""MaxMind-format lookups on small databases built from documentation ranges."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from services.geo.devdata import CITY, write_anonymous, write_city, write_database
from services.geo.domain.decision import NetworkFlags
from services.geo.lookup import (
    AnonymousDatabase,
    CityDatabase,
    DatabaseError,
    InvalidAddress,
    parse_address,
)
from services.kit.iso3166 import Place


@pytest.fixture(scope="module")
def city(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CityDatabase]:
    database = CityDatabase.open(write_city(tmp_path_factory.mktemp("geo") / "city.mmdb"))
    yield database
    database.close()


@pytest.fixture(scope="module")
def anonymous(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AnonymousDatabase]:
    path = write_anonymous(tmp_path_factory.mktemp("geo") / "anonymous.mmdb")
    database = AnonymousDatabase.open(path)
    yield database
    database.close()


@pytest.mark.parametrize(
    ("ip", "place"),
    [
        ("192.0.2.1", Place("US", "US-FL")),
        ("192.0.2.127", Place("US", "US-FL")),
        ("192.0.2.128", Place("US", "US-NJ")),
        ("198.51.100.7", Place("MT")),
        ("198.51.100.200", Place("GB", "GB-ENG")),
        ("203.0.113.5", Place("US", "US-MT")),
        ("203.0.113.70", Place("US")),
        ("203.0.113.200", None),
        ("10.0.0.1", None),
        ("2001:db8:1::1", Place("US", "US-FL")),
        ("2001:db8:2:ffff::1", Place("MT")),
        ("2001:db8:ffff::1", None),
    ],
)
def test_city_database_places_addresses(city: CityDatabase, ip: str, place: Place | None) -> None:
    assert city.locate(parse_address(ip)) == place


@pytest.mark.parametrize(
    ("ip", "flags"),
    [
        ("192.0.2.130", NetworkFlags(is_anonymous=True, is_anonymous_vpn=True)),
        ("192.0.2.150", NetworkFlags(is_anonymous=True, is_tor_exit_node=True)),
        ("192.0.2.170", NetworkFlags(is_anonymous=True, is_public_proxy=True)),
        ("192.0.2.180", NetworkFlags(is_anonymous=True, is_residential_proxy=True)),
        ("2001:db8:2::9", NetworkFlags(is_anonymous=True, is_hosting_provider=True)),
        ("192.0.2.200", NetworkFlags()),
        ("2001:db8:1::1", NetworkFlags()),
    ],
)
def test_anonymous_database_flags_addresses(
    anonymous: AnonymousDatabase, ip: str, flags: NetworkFlags
) -> None:
    assert anonymous.flags(parse_address(ip)) == flags


def test_an_ipv6_address_in_an_ipv4_database_is_not_placed(tmp_path: Path) -> None:
    v4_only = {k: v for k, v in CITY.items() if ":" not in k}
    path = write_database(tmp_path / "v4.mmdb", v4_only, "GeoIP2-City", ip_version=4)
    database = CityDatabase.open(path)
    try:
        assert database.locate(parse_address("198.51.100.7")) == Place("MT")
        assert database.locate(parse_address("2001:db8:2::1")) is None
    finally:
        database.close()


@pytest.mark.parametrize("text", ["", "192.0.2", "192.0.2.256", "example.org", "2001:db8::g"])
def test_malformed_addresses_are_refused(text: str) -> None:
    with pytest.raises(InvalidAddress, match="not an IPv4 or IPv6 address"):
        parse_address(text)


def test_a_missing_database_names_its_path(tmp_path: Path) -> None:
    with pytest.raises(DatabaseError, match=r"missing\.mmdb"):
        CityDatabase.open(tmp_path / "missing.mmdb")


def test_a_file_that_is_not_a_database_names_its_path(tmp_path: Path) -> None:
    junk = tmp_path / "junk.mmdb"
    junk.write_bytes(b"not a maxmind database")
    with pytest.raises(DatabaseError, match=r"junk\.mmdb"):
        CityDatabase.open(junk)


def _replace(path: Path, records: dict[str, dict[str, Any]]) -> None:
    # As geoipupdate does: write a new file, then rename it over the old one.
    fresh = write_city(path.with_suffix(".new"), records)
    os.replace(fresh, path)


FLORIDA_ONLY = {
    "192.0.2.0/24": {"country": {"iso_code": "US"}, "subdivisions": [{"iso_code": "FL"}]}
}
NEW_JERSEY_ONLY = {
    "192.0.2.0/24": {"country": {"iso_code": "US"}, "subdivisions": [{"iso_code": "NJ"}]}
}


def test_a_replaced_database_is_swapped_in_by_refresh(tmp_path: Path) -> None:
    path = write_city(tmp_path / "city.mmdb", FLORIDA_ONLY)
    database = CityDatabase.open(path)
    try:
        address = parse_address("192.0.2.10")
        assert database.refresh() is False  # unchanged
        assert database.locate(address) == Place("US", "US-FL")
        _replace(path, NEW_JERSEY_ONLY)
        assert database.refresh() is True
        assert database.locate(address) == Place("US", "US-NJ")
        assert database.refresh() is False
    finally:
        database.close()


def test_a_bad_replacement_keeps_the_old_database(tmp_path: Path) -> None:
    path = write_city(tmp_path / "city.mmdb", FLORIDA_ONLY)
    database = CityDatabase.open(path)
    try:
        junk = tmp_path / "junk"
        junk.write_bytes(b"half a download")
        os.replace(junk, path)
        assert database.refresh() is False
        assert database.locate(parse_address("192.0.2.10")) == Place("US", "US-FL")
        _replace(path, NEW_JERSEY_ONLY)  # the next good file is taken
        assert database.refresh() is True
        assert database.locate(parse_address("192.0.2.10")) == Place("US", "US-NJ")
    finally:
        database.close()


def test_a_briefly_missing_file_keeps_the_old_database(tmp_path: Path) -> None:
    path = write_city(tmp_path / "city.mmdb", FLORIDA_ONLY)
    database = CityDatabase.open(path)
    try:
        path.unlink()
        assert database.refresh() is False
        assert database.locate(parse_address("192.0.2.10")) == Place("US", "US-FL")
    finally:
        database.close()
