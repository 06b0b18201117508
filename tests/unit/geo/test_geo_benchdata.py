"""The benchmark's synthetic databases: what the plan promises is what the files hold.

A small plan (the full one takes a minute to build), read back with maxminddb.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path

import maxminddb
import pytest

from services.geo.benchdata import Plan, ensure_databases, ipv4_end, sample_addresses
from services.kit.iso3166 import place_from_parts

PLAN = Plan(ranges=3000, ipv6_ranges=200, anonymous_ranges=300, seed=4)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    databases = ensure_databases(tmp_path_factory.mktemp("bench-geo"), PLAN, lambda _: None)
    return databases.city, databases.anonymous


def test_the_city_database_holds_every_planned_network(built: tuple[Path, Path]) -> None:
    with maxminddb.open_database(str(built[0])) as reader:
        networks = list(reader)
    assert len(networks) == PLAN.ranges + PLAN.ipv6_ranges  # none merged, none lost
    end = ipaddress.IPv4Address(ipv4_end(PLAN))
    v4 = [n for n, _ in networks if n.version == 4 or str(n).startswith("::ffff")]
    assert len(v4) >= PLAN.ranges
    previous = None
    for _, record in networks[: PLAN.ranges]:
        # Real ISO places, GeoIP2 City's shape, names in eight languages.
        region = (record.get("subdivisions") or [{}])[0].get("iso_code")
        assert place_from_parts(record["country"]["iso_code"], region) is not None
        assert len(record["city"]["names"]) == 8
        assert record != previous  # neighbours differ, so nothing was merged
        previous = record
    assert str(end) != "224.0.0.0"  # the plan fits below multicast


def test_the_anonymous_database_lists_its_networks(built: tuple[Path, Path]) -> None:
    with maxminddb.open_database(str(built[1])) as reader:
        networks = list(reader)
    assert len(networks) == PLAN.anonymous_ranges
    assert all(record["is_anonymous"] and len(record) == 2 for _, record in networks)


def test_sampled_addresses_are_mostly_placed(built: tuple[Path, Path]) -> None:
    addresses = sample_addresses(PLAN, 2000)
    with maxminddb.open_database(str(built[0])) as city, maxminddb.open_database(
        str(built[1])
    ) as anonymous:
        placed = sum(city.get(a) is not None for a in addresses)
        listed = sum(anonymous.get(a) is not None for a in addresses)
    assert 0.9 * len(addresses) < placed < len(addresses)  # about 2% are left unplaced
    assert 0.03 * len(addresses) < listed < 0.1 * len(addresses)
    assert any(":" in a for a in addresses)


def test_a_second_call_reuses_the_cached_files(built: tuple[Path, Path]) -> None:
    # The module's databases were built by a first call (`built`) in a directory of their
    # own; the other tests only read them, so they are as that call left them.
    city, anonymous = built
    stamps = city.stat().st_mtime_ns, anonymous.stat().st_mtime_ns
    messages: list[str] = []
    second = ensure_databases(city.parent, PLAN, messages.append)
    assert (second.city, second.anonymous) == built
    assert (city.stat().st_mtime_ns, anonymous.stat().st_mtime_ns) == stamps
    assert messages and all("cached" in message for message in messages)
    assert not list(city.parent.glob(".*partial"))
