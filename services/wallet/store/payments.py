"""Deposits and withdrawals as stored: the payments repository."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from services.wallet.domain.limits import Deposit
from services.wallet.domain.money import Money
from services.wallet.domain.payments import (
    CallbackOutcome,
    Payment,
    PaymentKind,
    PaymentStatus,
    ProviderEvent,
)
from services.wallet.store.tables import payments, provider_events


@dataclass(frozen=True, slots=True)
class StoredPayment:
    payment: Payment
    method: str
    provider: str
    idempotency_key: str
    created_at: datetime


def _payment(row: Any) -> StoredPayment:
    payment = Payment(
        id=row.id,
        kind=PaymentKind(row.kind),
        player_id=row.player_id,
        amount=Money(row.amount, row.currency),
        status=PaymentStatus(row.status),
        provider_reference=row.provider_reference,
        failure_reason=row.failure_reason,
        instrument_fingerprint=row.instrument_fingerprint,
    )
    return StoredPayment(payment, row.method, row.provider, row.idempotency_key, row.created_at)


class PaymentRepository:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def get(self, payment_id: str, *, lock: bool = False) -> StoredPayment | None:
        query = select(payments).where(payments.c.id == payment_id)
        if lock:
            query = query.with_for_update()
        row = (await self._session.execute(query)).first()
        return None if row is None else _payment(row)

    async def add(self, stored: StoredPayment, now: datetime) -> None:
        payment = stored.payment
        await self._session.execute(
            payments.insert().values(
                id=payment.id,
                kind=payment.kind.value,
                player_id=payment.player_id,
                currency=payment.amount.currency,
                amount=payment.amount.amount,
                status=payment.status.value,
                method=stored.method,
                provider=stored.provider,
                idempotency_key=stored.idempotency_key,
                created_at=now,
                updated_at=now,
            )
        )

    async def save(self, payment: Payment, now: datetime) -> None:
        await self._session.execute(
            update(payments)
            .where(payments.c.id == payment.id)
            .values(
                status=payment.status.value,
                provider_reference=payment.provider_reference,
                failure_reason=payment.failure_reason,
                instrument_fingerprint=payment.instrument_fingerprint,
                updated_at=now,
            )
        )

    async def deposits_since(self, player_id: str, since: datetime) -> list[Deposit]:
        """Deposits in every currency that count against limits: confirmed, or requested
        and not yet failed (a limit in one currency counts them all)."""
        query = select(payments.c.created_at, payments.c.amount, payments.c.currency).where(
            payments.c.player_id == player_id,
            payments.c.kind == PaymentKind.DEPOSIT.value,
            payments.c.status != PaymentStatus.FAILED.value,
            payments.c.created_at > since,
        )
        rows = (await self._session.execute(query)).all()
        return [Deposit(row.created_at, Money(row.amount, row.currency)) for row in rows]

    async def requested_before(
        self, moment: datetime, provider: str, limit: int
    ) -> list[StoredPayment]:
        """Payments of ``provider`` still waiting for its word, requested by ``moment``."""
        query = (
            select(payments)
            .where(payments.c.status == PaymentStatus.REQUESTED.value)
            .where(payments.c.created_at <= moment)
            .where(payments.c.provider == provider)
            .order_by(payments.c.created_at)
            .limit(limit)
        )
        return [_payment(row) for row in (await self._session.execute(query)).all()]

    async def event_seen(self, event_id: str) -> bool:
        query = select(provider_events.c.event_id).where(provider_events.c.event_id == event_id)
        return (await self._session.scalar(query)) is not None

    async def latest_event_at(self, payment_id: str) -> datetime | None:
        query = select(func.max(provider_events.c.occurred_at)).where(
            provider_events.c.payment_id == payment_id
        )
        latest: datetime | None = await self._session.scalar(query)
        return latest

    async def record_event(
        self, event: ProviderEvent, payment_id: str, outcome: CallbackOutcome, now: datetime
    ) -> None:
        """Remember an applied provider event, in the transaction of its effect."""
        await self._session.execute(
            provider_events.insert().values(
                event_id=event.event_id,
                payment_id=payment_id,
                outcome=outcome.value,
                occurred_at=event.occurred_at,
                received_at=now,
            )
        )
