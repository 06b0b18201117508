"""Synthetic MaxMind databases at production's size, for ``tavla bench geo``; built once, cached.

The City-format database has ``ranges`` networks (default 1,000,000 IPv4 plus
50,000 IPv6) whose records have the shape and size of GeoIP2 City records:
continent, country, registered country, the largest subdivision and a city,
each with names in the eight languages MaxMind ships, plus location and postal
code. The size matters: maxminddb decodes the whole record on every lookup,
in production as here. Places are real ISO codes (pycountry's countries and
top-level subdivisions; a third of the networks are in the US, a few of those
without a state), names are made up. About 2% of the IPv4 space between the
networks is left out (addresses the database does not place).

The Anonymous-IP-format database has ``anonymous_ranges`` networks (/24 to
/29, VPNs, hosting providers, public and residential proxies, Tor exits) at
random places. Everything follows from a seed, so the benchmark can draw its
addresses from the same plan without reading the files back
(:func:`sample_addresses`).

Building takes minutes (mmdb-writer is pure Python), so the files go into a
cache directory under names that encode the plan (sizes, seed, format
version), are written to a temporary name and renamed into place when done,
and are reused by every later run. mmdb-writer is in the ``local`` extra: this
module is for the benchmark only, like ``devdata``.
"""

from __future__ import annotations

import ipaddress
import os
import random
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pycountry
from mmdb_writer import MMDBWriter
from netaddr import IPNetwork, IPSet

# Bump when the plan or the record shape changes: old cached files are then ignored.
FORMAT_VERSION = 1
DEFAULT_RANGES = 1_000_000
DEFAULT_IPV6_RANGES = 50_000
DEFAULT_ANONYMOUS_RANGES = 200_000
DEFAULT_SEED = 11
PLACES = 4000  # distinct City records (cities)
LANGUAGES = ("de", "en", "es", "fr", "ja", "pt-BR", "ru", "zh-CN")  # as in GeoIP2 City
IPV4_FIRST = int(ipaddress.IPv4Address("1.0.0.0"))
IPV4_END = int(ipaddress.IPv4Address("224.0.0.0"))  # multicast and above: never placed
IPV6_FIRST = int(ipaddress.IPv6Address("2400::"))
IPV6_BLOCK = 40  # IPv6 networks are /40s, one after another from 2400::
CHUNK_PREFIX = 18  # the IPv4 space is cut into /18s...
SPLIT = 0.47  # ...and each network split in two with this probability (about 4.5 per chunk)
GAP_SHARE = 0.02  # networks left out of the City database: unplaced addresses
US_SHARE = 0.33
US_WITHOUT_STATE = 0.03
ANONYMOUS_KINDS = (  # (flag, share of the anonymous networks)
    ("is_anonymous_vpn", 0.45),
    ("is_hosting_provider", 0.35),
    ("is_public_proxy", 0.08),
    ("is_residential_proxy", 0.08),
    ("is_tor_exit_node", 0.04),
)
Progress = Callable[[str], None]
_COUNTRIES: Any = pycountry.countries
_SUBDIVISIONS: Any = pycountry.subdivisions


@dataclass(frozen=True, slots=True)
class Plan:
    """What the databases hold; equal plans make equal files."""

    ranges: int = DEFAULT_RANGES
    ipv6_ranges: int = DEFAULT_IPV6_RANGES
    anonymous_ranges: int = DEFAULT_ANONYMOUS_RANGES
    seed: int = DEFAULT_SEED

    @property
    def name(self) -> str:
        return (
            f"v{FORMAT_VERSION}-r{self.ranges}-v6r{self.ipv6_ranges}"
            f"-a{self.anonymous_ranges}-s{self.seed}"
        )


@dataclass(frozen=True, slots=True)
class BenchDatabases:
    city: Path
    anonymous: Path
    plan: Plan
    city_networks: int  # networks written into the City database (IPv4 + IPv6)
    anonymous_networks: int


def _names(label: str) -> dict[str, str]:
    return {language: f"{label} ({language})" for language in LANGUAGES}


def _place_records(rng: random.Random) -> list[dict[str, Any]]:
    """``PLACES`` City records with GeoIP2 City's fields, a third of them in the US."""
    countries = sorted(country.alpha_2 for country in _COUNTRIES)
    regions: dict[str, list[str]] = defaultdict(list)
    for subdivision in _SUBDIVISIONS:
        if subdivision.parent_code is None:
            regions[subdivision.country_code].append(subdivision.code)
    records = []
    for index in range(PLACES):
        country = "US" if rng.random() < US_SHARE else rng.choice(countries)
        record: dict[str, Any] = {
            "city": {"geoname_id": 1_000_000 + index, "names": _names(f"City {index}")},
            "continent": {"code": "XX", "geoname_id": 6_255_000, "names": _names("Continent")},
            "country": {"geoname_id": 2_000_000 + index, "iso_code": country,
                        "names": _names(f"Country {country}")},
            "registered_country": {"geoname_id": 2_000_000 + index, "iso_code": country,
                                   "names": _names(f"Country {country}")},
            "location": {"accuracy_radius": rng.choice((5, 10, 20, 50, 100, 200)),
                         "latitude": round(rng.uniform(-60, 70), 4),
                         "longitude": round(rng.uniform(-180, 180), 4),
                         "time_zone": "Etc/UTC"},
            "postal": {"code": f"{rng.randrange(100_000):05d}"},
        }  # fmt: skip
        choices = sorted(regions.get(country, []))
        if choices and not (country == "US" and rng.random() < US_WITHOUT_STATE):
            region = rng.choice(choices)
            # MaxMind writes the subdivision without its country prefix ("FL").
            record["subdivisions"] = [{"geoname_id": 3_000_000 + index,
                                       "iso_code": region.split("-", 1)[1],
                                       "names": _names(f"Region {region}")}]  # fmt: skip
        records.append(record)
    return records


def _ipv4_blocks(plan: Plan, rng: random.Random) -> Iterator[tuple[int, int]]:
    """(start, prefix length) of the plan's IPv4 networks, gaps included, in address order.

    The space from 1.0.0.0 is cut into /18 chunks and each chunk split at random
    (each half split again with probability ``SPLIT``, down to /28), which gives
    aligned networks of mixed sizes, as a real database has.
    """
    chunk = 1 << (32 - CHUNK_PREFIX)
    for start in range(IPV4_FIRST, IPV4_END, chunk):
        yield from _split(start, CHUNK_PREFIX, rng)


def _split(start: int, prefix: int, rng: random.Random) -> Iterator[tuple[int, int]]:
    if prefix >= 28 or rng.random() >= SPLIT:
        yield start, prefix
        return
    yield from _split(start, prefix + 1, rng)
    yield from _split(start + (1 << (31 - prefix)), prefix + 1, rng)


def _city_networks(plan: Plan, rng: random.Random) -> Iterator[tuple[str, int]]:
    """(network, record index): IPv4 networks one after another, then IPv6 /40s.

    Neighbouring networks never share a record, so mmdb-writer cannot merge them.
    The IPv4 networks end at :func:`ipv4_end` of the plan.
    """
    written, previous = 0, -1
    for start, prefix in _ipv4_blocks(plan, rng):
        if written == plan.ranges:
            break
        if rng.random() < GAP_SHARE:
            continue
        record = rng.randrange(PLACES - 1)
        record += record >= previous  # never the neighbour's record
        previous = record
        written += 1
        yield f"{ipaddress.IPv4Address(start)}/{prefix}", record
    if written < plan.ranges:
        raise ValueError(f"{plan.ranges} IPv4 networks do not fit below 224.0.0.0")
    for index in range(plan.ipv6_ranges):
        first = ipaddress.IPv6Address(IPV6_FIRST + (index << (128 - IPV6_BLOCK)))
        network = f"{first}/{IPV6_BLOCK}"
        record = rng.randrange(PLACES - 1)
        record += record >= previous
        previous = record
        yield network, record


def ipv4_end(plan: Plan) -> int:
    """Where the plan's IPv4 networks end (the same draws as the build, nothing written)."""
    rng = random.Random(plan.seed)
    _place_records(rng)
    written = 0
    for start, _prefix in _ipv4_blocks(plan, rng):
        if written == plan.ranges:
            return start
        if rng.random() < GAP_SHARE:
            continue
        rng.randrange(PLACES - 1)
        written += 1
    return IPV4_END


def anonymous_networks(plan: Plan) -> list[tuple[str, str]]:
    """(network, flag): distinct /24 blocks, each listing a /24 to /29 at its start."""
    rng = random.Random(plan.seed + 1)
    blocks = rng.sample(range(IPV4_FIRST >> 8, IPV4_END >> 8), plan.anonymous_ranges)
    flags = [flag for flag, _ in ANONYMOUS_KINDS]
    weights = [share for _, share in ANONYMOUS_KINDS]
    networks = []
    for block in blocks:
        network = f"{ipaddress.IPv4Address(block << 8)}/{rng.randint(24, 29)}"
        networks.append((network, rng.choices(flags, weights)[0]))
    return networks


def _write(path: Path, writer: MMDBWriter, progress: Progress, what: str) -> None:
    started = time.monotonic()
    progress(f"{what}: writing {path.name} (the tree walk and encoding take a while)")
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    writer.to_db_file(str(partial))
    partial.replace(path)  # complete files only: a killed build leaves no cached half
    progress(f"{what}: written in {time.monotonic() - started:.0f} s")


def _insert_groups(
    writer: MMDBWriter,
    groups: dict[Any, list[str]],
    record_of: Callable[[Any], dict[str, Any]],
    progress: Progress,
    what: str,
) -> None:
    """One mmdb-writer insert per record (an IPSet of its networks), reporting progress."""
    started, done, total = time.monotonic(), 0, sum(len(g) for g in groups.values())
    next_report = 0
    for key, networks in groups.items():
        writer.insert_network(IPSet(IPNetwork(network) for network in networks), record_of(key))
        done += len(networks)
        if done >= next_report:
            elapsed = time.monotonic() - started
            progress(f"{what}: {done:,} of {total:,} networks inserted ({elapsed:.0f} s)")
            next_report += max(total // 10, 1)


def build_city(path: Path, plan: Plan, progress: Progress) -> int:
    rng = random.Random(plan.seed)
    records = _place_records(rng)
    groups: dict[Any, list[str]] = defaultdict(list)
    count = 0
    for network, record in _city_networks(plan, rng):
        groups[record].append(network)
        count += 1
    writer = MMDBWriter(ip_version=6, database_type="GeoIP2-City", ipv4_compatible=True,
                        languages=list(LANGUAGES),
                        description="Tavla benchmark: synthetic places, not real data")  # fmt: skip
    _insert_groups(writer, groups, records.__getitem__, progress, "City")
    _write(path, writer, progress, "City")
    return count


def build_anonymous(path: Path, plan: Plan, progress: Progress) -> int:
    groups: dict[Any, list[str]] = defaultdict(list)
    networks = anonymous_networks(plan)
    for network, flag in networks:
        groups[flag].append(network)
    writer = MMDBWriter(
        ip_version=6, database_type="GeoIP2-Anonymous-IP", ipv4_compatible=True,
        description="Tavla benchmark: synthetic networks, not real data",
    )  # fmt: skip
    _insert_groups(
        writer, groups, lambda flag: {"is_anonymous": True, flag: True}, progress, "Anonymous-IP"
    )
    _write(path, writer, progress, "Anonymous-IP")
    return len(networks)


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tavla" / "bench-geo"


def stderr_progress(message: str) -> None:
    print(f"[bench geo] {message}", file=sys.stderr, flush=True)


def ensure_databases(
    cache_dir: Path, plan: Plan = Plan(), progress: Progress = stderr_progress
) -> BenchDatabases:
    """The plan's databases in ``cache_dir``: built now if missing, else reused."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    city = cache_dir / f"city-{plan.name}.mmdb"
    anonymous = cache_dir / f"anonymous-{plan.name}.mmdb"
    city_count = plan.ranges + plan.ipv6_ranges
    if city.exists():
        progress(f"City database cached: {city}")
    else:
        progress(f"building the City database ({city_count:,} networks) into {cache_dir}; "
                 "once only, later runs reuse it")  # fmt: skip
        built = build_city(city, plan, progress)
        assert built == city_count, (built, city_count)
    if anonymous.exists():
        progress(f"Anonymous-IP database cached: {anonymous}")
    else:
        progress(f"building the Anonymous-IP database ({plan.anonymous_ranges:,} networks)")
        build_anonymous(anonymous, plan, progress)
    return BenchDatabases(city, anonymous, plan, city_count, plan.anonymous_ranges)


def sample_addresses(plan: Plan, count: int, seed: int = 5) -> list[str]:
    """Addresses to look up: 90% anywhere in the IPv4 space the City networks cover
    (so about 2% unplaced), 5% inside anonymous networks, 5% inside the IPv6 networks."""
    rng = random.Random(seed)
    anonymous = [IPNetwork(network) for network, _ in anonymous_networks(plan)]
    ipv6_end = IPV6_FIRST + (plan.ipv6_ranges << (128 - IPV6_BLOCK))
    covered = ipv4_end(plan)
    addresses = []
    for _ in range(count):
        draw = rng.random()
        if draw < 0.05 and anonymous:
            network = rng.choice(anonymous)
            address = str(ipaddress.IPv4Address(network.first + rng.randrange(network.size)))
        elif draw < 0.10 and plan.ipv6_ranges:
            address = str(ipaddress.IPv6Address(rng.randrange(IPV6_FIRST, ipv6_end)))
        else:
            address = str(ipaddress.IPv4Address(rng.randrange(IPV4_FIRST, covered)))
        addresses.append(address)
    return addresses
