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
)
from sqlalchemy.ext.asyncio import AsyncSession

from services.game.message_log import MessageLog
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


class LobbyRepository(MessageLog[LobbyRow]):
    def __init__(self, session: AsyncSession) -> None:
        super().__init__(session, lobby_messages, "room", LobbyRow, lock_prefix="lobby")

    async def delivered_after(self, room: str, seq: int, limit: int) -> list[LobbyRow]:
        """Delivered messages after ``seq``, oldest first (the latest ``limit`` of them)."""
        c = lobby_messages.c
        query = self._delivered(room).where(c.seq > seq)
        rows = await self._rows(query.order_by(c.seq.desc()).limit(limit))
        return rows[::-1]

    async def delivered_before(self, room: str, before: int, limit: int) -> list[LobbyRow]:
        """Delivered messages before ``before`` (0: the newest), newest first."""
        query = self._delivered(room)
        if before > 0:
            query = query.where(lobby_messages.c.seq < before)
        return await self._rows(query.order_by(lobby_messages.c.seq.desc()).limit(limit))
