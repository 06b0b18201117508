"""Responsible gaming: deposit limits, self-exclusion and frozen accounts."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from services.kit.clock import protobuf_timestamp
from services.wallet.domain.limits import (
    WINDOWS,
    LimitChange,
    LimitPeriod,
    PlayerLimits,
    change_deposit_limit,
    deposited_within,
    freeze,
    in_force,
    self_exclude,
    unfreeze,
)
from services.wallet.domain.money import Money, require_known_currency
from services.wallet.domain.rates import planning_rates
from services.wallet.ids import require_id
from services.wallet.messages import TOPIC, money_message, period_message
from services.wallet.posting import Transaction
from services.wallet.store.players import PlayerState
from services.wallet.store.unit_of_work import WalletUnitOfWork
from services.wallet.use_case import UseCases
from tavla.wallet.v1 import events_pb2


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


class LimitUseCases(UseCases):
    """Deposit limits (set and read) and freezing or unfreezing an account."""

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
        deposits = await uow.payments.deposits_since(player_id, now - WINDOWS[LimitPeriod.MONTH])
        rates = planning_rates(now)
        return {
            period: deposited_within(deposits, window, now, rates, currency)
            for period, window in WINDOWS.items()
        }

    async def freeze(self, *, player_id: str, reason: str, alert_id: str) -> FreezeView:
        require_id(player_id, "account_id")
        now = self._clock.now()
        async with self._uow() as uow:
            if await record_freeze(uow, player_id, reason, alert_id, now):
                await uow.commit()
        return FreezeView(player_id, True, now)

    async def unfreeze(self, *, player_id: str, reason: str) -> FreezeView:
        require_id(player_id, "account_id")
        now = self._clock.now()
        async with self._uow() as uow:
            state = await uow.players.get(player_id, now, lock=True)
            if state.frozen_reason is None:
                return FreezeView(player_id, False, now)
            unfreeze(play_limits(state, "USD"))
            await uow.players.set_frozen(player_id, None, None, now)
            uow.publish(
                TOPIC,
                player_id,
                events_pb2.AccountUnfrozen(
                    account_id=player_id, reason=reason, occurred_at=protobuf_timestamp(now)
                ),
            )
            await uow.commit()
        return FreezeView(player_id, False, now)


def play_limits(state: PlayerState, currency: str) -> PlayerLimits:
    return PlayerLimits(
        player_id=state.player_id,
        currency=currency,
        self_exclusion=state.self_exclusion,
        frozen_reason=state.frozen_reason,
    )


def _limit_changed(change: LimitChange, currency: str, now: datetime) -> events_pb2.LimitChanged:
    event = events_pb2.LimitChanged(
        account_id=change.player_id,
        period=period_message(change.period),
        effective_at=protobuf_timestamp(change.effective_at),
        occurred_at=protobuf_timestamp(now),
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


async def record_freeze(
    tx: Transaction, player_id: str, reason: str, alert_id: str, at: datetime
) -> bool:
    """Freeze the player (FreezeAccount, or an anti-abuse sanction) with AccountFrozen in
    the outbox; False, and nothing written, if already frozen (one event is enough)."""
    state = await tx.players.get(player_id, at, lock=True)
    if state.frozen_reason is not None:
        return False
    frozen = freeze(play_limits(state, "USD"), reason)
    await tx.players.set_frozen(player_id, frozen.frozen_reason, alert_id or None, at)
    tx.publish(
        TOPIC,
        player_id,
        events_pb2.AccountFrozen(
            account_id=player_id,
            reason=frozen.frozen_reason or "",
            alert_id=alert_id,
            occurred_at=protobuf_timestamp(at),
        ),
    )
    return True


async def record_self_exclusion(
    tx: Transaction, player_id: str, until: datetime | None, at: datetime
) -> None:
    """The player self-excluded (accounts service): no deposits or play until ``until``.

    The domain only ever lengthens an exclusion, so a replayed or late event cannot shorten it.
    """
    state = await tx.players.get(player_id, at, lock=True)
    length = None if until is None else max(until - at, timedelta(0))
    excluded = self_exclude(play_limits(state, "USD"), at, length)
    await tx.players.set_self_exclusion(player_id, excluded.self_exclusion, at)
