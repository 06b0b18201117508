"""Drops that came back: one row per ``PlayerReconnected`` (``tavla.game.v1``; migration
0015), the game's fact that a disconnected player came back within the reconnect window.

Deliberate disconnects weigh the drops of a player that did not come back (the stops)
against those that did: a dropped connection usually comes back, a walk-away never does
(``domain/deliberate_disconnect.py``, the walked route). A reconnection is kept once per
game, account and time, whatever event id it was published under.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Column, DateTime, Float, Index, String, Table, func, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from services.antiabuse.tables import ID, metadata

reconnections = Table(
    "reconnections",
    metadata,
    Column("event_id", String(ID), primary_key=True),
    Column("game_id", String(ID), nullable=False),
    Column("account_id", String(ID), nullable=False),
    Column("away_seconds", Float, nullable=False),
    Column("occurred_at", DateTime(timezone=True), nullable=False),
    Index("reconnections_by_account", "account_id", "occurred_at"),
    Index("reconnections_once", "game_id", "account_id", "occurred_at", unique=True),
)


class ReconnectionFacts:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def reconnected(
        self, event_id: str, game_id: str, account_id: str, away_seconds: float, at: datetime
    ) -> None:
        await self._session.execute(
            insert(reconnections)
            .values(
                event_id=event_id,
                game_id=game_id,
                account_id=account_id,
                away_seconds=away_seconds,
                occurred_at=at,
            )
            .on_conflict_do_nothing()
        )

    async def came_back(self, account_id: str, since: datetime) -> int:
        """How many of the account's drops since ``since`` came back within the window."""
        r = reconnections.c
        count = await self._session.scalar(
            select(func.count()).where(r.account_id == account_id, r.occurred_at >= since)
        )
        return int(count or 0)
