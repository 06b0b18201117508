"""Table chat tables and their repository (migration 0004), apart from the game row.

- ``chat_messages``: every message posted, delivered or blocked (the compliance
  record), numbered per game by ``seq``, with the reasons moderation gave and whether
  the recipient had muted the sender.
- ``chat_mutes``: a seated player's mute of the opponent in one game.

Posting takes a transaction-scoped advisory lock on the game's chat (never the
``games`` row, which moves would wait on), so ``seq`` commits in order and a
watcher reading "after seq n" misses nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Index,
    PrimaryKeyConstraint,
    String,
    Table,
    select,
)
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from services.game.message_log import BLOCKED, DELIVERED, MessageLog
from services.game.store import metadata

__all__ = ["BLOCKED", "DELIVERED", "ChatRepository", "ChatRow", "chat_messages", "chat_mutes"]


chat_messages = Table(
    "chat_messages",
    metadata,
    Column("game_id", String(64), nullable=False),
    Column("seq", BigInteger, nullable=False),
    Column("message_id", String(64), nullable=False, unique=True),
    Column("account_id", String(64), nullable=False),
    Column("display_name", String(100), nullable=False),
    Column("text", String(1200), nullable=False),
    Column("status", String(16), nullable=False),
    Column("reasons", String(200), nullable=False),  # comma-separated, "" when delivered
    # The account that had muted the sender when it was posted ("" for none).
    Column("muted_for", String(64), nullable=False),
    Column("posted_at", DateTime(timezone=True), nullable=False),
    PrimaryKeyConstraint("game_id", "seq"),
)
Index("chat_messages_by_sender", chat_messages.c.account_id, chat_messages.c.posted_at)

chat_mutes = Table(
    "chat_mutes",
    metadata,
    Column("game_id", String(64), nullable=False),
    Column("account_id", String(64), nullable=False),  # who muted their opponent
    Column("muted", Boolean, nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
    PrimaryKeyConstraint("game_id", "account_id"),
)


@dataclass(frozen=True)
class ChatRow:
    game_id: str
    seq: int
    message_id: str
    account_id: str
    display_name: str
    text: str
    status: str
    reasons: tuple[str, ...]
    muted_for: str
    posted_at: datetime


class ChatRepository(MessageLog[ChatRow]):
    def __init__(self, session: AsyncSession) -> None:
        super().__init__(session, chat_messages, "game_id", ChatRow, lock_prefix="chat")

    async def delivered_after(
        self, game_id: str, seq: int, viewer: str, limit: int = 100
    ) -> list[ChatRow]:
        """Delivered messages after ``seq`` that ``viewer`` has not muted, oldest first
        (the latest ``limit`` of them)."""
        c = chat_messages.c
        query = self._delivered(game_id).where(c.seq > seq, c.muted_for != viewer)
        rows = await self._rows(query.order_by(c.seq.desc()).limit(limit))
        return rows[::-1]

    async def all_of(self, game_id: str) -> Sequence[ChatRow]:
        query = select(chat_messages).where(chat_messages.c.game_id == game_id)
        return await self._rows(query.order_by(chat_messages.c.seq))

    async def set_mute(self, game_id: str, account_id: str, muted: bool, at: datetime) -> None:
        statement = insert(chat_mutes).values(
            game_id=game_id, account_id=account_id, muted=muted, updated_at=at
        )
        await self._session.execute(
            statement.on_conflict_do_update(
                index_elements=[chat_mutes.c.game_id, chat_mutes.c.account_id],
                set_={"muted": muted, "updated_at": at},
            )
        )

    async def muted(self, game_id: str, account_id: str) -> bool:
        query = select(chat_mutes.c.muted).where(
            chat_mutes.c.game_id == game_id, chat_mutes.c.account_id == account_id
        )
        return bool((await self._session.execute(query)).scalar())
