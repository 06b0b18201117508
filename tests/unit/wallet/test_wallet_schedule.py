"""Parsing, validating and choosing versioned commission schedules."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from services.wallet.domain.errors import InvalidSchedule, UnknownSchedule
from services.wallet.domain.schedule import (
    FREE_PLAY_SCHEDULE,
    parse_schedule,
    schedule_by_version,
    schedule_in_force,
    shipped_schedules,
)

SHIPPED_TEXT = """
version = "test-1"
currency = "USD"
effective_from = 2026-01-01T00:00:00Z
source = "test"

[single]
bands = [
  { up_to = 2000, up_to_inclusive = true, rate = 0.049 },
  { rate = 0.029 },
]

[series]
per_extra_point = 0.005
bands = [{ base = 0.039, cap = 0.079 }]

[rating]
floor = 1400
low_rating_below = 1620
low_rating_increase = 0.25
difference_increases = [{ at_least = 100, increase = 0.50 }]
no_increase_when_both_above = 1650
no_increase_when_both_below = 1550
discount_when_both_above = 1700
discount = 0.50
cap_when_both_above = 1650
cap_per_player = 500
"""


def variant(old: str, new: str) -> str:
    assert old in SHIPPED_TEXT
    return SHIPPED_TEXT.replace(old, new)


def test_the_shipped_schedule_parses_with_decimal_rates() -> None:
    (schedule,) = shipped_schedules()
    assert schedule.version == "gammonempire-2026-01"
    assert [band.up_to for band in schedule.single_bands] == [2000, 10000, None]
    assert [band.up_to_inclusive for band in schedule.series_bands][:2] == [True, False]
    assert str(schedule.single_bands[0].rate) == "0.049"


def test_a_minimal_schedule_parses() -> None:
    schedule = parse_schedule(SHIPPED_TEXT)
    assert schedule.version == "test-1"
    assert schedule.rating.difference_increases[0].at_least == 100


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('version = "test-1"', "", "version: missing"),
        ('currency = "USD"', 'currency = "PLAY"', "play money pays no commission"),
        ('currency = "USD"', 'currency = "XYZ"', "not held by the wallet"),
        ("2026-01-01T00:00:00Z", "2026-01-01T00:00:00", "UTC offset"),
        ("rate = 0.029 }", "up_to = 9, rate = 0.029 }", "last band must be unbounded"),
        ("up_to = 2000, up_to_inclusive = true,", "", "up_to: missing"),
        ("rate = 0.049", "rate = -0.049", "non-negative decimal"),
        ("rate = 0.049", 'rate = "x"', "non-negative decimal"),
        ("base = 0.039, cap = 0.079", "base = 0.039, cap = 0.01", "below base"),
        ("rate = 0.049", "rate = 0.3", "would take the whole win"),
        ("discount = 0.50", "discount = 1.5", "more than everything"),
        ("floor = 1400", "floor = 1400.5", "non-negative integer"),
        ("[rating]", "[rating", "not valid TOML"),
    ],
)
def test_bad_schedules_are_refused_with_the_reason(old: str, new: str, message: str) -> None:
    with pytest.raises(InvalidSchedule, match=message):
        parse_schedule(variant(old, new), "bad.toml")


def test_band_bounds_must_increase() -> None:
    text = variant(
        "{ rate = 0.029 },",
        "{ up_to = 1000, up_to_inclusive = true, rate = 0.039 },\n  { rate = 0.029 },",
    )
    with pytest.raises(InvalidSchedule, match="strictly increase"):
        parse_schedule(text)


def test_the_schedule_in_force_is_the_latest_effective_one() -> None:
    old = parse_schedule(SHIPPED_TEXT)
    new = parse_schedule(
        variant("test-1", "test-2").replace("2026-01-01T00:00:00Z", "2026-06-01T00:00:00Z")
    )
    at = datetime(2026, 5, 31, 23, 59, tzinfo=UTC)
    assert schedule_in_force("USD", at, [new, old]).version == "test-1"
    assert schedule_in_force("USD", datetime(2026, 6, 1, tzinfo=UTC), [old, new]) is new
    with pytest.raises(UnknownSchedule, match="no commission schedule for USD"):
        schedule_in_force("USD", datetime(2025, 1, 1, tzinfo=UTC), [old, new])
    with pytest.raises(UnknownSchedule, match="EUR"):
        schedule_in_force("EUR", at, [old, new])


def test_play_money_is_always_free() -> None:
    assert schedule_in_force("PLAY", datetime(2000, 1, 1, tzinfo=UTC)) is FREE_PLAY_SCHEDULE
    assert schedule_by_version("play-money-free") is FREE_PLAY_SCHEDULE


def test_a_past_version_can_be_found_and_an_unknown_one_cannot() -> None:
    old = parse_schedule(SHIPPED_TEXT)
    assert schedule_by_version("test-1", [old]) is old
    with pytest.raises(UnknownSchedule, match="no commission schedule has version 'nope'"):
        schedule_by_version("nope", [old])
