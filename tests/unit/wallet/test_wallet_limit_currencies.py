"""A deposit limit set in one currency counts deposits in every real currency.

Deposits in another currency count at the operator's planning rates (1 EUR = 1.17 USD,
1 GBP = 1.33 USD, from the shipped schedules), rounded up to the next minor unit of the
limit's currency. Every expected value below is worked by hand in its comment.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from services.wallet.domain.errors import CurrencyMismatch, LimitExceeded, UnknownSchedule
from services.wallet.domain.limits import (
    Deposit,
    LimitPeriod,
    PlayerLimits,
    change_deposit_limit,
    check_deposit,
    check_deposit_everywhere,
    deposit_headroom,
    deposited_within,
)
from services.wallet.domain.money import Money
from services.wallet.domain.rates import PlanningRates, planning_rates

T0 = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
DAY = LimitPeriod.DAY
RATES = PlanningRates({"USD": Decimal(1), "EUR": Decimal("1.17"), "GBP": Decimal("1.33")})


def daily_limit(currency: str, minor: int) -> PlayerLimits:
    limits, _ = change_deposit_limit(PlayerLimits("ann", currency), DAY, Money(minor, currency), T0)
    return limits


def test_the_shipped_schedules_carry_the_planning_rates() -> None:
    assert planning_rates(T0) == RATES


def test_a_currency_without_a_schedule_has_no_rate_and_is_not_converted() -> None:
    # Before any schedule is in force there is no rate: counting refuses, never guesses.
    with pytest.raises(UnknownSchedule, match="no planning rate for EUR"):
        planning_rates(datetime(2025, 1, 1, tzinfo=UTC)).counted_as(Money(100, "EUR"), "USD")


@pytest.mark.parametrize(
    ("amount", "currency", "expected"),
    [
        (Money(50000, "EUR"), "USD", 58500),  # 500.00 x 1.17 = 585.00 USD exactly
        (Money(50000, "GBP"), "USD", 66500),  # 500.00 x 1.33 = 665.00 USD exactly
        (Money(1, "EUR"), "USD", 2),  # 0.01 x 1.17 = 0.0117 USD, up to 0.02
        (Money(854, "EUR"), "USD", 1000),  # 8.54 x 1.17 = 9.9918, up to 10.00
        (Money(855, "EUR"), "USD", 1001),  # 8.55 x 1.17 = 10.0035, up to 10.01
        (Money(1000, "USD"), "EUR", 855),  # 10.00 / 1.17 = 8.5470..., up to 8.55
        (Money(1170, "USD"), "EUR", 1000),  # 11.70 / 1.17 = 10.00 exactly
        (Money(1000, "EUR"), "GBP", 880),  # 10.00 x 1.17 / 1.33 = 8.7969..., up to 8.80
        (Money(700, "GBP"), "GBP", 700),  # the same currency is not converted
    ],
)
def test_a_conversion_rounds_up_to_the_next_minor_unit(
    amount: Money, currency: str, expected: int
) -> None:
    assert RATES.counted_as(amount, currency) == Money(expected, currency)


def test_play_money_never_converts() -> None:
    with pytest.raises(CurrencyMismatch, match="no cash value"):
        RATES.counted_as(Money(100, "PLAY"), "USD")


def test_each_currency_is_summed_exactly_before_it_is_converted() -> None:
    deposits = [
        Deposit(T0 - timedelta(hours=2), Money(1, "EUR")),
        Deposit(T0 - timedelta(hours=1), Money(1, "EUR")),
        Deposit(T0 - timedelta(hours=1), Money(500, "USD")),
        Deposit(T0 - timedelta(hours=1), Money(100_000, "PLAY")),  # play money: not counted
        Deposit(T0 - timedelta(hours=30), Money(9900, "GBP")),  # outside the 24 hours
    ]
    # EUR 0.02 x 1.17 = 0.0234, up to 0.03; plus 5.00 USD = 5.03 USD.
    used = deposited_within(deposits, timedelta(days=1), T0, RATES, "USD")
    assert used == Money(503, "USD")


def test_a_usd_limit_refuses_large_eur_and_gbp_deposits() -> None:
    limits = daily_limit("USD", 1000)
    with pytest.raises(LimitExceeded) as refused:
        check_deposit(limits, Money(50000, "EUR"), [], RATES, T0)
    assert str(refused.value) == (
        "a deposit of 500.00 EUR (counted as 585.00 USD at the operator's rate, "
        "1 EUR = 1.17 USD) would bring your deposits in the last 24 hours to 585.00 USD, "
        "above your day limit of 10.00 USD; you can deposit up to 10.00 USD now"
    )
    with pytest.raises(LimitExceeded, match=r"counted as 665\.00 USD"):
        check_deposit(limits, Money(50000, "GBP"), [], RATES, T0)


def test_the_rounding_never_lets_a_deposit_past_the_limit() -> None:
    limits = daily_limit("USD", 1000)
    check_deposit(limits, Money(854, "EUR"), [], RATES, T0)  # counts 10.00 USD: at the limit
    with pytest.raises(LimitExceeded, match=r"to 10\.01 USD"):
        check_deposit(limits, Money(855, "EUR"), [], RATES, T0)  # counts 10.01 USD


def test_deposits_in_several_currencies_add_up_against_one_limit() -> None:
    limits = daily_limit("USD", 1000)
    earlier = [Deposit(T0 - timedelta(hours=1), Money(500, "USD"))]
    # GBP 3.75 x 1.33 = 4.9875, up to 4.99; with 5.00 USD that is 9.99 USD.
    check_deposit(limits, Money(375, "GBP"), earlier, RATES, T0)
    # GBP 3.76 x 1.33 = 5.0008, up to 5.01; with 5.00 USD that is 10.01 USD.
    with pytest.raises(LimitExceeded, match=r"to 10\.01 USD"):
        check_deposit(limits, Money(376, "GBP"), earlier, RATES, T0)
    assert deposit_headroom(limits, earlier, RATES, T0) == Money(500, "USD")


def test_a_limit_in_euros_protects_deposits_in_dollars() -> None:
    limits = daily_limit("EUR", 1000)
    check_deposit(limits, Money(1170, "USD"), [], RATES, T0)  # 11.70 / 1.17 = 10.00 EUR
    # 11.71 / 1.17 = 10.0085..., up to 10.01 EUR.
    with pytest.raises(LimitExceeded, match=r"counted as 10\.01 EUR .*rate, 1 EUR = 1\.17 USD\)"):
        check_deposit(limits, Money(1171, "USD"), [], RATES, T0)


def test_play_money_and_real_money_limits_do_not_mix() -> None:
    usd_limit, play_limit = daily_limit("USD", 1000), daily_limit("PLAY", 1000)
    check_deposit(usd_limit, Money(1_000_000, "PLAY"), [], RATES, T0)
    check_deposit(play_limit, Money(50000, "EUR"), [], RATES, T0)
    with pytest.raises(LimitExceeded):
        check_deposit(play_limit, Money(1001, "PLAY"), [], RATES, T0)


def test_every_limit_the_player_set_must_allow_the_deposit() -> None:
    generous, tight = daily_limit("USD", 100_000), daily_limit("GBP", 1000)
    # EUR 20.00 counts 23.40 USD (under 1,000.00) and 20 x 1.17 / 1.33 = 17.593...,
    # up to 17.60 GBP (over 10.00).
    rates = r"1 EUR = 1\.17 USD and 1 GBP = 1\.33 USD"
    with pytest.raises(LimitExceeded, match=rf"counted as 17\.60 GBP .*{rates}"):
        check_deposit_everywhere([generous, tight], Money(2000, "EUR"), [], RATES, T0)
    check_deposit_everywhere([generous], Money(2000, "EUR"), [], RATES, T0)
