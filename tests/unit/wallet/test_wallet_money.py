"""Money: integer minor units, exact parsing, no floats, no mixing currencies."""

from __future__ import annotations

from decimal import Decimal

import pytest

from services.wallet.domain.errors import CurrencyMismatch, InvalidAmount, UnknownCurrency
from services.wallet.domain.money import Money, round_half_up


def test_parse_and_print_are_exact() -> None:
    assert Money.parse("10.5", "USD") == Money(1050, "USD")
    assert Money.parse(" 7 ", "PLAY") == Money(700, "PLAY")
    assert str(Money(5, "USD")) == "0.05 USD"
    assert Money(-1234, "EUR").to_decimal() == Decimal("-12.34")


@pytest.mark.parametrize("text", ["1.001", "abc", "NaN", "Infinity", ""])
def test_inexact_or_non_numeric_amounts_are_refused(text: str) -> None:
    with pytest.raises(InvalidAmount):
        Money.parse(text, "USD")


def test_floats_and_bools_are_not_money() -> None:
    with pytest.raises(InvalidAmount, match="integer number of minor units"):
        Money(1.5, "USD")  # type: ignore[arg-type]
    with pytest.raises(InvalidAmount):
        Money(True, "USD")


def test_currencies_must_be_known_and_must_not_mix() -> None:
    with pytest.raises(UnknownCurrency, match="'usd'"):
        Money(1, "usd")
    with pytest.raises(CurrencyMismatch):
        Money(1, "USD") + Money(1, "EUR")
    with pytest.raises(CurrencyMismatch):
        assert Money(1, "USD") < Money(2, "PLAY")


def test_round_half_up_rounds_halves_away_from_zero() -> None:
    assert round_half_up(Decimal("24.5")) == 25
    assert round_half_up(Decimal("24.4999")) == 24
    assert round_half_up(Decimal("-24.5")) == -25
