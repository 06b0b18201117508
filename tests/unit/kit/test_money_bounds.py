"""The operator's money bounds and checked money arithmetic (services/kit/money_bounds.py)."""

from __future__ import annotations

import grpc
import pytest

from services.kit.config import ConfigError
from services.kit.money_bounds import (
    INT64_MAX,
    AmountOutOfBounds,
    Bound,
    MoneyBounds,
    checked_product,
)


def test_a_product_within_int64_is_exact() -> None:
    assert checked_product(500, 64, 3, what="a loss") == 96_000


def test_a_product_past_int64_is_refused_as_invalid_argument() -> None:
    with pytest.raises(AmountOutOfBounds) as refused:
        checked_product(INT64_MAX, 3, what="the largest loss")
    assert refused.value.code is grpc.StatusCode.INVALID_ARGUMENT
    assert "the largest loss" in refused.value.message
    assert "int64" in refused.value.message


def test_a_product_at_int64_exactly_passes() -> None:
    assert checked_product(INT64_MAX, 1, what="an amount") == INT64_MAX


def test_a_product_past_an_operator_limit_names_it() -> None:
    with pytest.raises(AmountOutOfBounds, match="MY_LIMIT: at most 100"):
        checked_product(51, 2, what="a loss", limit=100, limit_name="MY_LIMIT")


def test_the_defaults_bound_every_currency_the_wallet_holds() -> None:
    bounds = MoneyBounds.defaults()
    assert set(bounds.by_currency) == {"USD", "EUR", "GBP", "PLAY"}
    usd = bounds.by_currency["USD"]
    # A real site's figures: $25,000.00 a payment, $5,000.00 a point, every cube cap at it.
    assert (usd.deposit, usd.withdrawal, usd.stake) == (2_500_000, 2_500_000, 500_000)
    assert usd.table_exposure == 500_000 * 64 * 3


def test_an_int64_deposit_is_refused_naming_the_limit() -> None:
    with pytest.raises(AmountOutOfBounds) as refused:
        MoneyBounds.defaults().require(Bound.DEPOSIT, INT64_MAX, "USD")
    message = refused.value.message
    assert "TAVLA_MONEY_MAX_DEPOSIT_USD" in message
    assert "at most 2500000" in message
    assert refused.value.code is grpc.StatusCode.INVALID_ARGUMENT


def test_an_amount_at_the_limit_passes() -> None:
    assert MoneyBounds.defaults().require(Bound.WITHDRAWAL, 2_500_000, "EUR") == 2_500_000


def test_play_money_is_bounded_too() -> None:
    with pytest.raises(AmountOutOfBounds, match="TAVLA_MONEY_MAX_STAKE_PLAY"):
        MoneyBounds.defaults().require(Bound.STAKE, 3 * 10**18, "PLAY")


def test_a_currency_without_bounds_is_kept_within_int64() -> None:
    bounds = MoneyBounds.defaults()
    assert bounds.require(Bound.DEPOSIT, INT64_MAX, "JPY") == INT64_MAX
    with pytest.raises(AmountOutOfBounds):
        bounds.exposure(INT64_MAX, 2, "JPY", match=False)


def test_a_tables_exposure_is_stake_times_cube_cap_times_three() -> None:
    bounds = MoneyBounds.defaults()
    assert bounds.exposure(1000, 8, "USD", match=False) == 24_000
    assert bounds.exposure(1000, 8, "USD", match=True) == 1000  # a match risks its stake


def test_a_stake_above_the_maximum_is_refused_before_its_exposure() -> None:
    with pytest.raises(AmountOutOfBounds, match="TAVLA_MONEY_MAX_STAKE_USD"):
        MoneyBounds.defaults().exposure(INT64_MAX, 64, "USD", match=False)


def test_a_cube_cap_the_exposure_bound_does_not_allow_is_refused() -> None:
    environ = {"TAVLA_MONEY_MAX_TABLE_EXPOSURE_USD": "1500000"}  # $15,000.00
    bounds = MoneyBounds.from_env(environ)
    assert bounds.exposure(500_000, 1, "USD", match=False) == 1_500_000
    with pytest.raises(AmountOutOfBounds, match="TAVLA_MONEY_MAX_TABLE_EXPOSURE_USD"):
        bounds.exposure(500_000, 2, "USD", match=False)


def test_each_bound_is_read_from_its_variable() -> None:
    bounds = MoneyBounds.from_env(
        {"TAVLA_MONEY_MAX_DEPOSIT_GBP": "100", "TAVLA_MONEY_MAX_WITHDRAWAL_PLAY": "7"}
    )
    assert bounds.limit(Bound.DEPOSIT, "GBP") == 100
    assert bounds.limit(Bound.WITHDRAWAL, "PLAY") == 7
    assert bounds.limit(Bound.DEPOSIT, "USD") == 2_500_000  # the default where unset


@pytest.mark.parametrize("raw", ["0", "-5", "lots", str(INT64_MAX + 1)])
def test_a_bad_bound_stops_the_process_naming_its_variable(raw: str) -> None:
    with pytest.raises(ConfigError, match="TAVLA_MONEY_MAX_STAKE_EUR"):
        MoneyBounds.from_env({"TAVLA_MONEY_MAX_STAKE_EUR": raw})
