"""Holds (stakes set aside while a player sits at a table): their repository."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import and_, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from services.wallet.domain.holds import Hold, HoldStatus
from services.wallet.domain.money import Money
from services.wallet.store.driver import DriverStatement
from services.wallet.store.tables import holds


@dataclass(frozen=True, slots=True)
class StoredHold:
    hold: Hold
    idempotency_key: str
    created_at: datetime


def hold_from_row(row: Mapping[Any, Any]) -> StoredHold:
    """A ``holds`` row, by column name (a SQLAlchemy row's mapping, or a driver record)."""
    hold = Hold(
        id=row["id"],
        player_id=row["player_id"],
        table_id=row["table_id"],
        amount=Money(row["amount"], row["currency"]),
        status=HoldStatus(row["status"]),
        game_id=row["game_id"],
    )
    return StoredHold(hold, row["idempotency_key"], row["created_at"])


class HoldRepository:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def get(self, hold_id: str, *, lock: bool = False) -> StoredHold | None:
        found = await self.get_many([hold_id], lock=lock)
        return found.get(hold_id)

    async def get_many(self, hold_ids: Iterable[str], *, lock: bool) -> dict[str, StoredHold]:
        ids = sorted(set(hold_ids))
        if not ids:
            return {}
        query = select(holds).where(holds.c.id.in_(ids)).order_by(holds.c.id)
        if lock:
            query = query.with_for_update()
        rows = (await self._session.execute(query)).all()
        return {row.id: hold_from_row(row._mapping) for row in rows}

    async def add(self, hold: Hold, idempotency_key: str, now: datetime) -> None:
        await self.add_many([(hold, idempotency_key)], now)

    async def add_many(self, placed: Sequence[tuple[Hold, str]], now: datetime) -> None:
        """New holds, each with its idempotency key, in one statement (the same one for any
        count: a multi-row ``VALUES`` would be compiled again on every call)."""
        if not placed:
            return
        await _ADD_MANY.execute(
            self._session,
            {
                "ids": [hold.id for hold, _ in placed],
                "player_ids": [hold.player_id for hold, _ in placed],
                "table_ids": [hold.table_id for hold, _ in placed],
                "currencies": [hold.currency for hold, _ in placed],
                "amounts": [hold.amount.amount for hold, _ in placed],
                "statuses": [hold.status.value for hold, _ in placed],
                "game_ids": [hold.game_id for hold, _ in placed],
                "keys": [key for _, key in placed],
                "now": now,
            },
        )

    async def save(self, hold: Hold, now: datetime, release_reason: str | None = None) -> None:
        values: dict[str, Any] = {
            "amount": hold.amount.amount,
            "status": hold.status.value,
            "game_id": hold.game_id,
            "updated_at": now,
        }
        if release_reason is not None:
            values["release_reason"] = release_reason
        await self._session.execute(update(holds).where(holds.c.id == hold.id).values(values))

    async def save_many(self, changed: Sequence[Hold], now: datetime) -> None:
        """Each hold's amount, status and game, in one statement (the rows locked already)."""
        if len(changed) == 1:
            await self.save(changed[0], now)
        elif changed:
            ordered = sorted(changed, key=lambda hold: hold.id)
            await _SAVE_MANY.execute(
                self._session,
                {
                    "ids": [hold.id for hold in ordered],
                    "amounts": [hold.amount.amount for hold in ordered],
                    "statuses": [hold.status.value for hold in ordered],
                    "game_ids": [hold.game_id for hold in ordered],
                    "now": now,
                },
            )

    async def held_by_currency(self, player_id: str) -> dict[str, int]:
        query = (
            select(holds.c.currency, func.sum(holds.c.amount))
            .where(and_(holds.c.player_id == player_id, holds.c.status == HoldStatus.OPEN.value))
            .group_by(holds.c.currency)
        )
        return {currency: int(total) for currency, total in (await self._session.execute(query))}


_ADD_MANY = DriverStatement.of(
    """
    INSERT INTO holds (id, player_id, table_id, currency, amount, status, game_id,
                       idempotency_key, created_at, updated_at)
    SELECT d.id, d.player_id, d.table_id, d.currency, d.amount, d.status, d.game_id, d.key,
           CAST(:now AS timestamptz), CAST(:now AS timestamptz)
    FROM unnest(CAST(:ids AS text[]), CAST(:player_ids AS text[]), CAST(:table_ids AS text[]),
                CAST(:currencies AS text[]), CAST(:amounts AS bigint[]),
                CAST(:statuses AS text[]), CAST(:game_ids AS text[]), CAST(:keys AS text[]))
        AS d(id, player_id, table_id, currency, amount, status, game_id, key)
    """
)

_SAVE_MANY = DriverStatement.of(
    """
    UPDATE holds AS h
    SET amount = d.amount, status = d.status, game_id = d.game_id,
        updated_at = CAST(:now AS timestamptz)
    FROM unnest(CAST(:ids AS text[]), CAST(:amounts AS bigint[]), CAST(:statuses AS text[]),
                CAST(:game_ids AS text[])) AS d(id, amount, status, game_id)
    WHERE h.id = d.id
    """
)
