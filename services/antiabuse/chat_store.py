"""The chat lines the chat detectors read (table ``chat_lines``, migration 0003_chat;
``room``, migration 0010).

One row per ``ChatMessagePosted`` or ``LobbyMessagePosted`` (keyed by the game service's
message id, so a replayed event changes nothing), with the English verdict made once,
when it arrives. A lobby line has its ``room`` and no game or recipient ("").
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, Column, DateTime, Index, String, Table, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from services.antiabuse.domain.chat_abuse import ChatLine
from services.antiabuse.tables import ID, metadata

LIMIT = 1000  # lines per sender per window: more is abuse already, and bounds the work

chat_lines = Table(
    "chat_lines",
    metadata,
    Column("message_id", String(ID), primary_key=True),
    Column("game_id", String(ID), nullable=False),
    Column("account_id", String(ID), nullable=False),
    Column("recipient", String(ID), nullable=False),
    Column("text", String(1200), nullable=False),
    Column("blocked_reasons", String(200), nullable=False),
    Column("muted_by_recipient", Boolean, nullable=False),
    Column("english", Boolean),
    Column("at", DateTime(timezone=True), nullable=False),
    Column("room", String(32), nullable=False, server_default=""),  # lobby lines only
)
Index("chat_lines_by_sender", chat_lines.c.account_id, chat_lines.c.at)


class ChatLines:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def add(self, line: ChatLine) -> bool:
        """Keep a line; False when it was kept already (a replay)."""
        statement = insert(chat_lines).values(
            message_id=line.message_id,
            game_id=line.game_id,
            account_id=line.account_id,
            recipient=line.recipient,
            text=line.text,
            blocked_reasons=",".join(line.blocked_reasons),
            muted_by_recipient=line.muted_by_recipient,
            english=line.english,
            at=line.at,
            room=line.room,
        )
        result = await self._session.execute(statement.on_conflict_do_nothing())
        return bool(result.rowcount)  # type: ignore[attr-defined]

    async def of_sender(self, account_id: str, since: datetime) -> list[ChatLine]:
        query = (
            select(chat_lines)
            .where(chat_lines.c.account_id == account_id, chat_lines.c.at >= since)
            .order_by(chat_lines.c.at.desc())
            .limit(LIMIT)
        )
        rows = (await self._session.execute(query)).mappings()
        lines = [
            ChatLine(
                message_id=r["message_id"],
                game_id=r["game_id"],
                account_id=r["account_id"],
                recipient=r["recipient"],
                text=r["text"],
                blocked_reasons=tuple(x for x in r["blocked_reasons"].split(",") if x),
                muted_by_recipient=r["muted_by_recipient"],
                english=r["english"],
                at=r["at"],
                room=r["room"],
            )
            for r in rows
        ]
        return lines[::-1]
