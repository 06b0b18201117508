"""Lobby chat's table and repository (migration 0007), beside table chat's.

``lobby_messages``: every lobby message posted, delivered or blocked (the compliance
record), numbered per room by ``seq``, with the reasons moderation gave. Posting takes a
transaction-scoped advisory lock on the room, so ``seq`` commits in order and a watcher
reading "after seq n" misses nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Column,
    DateTime,
    Index,
    PrimaryKeyConstraint,
    String,
    Table,
    func,
    select,
    text,
)
from sqlalchemy.ext.asyncio import AsyncSession

from services.game.chat_store import DELIVERED
from services.game.store import metadata

lobby_messages = Table(
    "lobby_messages",
    metadata,
    Column("room", String(32), nullable=False),
    Column("seq", BigInteger, nullable=False),
    Column("message_id", String(64), nullable=False, unique=True),
    Column("account_id", String(64), nullable=False),
    Column("text", String(1200), nullable=False),
    Column("status", String(16), nullable=False),
    Column("reasons", String(200), nullable=False),  # comma-separated, "" when delivered
    Column("posted_at", DateTime(timezone=True), nullable=False),
    PrimaryKeyConstraint("room", "seq"),
)
Index("lobby_messages_by_sender", lobby_messages.c.account_id, lobby_messages.c.posted_at)


@dataclass(frozen=True)
class LobbyRow:
    room: str
    seq: int
    message_id: str
    account_id: str
    text: str
    status: str
    reasons: tuple[str, ...]
    posted_at: datetime


def _row(row: object) -> LobbyRow:
    m = row._mapping  # type: ignore[attr-defined]
    return LobbyRow(
        room=m["room"],
        seq=m["seq"],
        message_id=m["message_id"],
        account_id=m["account_id"],
        text=m["text"],
        status=m["status"],
        reasons=tuple(r for r in m["reasons"].split(",") if r),
        posted_at=m["posted_at"],
    )


class LobbyRepository:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def lock(self, room: str) -> None:
        """Serialise posts to one room until the transaction ends."""
        await self._session.execute(
            text("SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))"),
            {"key": f"lobby:{room}"},
        )

    async def sent_since(self, account_id: str, since: datetime) -> int:
        query = select(func.count()).where(
            lobby_messages.c.account_id == account_id, lobby_messages.c.posted_at > since
        )
        return int((await self._session.execute(query)).scalar_one())

    async def latest_by(self, room: str, account_id: str, limit: int) -> list[LobbyRow]:
        query = (
            select(lobby_messages)
            .where(lobby_messages.c.room == room, lobby_messages.c.account_id == account_id)
            .order_by(lobby_messages.c.seq.desc())
            .limit(limit)
        )
        return [_row(r) for r in await self._session.execute(query)]

    async def next_seq(self, room: str) -> int:
        query = select(func.coalesce(func.max(lobby_messages.c.seq), 0)).where(
            lobby_messages.c.room == room
        )
        return int((await self._session.execute(query)).scalar_one()) + 1

    async def add(self, row: LobbyRow) -> None:
        await self._session.execute(
            lobby_messages.insert().values(
                room=row.room,
                seq=row.seq,
                message_id=row.message_id,
                account_id=row.account_id,
                text=row.text,
                status=row.status,
                reasons=",".join(row.reasons),
                posted_at=row.posted_at,
            )
        )

    async def delivered_after(self, room: str, seq: int, limit: int) -> list[LobbyRow]:
        """Delivered messages after ``seq``, oldest first (the latest ``limit`` of them)."""
        query = (
            select(lobby_messages)
            .where(
                lobby_messages.c.room == room,
                lobby_messages.c.seq > seq,
                lobby_messages.c.status == DELIVERED,
            )
            .order_by(lobby_messages.c.seq.desc())
            .limit(limit)
        )
        rows = [_row(r) for r in await self._session.execute(query)]
        return rows[::-1]

    async def delivered_before(self, room: str, before: int, limit: int) -> list[LobbyRow]:
        """Delivered messages before ``before`` (0: the newest), newest first."""
        query = select(lobby_messages).where(
            lobby_messages.c.room == room, lobby_messages.c.status == DELIVERED
        )
        if before > 0:
            query = query.where(lobby_messages.c.seq < before)
        query = query.order_by(lobby_messages.c.seq.desc()).limit(limit)
        return [_row(r) for r in await self._session.execute(query)]
