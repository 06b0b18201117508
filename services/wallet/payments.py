"""Deposits and withdrawals through the payment provider, and the provider's callbacks.

A callback is the provider's word on a payment: from a signed webhook
(:meth:`PaymentUseCases.provider_event`, with the provider's event id, applied
once and in order), from the sandbox's in-process sender, or from
``tavla wallet reconcile`` asking the provider about a payment stuck pending
(:meth:`PaymentUseCases.provider_callback`). Each applies in one transaction
with its transfers, events and, for webhooks, the event id.

Before anything else a deposit or withdrawal asks the geo service
(:class:`~services.kit.geo_gate.GeoGate`) whether this player, living where
their access token says and calling from the address the gateway saw, may move
money from there: a block is FAILED_PRECONDITION naming the reasons, geo out of
reach is UNAVAILABLE (real money fails closed), and in both cases nothing is
recorded, submitted, posted or published. A deposit of play money (``PLAY``,
which only the sandbox takes) is play money, not a deposit: it asks as the
top-up does (``PURPOSE_PLAY_MONEY``: refused only in the operator's fully blocked
countries, and going on when geo is out of reach).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from google.protobuf.message import Message
from sqlalchemy.exc import IntegrityError

from services.kit.client_signals import ClientSignals
from services.kit.clock import protobuf_timestamp
from services.kit.errors import InvalidArgument, NotFound
from services.kit.money_bounds import Bound
from services.wallet.domain.errors import IdempotencyConflict, UnknownPayment
from services.wallet.domain.ledger import player_account_id
from services.wallet.domain.limits import WINDOWS, LimitPeriod
from services.wallet.domain.money import PLAY, Money
from services.wallet.domain.payments import (
    Payment,
    PaymentKind,
    PaymentStatus,
    ProviderCallback,
    ProviderEvent,
    apply_callback,
    check_event_order,
    request_deposit,
    request_withdrawal,
)
from services.wallet.domain.rates import planning_rates
from services.wallet.ids import derived_id, require_key
from services.wallet.messages import TOPIC, money_message
from services.wallet.posting import post_transfers
from services.wallet.provider import WaitingPayment
from services.wallet.store.payments import StoredPayment
from services.wallet.store.unit_of_work import WalletUnitOfWork
from services.wallet.use_case import UseCases
from tavla.geo.v1 import geo_pb2
from tavla.wallet.v1 import events_pb2


@dataclass(frozen=True, slots=True)
class PaymentView:
    payment: Payment
    created_at: datetime
    redirect_url: str = ""


@dataclass(frozen=True, slots=True)
class EventResult:
    """What a provider webhook did: ``applied`` (the payment moved), ``unchanged`` (it
    repeated the payment's final state), or ``duplicate`` (that event id was applied)."""

    outcome: str
    payment: Payment


class PaymentUseCases(UseCases):
    """Deposits, withdrawals and the provider's word on them."""

    async def deposit(
        self,
        *,
        player_id: str,
        amount: Money,
        idempotency_key: str,
        method: str,
        residence: str,
        signals: ClientSignals,
    ) -> PaymentView:
        self._within(Bound.DEPOSIT, amount)
        payment_id = derived_id("deposit", player_id, require_key(idempotency_key))
        purpose = geo_pb2.PURPOSE_DEPOSIT
        if amount.currency == PLAY:
            purpose = geo_pb2.PURPOSE_PLAY_MONEY
        await self._geo.require(purpose, account_id=player_id, residence=residence, signals=signals)
        self.provider.check_currency(amount.currency)
        method = method or "sandbox"
        try:
            view = await self._record_deposit(
                payment_id, player_id, amount, idempotency_key, method
            )
        except IntegrityError:  # an identical request committed first: replay it
            view = await self._replay_payment(payment_id, PaymentKind.DEPOSIT, amount, method)
        return await self._submit(view, method)

    async def _record_deposit(
        self, payment_id: str, player_id: str, amount: Money, key: str, method: str
    ) -> PaymentView:
        now = self._clock.now()
        async with self._uow() as uow:
            existing = await uow.payments.get(payment_id)
            if existing is not None:
                return _replayed(existing, PaymentKind.DEPOSIT, amount, method)
            # Locking the player (one row, whatever the currency) serialises their deposits,
            # so two in different currencies cannot both squeeze under a limit.
            state = await uow.players.get(player_id, now, lock=True)
            limits = await uow.players.limits(state, amount.currency)
            others = await uow.players.other_limits(state, amount.currency)
            recent = await uow.payments.deposits_since(player_id, now - WINDOWS[LimitPeriod.MONTH])
            update = request_deposit(
                payment_id,
                limits,
                amount,
                recent,
                now,
                rates=planning_rates(now),
                other_limits=others,
            )
            await uow.ledger.open_player_accounts(player_id, [amount.currency])
            stored = StoredPayment(update.payment, method, self.provider.name, key, now)
            await uow.payments.add(stored, now)
            await uow.commit()
        return PaymentView(update.payment, now)

    async def withdraw(
        self,
        *,
        player_id: str,
        amount: Money,
        idempotency_key: str,
        payout_method: str,
        residence: str,
        signals: ClientSignals,
    ) -> PaymentView:
        self._within(Bound.WITHDRAWAL, amount)
        payment_id = derived_id("withdrawal", player_id, require_key(idempotency_key))
        await self._geo.require(
            geo_pb2.PURPOSE_WITHDRAW, account_id=player_id, residence=residence, signals=signals
        )
        if amount.currency == PLAY:
            raise InvalidArgument("play money (PLAY) has no cash value and cannot be withdrawn")
        self.provider.check_currency(amount.currency)
        method = payout_method or "sandbox"
        verified = await self.provider.payout_verified(player_id, method)
        try:
            view = await self._record_withdrawal(
                payment_id, player_id, amount, idempotency_key, method, verified
            )
        except IntegrityError:
            view = await self._replay_payment(payment_id, PaymentKind.WITHDRAWAL, amount, method)
        return await self._submit(view, method)

    async def _record_withdrawal(
        self, payment_id: str, player_id: str, amount: Money, key: str, method: str, verified: bool
    ) -> PaymentView:
        now = self._clock.now()
        async with self._uow() as uow:
            existing = await uow.payments.get(payment_id)
            if existing is not None:
                return _replayed(existing, PaymentKind.WITHDRAWAL, amount, method)
            state = await uow.players.get(player_id, now, lock=True)
            limits = await uow.players.limits(state, amount.currency)
            account = player_account_id(player_id, amount.currency)
            await uow.ledger.open_player_accounts(player_id, [amount.currency])
            ledger = await uow.ledger.load([account])
            update = request_withdrawal(
                payment_id, limits, verified, amount, ledger.balance(account)
            )
            await post_transfers(uow, update.transfers, now)
            await uow.payments.add(
                StoredPayment(update.payment, method, self.provider.name, key, now), now
            )
            uow.publish(
                TOPIC,
                player_id,
                events_pb2.WithdrawalRequested(
                    account_id=player_id,
                    withdrawal_id=payment_id,
                    amount=money_message(amount),
                    occurred_at=protobuf_timestamp(now),
                ),
            )
            await uow.commit()
        return PaymentView(update.payment, now)

    async def _replay_payment(
        self, payment_id: str, kind: PaymentKind, amount: Money, method: str
    ) -> PaymentView:
        async with self._uow() as uow:
            existing = await uow.payments.get(payment_id)
        if existing is None:
            raise NotFound(f"payment {payment_id} vanished while being recorded; retry")
        return _replayed(existing, kind, amount, method)

    async def _submit(self, view: PaymentView, method: str) -> PaymentView:
        if view.payment.provider_reference is not None:
            return view  # the provider already answered: nothing to hand over again
        submission = await self.provider.submit(view.payment, method)
        return PaymentView(view.payment, view.created_at, submission.redirect_url)

    async def provider_callback(self, callback: ProviderCallback) -> Payment:
        """Apply the provider's word on a payment; a repeated callback changes nothing."""
        now = self._clock.now()
        async with self._uow() as uow:
            stored = await _locked_payment(uow, callback.payment_id)
            payment = await self._apply(uow, stored, callback, now)
            await uow.commit()
        return payment

    async def provider_event(self, callback: ProviderCallback, event: ProviderEvent) -> EventResult:
        """Apply a signed webhook once: a known event id, an event older than one already
        applied to the payment, or one contradicting its final state changes nothing."""
        now = self._clock.now()
        async with self._uow() as uow:
            # The payment's lock serialises deliveries of its events, so the check of the
            # event id below cannot race with another delivery of the same event.
            stored = await _locked_payment(uow, callback.payment_id)
            if await uow.payments.event_seen(event.event_id):
                return EventResult("duplicate", stored.payment)
            latest = await uow.payments.latest_event_at(stored.payment.id)
            check_event_order(stored.payment.id, event, latest)
            before = stored.payment.status
            payment = await self._apply(uow, stored, callback, now)
            await uow.payments.record_event(event, payment.id, callback.outcome, now)
            await uow.commit()
        return EventResult("applied" if payment.status != before else "unchanged", payment)

    async def _apply(
        self,
        uow: WalletUnitOfWork,
        stored: StoredPayment,
        callback: ProviderCallback,
        now: datetime,
    ) -> Payment:
        update = apply_callback(stored.payment, callback)
        if not update.changed:
            return update.payment
        if update.transfers:
            await post_transfers(uow, update.transfers, now)
        await uow.payments.save(update.payment, now)
        event = _payment_event(update.payment, stored.provider, now)
        if event is not None:
            uow.publish(TOPIC, update.payment.player_id, event)
        return update.payment

    async def waiting_payments(self, before: datetime) -> list[WaitingPayment]:
        """Payments still waiting for this provider's callback, requested before ``before``."""
        async with self._uow() as uow:
            stored = await uow.payments.requested_before(before, self.provider.name, limit=500)
        return [WaitingPayment(item.payment, item.method, item.created_at) for item in stored]


async def _locked_payment(uow: WalletUnitOfWork, payment_id: str) -> StoredPayment:
    stored = await uow.payments.get(payment_id, lock=True)
    if stored is None:
        raise UnknownPayment(
            f"the provider called back about payment {payment_id!r}, which the wallet never "
            "recorded; nothing was changed"
        )
    return stored


def _replayed(
    existing: StoredPayment, kind: PaymentKind, amount: Money, method: str
) -> PaymentView:
    payment = existing.payment
    if payment.kind is not kind or payment.amount != amount or existing.method != method:
        raise IdempotencyConflict(
            f"idempotency key {existing.idempotency_key!r} was already used for a "
            f"{payment.kind.value} of {payment.amount} via {existing.method}; "
            "use a new key for a new payment"
        )
    return PaymentView(payment, existing.created_at)


def _payment_event(payment: Payment, provider: str, now: datetime) -> Message | None:
    player, amount = payment.player_id, money_message(payment.amount)
    reference = payment.provider_reference or ""
    fingerprint = payment.instrument_fingerprint or ""
    if payment.kind is PaymentKind.DEPOSIT:
        if payment.status is PaymentStatus.CONFIRMED:
            return events_pb2.Deposited(
                deposit_id=payment.id,
                provider=provider,
                provider_reference=reference,
                instrument_fingerprint=fingerprint,
                occurred_at=protobuf_timestamp(now),
                account_id=player,
                amount=amount,
            )
        return None  # a failed deposit moved no money; the player sees it in the operation
    if payment.status is PaymentStatus.CONFIRMED:
        return events_pb2.WithdrawalCompleted(
            withdrawal_id=payment.id,
            provider=provider,
            provider_reference=reference,
            instrument_fingerprint=fingerprint,
            occurred_at=protobuf_timestamp(now),
            account_id=player,
            amount=amount,
        )
    return events_pb2.WithdrawalFailed(
        withdrawal_id=payment.id,
        reason=payment.failure_reason or "",
        occurred_at=protobuf_timestamp(now),
        account_id=player,
        amount=amount,
    )
