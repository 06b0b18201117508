"""Reading MaxMind-format databases: where an address is, and whether it hides.

Two databases, paths from configuration: a GeoIP2/GeoLite2 City-format one
(``country.iso_code``, ``subdivisions[].iso_code``) and, optionally, a GeoIP2
Anonymous-IP-format one (``is_anonymous``, ``is_anonymous_vpn``, ...). Both are
opened with ``maxminddb``'s C extension (memory-mapped). IPv4 and IPv6; an IPv6
address in an IPv4-only database is simply not placed.

Production replaces the files with geoipupdate (which writes a new file and
renames it over the old). ``refresh`` notices a changed file (inode, size,
modification time) and swaps the reader; lookups are synchronous on the event
loop, so none is in flight on the old reader when it is closed, and no call is
dropped. A new file that cannot be opened is logged and the old one kept.

Per call, the service asks for the raw answer (:meth:`CityDatabase.place_codes`,
:meth:`AnonymousDatabase.listing`): plain strings and booleans it can key its
cache of decisions on; ``locate`` and ``flags`` turn them into domain values.
Addresses are passed to maxminddb as canonical text (:func:`canonical_address`);
an IPv4 address is checked with ``inet_pton`` (strict dotted quad: no leading
zeros, nothing else), which costs a tenth of ``ipaddress``.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import maxminddb

from services.geo.domain.decision import FLAG_NAMES, NetworkFlags
from services.kit.iso3166 import Place, place_from_parts
from services.kit.logging import get_logger

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
# A raw City answer: the country's and the largest subdivision's codes, as MaxMind writes them.
PlaceCodes = tuple[str | None, str | None]
# A raw Anonymous-IP answer: the flags in FLAG_NAMES order; None when the address is not listed.
Listing = tuple[bool, ...] | None
log = get_logger(__name__)


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


def canonical_address(text: str) -> str:
    """The address as canonical text (what decisions record); anything else is refused."""
    stripped = text.strip()
    if ":" not in stripped:
        try:
            socket.inet_pton(socket.AF_INET, stripped)
        except OSError:
            raise InvalidAddress(f"{text!r} is not an IPv4 or IPv6 address") from None
        return stripped  # inet_pton accepts only the canonical dotted quad
    return str(parse_address(stripped))


def open_database(path: Path) -> Any:
    """Open one MaxMind DB file, naming the path if it cannot be read."""
    try:
        return maxminddb.open_database(str(path), maxminddb.MODE_AUTO)
    except (OSError, maxminddb.InvalidDatabaseError, ValueError) as error:
        raise DatabaseError(f"cannot open MaxMind database {path}: {error}") from error


def _record(reader: Any, address: Address | str) -> dict[str, Any] | None:
    try:
        record = reader.get(address)
    except ValueError:
        # An IPv6 address asked of an IPv4-only database: the database does not place it.
        return None
    return record if isinstance(record, dict) else None


def _signature(path: Path) -> tuple[int, int, int]:
    stat = path.stat()
    return stat.st_ino, stat.st_size, stat.st_mtime_ns


class DatabaseFile:
    """One open database file, swapped for the file now at its path by :meth:`refresh`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._signature = _signature_or_none(path)
        self.reader = open_database(path)

    @property
    def uses_c_extension(self) -> bool:
        return type(self.reader).__module__ == "maxminddb.extension"

    def refresh(self) -> bool:
        """Reopen the file if it changed on disk; True if the reader was swapped."""
        signature = _signature_or_none(self.path)
        if signature is None or signature == self._signature:
            return False  # unchanged, or briefly missing mid-replace: keep serving the old one
        self._signature = signature  # a bad new file is reported once, not every interval
        try:
            reader = open_database(self.path)
        except DatabaseError as error:
            log.error("geo_database_reload_failed", path=str(self.path), error=str(error))
            return False
        old, self.reader = self.reader, reader
        old.close()
        log.info("geo_database_reloaded", path=str(self.path))
        return True

    def close(self) -> None:
        self.reader.close()


def _signature_or_none(path: Path) -> tuple[int, int, int] | None:
    try:
        return _signature(path)
    except OSError:
        return None


@dataclass(frozen=True, slots=True)
class CityDatabase:
    """A City-format database: country and the largest subdivision."""

    file: DatabaseFile

    @classmethod
    def open(cls, path: Path) -> CityDatabase:
        return cls(DatabaseFile(path))

    def place_codes(self, address: Address | str) -> PlaceCodes | None:
        """The record's country and largest subdivision codes; None if not placed."""
        record = _record(self.file.reader, address)
        if record is None:
            return None
        country = record.get("country")
        subdivisions = record.get("subdivisions")
        # MaxMind lists subdivisions from largest to smallest; rules name the largest (a state).
        return (
            country.get("iso_code") if country else None,
            subdivisions[0].get("iso_code") if subdivisions else None,
        )

    def locate(self, address: Address | str) -> Place | None:
        codes = self.place_codes(address)
        return place_from_parts(*codes) if codes else None

    def refresh(self) -> bool:
        return self.file.refresh()

    def close(self) -> None:
        self.file.close()


@dataclass(frozen=True, slots=True)
class AnonymousDatabase:
    """An Anonymous-IP-format database: an address it does not list has no flags."""

    file: DatabaseFile

    @classmethod
    def open(cls, path: Path) -> AnonymousDatabase:
        return cls(DatabaseFile(path))

    def listing(self, address: Address | str) -> Listing:
        """The address's flags in FLAG_NAMES order, or None if the database does not list it."""
        record = _record(self.file.reader, address)
        if not record:
            return None
        return tuple(bool(record.get(name, False)) for name in FLAG_NAMES)

    def flags(self, address: Address | str) -> NetworkFlags:
        return network_flags(self.listing(address))

    def refresh(self) -> bool:
        return self.file.refresh()

    def close(self) -> None:
        self.file.close()


NOT_LISTED = NetworkFlags()


@lru_cache(maxsize=64)  # at most 2**6 combinations of flags
def network_flags(listing: Listing) -> NetworkFlags:
    """The domain's flags for a raw listing (pure: the same listing, the same flags)."""
    if listing is None:
        return NOT_LISTED
    return NetworkFlags(*listing)
