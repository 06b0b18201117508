"""The sandbox payment provider on its own: outcomes, failure rate, duplicate callbacks."""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal

import pytest

from services.kit.clock import ManualClock
from services.wallet.domain.errors import CurrencyNotSupported
from services.wallet.domain.money import Money
from services.wallet.domain.payments import (
    CallbackOutcome,
    Payment,
    PaymentKind,
    ProviderCallback,
)
from services.wallet.provider import SandboxConfig, SandboxProvider, WaitingPayment
from tests.support.wallet import GAME_STARTED_AT


def waiting(
    payment_id: str,
    method: str = "card",
    age: timedelta = timedelta(0),
    currency: str = "PLAY",
) -> WaitingPayment:
    payment = Payment(payment_id, PaymentKind.DEPOSIT, "p1", Money(1000, currency))
    return WaitingPayment(payment, method, GAME_STARTED_AT - age)


def test_declines_by_method_and_by_rate_and_answers_the_same_each_time() -> None:
    clock = ManualClock(GAME_STARTED_AT)
    never = SandboxProvider(SandboxConfig(failure_rate=Decimal(0)), clock)
    always = SandboxProvider(SandboxConfig(failure_rate=Decimal(1)), clock)
    assert never.outcome(waiting("a")).outcome is CallbackOutcome.CONFIRMED
    assert never.outcome(waiting("a", "card-decline")).outcome is CallbackOutcome.FAILED
    assert always.outcome(waiting("a")).outcome is CallbackOutcome.FAILED
    half = SandboxProvider(SandboxConfig(failure_rate=Decimal("0.5")), clock)
    outcomes = [half.outcome(waiting(f"pay-{i}")).outcome for i in range(400)]
    assert 120 < outcomes.count(CallbackOutcome.FAILED) < 280
    assert outcomes == [half.outcome(waiting(f"pay-{i}")).outcome for i in range(400)]


async def test_callbacks_wait_for_the_delay_and_can_come_twice() -> None:
    clock = ManualClock(GAME_STARTED_AT)
    provider = SandboxProvider(
        SandboxConfig(delay=timedelta(seconds=30), duplicate_callbacks=True), clock
    )
    pending = [waiting("old", age=timedelta(seconds=40)), waiting("new")]
    delivered: list[ProviderCallback] = []

    async def due(before: datetime) -> list[WaitingPayment]:
        return [item for item in pending if item.created_at <= before]

    async def deliver(callback: ProviderCallback) -> None:
        delivered.append(callback)

    assert await provider.deliver_due(due, deliver) == 1
    assert [c.payment_id for c in delivered] == ["old", "old"]
    clock.advance(timedelta(seconds=30))
    delivered.clear()
    assert await provider.deliver_due(due, deliver) == 2


async def test_payouts_only_to_verified_destinations() -> None:
    provider = SandboxProvider(SandboxConfig(real_money_unsafe=True), ManualClock(GAME_STARTED_AT))
    assert await provider.payout_verified("p1", "sandbox")
    assert not await provider.payout_verified("p1", "unverified-iban")


async def test_without_the_loud_flag_the_sandbox_moves_play_money_only() -> None:
    provider = SandboxProvider(SandboxConfig(), ManualClock(GAME_STARTED_AT))
    provider.check_currency("PLAY")
    for currency in ("USD", "EUR", "GBP"):
        with pytest.raises(CurrencyNotSupported, match="play money \\(PLAY\\) only"):
            provider.check_currency(currency)
    payment = Payment("p", PaymentKind.DEPOSIT, "p1", Money(1000, "USD"))
    with pytest.raises(CurrencyNotSupported):
        await provider.submit(payment, "sandbox")
    # No payout destination is verified by a name alone.
    assert not await provider.payout_verified("p1", "sandbox")
    # A real-currency payment recorded before (when the sandbox confirmed anything) fails.
    answer = provider.outcome(waiting("old-usd", currency="USD"))
    assert answer.outcome is CallbackOutcome.FAILED
    assert "play money only" in (answer.failure_reason or "")


async def test_the_sandbox_answers_reconciliation_after_its_delay() -> None:
    clock = ManualClock(GAME_STARTED_AT)
    provider = SandboxProvider(SandboxConfig(delay=timedelta(seconds=30)), clock)
    assert await provider.status(waiting("a")) is None
    clock.advance(timedelta(seconds=30))
    answer = await provider.status(waiting("a"))
    assert answer is not None and answer.outcome is CallbackOutcome.CONFIRMED
