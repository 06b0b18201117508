"""Deposits and withdrawals through the provider: asynchronous outcomes, failures, duplicates."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from services.kit.config import ConfigError, Env
from services.wallet.domain.errors import (
    AccountFrozen,
    InsufficientFunds,
    InvalidPaymentTransition,
    LimitExceeded,
    SelfExcluded,
)
from services.wallet.domain.ledger import (
    Ledger,
    TransferCode,
    open_accounts,
    player_account,
    post,
    system_accounts,
)
from services.wallet.domain.limits import (
    Deposit,
    LimitPeriod,
    PlayerLimits,
    change_deposit_limit,
    freeze,
    self_exclude,
)
from services.wallet.domain.money import Money
from services.wallet.domain.payments import (
    CallbackOutcome,
    PaymentStatus,
    PaymentUpdate,
    ProviderCallback,
    apply_callback,
    request_deposit,
    request_withdrawal,
)
from services.wallet.domain.rates import PlanningRates
from services.wallet.provider import SandboxConfig

T0 = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
ANN = PlayerLimits("ann", "USD")


def deposit(limits: PlayerLimits, amount: Money, recent: Sequence[Deposit] = ()) -> PaymentUpdate:
    """Payment p1 requested at T0, in the limits' currency (no other limits, no conversion)."""
    rates = PlanningRates({"USD": Decimal(1)})
    return request_deposit("p1", limits, amount, recent, T0, rates=rates, other_limits=[])
CONFIRMED = ProviderCallback("p1", CallbackOutcome.CONFIRMED, "prov-9")
FAILED = ProviderCallback("p1", CallbackOutcome.FAILED, "prov-9", "card declined")


def usd(cents: int) -> Money:
    return Money(cents, "USD")


def ledger() -> Ledger:
    return open_accounts(Ledger(), [player_account("ann", "USD"), *system_accounts("USD")])


def test_a_deposit_moves_money_only_when_confirmed_and_only_once() -> None:
    requested = deposit(ANN, usd(2500))
    assert requested.transfers == ()
    assert requested.payment.status is PaymentStatus.REQUESTED
    confirmed = apply_callback(requested.payment, CONFIRMED)
    assert confirmed.payment.status is PaymentStatus.CONFIRMED
    assert confirmed.payment.provider_reference == "prov-9"
    assert [t.code for t in confirmed.transfers] == [TransferCode.DEPOSIT]
    books = post(ledger(), confirmed.transfers).ledger
    assert books.balance("player:ann:USD") == usd(2500)
    duplicate = apply_callback(confirmed.payment, CONFIRMED)
    assert not duplicate.changed
    assert duplicate.transfers == ()
    assert duplicate.payment == confirmed.payment


def test_a_failed_deposit_moves_nothing_and_records_why() -> None:
    failed = apply_callback(deposit(ANN, usd(2500)).payment, FAILED)
    assert failed.payment.status is PaymentStatus.FAILED
    assert failed.payment.failure_reason == "card declined"
    assert failed.transfers == ()


def test_a_contradicting_callback_is_refused_for_an_operator() -> None:
    confirmed = apply_callback(deposit(ANN, usd(2500)).payment, CONFIRMED)
    with pytest.raises(InvalidPaymentTransition, match=r"already confirmed.*reconcile by hand"):
        apply_callback(confirmed.payment, FAILED)
    other = ProviderCallback("p2", CallbackOutcome.CONFIRMED, "prov-10")
    with pytest.raises(InvalidPaymentTransition, match="applied to payment p1"):
        apply_callback(confirmed.payment, other)


def test_deposits_respect_limits_and_self_exclusion() -> None:
    limited, _ = change_deposit_limit(ANN, LimitPeriod.DAY, usd(5000), T0)
    with pytest.raises(LimitExceeded):
        deposit(limited, usd(2000), [Deposit(T0, usd(3500))])
    with pytest.raises(SelfExcluded):
        deposit(self_exclude(ANN, T0, None), usd(100))


def test_a_withdrawal_takes_the_money_at_once_and_returns_it_if_it_fails() -> None:
    books = post(ledger(), apply_callback(deposit(ANN, usd(5000)).payment,
                                          CONFIRMED).transfers).ledger  # fmt: skip
    requested = request_withdrawal("w1", ANN, True, usd(3000), books.balance("player:ann:USD"))
    books = post(books, requested.transfers).ledger
    assert books.balance("player:ann:USD") == usd(2000)
    failed = apply_callback(requested.payment, ProviderCallback("w1", CallbackOutcome.FAILED, "x"))
    assert [t.code for t in failed.transfers] == [TransferCode.WITHDRAWAL_REVERSAL]
    assert post(books, failed.transfers).ledger.balance("player:ann:USD") == usd(5000)
    done = apply_callback(requested.payment, ProviderCallback("w1", CallbackOutcome.CONFIRMED, "x"))
    assert done.transfers == ()


def test_withdrawals_are_refused_when_frozen_or_short() -> None:
    with pytest.raises(AccountFrozen):
        request_withdrawal("w1", freeze(ANN, "fraud review"), True, usd(100), usd(1000))
    with pytest.raises(InsufficientFunds, match=r"available balance is 0\.50 USD"):
        request_withdrawal("w1", ANN, True, usd(100), usd(50))


@pytest.mark.parametrize(
    ("value", "message"),
    [("often", "'often' is not a number"), ("1.5", "1.5 is outside 0..1"), ("-0.1", "outside")],
)
def test_a_bad_sandbox_failure_rate_is_a_config_error_naming_the_variable(
    value: str, message: str
) -> None:
    with pytest.raises(ConfigError, match=f"TAVLA_WALLET_SANDBOX_FAILURE_RATE.*{message}"):
        SandboxConfig.from_env(Env({"TAVLA_WALLET_SANDBOX_FAILURE_RATE": value}))
    assert SandboxConfig.from_env(Env({"TAVLA_WALLET_SANDBOX_FAILURE_RATE": "0.25"})).failure_rate
