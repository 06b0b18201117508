"""Wallet use cases: each opens a transaction, loads and locks rows, applies the domain,
saves, and records its events in the outbox in the same transaction.

Every money mutation is idempotent (ids derive from the client's idempotency key
or from the game being settled), balanced (the domain's ``post`` refuses
anything else) and audited (the transfers table is the trail). Nothing here
decides a rule: the rules live in ``services.wallet.domain``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Protocol

from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp
from sqlalchemy.exc import IntegrityError

from services.kit.clock import Clock
from services.kit.errors import InvalidArgument, NotFound
from services.wallet.domain.commission import CommissionQuote, quote_match, quote_single_game
from services.wallet.domain.errors import IdempotencyConflict, InvalidSettlement
from services.wallet.domain.holds import CoverCheck, Hold, HoldStatus, can_cover
from services.wallet.domain.holds import place_hold as domain_place_hold
from services.wallet.domain.holds import raise_hold as domain_raise_hold
from services.wallet.domain.holds import void_hold as domain_void_hold
from services.wallet.domain.ledger import Ledger, Transfer, player_account_id, post
from services.wallet.domain.limits import (
    WINDOWS,
    LimitChange,
    LimitPeriod,
    PlayerLimits,
    change_deposit_limit,
    check_play,
    deposited_within,
    freeze,
    in_force,
    self_exclude,
    unfreeze,
)
from services.wallet.domain.money import PLAY, Money, require_known_currency
from services.wallet.domain.payments import (
    Payment,
    PaymentKind,
    PaymentStatus,
    ProviderCallback,
    apply_callback,
    request_deposit,
    request_withdrawal,
)
from services.wallet.domain.schedule import schedule_in_force
from services.wallet.domain.settlement import (
    Players,
    Settlement,
    settle_match,
    settle_money_game,
    settle_split,
    settlement_batch,
)
from services.wallet.domain.terms import Match, MoneyGame, WinType
from services.wallet.provider import PaymentProvider, WaitingPayment
from services.wallet.store import (
    HoldRepository,
    LedgerRepository,
    PaymentRepository,
    PlayerRepository,
    PlayerState,
    SettlementRecord,
    SettlementRepository,
    StoredHold,
    StoredPayment,
    WalletUnitOfWork,
)
from tavla.common.v1 import money_pb2
from tavla.wallet.v1 import events_pb2, wallet_pb2

TOPIC = "tavla.wallet.v1"
# Ids derived from (caller, idempotency key): a retry finds the first request's row.
_ID_NAMESPACE = uuid.UUID("3c1f8a52-8f0e-4d8e-9a5e-5b7f0a9f2c41")
_MAX_KEY = 200


def derived_id(*parts: str) -> str:
    return str(uuid.uuid5(_ID_NAMESPACE, "\x1f".join(parts)))


def require_key(key: str) -> str:
    if not key or len(key) > _MAX_KEY:
        raise InvalidArgument(
            f"idempotency_key is required (1 to {_MAX_KEY} characters): send a new random "
            "key per operation and the same key when you retry it"
        )
    return key


def require_id(value: str, what: str) -> str:
    if not value or len(value) > 100:
        raise InvalidArgument(f"{what} is required (1 to 100 characters)")
    return value


def timestamp(moment: datetime) -> Timestamp:
    stamp = Timestamp()
    stamp.FromDatetime(moment)
    return stamp


def money_message(money: Money) -> money_pb2.Money:
    return money_pb2.Money(minor_units=money.amount, currency=money.currency)


class Transaction(Protocol):
    """What a use case needs from its transaction: repositories and the outbox."""

    ledger: LedgerRepository
    holds: HoldRepository
    payments: PaymentRepository
    players: PlayerRepository
    settlements: SettlementRepository

    def publish(self, topic: str, key: str, message: Message) -> object: ...


@dataclass(frozen=True, slots=True)
class CurrencyBalance:
    currency: str
    available: Money
    held: Money


@dataclass(frozen=True, slots=True)
class Balances:
    balances: tuple[CurrencyBalance, ...]
    frozen: bool


@dataclass(frozen=True, slots=True)
class PaymentView:
    payment: Payment
    created_at: datetime
    redirect_url: str = ""


@dataclass(frozen=True, slots=True)
class LimitView:
    period: LimitPeriod
    currency: str
    current: Money | None
    pending: Money | None
    pending_removal: bool
    pending_effective_at: datetime | None
    used: Money


@dataclass(frozen=True, slots=True)
class FreezeView:
    player_id: str
    frozen: bool
    changed_at: datetime


async def lock_ledger(
    tx: Transaction,
    transfers: Sequence[Transfer],
    *,
    open_for: Sequence[str] = (),
    known_transfers: bool = True,
) -> Ledger:
    """Load (and lock) what a batch touches: its accounts and, unless told not to, the
    already-posted transfers with its ids (the domain replays those).

    ``open_for``: players whose accounts in the batch's currency are opened if missing.
    """
    account_ids = {t.debit_account_id for t in transfers} | {t.credit_account_id for t in transfers}
    transfer_ids = [t.id for t in transfers] if known_transfers else []
    before = await tx.ledger.load(account_ids, transfer_ids)
    missing = [p for p in open_for if _player_account_ids(p, transfers) - set(before.accounts)]
    if missing:
        for player in missing:
            await tx.ledger.open_player_accounts(player, {t.amount.currency for t in transfers})
        before = await tx.ledger.load(account_ids, transfer_ids)
    return before


async def post_locked(
    tx: Transaction, before: Ledger, transfers: Sequence[Transfer], now: datetime
) -> Ledger:
    """Post a batch through the domain on the locked ledger slice, and save the result."""
    posting = post(before, transfers)
    await tx.ledger.save(before, posting, now)
    return posting.ledger


async def post_transfers(tx: Transaction, transfers: Sequence[Transfer], now: datetime) -> Ledger:
    """Lock what the batch touches, post it through the domain, save it."""
    return await post_locked(tx, await lock_ledger(tx, transfers), transfers, now)


def _player_account_ids(player_id: str, transfers: Sequence[Transfer]) -> set[str]:
    return {player_account_id(player_id, t.amount.currency) for t in transfers}


class WalletService:
    def __init__(
        self,
        unit_of_work: Callable[[], WalletUnitOfWork],
        *,
        clock: Clock,
        provider: PaymentProvider,
    ) -> None:
        self._uow = unit_of_work
        self._clock = clock
        self.provider = provider

    # ------------------------------------------------------------------ balances

    async def balances(self, player_id: str) -> Balances:
        async with self._uow() as uow:
            available = await uow.ledger.player_balances(player_id)
            held = await uow.holds.held_by_currency(player_id)
            frozen_reason = await uow.players.frozen_reason(player_id)
        currencies = sorted(set(available) | set(held))
        return Balances(
            tuple(
                CurrencyBalance(
                    currency,
                    available.get(currency, Money.zero(currency)),
                    Money(held.get(currency, 0), currency),
                )
                for currency in currencies
            ),
            frozen=frozen_reason is not None,
        )

    # ------------------------------------------------------------------ payments

    async def deposit(
        self, *, player_id: str, amount: Money, idempotency_key: str, method: str
    ) -> PaymentView:
        payment_id = derived_id("deposit", player_id, require_key(idempotency_key))
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
            # Locking the player serialises deposits, so two cannot both squeeze under a limit.
            state = await uow.players.get(player_id, now, lock=True)
            limits = await uow.players.limits(state, amount.currency)
            recent = await uow.payments.deposits_since(
                player_id, amount.currency, now - WINDOWS[LimitPeriod.MONTH]
            )
            update = request_deposit(payment_id, limits, amount, recent, now)
            await uow.ledger.open_player_accounts(player_id, [amount.currency])
            stored = StoredPayment(update.payment, method, self.provider.name, key, now)
            await uow.payments.add(stored, now)
            await uow.commit()
        return PaymentView(update.payment, now)

    async def withdraw(
        self, *, player_id: str, amount: Money, idempotency_key: str, payout_method: str
    ) -> PaymentView:
        payment_id = derived_id("withdrawal", player_id, require_key(idempotency_key))
        if amount.currency == PLAY:
            raise InvalidArgument("play money (PLAY) has no cash value and cannot be withdrawn")
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
                    occurred_at=timestamp(now),
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
            stored = await uow.payments.get(callback.payment_id, lock=True)
            if stored is None:
                raise NotFound(
                    f"the provider called back about unknown payment {callback.payment_id}"
                )
            update = apply_callback(stored.payment, callback)
            if not update.changed:
                return update.payment
            if update.transfers:
                await post_transfers(uow, update.transfers, now)
            await uow.payments.save(update.payment, now)
            event = _payment_event(update.payment, stored.provider, now)
            if event is not None:
                uow.publish(TOPIC, update.payment.player_id, event)
            await uow.commit()
        return update.payment

    async def waiting_payments(self, before: datetime) -> list[WaitingPayment]:
        """Payments still waiting for this provider's callback, requested before ``before``."""
        async with self._uow() as uow:
            stored = await uow.payments.requested_before(before, limit=500)
        return [
            WaitingPayment(item.payment, item.method, item.created_at)
            for item in stored
            if item.provider == self.provider.name
        ]

    # ------------------------------------------------------------------ commission

    def quote_single_game(
        self, stake: Money, cube: int, win_type: WinType, ratings: tuple[Decimal, Decimal]
    ) -> CommissionQuote:
        schedule = schedule_in_force(stake.currency, self._clock.now())
        return quote_single_game(schedule, MoneyGame(stake), cube, win_type, ratings)

    def quote_match(
        self, stake: Money, length: int, ratings: tuple[Decimal, Decimal]
    ) -> CommissionQuote:
        schedule = schedule_in_force(stake.currency, self._clock.now())
        return quote_match(schedule, Match(stake, length), ratings)

    # ------------------------------------------------------------------ limits

    async def set_deposit_limit(
        self, *, player_id: str, period: LimitPeriod, limit: Money | None, currency: str
    ) -> LimitView:
        currency = require_known_currency(limit.currency if limit else currency)
        now = self._clock.now()
        async with self._uow() as uow:
            state = await uow.players.get(player_id, now, lock=True)
            limits = await uow.players.limits(state, currency)
            updated, change = change_deposit_limit(limits, period, limit, now)
            await uow.players.save_limits(updated, now)
            uow.publish(TOPIC, player_id, _limit_changed(change, currency, now))
            used = await self._used(uow, player_id, currency, now)
            await uow.commit()
        return _limit_view(updated, period, used, now)

    async def deposit_limits(self, player_id: str) -> list[LimitView]:
        now = self._clock.now()
        views: list[LimitView] = []
        async with self._uow() as uow:
            state = await uow.players.get(player_id, now)
            for currency in await uow.players.limit_currencies(player_id):
                limits = await uow.players.limits(state, currency)
                used = await self._used(uow, player_id, currency, now)
                current = in_force(limits, now)
                periods = sorted(
                    set(current.deposit_limits) | set(current.pending),
                    key=lambda p: list(LimitPeriod).index(p),
                )
                views.extend(_limit_view(current, period, used, now) for period in periods)
            await uow.commit()
        return views

    @staticmethod
    async def _used(
        uow: WalletUnitOfWork, player_id: str, currency: str, now: datetime
    ) -> dict[LimitPeriod, Money]:
        deposits = await uow.payments.deposits_since(
            player_id, currency, now - WINDOWS[LimitPeriod.MONTH]
        )
        return {
            period: Money(deposited_within(deposits, window, now), currency)
            for period, window in WINDOWS.items()
        }

    # ------------------------------------------------------------------ holds

    async def place_hold(
        self, *, player_id: str, amount: Money, table_id: str, game_id: str, idempotency_key: str
    ) -> StoredHold:
        require_id(player_id, "account_id")
        require_id(table_id, "table_id")
        hold_id = derived_id("hold", player_id, require_key(idempotency_key))
        try:
            return await self._place_hold(
                hold_id, player_id, amount, table_id, game_id, idempotency_key
            )
        except IntegrityError:  # the same request committed first
            async with self._uow() as uow:
                existing = await uow.holds.get(hold_id)
            if existing is None:
                raise
            return _replayed_hold(existing, player_id, table_id, amount)

    async def _place_hold(
        self, hold_id: str, player_id: str, amount: Money, table_id: str, game_id: str, key: str
    ) -> StoredHold:
        now = self._clock.now()
        async with self._uow() as uow:
            existing = await uow.holds.get(hold_id)
            if existing is not None:
                return _replayed_hold(existing, player_id, table_id, amount)
            state = await uow.players.get(player_id, now)
            check_play(_play_limits(state, amount.currency), now)
            account = player_account_id(player_id, amount.currency)
            await uow.ledger.open_player_accounts(player_id, [amount.currency])
            ledger = await uow.ledger.load([account])
            change = domain_place_hold(
                hold_id, player_id, table_id, amount, ledger.balance(account), game_id or None
            )
            if change.transfer is not None:
                await post_transfers(uow, [change.transfer], now)
            await uow.holds.add(change.hold, key, now)
            uow.publish(TOPIC, player_id, _hold_placed(change.hold, now))
            await uow.commit()
        return StoredHold(change.hold, key, now)

    async def raise_hold(self, *, hold_id: str, new_amount: Money, game_id: str) -> StoredHold:
        now = self._clock.now()
        async with self._uow() as uow:
            stored = await _locked_hold(uow, hold_id)
            hold = stored.hold
            account = player_account_id(hold.player_id, hold.currency)
            ledger = await uow.ledger.load([account])
            change = domain_raise_hold(hold, new_amount, ledger.balance(account), game_id or None)
            if change.hold == hold:
                return stored  # a retry of a raise already made: nothing moves twice
            if change.transfer is not None:
                await post_transfers(uow, [change.transfer], now)
            await uow.holds.save(change.hold, now)
            uow.publish(
                TOPIC,
                hold.player_id,
                events_pb2.HoldRaised(
                    account_id=hold.player_id,
                    hold_id=hold.id,
                    previous_amount=money_message(change.previous_amount),
                    new_amount=money_message(change.hold.amount),
                    game_id=change.hold.game_id or "",
                    occurred_at=timestamp(now),
                ),
            )
            await uow.commit()
        return StoredHold(change.hold, stored.idempotency_key, stored.created_at)

    async def release_hold(self, *, hold_id: str, reason: str) -> StoredHold:
        async with self._uow() as uow:
            stored = await _locked_hold(uow, hold_id)
            [released] = await void(uow, [stored], reason, self._clock.now())
            await uow.commit()
        return released

    async def can_cover(self, *, player_id: str, amount: Money, hold_id: str) -> CoverCheck:
        async with self._uow() as uow:
            hold: Hold | None = None
            if hold_id:
                stored = await uow.holds.get(hold_id)
                if stored is None:
                    raise NotFound(f"no hold {hold_id}")
                hold = stored.hold
            balance = await uow.ledger.balance(player_account_id(player_id, amount.currency))
        available = balance.net if balance else Money.zero(amount.currency)
        return can_cover(hold, amount, available)

    # ------------------------------------------------------------------ freeze

    async def freeze(self, *, player_id: str, reason: str, alert_id: str) -> FreezeView:
        require_id(player_id, "account_id")
        now = self._clock.now()
        async with self._uow() as uow:
            state = await uow.players.get(player_id, now, lock=True)
            if state.frozen_reason is not None:
                return FreezeView(player_id, True, now)  # already frozen: one event is enough
            frozen = freeze(_play_limits(state, "USD"), reason)
            await uow.players.set_frozen(player_id, frozen.frozen_reason, alert_id or None, now)
            uow.publish(
                TOPIC,
                player_id,
                events_pb2.AccountFrozen(
                    account_id=player_id,
                    reason=frozen.frozen_reason or "",
                    alert_id=alert_id,
                    occurred_at=timestamp(now),
                ),
            )
            await uow.commit()
        return FreezeView(player_id, True, now)

    async def unfreeze(self, *, player_id: str, reason: str) -> FreezeView:
        require_id(player_id, "account_id")
        now = self._clock.now()
        async with self._uow() as uow:
            state = await uow.players.get(player_id, now, lock=True)
            if state.frozen_reason is None:
                return FreezeView(player_id, False, now)
            unfreeze(_play_limits(state, "USD"))
            await uow.players.set_frozen(player_id, None, None, now)
            uow.publish(
                TOPIC,
                player_id,
                events_pb2.AccountUnfrozen(
                    account_id=player_id, reason=reason, occurred_at=timestamp(now)
                ),
            )
            await uow.commit()
        return FreezeView(player_id, False, now)


# ---------------------------------------------------------------------- helpers


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


def _replayed_hold(
    existing: StoredHold, player_id: str, table_id: str, amount: Money
) -> StoredHold:
    hold = existing.hold
    # A raised hold replays its placement too: compare what was asked, not what it became.
    same = hold.player_id == player_id and hold.table_id == table_id
    if not same or hold.currency != amount.currency or hold.amount < amount:
        raise IdempotencyConflict(
            f"idempotency key {existing.idempotency_key!r} already placed hold {hold.id} of "
            f"{hold.amount} for table {hold.table_id}; use a new key for a new hold"
        )
    return existing


async def _locked_hold(uow: WalletUnitOfWork, hold_id: str) -> StoredHold:
    require_id(hold_id, "hold_id")
    stored = await uow.holds.get(hold_id, lock=True)
    if stored is None:
        raise NotFound(f"no hold {hold_id}; place it with PlaceHold first")
    return stored


def _play_limits(state: PlayerState, currency: str) -> PlayerLimits:
    return PlayerLimits(
        player_id=state.player_id,
        currency=currency,
        self_exclusion=state.self_exclusion,
        frozen_reason=state.frozen_reason,
    )


def _hold_placed(hold: Hold, now: datetime) -> events_pb2.HoldPlaced:
    return events_pb2.HoldPlaced(
        account_id=hold.player_id,
        hold_id=hold.id,
        amount=money_message(hold.amount),
        table_id=hold.table_id,
        game_id=hold.game_id or "",
        occurred_at=timestamp(now),
    )


def _payment_event(payment: Payment, provider: str, now: datetime) -> Message | None:
    player, amount = payment.player_id, money_message(payment.amount)
    reference = payment.provider_reference or ""
    if payment.kind is PaymentKind.DEPOSIT:
        if payment.status is PaymentStatus.CONFIRMED:
            return events_pb2.Deposited(
                deposit_id=payment.id,
                provider=provider,
                provider_reference=reference,
                occurred_at=timestamp(now),
                account_id=player,
                amount=amount,
            )
        return None  # a failed deposit moved no money; the player sees it in the operation
    if payment.status is PaymentStatus.CONFIRMED:
        return events_pb2.WithdrawalCompleted(
            withdrawal_id=payment.id,
            provider=provider,
            provider_reference=reference,
            occurred_at=timestamp(now),
            account_id=player,
            amount=amount,
        )
    return events_pb2.WithdrawalFailed(
        withdrawal_id=payment.id,
        reason=payment.failure_reason or "",
        occurred_at=timestamp(now),
        account_id=player,
        amount=amount,
    )


_PERIODS = {
    LimitPeriod.DAY: wallet_pb2.LIMIT_PERIOD_DAY,
    LimitPeriod.WEEK: wallet_pb2.LIMIT_PERIOD_WEEK,
    LimitPeriod.MONTH: wallet_pb2.LIMIT_PERIOD_MONTH,
}


def period_message(period: LimitPeriod) -> wallet_pb2.LimitPeriod.ValueType:
    return _PERIODS[period]


def _limit_changed(change: LimitChange, currency: str, now: datetime) -> events_pb2.LimitChanged:
    event = events_pb2.LimitChanged(
        account_id=change.player_id,
        period=period_message(change.period),
        effective_at=timestamp(change.effective_at),
        occurred_at=timestamp(now),
    )
    if change.previous is not None:
        event.previous_limit.CopyFrom(money_message(change.previous))
    if change.requested is not None:
        event.new_limit.CopyFrom(money_message(change.requested))
    return event


def _limit_view(
    limits: PlayerLimits, period: LimitPeriod, used: dict[LimitPeriod, Money], now: datetime
) -> LimitView:
    current = in_force(limits, now)
    pending = current.pending.get(period)
    return LimitView(
        period=period,
        currency=limits.currency,
        current=current.deposit_limits.get(period),
        pending=pending.amount if pending else None,
        pending_removal=pending is not None and pending.amount is None,
        pending_effective_at=pending.effective_at if pending else None,
        used=used.get(period, Money.zero(limits.currency)),
    )


# ---------------------------------------------------------------------- settlement


@dataclass(frozen=True, slots=True)
class Seat:
    """One player of a finished game as the game service reported them."""

    player_id: str
    rating: Decimal
    hold_id: str


@dataclass(frozen=True)
class SettlementRequest:
    """A finished money game or match to settle (built from GameEnded / MatchEnded)."""

    settlement_id: str
    game_id: str
    game_number: int  # 0 for a match
    table_id: str
    terms: MoneyGame | Match
    seats: tuple[Seat, Seat]
    winner_id: str
    loser_id: str
    cube: int
    win_type: WinType
    shares: Mapping[str, Decimal]  # disconnection splits only
    occurred_at: datetime
    source_event_id: str

    @property
    def currency(self) -> str:
        return self.terms.stake.currency


class Settler:
    """Settles finished games inside the caller's transaction (the consumer's inbox one).

    Every rule check happens before the first write, so a refused settlement
    leaves nothing behind but its ``rejected`` record.
    """

    def __init__(self, clock: Clock) -> None:
        self._clock = clock

    async def settle(self, tx: Transaction, request: SettlementRequest) -> SettlementRecord:
        """Settle one finished game or match; the same game again returns the first result.

        The settlement row is the batch's idempotency record: it commits with the
        transfers, and is looked up only once the game's holds and accounts are
        locked, so a duplicate running alongside waits for the first and then
        finds it.
        """
        now = self._clock.now()
        settlement = domain_settlement(request)
        hold_ids = [seat.hold_id for seat in request.seats if seat.hold_id]
        locked = await tx.holds.get_many(hold_ids, lock=True)
        check_holds(request, locked)
        open_holds = [s.hold for s in locked.values() if s.hold.status is HoldStatus.OPEN]
        batch = settlement_batch(settlement, open_holds)
        # Play-money tables hold nothing, so a player may have no account yet.
        seats = [seat.player_id for seat in request.seats]
        before = await lock_ledger(tx, batch.transfers, open_for=seats, known_transfers=False)
        existing = await tx.settlements.get(request.settlement_id)
        if existing is not None:
            return existing  # the same game reported again under another event id
        await post_locked(tx, before, batch.transfers, now)
        await tx.holds.save_many(batch.posted_holds, now)
        record = settlement_record(request, settlement, "settled", None, now)
        await tx.settlements.add(record)
        tx.publish(TOPIC, request.game_id, settled_event(request, settlement, now))
        return record

    async def reject(
        self, tx: Transaction, request: SettlementRequest, reason: str
    ) -> SettlementRecord:
        """Remember a result the wallet refused, so an operator can reconcile it by hand."""
        existing = await tx.settlements.get(request.settlement_id)
        if existing is not None:
            return existing  # refused (or settled) already under another event id
        record = rejected_record(request, reason, self._clock.now())
        await tx.settlements.add(record)
        return record


def rejected_record(request: SettlementRequest, reason: str, now: datetime) -> SettlementRecord:
    """The record of a result the wallet refused: no money moved, the reason kept."""
    return SettlementRecord(
        id=request.settlement_id,
        game_id=request.game_id,
        game_number=request.game_number,
        table_id=request.table_id,
        kind=_kind(request),
        currency=request.currency,
        winner_id=request.winner_id or None,
        loser_id=request.loser_id or None,
        win_sum=0,
        commission_total=0,
        rate="0",
        schedule_version="",
        disconnection=bool(request.shares),
        status="rejected",
        detail=reason[:1000],
        source_event_id=request.source_event_id,
        settled_at=now,
    )


def check_holds(request: SettlementRequest, locked: Mapping[str, StoredHold]) -> None:
    """Each hold the game names must exist and be its seat's, at its table."""
    for seat in request.seats:
        if not seat.hold_id:
            continue
        stored = locked.get(seat.hold_id)
        if stored is None:
            raise InvalidSettlement(f"game {request.game_id} names unknown hold {seat.hold_id}")
        hold = stored.hold
        if hold.player_id != seat.player_id or hold.table_id != request.table_id:
            raise InvalidSettlement(
                f"hold {hold.id} belongs to {hold.player_id} at table {hold.table_id}, not to "
                f"{seat.player_id} at table {request.table_id} of game {request.game_id}"
            )


def _kind(request: SettlementRequest) -> str:
    return "series" if isinstance(request.terms, Match) else "single"


def domain_settlement(request: SettlementRequest) -> Settlement:
    schedule = schedule_in_force(request.currency, request.occurred_at)
    first, second = request.seats
    ratings = (first.rating, second.rating)
    if request.shares:
        share = request.shares.get(first.player_id)
        if share is None or set(request.shares) != {first.player_id, second.player_id}:
            raise InvalidSettlement(
                f"the shares of game {request.game_id} name {sorted(request.shares)}, "
                f"not its players {first.player_id} and {second.player_id}"
            )
        return settle_split(
            request.settlement_id,
            first.player_id,
            second.player_id,
            request.terms,
            request.cube,
            share,
            ratings,
            schedule,
        )
    seat_ids = {first.player_id, second.player_id}
    if {request.winner_id, request.loser_id} != seat_ids:
        raise InvalidSettlement(
            f"game {request.game_id} names winner {request.winner_id!r} and loser "
            f"{request.loser_id!r}, but its players are {sorted(seat_ids)}"
        )
    players = Players(request.winner_id, request.loser_id)
    if isinstance(request.terms, Match):
        return settle_match(request.settlement_id, players, request.terms, ratings, schedule)
    return settle_money_game(
        request.settlement_id,
        players,
        request.terms,
        request.cube,
        request.win_type,
        ratings,
        schedule,
    )


def settlement_record(
    request: SettlementRequest,
    settlement: Settlement,
    status: str,
    detail: str | None,
    now: datetime,
) -> SettlementRecord:
    players = settlement.players
    return SettlementRecord(
        id=request.settlement_id,
        game_id=request.game_id,
        game_number=request.game_number,
        table_id=request.table_id,
        kind=_kind(request),
        currency=settlement.currency,
        winner_id=players.winner_id if players else None,
        loser_id=players.loser_id if players else None,
        win_sum=settlement.loser_debit.amount,
        commission_total=settlement.commission_total.amount,
        rate=str(settlement.quote.rate) if settlement.quote else "0",
        schedule_version=settlement.schedule_version,
        disconnection=bool(settlement.shares),
        status=status,
        detail=detail,
        source_event_id=request.source_event_id,
        settled_at=now,
    )


def settled_event(
    request: SettlementRequest, settlement: Settlement, now: datetime
) -> events_pb2.Settled:
    quote = settlement.quote
    zero = Money.zero(settlement.currency)
    net = settlement.net_changes()
    counted = quote.adjustment.counted_ratings if quote else None
    players = []
    for index, seat in enumerate(request.seats):
        share = settlement.shares.get(seat.player_id)
        players.append(
            events_pb2.PlayerSettlement(
                account_id=seat.player_id,
                # The schedule counts ratings as decimals; the event's field is a double.
                rating=float(counted[index] if counted else seat.rating),
                commission=money_message(quote.per_player if quote else zero),
                net=money_message(net.get(seat.player_id, zero)),
                share=str(share) if share is not None else "",
            )
        )
    winner = settlement.players
    return events_pb2.Settled(
        game_id=request.game_id,
        settlement_id=settlement.id,
        game_number=request.game_number,
        kind=wallet_pb2.SETTLEMENT_KIND_SERIES
        if isinstance(request.terms, Match)
        else wallet_pb2.SETTLEMENT_KIND_SINGLE_GAME,
        source_event_id=request.source_event_id,
        winner_account_id=winner.winner_id if winner else "",
        loser_account_id=winner.loser_id if winner else "",
        win_sum=money_message(settlement.loser_debit),
        rate=str(quote.rate) if quote else "0",
        commission_total=money_message(settlement.commission_total),
        winner_credit=money_message(settlement.winner_credit),
        loser_debit=money_message(settlement.loser_debit),
        players=players,
        schedule_version=settlement.schedule_version,
        disconnection=bool(settlement.shares),
        occurred_at=timestamp(now),
    )


# ---------------------------------------------------------------------- self-exclusion


async def record_self_exclusion(
    tx: Transaction, player_id: str, until: datetime | None, at: datetime
) -> None:
    """The player self-excluded (accounts service): no deposits or play until ``until``.

    The domain only ever lengthens an exclusion, so a replayed or late event cannot shorten it.
    """
    state = await tx.players.get(player_id, at, lock=True)
    length = None if until is None else max(until - at, timedelta(0))
    excluded = self_exclude(_play_limits(state, "USD"), at, length)
    await tx.players.set_self_exclusion(player_id, excluded.self_exclusion, at)


# ---------------------------------------------------------------------- releases


async def void(
    tx: Transaction, held: Sequence[StoredHold], reason: str, now: datetime
) -> list[StoredHold]:
    """Give locked holds back to their players in one batch (its accounts are locked in
    the ledger's order); holds released already change nothing."""
    open_holds = [stored for stored in held if stored.hold.status is not HoldStatus.VOIDED]
    changes = [(stored, domain_void_hold(stored.hold)) for stored in open_holds]
    transfers = [change.transfer for _, change in changes if change.transfer is not None]
    if transfers:
        await post_transfers(tx, transfers, now)
    released = {stored.hold.id: stored for stored in held}
    for stored, change in changes:
        await tx.holds.save(change.hold, now, release_reason=reason or "released")
        tx.publish(
            TOPIC,
            change.hold.player_id,
            events_pb2.HoldReleased(
                account_id=change.hold.player_id,
                hold_id=change.hold.id,
                amount=money_message(change.previous_amount),
                reason=reason,
                occurred_at=timestamp(now),
            ),
        )
        released[change.hold.id] = StoredHold(
            change.hold, stored.idempotency_key, stored.created_at
        )
    return [released[stored.hold.id] for stored in held]


async def release_cancelled(
    tx: Transaction, table_id: str, hold_ids: Sequence[str], reason: str, now: datetime
) -> int:
    """A cancelled game's holds go back to their players; returns how many were released.

    Holds already posted or released, or belonging to another table, are left alone.
    """
    locked = await tx.holds.get_many(hold_ids, lock=True)
    eligible = [
        stored
        for stored in locked.values()
        if stored.hold.table_id == table_id and stored.hold.status is HoldStatus.OPEN
    ]
    await void(tx, eligible, reason, now)
    return len(eligible)
