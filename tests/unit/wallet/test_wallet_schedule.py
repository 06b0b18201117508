"""Parsing, validating and choosing versioned commission schedules."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from services.wallet.domain.errors import InvalidSchedule, UnknownCurrency, UnknownSchedule
from services.wallet.domain.money import MINOR_UNIT_EXPONENTS, PLAY
from services.wallet.domain.schedule import (
    FREE_PLAY_SCHEDULE,
    parse_schedule,
    playable_currencies,
    require_playable_currency,
    schedule_by_version,
    schedule_in_force,
)

SHIPPED_TEXT = """
version = "test-1"
currency = "USD"
effective_from = 2026-01-01T00:00:00Z
source = "test"
planning_rate_usd = 1

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
    schedule = schedule_by_version("gammonempire-2026-01")
    assert schedule.currency == "USD"
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
        ("planning_rate_usd = 1", "", "planning_rate_usd: missing"),
        ("planning_rate_usd = 1", "planning_rate_usd = 0", "must be above 0"),
        ("planning_rate_usd = 1", "planning_rate_usd = 1.17", "USD schedule's rate is 1"),
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


SHIPPED_FROM = datetime(2026, 1, 1, tzinfo=UTC)


def test_every_currency_the_wallet_holds_has_a_schedule_in_force() -> None:
    """A currency the wallet holds without a schedule could not be settled."""
    held = set(MINOR_UNIT_EXPONENTS) - {PLAY}
    for currency in held:
        assert schedule_in_force(currency, SHIPPED_FROM).currency == currency
    assert playable_currencies(SHIPPED_FROM) == ("EUR", "GBP", "PLAY", "USD")


@pytest.mark.parametrize(
    ("version", "currency", "bounds", "cap"),
    [
        # The seed's $20 / $100 bounds and $5 cap at 1 EUR = 1.17 USD and 1 GBP = 1.33 USD,
        # rounded to whole units: 20/1.17 = 17.09, 100/1.17 = 85.47, 5/1.17 = 4.27;
        # 20/1.33 = 15.04, 100/1.33 = 75.19, 5/1.33 = 3.76.
        ("gammonempire-2026-01-eur", "EUR", [1700, 8500, None], 400),
        ("gammonempire-2026-01-gbp", "GBP", [1500, 7500, None], 400),
    ],
)
def test_eur_and_gbp_schedules_have_their_own_bounds(
    version: str, currency: str, bounds: list[int | None], cap: int
) -> None:
    schedule = schedule_by_version(version)
    assert schedule.currency == currency
    assert [band.up_to for band in schedule.single_bands] == bounds
    assert [band.up_to for band in schedule.series_bands] == bounds
    assert [str(band.rate) for band in schedule.single_bands] == ["0.049", "0.039", "0.029"]
    assert [str(band.cap) for band in schedule.series_bands] == ["0.099", "0.089", "0.079"]
    assert schedule.rating.cap_per_player == cap


def test_a_currency_without_a_schedule_in_force_is_refused_naming_the_playable_ones() -> None:
    usd_only = [parse_schedule(SHIPPED_TEXT)]
    at = datetime(2026, 2, 1, tzinfo=UTC)
    assert require_playable_currency("USD", at, usd_only) == "USD"
    assert require_playable_currency("PLAY", at, usd_only) == "PLAY"
    with pytest.raises(UnknownCurrency, match=r"'EUR' is in force.*play in PLAY, USD"):
        require_playable_currency("EUR", at, usd_only)
    with pytest.raises(UnknownCurrency, match="'USD'"):  # not yet in force
        require_playable_currency("USD", datetime(2025, 12, 31, tzinfo=UTC), usd_only)
