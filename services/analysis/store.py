"""The analysis service's tables (SQLAlchemy Core; migration 0002).

- ``match_analyses``: one row per analysed session (game_id), the two players' account
  ids (who may read it) and the ``MatchAnalysis`` message as bytes. Inserted once:
  a second analysis of the same session (a replayed or duplicated event) changes nothing.
- ``decision_times``: each timed decision of a live session (from the game's
  MovePlayed / Cube* events, ``time_taken``), one row per game version.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Column,
    DateTime,
    Float,
    Integer,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    select,
)
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

metadata = MetaData()

match_analyses = Table(
    "match_analyses",
    metadata,
    Column("game_id", String(64), primary_key=True),
    Column("analysis_id", String(64), nullable=False, unique=True),
    Column("account0", String(64), nullable=False),
    Column("account1", String(64), nullable=False),
    Column("plies", Integer, nullable=False),
    Column("analysis", LargeBinary, nullable=False),
    Column("analysed_at", DateTime(timezone=True), nullable=False),
)

decision_times = Table(
    "decision_times",
    metadata,
    Column("game_id", String(64), nullable=False),
    Column("version", BigInteger, nullable=False),
    Column("game_number", Integer, nullable=False),
    Column("account_id", String(64), nullable=False),
    Column("kind", String(16), nullable=False),
    Column("seconds", Float, nullable=False),
    PrimaryKeyConstraint("game_id", "version"),
)


@dataclass(frozen=True, slots=True)
class DecisionTime:
    game_id: str
    version: int
    game_number: int
    account_id: str
    kind: str  # checker | double | take | pass (a beaver is a take)
    seconds: float


@dataclass(frozen=True, slots=True)
class StoredAnalysis:
    accounts: tuple[str, str]
    analysis: bytes


async def record_time(session: AsyncSession, row: DecisionTime) -> None:
    await session.execute(
        insert(decision_times)
        .values(
            game_id=row.game_id,
            version=row.version,
            game_number=row.game_number,
            account_id=row.account_id,
            kind=row.kind,
            seconds=row.seconds,
        )
        .on_conflict_do_nothing()
    )


async def times_of(session: AsyncSession, game_id: str) -> list[DecisionTime]:
    rows = await session.execute(
        select(decision_times)
        .where(decision_times.c.game_id == game_id)
        .order_by(decision_times.c.version)
    )
    return [
        DecisionTime(r.game_id, r.version, r.game_number, r.account_id, r.kind, r.seconds)
        for r in rows
    ]


async def is_analysed(session: AsyncSession, game_id: str) -> bool:
    found = await session.scalar(
        select(match_analyses.c.game_id).where(match_analyses.c.game_id == game_id)
    )
    return found is not None


async def save_analysis(
    session: AsyncSession,
    *,
    game_id: str,
    analysis_id: str,
    accounts: tuple[str, str],
    plies: int,
    analysis: bytes,
    now: datetime,
) -> bool:
    """Store the analysis; False when the session was already analysed (nothing changes)."""
    inserted = await session.scalar(
        insert(match_analyses)
        .values(
            game_id=game_id,
            analysis_id=analysis_id,
            account0=accounts[0],
            account1=accounts[1],
            plies=plies,
            analysis=analysis,
            analysed_at=now,
        )
        .on_conflict_do_nothing()
        .returning(match_analyses.c.game_id)
    )
    return inserted is not None


async def load_analysis(session: AsyncSession, game_id: str) -> StoredAnalysis | None:
    row = (
        await session.execute(select(match_analyses).where(match_analyses.c.game_id == game_id))
    ).first()
    if row is None:
        return None
    return StoredAnalysis((row.account0, row.account1), row.analysis)
