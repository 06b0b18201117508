"""Payment-instrument fingerprints: what the wallet accepts as one, where it comes from
(the sandbox, a webhook), and that only a confirmation carries it onto the payment."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from services.kit.clock import ManualClock
from services.wallet.domain.errors import InvalidInstrumentFingerprint
from services.wallet.domain.money import Money
from services.wallet.domain.payments import (
    CallbackOutcome,
    Payment,
    PaymentKind,
    PaymentStatus,
    ProviderCallback,
    apply_callback,
    instrument_fingerprint,
)
from services.wallet.provider import SandboxConfig, SandboxProvider, WaitingPayment
from services.wallet.webhooks import MalformedEvent, parse_event

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
# 4242 4242 4242 4242, 4000 0566 5566 5556 and 3782 822463 10005 are the card industry's
# public test numbers (16 and 15 digits); they pass the Luhn check, as every card number does.
VISA_TEST = "4242424242424242"
DEBIT_TEST = "4000056655665556"


def test_an_opaque_token_is_kept_and_nothing_is_none() -> None:
    assert instrument_fingerprint("") is None
    assert instrument_fingerprint("Xt5EWLLDS7FJjR1c") == "Xt5EWLLDS7FJjR1c"
    assert instrument_fingerprint("fp_1:a.b-c=d+e/f") == "fp_1:a.b-c=d+e/f"
    # digits that are not a card number (Luhn fails, too few, inside a token) are kept
    assert instrument_fingerprint("4242424242424241") == "4242424242424241"
    assert instrument_fingerprint("424242424242") == "424242424242"
    hex_token = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
    assert instrument_fingerprint(hex_token) == hex_token


@pytest.mark.parametrize(
    "raw",
    [VISA_TEST, DEBIT_TEST, "4242-4242-4242-4242", "378282246310005"],
)
def test_a_card_number_is_never_taken_for_a_fingerprint(raw: str) -> None:
    with pytest.raises(InvalidInstrumentFingerprint, match="card number"):
        instrument_fingerprint(raw)


@pytest.mark.parametrize("raw", ["a b", "x" * 129, "fp\u00e9", "fp;drop"])
def test_a_fingerprint_is_a_short_token_of_plain_characters(raw: str) -> None:
    with pytest.raises(InvalidInstrumentFingerprint, match="at most 128"):
        instrument_fingerprint(raw)


def deposit() -> Payment:
    return Payment("dep-1", PaymentKind.DEPOSIT, "ann", Money(2500, "USD"))


def test_only_a_confirmation_puts_the_fingerprint_on_the_payment() -> None:
    confirmed = apply_callback(
        deposit(), ProviderCallback("dep-1", CallbackOutcome.CONFIRMED, "r", None, "fp_1")
    )
    assert confirmed.payment.status is PaymentStatus.CONFIRMED
    assert confirmed.payment.instrument_fingerprint == "fp_1"
    failed = apply_callback(
        deposit(), ProviderCallback("dep-1", CallbackOutcome.FAILED, "r", "declined", "fp_1")
    )
    assert failed.payment.instrument_fingerprint is None


def sandbox_outcome(method: str, payment_id: str = "dep-1") -> ProviderCallback:
    sandbox = SandboxProvider(
        SandboxConfig(delay=timedelta(0), real_money_unsafe=True), ManualClock(T0)
    )
    payment = Payment(payment_id, PaymentKind.DEPOSIT, "ann", Money(2500, "USD"))
    return sandbox.outcome(WaitingPayment(payment, method, T0))


def test_the_sandbox_gives_each_test_card_one_fingerprint_and_the_plain_method_none() -> None:
    one = sandbox_outcome("card-shared-1", "dep-1").instrument_fingerprint
    again = sandbox_outcome("card-shared-1", "dep-2").instrument_fingerprint
    other = sandbox_outcome("card-own-2").instrument_fingerprint
    assert one is not None and one == again and one != other
    assert one.startswith("sbxfp_") and "shared" not in one
    assert instrument_fingerprint(one) == one  # the wallet takes its own sandbox's tokens
    assert sandbox_outcome("sandbox").instrument_fingerprint is None
    declined = sandbox_outcome("card-decline")
    assert declined.outcome is CallbackOutcome.FAILED
    assert declined.instrument_fingerprint is None


def webhook(kind: str, fingerprint: str) -> bytes:
    return (
        f'{{"event_id": "e1", "type": "{kind}", "payment_id": "p1", "reference": "r1", '
        f'"occurred_at": "2026-12-01T12:00:00Z", "instrument_fingerprint": "{fingerprint}"}}'
    ).encode()


def test_a_webhook_carries_the_fingerprint_of_a_settled_payment() -> None:
    callback, _ = parse_event(webhook("payment.settled", "Xt5EWLLDS7FJjR1c"))
    assert callback.instrument_fingerprint == "Xt5EWLLDS7FJjR1c"
    callback, _ = parse_event(webhook("payment.failed", "Xt5EWLLDS7FJjR1c"))
    assert callback.instrument_fingerprint is None
    callback, _ = parse_event(webhook("payment.settled", ""))
    assert callback.instrument_fingerprint is None
    with pytest.raises(MalformedEvent, match="card number"):
        parse_event(webhook("payment.settled", VISA_TEST))
