"""The commission schedule: versioned data the operator can change, and its parser.

Schedules ship as TOML files in ``schedules/`` next to this module. The parser
is pure (text in, ``CommissionSchedule`` out) and refuses anything ambiguous;
the loader only reads the shipped files. Every settlement records the
``version`` of the schedule it used, so a schedule is never edited in place: a
change is a new file with a new version and a later ``effective_from``.
Play money never pays commission: it is settled under ``FREE_PLAY_SCHEDULE``.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from functools import cache
from importlib import resources
from typing import Any

from services.wallet.domain.errors import InvalidSchedule, UnknownCurrency, UnknownSchedule
from services.wallet.domain.money import PLAY, require_known_currency

SCHEDULE_DIRECTORY = "schedules"
# Above this a winner could be left with less than nothing after paying both commissions.
MAX_PER_PLAYER_RATE = Decimal("0.5")


@dataclass(frozen=True, slots=True)
class SingleBand:
    """Rate for a single game whose win sum is within ``up_to`` (None: no bound)."""

    up_to: int | None
    up_to_inclusive: bool
    rate: Decimal


@dataclass(frozen=True, slots=True)
class SeriesBand:
    """Base rate and cap for a match whose stake is within ``up_to`` (None: no bound)."""

    up_to: int | None
    up_to_inclusive: bool
    base: Decimal
    cap: Decimal


@dataclass(frozen=True, slots=True)
class DifferenceIncrease:
    """Increase applied when the rating difference is at least ``at_least``."""

    at_least: int
    increase: Decimal


@dataclass(frozen=True, slots=True)
class RatingRules:
    """Adjustments that favour games between players of similar rating."""

    floor: int
    low_rating_below: int
    low_rating_increase: Decimal
    difference_increases: tuple[DifferenceIncrease, ...]
    no_increase_when_both_above: int
    no_increase_when_both_below: int
    discount_when_both_above: int
    discount: Decimal
    cap_when_both_above: int
    cap_per_player: int


@dataclass(frozen=True, slots=True)
class CommissionSchedule:
    """One version of the commission schedule for one currency."""

    version: str
    currency: str
    effective_from: datetime
    source: str
    single_bands: tuple[SingleBand, ...]
    per_extra_point: Decimal
    series_bands: tuple[SeriesBand, ...]
    rating: RatingRules
    # What one major unit of ``currency`` is worth in USD for the house's planning (the
    # rate the file's amounts were converted at; 1 for USD). Not a live quote: it values
    # deposits in other currencies against a player's deposit limit (``domain/rates.py``).
    planning_rate_usd: Decimal


def band_admits(up_to: int | None, inclusive: bool, amount: int) -> bool:
    if up_to is None:
        return True
    return amount <= up_to if inclusive else amount < up_to


FREE_PLAY_SCHEDULE = CommissionSchedule(
    version="play-money-free",
    currency=PLAY,
    effective_from=datetime(1970, 1, 1, tzinfo=UTC),
    source="play money pays no commission",
    single_bands=(SingleBand(None, True, Decimal(0)),),
    per_extra_point=Decimal(0),
    series_bands=(SeriesBand(None, True, Decimal(0), Decimal(0)),),
    rating=RatingRules(
        floor=1400,
        low_rating_below=0,
        low_rating_increase=Decimal(0),
        difference_increases=(),
        no_increase_when_both_above=0,
        no_increase_when_both_below=0,
        discount_when_both_above=0,
        discount=Decimal(0),
        cap_when_both_above=0,
        cap_per_player=0,
    ),
    planning_rate_usd=Decimal(0),  # play money has no cash value
)


# --- parsing -------------------------------------------------------------------------------


def parse_schedule(text: str, origin: str = "<schedule>") -> CommissionSchedule:
    """Parse and validate one schedule file; ``origin`` names it in error messages."""
    try:
        data = tomllib.loads(text, parse_float=Decimal)
    except tomllib.TOMLDecodeError as error:
        raise InvalidSchedule(f"{origin}: not valid TOML: {error}") from None
    reader = _Reader(data, origin)
    schedule = CommissionSchedule(
        version=reader.text("version"),
        currency=_schedule_currency(reader),
        effective_from=reader.instant("effective_from"),
        source=reader.text("source"),
        single_bands=_single_bands(reader.table("single")),
        per_extra_point=reader.table("series").rate("per_extra_point"),
        series_bands=_series_bands(reader.table("series")),
        rating=_rating_rules(reader.table("rating")),
        planning_rate_usd=_planning_rate(reader),
    )
    _check_winner_keeps_something(schedule, origin)
    return schedule


class _Reader:
    """Typed access to one TOML table that names the offending key on error."""

    def __init__(self, data: Mapping[str, Any], path: str) -> None:
        self._data = data
        self.path = path

    def fail(self, key: str, problem: str) -> InvalidSchedule:
        return InvalidSchedule(f"{self.path}: {key}: {problem}")

    def _get(self, key: str) -> Any:
        if key not in self._data:
            raise self.fail(key, "missing")
        return self._data[key]

    def has(self, key: str) -> bool:
        return key in self._data

    def text(self, key: str) -> str:
        value = self._get(key)
        if not isinstance(value, str) or not value.strip():
            raise self.fail(key, "must be a non-empty string")
        return value

    def integer(self, key: str) -> int:
        value = self._get(key)
        if type(value) is not int or value < 0:
            raise self.fail(key, f"must be a non-negative integer, got {value!r}")
        return value

    def boolean(self, key: str) -> bool:
        value = self._get(key)
        if type(value) is not bool:
            raise self.fail(key, f"must be true or false, got {value!r}")
        return value

    def rate(self, key: str) -> Decimal:
        value = self._get(key)
        if type(value) is int:
            value = Decimal(value)
        if not isinstance(value, Decimal) or not value.is_finite() or value < 0:
            raise self.fail(key, f"must be a non-negative decimal, got {value!r}")
        return value

    def instant(self, key: str) -> datetime:
        value = self._get(key)
        if not isinstance(value, datetime) or value.tzinfo is None:
            raise self.fail(key, "must be a date-time with a UTC offset, e.g. 2026-11-01T00:00:00Z")
        return value

    def table(self, key: str) -> _Reader:
        value = self._get(key)
        if not isinstance(value, dict):
            raise self.fail(key, "must be a table")
        return _Reader(value, f"{self.path}: {key}")

    def tables(self, key: str) -> list[_Reader]:
        value = self._get(key)
        if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
            raise self.fail(key, "must be a list of tables")
        return [_Reader(item, f"{self.path}: {key}[{index}]") for index, item in enumerate(value)]


def _schedule_currency(reader: _Reader) -> str:
    currency = reader.text("currency")
    try:
        require_known_currency(currency)
    except UnknownCurrency as error:
        raise reader.fail("currency", str(error)) from None
    if currency == PLAY:
        raise reader.fail("currency", "play money pays no commission and takes no schedule")
    return currency


def _planning_rate(reader: _Reader) -> Decimal:
    rate = reader.rate("planning_rate_usd")
    if rate == 0:
        raise reader.fail("planning_rate_usd", "must be above 0 (USD per unit of the currency)")
    if reader.text("currency") == "USD" and rate != 1:
        raise reader.fail("planning_rate_usd", f"a USD schedule's rate is 1, got {rate}")
    return rate


def _band_bound(reader: _Reader, is_last: bool) -> tuple[int | None, bool]:
    if is_last:
        if reader.has("up_to"):
            raise reader.fail("up_to", "the last band must be unbounded")
        return None, True
    return reader.integer("up_to"), reader.boolean("up_to_inclusive")


def _check_band_order(readers: list[_Reader], bounds: list[int | None]) -> None:
    if not readers:
        raise InvalidSchedule("a schedule needs at least one band per kind of game")
    finite = [bound for bound in bounds if bound is not None]
    if finite != sorted(set(finite)):
        raise readers[0].fail("up_to", "band bounds must strictly increase")


def _single_bands(reader: _Reader) -> tuple[SingleBand, ...]:
    readers = reader.tables("bands")
    bands = []
    for index, band in enumerate(readers):
        up_to, inclusive = _band_bound(band, index == len(readers) - 1)
        bands.append(SingleBand(up_to, inclusive, band.rate("rate")))
    _check_band_order(readers, [band.up_to for band in bands])
    return tuple(bands)


def _series_bands(reader: _Reader) -> tuple[SeriesBand, ...]:
    readers = reader.tables("bands")
    bands = []
    for index, band in enumerate(readers):
        up_to, inclusive = _band_bound(band, index == len(readers) - 1)
        base, cap = band.rate("base"), band.rate("cap")
        if cap < base:
            raise band.fail("cap", f"cap {cap} is below base {base}")
        bands.append(SeriesBand(up_to, inclusive, base, cap))
    _check_band_order(readers, [band.up_to for band in bands])
    return tuple(bands)


def _difference_increases(reader: _Reader) -> tuple[DifferenceIncrease, ...]:
    increases = tuple(
        DifferenceIncrease(item.integer("at_least"), item.rate("increase"))
        for item in reader.tables("difference_increases")
    )
    thresholds = [item.at_least for item in increases]
    if thresholds != sorted(set(thresholds)):
        raise reader.fail("difference_increases", "at_least must strictly increase")
    return increases


def _rating_rules(reader: _Reader) -> RatingRules:
    discount = reader.rate("discount")
    if discount > 1:
        raise reader.fail("discount", f"cannot take away more than everything, got {discount}")
    return RatingRules(
        floor=reader.integer("floor"),
        low_rating_below=reader.integer("low_rating_below"),
        low_rating_increase=reader.rate("low_rating_increase"),
        difference_increases=_difference_increases(reader),
        no_increase_when_both_above=reader.integer("no_increase_when_both_above"),
        no_increase_when_both_below=reader.integer("no_increase_when_both_below"),
        discount_when_both_above=reader.integer("discount_when_both_above"),
        discount=discount,
        cap_when_both_above=reader.integer("cap_when_both_above"),
        cap_per_player=reader.integer("cap_per_player"),
    )


def _check_winner_keeps_something(schedule: CommissionSchedule, origin: str) -> None:
    rules = schedule.rating
    largest_increase = max((item.increase for item in rules.difference_increases), default=0)
    largest_base = max(
        [band.rate for band in schedule.single_bands] + [band.cap for band in schedule.series_bands]
    )
    worst = largest_base * (1 + rules.low_rating_increase + largest_increase)
    if worst >= MAX_PER_PLAYER_RATE:
        raise InvalidSchedule(
            f"{origin}: the highest adjusted rate {worst} per player would take the whole win; "
            f"it must stay below {MAX_PER_PLAYER_RATE}"
        )


# --- the shipped schedules -----------------------------------------------------------------


@cache
def shipped_schedules() -> tuple[CommissionSchedule, ...]:
    """Every schedule file shipped in the package, oldest first."""
    directory = resources.files(__package__).joinpath(SCHEDULE_DIRECTORY)
    files = sorted(
        (entry for entry in directory.iterdir() if entry.name.endswith(".toml")),
        key=lambda entry: entry.name,
    )
    schedules = [parse_schedule(entry.read_text("utf-8"), entry.name) for entry in files]
    _require_unique_versions(schedules)
    return tuple(sorted(schedules, key=lambda schedule: schedule.effective_from))


def _require_unique_versions(schedules: Iterable[CommissionSchedule]) -> None:
    seen: set[str] = set()
    for schedule in schedules:
        if schedule.version in seen:
            raise InvalidSchedule(f"two schedule files declare version {schedule.version!r}")
        seen.add(schedule.version)


def schedule_by_version(
    version: str, schedules: Iterable[CommissionSchedule] | None = None
) -> CommissionSchedule:
    """The schedule a past settlement recorded, to recompute or explain it."""
    candidates = [*(shipped_schedules() if schedules is None else schedules), FREE_PLAY_SCHEDULE]
    for schedule in candidates:
        if schedule.version == version:
            return schedule
    known = ", ".join(sorted(schedule.version for schedule in candidates))
    raise UnknownSchedule(f"no commission schedule has version {version!r} (known: {known})")


def schedule_in_force(
    currency: str, at: datetime, schedules: Iterable[CommissionSchedule] | None = None
) -> CommissionSchedule:
    """The schedule for ``currency`` with the latest ``effective_from`` not after ``at``."""
    require_known_currency(currency)
    if currency == PLAY:
        return FREE_PLAY_SCHEDULE
    candidates = [
        schedule
        for schedule in (shipped_schedules() if schedules is None else schedules)
        if schedule.currency == currency and schedule.effective_from <= at
    ]
    if not candidates:
        raise UnknownSchedule(
            f"no commission schedule for {currency} is in force at {at.isoformat()}; "
            "an operator must ship one before games in that currency can be settled"
        )
    return max(candidates, key=lambda schedule: schedule.effective_from)


def playable_currencies(
    at: datetime, schedules: Iterable[CommissionSchedule] | None = None
) -> tuple[str, ...]:
    """The currencies a table may play in at ``at``: PLAY, and each with a schedule in force."""
    pool = shipped_schedules() if schedules is None else schedules
    priced = {schedule.currency for schedule in pool if schedule.effective_from <= at}
    return tuple(sorted(priced | {PLAY}))


def require_playable_currency(
    currency: str, at: datetime, schedules: Iterable[CommissionSchedule] | None = None
) -> str:
    """Refuse, before any stake is held, a currency whose games could not be settled.

    A hold or a table in a currency without a commission schedule in force would only
    fail at settlement, with the stakes already on the table; this says so up front.
    """
    pool = tuple(shipped_schedules() if schedules is None else schedules)
    playable = playable_currencies(at, pool)
    if currency not in playable:
        raise UnknownCurrency(
            f"no commission schedule for {currency!r} is in force, so no stake can be held "
            f"or table opened in it; tables play in {', '.join(playable)}"
        )
    return currency
