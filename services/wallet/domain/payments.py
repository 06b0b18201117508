"""Deposits and withdrawals as the payment provider sees them: a small state machine.

A payment is requested, then the provider calls back, asynchronously and
possibly more than once, to confirm it or report a failure. A deposit moves
money only when confirmed (provider clearing -> player). A withdrawal takes the
money from the player when requested (player -> provider clearing), so it
cannot be spent twice, and gives it back if the provider fails it. A repeated
callback with the same outcome is ignored; a contradicting one is refused so an
operator looks at it. The provider I/O lives in the service layer.

A confirmation may carry the provider's fingerprint of the payment instrument (the
card or account): an opaque token that is the same for every payment with that
instrument, never its number. It is kept with the payment and published with its
event, for anti-abuse to link accounts that pay with one instrument
(:func:`instrument_fingerprint` says what is accepted as one).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum

from services.wallet.domain.errors import (
    InsufficientFunds,
    InvalidInstrumentFingerprint,
    InvalidPaymentTransition,
    OutOfOrderCallback,
)
from services.wallet.domain.ledger import (
    AccountKind,
    Transfer,
    TransferCode,
    player_account_id,
    system_account_id,
)
from services.wallet.domain.limits import (
    Deposit,
    PlayerLimits,
    check_deposit_everywhere,
    check_withdrawal,
)
from services.wallet.domain.money import Money, require_positive
from services.wallet.domain.rates import PlanningRates


class PaymentKind(StrEnum):
    DEPOSIT = "deposit"
    WITHDRAWAL = "withdrawal"


class PaymentStatus(StrEnum):
    REQUESTED = "requested"
    CONFIRMED = "confirmed"
    FAILED = "failed"


class CallbackOutcome(StrEnum):
    CONFIRMED = "confirmed"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class Payment:
    """One deposit or withdrawal and where it stands with the provider."""

    id: str
    kind: PaymentKind
    player_id: str
    amount: Money
    status: PaymentStatus = PaymentStatus.REQUESTED
    provider_reference: str | None = None
    failure_reason: str | None = None
    instrument_fingerprint: str | None = None


@dataclass(frozen=True, slots=True)
class ProviderCallback:
    """What the provider told us about a payment."""

    payment_id: str
    outcome: CallbackOutcome
    provider_reference: str
    failure_reason: str | None = None
    # Checked by instrument_fingerprint() where the provider's answer is read.
    instrument_fingerprint: str | None = None


MAX_FINGERPRINT = 128
_FINGERPRINT = re.compile(r"[A-Za-z0-9_.:=+/-]+")


def instrument_fingerprint(raw: str) -> str | None:
    """A provider's instrument fingerprint as the wallet keeps it; None for none given.

    An opaque token of at most 128 letters, digits and ``_.:=+/-``. A token that is a card
    number (13 to 19 digits, dashes allowed between them, passing the Luhn check) is
    refused: the wallet must never store or publish one, whatever the provider sent.
    Digits inside a longer token are left alone: hex and base-62 fingerprints have them.
    """
    if not raw:
        return None
    if len(raw) > MAX_FINGERPRINT or not _FINGERPRINT.fullmatch(raw):
        raise InvalidInstrumentFingerprint(
            f"an instrument fingerprint is at most {MAX_FINGERPRINT} letters, digits and "
            "'_.:=+/-'; the provider sent something else"
        )
    digits = raw.replace("-", "")
    if digits.isdigit() and 13 <= len(digits) <= 19 and _luhn_valid(digits):
        raise InvalidInstrumentFingerprint(
            "the instrument fingerprint is a card number; the wallet keeps only the "
            "provider's opaque fingerprint, never the number"
        )
    return raw


def _luhn_valid(digits: str) -> bool:
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = int(char)
        if position % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


@dataclass(frozen=True, slots=True)
class ProviderEvent:
    """Where a callback came from: the provider's event id and when the provider says it
    happened. The event id makes a webhook apply once; the time keeps them in order."""

    event_id: str
    occurred_at: datetime


def check_event_order(payment_id: str, event: ProviderEvent, latest: datetime | None) -> None:
    """Refuse an event older than the newest one already applied to this payment.

    Providers deliver webhooks out of order and retry old ones; an old word must
    never overwrite a newer one, even when it would agree with it.
    """
    if latest is not None and event.occurred_at < latest:
        raise OutOfOrderCallback(
            f"provider event {event.event_id} about payment {payment_id} happened at "
            f"{event.occurred_at.isoformat()}, before the newest event already applied "
            f"({latest.isoformat()}); it is ignored and changes nothing"
        )


@dataclass(frozen=True, slots=True)
class PaymentUpdate:
    """The payment after a step, the transfers to post, and whether anything changed."""

    payment: Payment
    transfers: tuple[Transfer, ...]
    changed: bool


def _transfer(payment: Payment, suffix: str, code: TransferCode) -> Transfer:
    currency = payment.amount.currency
    player = player_account_id(payment.player_id, currency)
    clearing = system_account_id(AccountKind.PROVIDER_CLEARING, currency)
    to_player = code in (TransferCode.DEPOSIT, TransferCode.WITHDRAWAL_REVERSAL)
    return Transfer(
        id=f"payment:{payment.id}:{suffix}",
        debit_account_id=clearing if to_player else player,
        credit_account_id=player if to_player else clearing,
        amount=payment.amount,
        code=code,
        reference=f"payment:{payment.id}",
    )


def request_deposit(
    payment_id: str,
    limits: PlayerLimits,
    amount: Money,
    recent_deposits: Sequence[Deposit],
    at: datetime,
    *,
    rates: PlanningRates,
    other_limits: Sequence[PlayerLimits],
) -> PaymentUpdate:
    """Open a deposit if the player's limits and self-exclusion allow it; nothing moves yet.

    ``limits`` are the player's in the deposit's currency, ``other_limits`` theirs in every
    other currency: each counts this deposit and the ``recent_deposits`` in any currency at
    the planning ``rates``.
    """
    check_deposit_everywhere([limits, *other_limits], amount, recent_deposits, rates, at)
    payment = Payment(payment_id, PaymentKind.DEPOSIT, limits.player_id, amount)
    return PaymentUpdate(payment, (), True)


def request_withdrawal(
    payment_id: str, limits: PlayerLimits, verified: bool, amount: Money, balance: Money
) -> PaymentUpdate:
    """Open a withdrawal and take the money out of the player's balance until it completes."""
    require_positive(amount, "a withdrawal")
    check_withdrawal(limits, verified)
    if balance < amount:
        raise InsufficientFunds(
            f"cannot withdraw {amount}: the available balance is {balance} "
            "(money held at tables is not available)"
        )
    payment = Payment(payment_id, PaymentKind.WITHDRAWAL, limits.player_id, amount)
    return PaymentUpdate(payment, (_transfer(payment, "request", TransferCode.WITHDRAWAL),), True)


_FINAL = {
    CallbackOutcome.CONFIRMED: PaymentStatus.CONFIRMED,
    CallbackOutcome.FAILED: PaymentStatus.FAILED,
}


def _transfers_on(payment: Payment, outcome: CallbackOutcome) -> tuple[Transfer, ...]:
    if payment.kind is PaymentKind.DEPOSIT and outcome is CallbackOutcome.CONFIRMED:
        return (_transfer(payment, "confirm", TransferCode.DEPOSIT),)
    if payment.kind is PaymentKind.WITHDRAWAL and outcome is CallbackOutcome.FAILED:
        return (_transfer(payment, "reverse", TransferCode.WITHDRAWAL_REVERSAL),)
    return ()


def apply_callback(payment: Payment, callback: ProviderCallback) -> PaymentUpdate:
    """Move a requested payment to its final state; ignore duplicates, refuse contradictions."""
    if callback.payment_id != payment.id:
        raise InvalidPaymentTransition(
            f"callback for payment {callback.payment_id} applied to payment {payment.id}"
        )
    final = _FINAL[callback.outcome]
    if payment.status is not PaymentStatus.REQUESTED:
        if payment.status is final:
            return PaymentUpdate(payment, (), False)
        raise InvalidPaymentTransition(
            f"{payment.kind.value} {payment.id} is already {payment.status.value} "
            f"(provider reference {payment.provider_reference}); the provider now says "
            f"{callback.outcome.value} ({callback.provider_reference}): reconcile by hand"
        )
    updated = replace(
        payment,
        status=final,
        provider_reference=callback.provider_reference,
        failure_reason=callback.failure_reason if final is PaymentStatus.FAILED else None,
        instrument_fingerprint=(
            callback.instrument_fingerprint if final is PaymentStatus.CONFIRMED else None
        ),
    )
    return PaymentUpdate(updated, _transfers_on(payment, callback.outcome), True)
