"""Lobby chat's tables and repository (migrations 0007 and 0010), beside table chat's.

- ``lobby_messages``: every lobby message posted, delivered or blocked (the compliance
  record), numbered per room by ``seq``, with the reasons moderation gave. Posting takes
  a transaction-scoped advisory lock on the room, so ``seq`` commits in order and a
  watcher reading "after seq n" misses nothing.
- ``lobby_mutes``: who has muted whom in the lobby (every room), a row while the mute
  lasts. A viewer's reads leave out the senders they muted, whenever the message was
  posted, so a mute hides the history too.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Column,
    DateTime,
    Index,
    PrimaryKeyConstraint,
    Select,
    String,
    Table,
    delete,
    exists,
    func,
    select,
)
from sqlalchemy.dialects.postgresql import insert
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

lobby_mutes = Table(
    "lobby_mutes",
    metadata,
    Column("account_id", String(64), nullable=False),  # who muted
    Column("muted_account_id", String(64), nullable=False),  # whom
    Column("muted_at", DateTime(timezone=True), nullable=False),
    PrimaryKeyConstraint("account_id", "muted_account_id"),
)
Index("lobby_mutes_by_muted", lobby_mutes.c.muted_account_id)


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

    async def delivered_after(
        self, room: str, seq: int, limit: int, viewer: str
    ) -> list[LobbyRow]:
        """Delivered messages after ``seq`` that ``viewer`` has not muted, oldest first (the
        latest ``limit`` of them)."""
        c = lobby_messages.c
        query = self._shown_to(room, viewer).where(c.seq > seq)
        rows = await self._rows(query.order_by(c.seq.desc()).limit(limit))
        return rows[::-1]

    async def delivered_before(
        self, room: str, before: int, limit: int, viewer: str
    ) -> list[LobbyRow]:
        """Delivered messages before ``before`` (0: the newest) that ``viewer`` has not
        muted, newest first."""
        query = self._shown_to(room, viewer)
        if before > 0:
            query = query.where(lobby_messages.c.seq < before)
        return await self._rows(query.order_by(lobby_messages.c.seq.desc()).limit(limit))

    def _shown_to(self, room: str, viewer: str) -> Select[Any]:
        muted = exists().where(
            lobby_mutes.c.account_id == viewer,
            lobby_mutes.c.muted_account_id == lobby_messages.c.account_id,
        )
        return self._delivered(room).where(~muted)

    async def has_posted(self, account_id: str) -> bool:
        query = select(exists().where(lobby_messages.c.account_id == account_id))
        return bool((await self._session.execute(query)).scalar())

    async def set_mute(self, account_id: str, muted_account_id: str, at: datetime) -> None:
        """``account_id`` mutes ``muted_account_id`` (since ``at``, unless already)."""
        statement = insert(lobby_mutes).values(
            account_id=account_id, muted_account_id=muted_account_id, muted_at=at
        )
        await self._session.execute(statement.on_conflict_do_nothing())

    async def lift_mute(self, account_id: str, muted_account_id: str) -> None:
        await self._session.execute(
            delete(lobby_mutes).where(
                lobby_mutes.c.account_id == account_id,
                lobby_mutes.c.muted_account_id == muted_account_id,
            )
        )

    async def muted_by(self, account_id: str) -> list[str]:
        """The players ``account_id`` has muted, oldest mute first."""
        c = lobby_mutes.c
        query = (
            select(c.muted_account_id)
            .where(c.account_id == account_id)
            .order_by(c.muted_at, c.muted_account_id)
        )
        return list((await self._session.execute(query)).scalars())

    async def muting(self, account_id: str) -> int:
        """How many players have muted ``account_id``."""
        query = select(func.count()).where(lobby_mutes.c.muted_account_id == account_id)
        return int((await self._session.execute(query)).scalar_one())
