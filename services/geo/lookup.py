"""Reading MaxMind-format databases: where an address is, and whether it hides.

Two databases, paths from configuration: a GeoIP2/GeoLite2 City-format one
(``country.iso_code``, ``subdivisions[].iso_code``) and, optionally, a GeoIP2
Anonymous-IP-format one (``is_anonymous``, ``is_anonymous_vpn``, ...). Both are
opened with ``maxminddb``'s C extension (memory-mapped). IPv4 and IPv6; an IPv6
address in an IPv4-only database is simply not placed.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import maxminddb

from services.geo.domain.codes import Place, place_from_parts
from services.geo.domain.decision import FLAG_NAMES, NetworkFlags

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class InvalidAddress(ValueError):
    """A text that is not an IPv4 or IPv6 address."""


class DatabaseError(RuntimeError):
    """A database file that is missing or not in MaxMind DB format."""


def parse_address(text: str) -> Address:
    """``"192.0.2.1"`` or ``"2001:db8::1"``; anything else is refused with a message."""
    try:
        return ipaddress.ip_address(text.strip())
    except ValueError:
        raise InvalidAddress(f"{text!r} is not an IPv4 or IPv6 address") from None


def open_database(path: Path) -> Any:
    """Open one MaxMind DB file, naming the path if it cannot be read."""
    try:
        return maxminddb.open_database(str(path), maxminddb.MODE_AUTO)
    except (OSError, maxminddb.InvalidDatabaseError, ValueError) as error:
        raise DatabaseError(f"cannot open MaxMind database {path}: {error}") from error


def _record(reader: Any, address: Address) -> dict[str, Any] | None:
    try:
        record = reader.get(address)
    except ValueError:
        # An IPv6 address asked of an IPv4-only database: the database does not place it.
        return None
    return record if isinstance(record, dict) else None


@dataclass(frozen=True, slots=True)
class CityDatabase:
    """A City-format database: country and the largest subdivision."""

    reader: Any

    @classmethod
    def open(cls, path: Path) -> CityDatabase:
        return cls(open_database(path))

    def locate(self, address: Address) -> Place | None:
        record = _record(self.reader, address)
        if record is None:
            return None
        country = record.get("country", {}).get("iso_code")
        subdivisions = record.get("subdivisions") or [{}]
        # MaxMind lists subdivisions from largest to smallest; rules name the largest (a state).
        return place_from_parts(country, subdivisions[0].get("iso_code"))

    def close(self) -> None:
        self.reader.close()


@dataclass(frozen=True, slots=True)
class AnonymousDatabase:
    """An Anonymous-IP-format database: an address it does not list has no flags."""

    reader: Any

    @classmethod
    def open(cls, path: Path) -> AnonymousDatabase:
        return cls(open_database(path))

    def flags(self, address: Address) -> NetworkFlags:
        record = _record(self.reader, address) or {}
        return NetworkFlags(**{name: bool(record.get(name, False)) for name in FLAG_NAMES})

    def close(self) -> None:
        self.reader.close()
