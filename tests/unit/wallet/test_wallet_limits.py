"""Deposit limits, self-exclusion and frozen accounts, with explicit times."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from services.wallet.domain.errors import (
    AccountFrozen,
    AccountNotVerified,
    CurrencyMismatch,
    InvalidAmount,
    LimitExceeded,
    SelfExcluded,
)
from services.wallet.domain.limits import (
    Deposit,
    LimitPeriod,
    PlayerLimits,
    change_deposit_limit,
    check_deposit,
    check_play,
    check_withdrawal,
    deposit_headroom,
    freeze,
    in_force,
    self_exclude,
    unfreeze,
)
from services.wallet.domain.money import Money
from services.wallet.domain.rates import PlanningRates

T0 = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)
DAY = LimitPeriod.DAY
RATES = PlanningRates({"USD": Decimal(1)})  # these tests deposit in the limit's currency


def usd(dollars: int) -> Money:
    return Money(dollars * 100, "USD")


def with_daily_limit(dollars: int) -> PlayerLimits:
    limits, _ = change_deposit_limit(PlayerLimits("ann", "USD"), DAY, usd(dollars), T0)
    return limits


def test_a_first_limit_applies_at_once() -> None:
    limits, change = change_deposit_limit(PlayerLimits("ann", "USD"), DAY, usd(100), T0)
    assert change.immediate
    assert change.previous is None
    assert in_force(limits, T0).deposit_limits[DAY] == usd(100)


def test_a_decrease_applies_at_once() -> None:
    limits, change = change_deposit_limit(with_daily_limit(100), DAY, usd(50), T0 + HOUR)
    assert change.immediate and change.previous == usd(100)
    assert in_force(limits, T0 + HOUR).deposit_limits[DAY] == usd(50)


def test_an_increase_waits_24_hours() -> None:
    limits, change = change_deposit_limit(with_daily_limit(100), DAY, usd(200), T0)
    assert not change.immediate
    assert change.effective_at == T0 + 24 * HOUR
    just_before = T0 + 24 * HOUR - timedelta(seconds=1)
    assert in_force(limits, just_before).deposit_limits[DAY] == usd(100)
    after = in_force(limits, T0 + 24 * HOUR)
    assert after.deposit_limits[DAY] == usd(200)
    assert after.pending == {}


def test_removing_a_limit_also_waits_24_hours() -> None:
    limits, change = change_deposit_limit(with_daily_limit(100), DAY, None, T0)
    assert not change.immediate
    assert DAY in in_force(limits, T0 + 23 * HOUR).deposit_limits
    assert DAY not in in_force(limits, T0 + 24 * HOUR).deposit_limits
    unchanged, nothing = change_deposit_limit(PlayerLimits("ann", "USD"), DAY, None, T0)
    assert nothing.immediate and unchanged.deposit_limits == {}


def test_a_decrease_cancels_a_pending_increase() -> None:
    raised, _ = change_deposit_limit(with_daily_limit(100), DAY, usd(500), T0)
    lowered, change = change_deposit_limit(raised, DAY, usd(80), T0 + HOUR)
    assert change.immediate
    assert in_force(lowered, T0 + 48 * HOUR).deposit_limits[DAY] == usd(80)


def test_limits_must_be_positive_and_in_the_player_currency() -> None:
    with pytest.raises(InvalidAmount):
        change_deposit_limit(PlayerLimits("ann", "USD"), DAY, usd(0), T0)
    with pytest.raises(CurrencyMismatch):
        change_deposit_limit(PlayerLimits("ann", "USD"), DAY, Money(100, "EUR"), T0)


def test_deposits_count_against_a_rolling_24_hour_window() -> None:
    limits = with_daily_limit(50)
    deposits = [Deposit(T0 - HOUR, usd(40))]
    check_deposit(limits, usd(10), deposits, RATES, T0)
    with pytest.raises(LimitExceeded, match=r"you can deposit up to 10\.00 USD now"):
        check_deposit(limits, usd(11), deposits, RATES, T0)
    # Exactly 24 hours after the earlier deposit it no longer counts.
    check_deposit(limits, usd(50), deposits, RATES, T0 + 23 * HOUR)
    assert deposit_headroom(limits, deposits, RATES, T0) == usd(10)
    assert deposit_headroom(PlayerLimits("ann", "USD"), deposits, RATES, T0) is None


def test_weekly_and_monthly_limits_use_7_and_30_day_windows() -> None:
    limits, _ = change_deposit_limit(PlayerLimits("ann", "USD"), LimitPeriod.WEEK, usd(100), T0)
    limits, _ = change_deposit_limit(limits, LimitPeriod.MONTH, usd(150), T0)
    deposits = [Deposit(T0 - timedelta(days=6), usd(90)), Deposit(T0 - timedelta(days=20), usd(50))]
    with pytest.raises(LimitExceeded, match="week"):
        check_deposit(limits, usd(20), deposits, RATES, T0)
    at = T0 + timedelta(days=1)  # the 90 has left the week but not the month
    with pytest.raises(LimitExceeded, match="month"):
        check_deposit(limits, usd(20), deposits, RATES, at)
    assert deposit_headroom(limits, deposits, RATES, at) == usd(10)


def test_self_exclusion_blocks_deposits_and_play_until_it_ends() -> None:
    limits = self_exclude(PlayerLimits("ann", "USD"), T0, timedelta(days=30))
    with pytest.raises(SelfExcluded, match="cannot deposit"):
        check_deposit(limits, usd(1), [], RATES, T0 + HOUR)
    with pytest.raises(SelfExcluded, match="cannot play"):
        check_play(limits, T0 + timedelta(days=29))
    check_play(limits, T0 + timedelta(days=30))
    check_deposit(limits, usd(1), [], RATES, T0 + timedelta(days=30))
    check_play(limits, T0 - HOUR)


def test_self_exclusion_can_be_lengthened_but_never_shortened() -> None:
    month = self_exclude(PlayerLimits("ann", "USD"), T0, timedelta(days=30))
    assert self_exclude(month, T0 + HOUR, timedelta(days=1)) == month
    longer = self_exclude(month, T0 + HOUR, timedelta(days=60))
    assert longer.self_exclusion is not None
    assert longer.self_exclusion.started_at == T0
    forever = self_exclude(longer, T0 + 2 * HOUR, None)
    assert self_exclude(forever, T0 + 3 * HOUR, timedelta(days=1)) == forever
    with pytest.raises(SelfExcluded, match="indefinitely"):
        check_play(forever, T0 + timedelta(days=3650))


def test_a_frozen_account_cannot_withdraw_until_unfrozen() -> None:
    frozen = freeze(PlayerLimits("ann", "USD"), "chargeback under review")
    with pytest.raises(AccountFrozen, match="chargeback under review"):
        check_withdrawal(frozen, verified=True)
    check_withdrawal(unfreeze(frozen), verified=True)


def test_withdrawals_go_only_to_verified_players_even_self_excluded_ones() -> None:
    with pytest.raises(AccountNotVerified, match="identity verification"):
        check_withdrawal(PlayerLimits("ann", "USD"), verified=False)
    excluded = self_exclude(PlayerLimits("ann", "USD"), T0, None)
    check_withdrawal(excluded, verified=True)


def test_a_frozen_account_cannot_sit_down_to_play_but_may_deposit() -> None:
    frozen = freeze(PlayerLimits("ann", "USD"), "collusion alert")
    with pytest.raises(AccountFrozen, match="play resumes"):
        check_play(frozen, T0)
    check_deposit(frozen, usd(10), [], RATES, T0)
    check_play(unfreeze(frozen), T0)
