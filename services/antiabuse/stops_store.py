"""Where sessions ended by a timeout or a resignation stopped, valued (migration 0007).

``stopped_sessions``: one row per ``StopValued`` (``tavla.game.v1``), which the game
service publishes after the session's end: who stopped (whose clock ran out, or who
resigned), against whom, why, and the stopper's share of the position where play
stopped (money ``(1 + E/3) / 2``, a match the match-winning chance; absent when the
game could not have it analysed). Read by deliberate disconnects (timeouts count
as stops) and by the analysis half of chip dumping (resignations in good positions).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Column, DateTime, Float, Index, SmallInteger, String, Table, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from services.antiabuse.domain.deliberate_disconnect import TIMEOUT, Stop
from services.antiabuse.domain.dumping_play import Resignation
from services.antiabuse.tables import ID, metadata
from tavla.game.v1 import game_pb2

stopped_sessions = Table(
    "stopped_sessions",
    metadata,
    Column("game_id", String(ID), primary_key=True),
    Column("account_id", String(ID), nullable=False),
    Column("opponent_account_id", String(ID), nullable=False),
    Column("reason", SmallInteger, nullable=False),
    Column("share", Float),
    Column("stopped_at", DateTime(timezone=True), nullable=False),
)
Index("stopped_sessions_by_account", stopped_sessions.c.account_id, stopped_sessions.c.stopped_at)


@dataclass(frozen=True)
class StoppedSession:
    game_id: str
    account_id: str
    opponent: str
    reason: int
    share: float | None
    at: datetime


class StopFacts:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def valued(self, stopped: StoppedSession) -> bool:
        """Keep a stopped session's valuation; False when it was kept already (a replay)."""
        inserted = await self._session.scalar(
            insert(stopped_sessions)
            .values(
                game_id=stopped.game_id,
                account_id=stopped.account_id,
                opponent_account_id=stopped.opponent,
                reason=stopped.reason,
                share=stopped.share,
                stopped_at=stopped.at,
            )
            .on_conflict_do_nothing()
            .returning(stopped_sessions.c.game_id)
        )
        return inserted is not None

    async def timeouts(self, account_id: str, since: datetime) -> list[Stop]:
        """Sessions the account lost on time since ``since``, valued by analysis."""
        s = stopped_sessions.c
        rows = await self._session.execute(
            select(s.game_id, s.share, s.stopped_at).where(
                s.account_id == account_id,
                s.reason == game_pb2.END_REASON_TIMEOUT,
                s.share.is_not(None),
                s.stopped_at >= since,
            )
        )
        return [Stop(r.game_id, account_id, r.share, r.stopped_at, TIMEOUT) for r in rows]

    async def resignations(
        self, account_id: str, opponent: str, since: datetime
    ) -> list[Resignation]:
        """The account's resignations to ``opponent`` since ``since``, valued by analysis."""
        s = stopped_sessions.c
        rows = await self._session.execute(
            select(s.game_id, s.share, s.stopped_at).where(
                s.account_id == account_id,
                s.opponent_account_id == opponent,
                s.reason == game_pb2.END_REASON_RESIGNED,
                s.share.is_not(None),
                s.stopped_at >= since,
            )
        )
        return [Resignation(r.game_id, account_id, opponent, r.share, r.stopped_at) for r in rows]
