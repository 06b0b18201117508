"""Small MaxMind-format databases for ``tavla dev`` and the tests, built with mmdb-writer.

Only documentation address ranges (RFC 5737, RFC 3849), so nothing here can be
mistaken for a real place. Records have the shape of GeoIP2 City and GeoIP2
Anonymous IP records, written out by hand. Production mounts MaxMind's real
databases instead (refreshed by geoipupdate; see services/geo/README.md).

mmdb-writer is part of the ``local`` extra (what ``tavla dev`` and the tests
need on one machine), not of a production image: import this module only there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mmdb_writer import MMDBWriter
from netaddr import IPSet

# One address per kind of place, for tests and for trying the dev stack by hand.
FLORIDA_IP = "192.0.2.10"
NEW_JERSEY_IP = "192.0.2.200"
NEW_JERSEY_VPN_IP = "192.0.2.130"
NEW_JERSEY_TOR_IP = "192.0.2.150"
MALTA_IP = "198.51.100.7"
LONDON_IP = "198.51.100.200"
MONTANA_IP = "203.0.113.10"
US_UNKNOWN_STATE_IP = "203.0.113.70"
UNPLACED_IP = "203.0.113.200"
FLORIDA_IPV6 = "2001:db8:1::5"
MALTA_HOSTING_IPV6 = "2001:db8:2::5"



def malta_address(n: int) -> str:
    """A Malta address in a /64 of its own (``n`` from 1 to 65535): for players who
    must not look linked to each other by a shared address or network."""
    if not 1 <= n <= 0xFFFF:
        raise ValueError(f"n must be 1..65535, got {n}")
    return f"2001:db8:2:{n:x}::1"  # 2001:db8:2::/64 itself is the hosting provider's


# network -> City record; subdivisions as MaxMind writes them (no country prefix).
CITY: dict[str, dict[str, Any]] = {
    "192.0.2.0/25": {"country": {"iso_code": "US"}, "subdivisions": [{"iso_code": "FL"}]},
    "192.0.2.128/25": {"country": {"iso_code": "US"}, "subdivisions": [{"iso_code": "NJ"}]},
    "198.51.100.0/25": {"country": {"iso_code": "MT"}},
    "198.51.100.128/25": {
        "country": {"iso_code": "GB"},
        "subdivisions": [{"iso_code": "ENG"}, {"iso_code": "LND"}],
    },
    "203.0.113.0/26": {"country": {"iso_code": "US"}, "subdivisions": [{"iso_code": "MT"}]},
    "203.0.113.64/26": {"country": {"iso_code": "US"}},
    # 203.0.113.128/25 is not in the database.
    "2001:db8:1::/48": {"country": {"iso_code": "US"}, "subdivisions": [{"iso_code": "FL"}]},
    "2001:db8:2::/48": {"country": {"iso_code": "MT"}},
}

ANONYMOUS: dict[str, dict[str, Any]] = {
    "192.0.2.128/28": {"is_anonymous": True, "is_anonymous_vpn": True},
    "192.0.2.144/28": {"is_anonymous": True, "is_tor_exit_node": True},
    "192.0.2.160/28": {"is_anonymous": True, "is_public_proxy": True},
    "192.0.2.176/28": {"is_anonymous": True, "is_residential_proxy": True},
    "2001:db8:2::/64": {"is_anonymous": True, "is_hosting_provider": True},
}


def write_database(
    path: Path, records: dict[str, dict[str, Any]], database_type: str, ip_version: int = 6
) -> Path:
    writer = MMDBWriter(
        ip_version=ip_version, database_type=database_type, ipv4_compatible=ip_version == 6
    )
    for network, record in records.items():
        writer.insert_network(IPSet([network]), record)
    writer.to_db_file(str(path))
    return path


def write_city(path: Path, records: dict[str, dict[str, Any]] = CITY) -> Path:
    return write_database(path, records, "GeoIP2-City")


def write_anonymous(path: Path, records: dict[str, dict[str, Any]] = ANONYMOUS) -> Path:
    return write_database(path, records, "GeoIP2-Anonymous-IP")


def write_dev_databases(directory: Path) -> tuple[Path, Path]:
    """The City and Anonymous-IP databases above, written into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    return write_city(directory / "city.mmdb"), write_anonymous(directory / "anonymous.mmdb")
