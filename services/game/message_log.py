"""What table chat and lobby chat store alike: an append-only log of messages per channel
(a game, a lobby room), numbered by ``seq`` under a transaction-scoped advisory lock on
the channel, so that ``seq`` commits in order and a watcher reading "after seq n" misses
nothing. Each log's table has a column per field of its row type (``reasons`` stored
comma-separated); ``chat_store`` and ``lobby_store`` hold the tables and what is theirs
alone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Generic, Protocol, TypeVar

from sqlalchemy import Column, Select, Table, func, select, text
from sqlalchemy.ext.asyncio import AsyncSession

DELIVERED = "delivered"
BLOCKED = "blocked"


class Message(Protocol):
    @property
    def reasons(self) -> tuple[str, ...]: ...


M = TypeVar("M", bound=Message)


class MessageLog(Generic[M]):
    def __init__(
        self,
        session: AsyncSession,
        table: Table,
        channel: str,
        make: Callable[..., M],
        lock_prefix: str,
    ) -> None:
        self._session = session
        self._table = table
        self._channel: Column[Any] = table.c[channel]
        self._make = make
        self._lock_prefix = lock_prefix

    async def lock(self, channel: str) -> None:
        """Serialise posts to one channel until the transaction ends."""
        await self._session.execute(
            text("SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))"),
            {"key": f"{self._lock_prefix}:{channel}"},
        )

    async def sent_since(self, account_id: str, since: datetime) -> int:
        c = self._table.c
        query = select(func.count()).where(c.account_id == account_id, c.posted_at > since)
        return int((await self._session.execute(query)).scalar_one())

    async def latest_by(self, channel: str, account_id: str, limit: int) -> list[M]:
        c = self._table.c
        query = (
            select(self._table)
            .where(self._channel == channel, c.account_id == account_id)
            .order_by(c.seq.desc())
            .limit(limit)
        )
        return await self._rows(query)

    async def next_seq(self, channel: str) -> int:
        query = select(func.coalesce(func.max(self._table.c.seq), 0)).where(
            self._channel == channel
        )
        return int((await self._session.execute(query)).scalar_one()) + 1

    async def add(self, row: M) -> None:
        values = {column.name: getattr(row, column.name) for column in self._table.c}
        values["reasons"] = ",".join(row.reasons)
        await self._session.execute(self._table.insert().values(**values))

    def _delivered(self, channel: str) -> Select[Any]:
        return select(self._table).where(
            self._channel == channel, self._table.c.status == DELIVERED
        )

    async def _rows(self, query: Select[Any]) -> list[M]:
        rows: Sequence[Any] = (await self._session.execute(query)).all()
        return [self._make(**{**r._mapping, "reasons": _reasons(r.reasons)}) for r in rows]


def _reasons(stored: str) -> tuple[str, ...]:
    return tuple(r for r in stored.split(",") if r)
