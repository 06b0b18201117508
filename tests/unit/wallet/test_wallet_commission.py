"""The USD commission schedule: its examples, every band boundary and rating rule."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from services.wallet.domain.commission import (
    CommissionQuote,
    quote_match,
    quote_single_game,
    rating_adjustment,
)
from services.wallet.domain.errors import UnknownCurrency
from services.wallet.domain.money import Money
from services.wallet.domain.schedule import FREE_PLAY_SCHEDULE, schedule_by_version
from services.wallet.domain.terms import Match, MoneyGame, WinType

SCHEDULE = schedule_by_version("gammonempire-2026-01")
EQUAL = (1500, 1500)  # both below 1550: no rating increase


def usd(cents: int) -> Money:
    return Money(cents, "USD")


def single(cents: int, ratings: tuple[int, int] = EQUAL) -> CommissionQuote:
    return quote_single_game(SCHEDULE, MoneyGame(usd(cents)), 1, WinType.SINGLE, ratings)


def test_single_game_example_from_the_schedule() -> None:
    quote = quote_single_game(SCHEDULE, MoneyGame(usd(500)), 1, WinType.GAMMON, (1500, 1500))
    assert quote.amount == usd(1000)
    assert quote.per_player == usd(49)
    assert quote.winner_credit == usd(902)
    assert quote.loser_debit == usd(1000)
    assert quote.schedule_version == "gammonempire-2026-01"


def test_match_example_from_the_schedule() -> None:
    quote = quote_match(SCHEDULE, Match(usd(1000), 3), (1500, 1500))
    assert quote.rate == Decimal("0.059")
    assert quote.per_player == usd(59)
    assert quote.winner_credit == usd(882)
    assert quote.loser_debit == usd(1000)


@pytest.mark.parametrize(
    ("win_cents", "rate"),
    [
        (1, "0.049"),
        (2000, "0.049"),  # W = $20 exactly is still the first band
        (2001, "0.039"),
        (10000, "0.039"),  # W = $100 exactly is still the middle band
        (10001, "0.029"),
        (1_000_000, "0.029"),
    ],
)
def test_single_game_rate_follows_the_win_sum(win_cents: int, rate: str) -> None:
    assert single(win_cents).rate == Decimal(rate)


def test_single_game_band_uses_the_final_win_sum_not_the_stake() -> None:
    # $8 stake, cube 4, backgammon: W = $96, so the middle band.
    quote = quote_single_game(SCHEDULE, MoneyGame(usd(800)), 4, WinType.BACKGAMMON, EQUAL)
    assert quote.amount == usd(9600)
    assert quote.rate == Decimal("0.039")
    assert quote.per_player == usd(374)  # 374.4 rounds down


@pytest.mark.parametrize(
    ("stake_cents", "length", "rate"),
    [
        (2000, 1, "0.049"),  # S = $20 exactly: first band
        (2001, 1, "0.044"),
        (9999, 1, "0.044"),
        (10000, 1, "0.039"),  # S = $100 exactly: last band
        (2000, 11, "0.099"),  # 4.9% + 10 x 0.5% reaches the cap exactly
        (2000, 12, "0.099"),
        (5000, 7, "0.074"),
        (5000, 25, "0.089"),
        (10000, 5, "0.059"),
        (10000, 25, "0.079"),
    ],
)
def test_series_rate_follows_stake_and_length_up_to_the_cap(
    stake_cents: int, length: int, rate: str
) -> None:
    assert quote_match(SCHEDULE, Match(usd(stake_cents), length), EQUAL).rate == Decimal(rate)


def increase(first: int, second: int) -> Decimal:
    return rating_adjustment(SCHEDULE.rating, first, second).increase


def test_rating_below_1400_counts_as_1400() -> None:
    assert rating_adjustment(SCHEDULE.rating, 1399, 1600) == rating_adjustment(
        SCHEDULE.rating, 1400, 1600
    )
    # 1300 vs 1600 is a difference of 200 (not 300) once 1300 counts as 1400.
    assert increase(1300, 1600) == Decimal("1.25")


@pytest.mark.parametrize(
    ("difference", "expected"),
    [
        (99, "0"),
        (100, "0.50"),
        (199, "0.50"),
        (200, "1.00"),
        (249, "1.00"),
        (250, "1.50"),
        (299, "1.50"),
        (300, "2.00"),
        (400, "2.00"),
    ],
)
def test_difference_bands(difference: int, expected: str) -> None:
    # 1620 is neither below 1620 nor above 1650, so only the difference counts.
    assert increase(1620, 1620 + difference) == Decimal(expected)
    assert increase(1620 + difference, 1620) == Decimal(expected)


def test_low_rating_increase_starts_below_1620() -> None:
    assert increase(1619, 1619) == Decimal("0.25")
    assert increase(1620, 1620) == Decimal(0)


def test_increases_add_up() -> None:
    assert increase(1500, 1700) == Decimal("1.25")
    quote = quote_single_game(SCHEDULE, MoneyGame(usd(1000)), 1, WinType.SINGLE, (1500, 1700))
    assert quote.rate == Decimal("0.049") * Decimal("2.25")
    assert quote.per_player == usd(110)  # 110.25


def test_no_increase_when_both_above_1650() -> None:
    assert increase(1651, 1990) == Decimal(0)
    assert increase(1650, 1990) == Decimal("2.00")


def test_no_increase_when_both_below_1550() -> None:
    assert increase(1549, 1400) == Decimal(0)
    assert increase(1200, 1549) == Decimal(0)
    assert increase(1550, 1400) == Decimal("0.75")


def test_half_off_when_both_above_1700() -> None:
    assert single(1000, (1701, 1750)).rate == Decimal("0.0245")
    assert single(1000, (1700, 1750)).rate == Decimal("0.049")


def test_five_dollar_cap_per_player_when_both_above_1650() -> None:
    big_win = 100_000  # $1000 at 2.9% would be $29 each
    capped = single(big_win, (1660, 1660))
    assert capped.per_player == usd(500)
    assert capped.capped
    assert capped.winner_credit == usd(big_win - 1000)
    uncapped = single(big_win, (1650, 1660))
    assert uncapped.per_player == usd(2900)
    assert not uncapped.capped


def test_discount_applies_before_the_cap() -> None:
    quote = single(100_000, (1800, 1800))  # 2.9% halved = $14.50, then capped at $5
    assert quote.rate == Decimal("0.0145")
    assert quote.per_player == usd(500)
    small = single(1000, (1800, 1800))  # 2.45% of $10 = 24.5 cents, under the cap
    assert small.per_player == usd(25)
    assert not small.capped


def test_rounding_is_half_up_to_the_cent() -> None:
    assert single(500).per_player == usd(25)  # 24.5 cents: half-even would give 24
    assert single(1010).per_player == usd(49)  # 49.49 cents
    assert single(510).per_player == usd(25)  # 24.99 cents


def test_play_money_pays_no_commission() -> None:
    game = MoneyGame(Money(10_000, "PLAY"))
    quote = quote_single_game(FREE_PLAY_SCHEDULE, game, 2, WinType.GAMMON, (1400, 1900))
    assert quote.per_player == Money(0, "PLAY")
    assert quote.winner_credit == quote.loser_debit == Money(40_000, "PLAY")
    assert quote.schedule_version == "play-money-free"


def test_a_schedule_prices_only_its_own_currency() -> None:
    with pytest.raises(UnknownCurrency, match="cannot price a settlement in EUR"):
        quote_single_game(SCHEDULE, MoneyGame(Money(500, "EUR")), 1, WinType.SINGLE, EQUAL)
    with pytest.raises(UnknownCurrency):
        quote_single_game(SCHEDULE, MoneyGame(Money(500, "PLAY")), 1, WinType.SINGLE, EQUAL)


def test_decimal_ratings_are_accepted() -> None:
    strong = rating_adjustment(SCHEDULE.rating, Decimal("1650.01"), Decimal("1999.5"))
    assert strong.increase == Decimal(0)
    assert strong.cap_per_player == 500
    assert rating_adjustment(SCHEDULE.rating, Decimal("1619.99"), 1625).increase == Decimal("0.25")


def test_the_quote_records_the_ratings_it_counted() -> None:
    quote = single(1000, (1200, 1700))
    assert quote.adjustment.counted_ratings == (Decimal(1400), Decimal(1700))
    assert quote.adjustment.increase == Decimal("2.25")  # +25% and a difference of 300


EUR = schedule_by_version("gammonempire-2026-01-eur")
GBP = schedule_by_version("gammonempire-2026-01-gbp")


@pytest.mark.parametrize(
    ("schedule", "currency", "stake", "result", "per_player"),
    [
        # EUR: W = 9.00 x 2 = 18.00 > 17.00, so 3.9% (USD bounds would say 4.9%):
        # 1800 x 0.039 = 70.2 -> 70 cents each.
        (EUR, "EUR", 900, WinType.GAMMON, 70),
        # EUR: W = 17.00 is still the first band: 1700 x 0.049 = 83.3 -> 83.
        (EUR, "EUR", 1700, WinType.SINGLE, 83),
        # EUR: W = 90.00 > 85.00: 2.9%: 9000 x 0.029 = 261.
        (EUR, "EUR", 3000, WinType.BACKGAMMON, 261),
        # GBP: W = 16.00 > 15.00: 1600 x 0.039 = 62.4 -> 62 pence each.
        (GBP, "GBP", 800, WinType.GAMMON, 62),
        # GBP: W = 76.00 > 75.00: 7600 x 0.029 = 220.4 -> 220.
        (GBP, "GBP", 3800, WinType.GAMMON, 220),
    ],
)
def test_eur_and_gbp_single_games_by_their_own_bands(
    schedule: Any, currency: str, stake: int, result: WinType, per_player: int
) -> None:
    quote = quote_single_game(schedule, MoneyGame(Money(stake, currency)), 1, result, EQUAL)
    win = stake * int(result)
    assert quote.per_player == Money(per_player, currency)
    assert quote.winner_credit == Money(win - 2 * per_player, currency)
    assert quote.schedule_version == schedule.version


def test_the_eur_cap_is_four_euros_per_player() -> None:
    # Both above 1650 (not above 1700: no discount): W = 300.00 x 2.9% = 8.70, capped at 4.00.
    quote = quote_single_game(
        EUR, MoneyGame(Money(10000, "EUR")), 1, WinType.BACKGAMMON, (1690, 1690)
    )
    assert quote.per_player == Money(400, "EUR") and quote.capped


def test_a_eur_series_by_its_own_bands() -> None:
    # S = 20.00 EUR > 17.00: base 4.4% + 0.5% x 4 for 5 points = 6.4%: 2000 x 0.064 = 128.
    quote = quote_match(EUR, Match(Money(2000, "EUR"), 5), EQUAL)
    assert quote.rate == Decimal("0.064") and quote.per_player == Money(128, "EUR")
