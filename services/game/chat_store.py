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
    func,
    select,
    text,
)
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from services.game.store import metadata

DELIVERED = "delivered"
BLOCKED = "blocked"

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


def _row(row: object) -> ChatRow:
    m = row._mapping  # type: ignore[attr-defined]
    return ChatRow(
        game_id=m["game_id"],
        seq=m["seq"],
        message_id=m["message_id"],
        account_id=m["account_id"],
        display_name=m["display_name"],
        text=m["text"],
        status=m["status"],
        reasons=tuple(r for r in m["reasons"].split(",") if r),
        muted_for=m["muted_for"],
        posted_at=m["posted_at"],
    )


class ChatRepository:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def lock(self, game_id: str) -> None:
        """Serialise posts to one game's chat until the transaction ends."""
        await self._session.execute(
            text("SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))"),
            {"key": f"chat:{game_id}"},
        )

    async def sent_since(self, account_id: str, since: datetime) -> int:
        query = select(func.count()).where(
            chat_messages.c.account_id == account_id, chat_messages.c.posted_at > since
        )
        return int((await self._session.execute(query)).scalar_one())

    async def latest_by(self, game_id: str, account_id: str, limit: int) -> list[ChatRow]:
        query = (
            select(chat_messages)
            .where(chat_messages.c.game_id == game_id, chat_messages.c.account_id == account_id)
            .order_by(chat_messages.c.seq.desc())
            .limit(limit)
        )
        return [_row(r) for r in await self._session.execute(query)]

    async def next_seq(self, game_id: str) -> int:
        query = select(func.coalesce(func.max(chat_messages.c.seq), 0)).where(
            chat_messages.c.game_id == game_id
        )
        return int((await self._session.execute(query)).scalar_one()) + 1

    async def add(self, row: ChatRow) -> None:
        await self._session.execute(
            chat_messages.insert().values(
                game_id=row.game_id,
                seq=row.seq,
                message_id=row.message_id,
                account_id=row.account_id,
                display_name=row.display_name,
                text=row.text,
                status=row.status,
                reasons=",".join(row.reasons),
                muted_for=row.muted_for,
                posted_at=row.posted_at,
            )
        )

    async def delivered_after(
        self, game_id: str, seq: int, viewer: str, limit: int = 100
    ) -> list[ChatRow]:
        """Delivered messages after ``seq`` that ``viewer`` has not muted, oldest first
        (the latest ``limit`` of them)."""
        query = (
            select(chat_messages)
            .where(
                chat_messages.c.game_id == game_id,
                chat_messages.c.seq > seq,
                chat_messages.c.status == DELIVERED,
                chat_messages.c.muted_for != viewer,
            )
            .order_by(chat_messages.c.seq.desc())
            .limit(limit)
        )
        rows = [_row(r) for r in await self._session.execute(query)]
        return rows[::-1]

    async def all_of(self, game_id: str) -> Sequence[ChatRow]:
        query = select(chat_messages).where(chat_messages.c.game_id == game_id)
        return [_row(r) for r in await self._session.execute(query.order_by(chat_messages.c.seq))]

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
