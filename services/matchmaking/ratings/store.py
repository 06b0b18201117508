"""The ratings tables (migrations 0002 and 0004) and the writes a rated result makes.

Two results of the same player can be applied at once (different games are
consumed concurrently, and by several replicas): each one locks both players'
rows before reading them, always in account-id order, so the second waits for
the first and reads what it wrote (no lost update) and two results over the
same pair in opposite seat order cannot deadlock.
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
    Float,
    Identity,
    Integer,
    MetaData,
    String,
    Table,
    exists,
    select,
    update,
)
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from services.kit.events.envelope import Envelope
from services.kit.events.tables import outbox_row
from services.matchmaking.domain.ratings import START_EXPERIENCE, START_RATING, Standing

metadata = MetaData()

# 0002: one row per player with a rated result; no row means 1500 and experience 0.
ratings = Table(
    "ratings",
    metadata,
    Column("account_id", String(36), primary_key=True),
    Column("rating", Float, nullable=False),
    Column("experience", Integer, nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
)

# 0004: what each rated result did to each player.
rating_changes = Table(
    "rating_changes",
    metadata,
    Column("seq", BigInteger, Identity(always=True), primary_key=True),
    Column("account_id", String(36), nullable=False),
    Column("game_id", String(100), nullable=False),
    Column("game_number", Integer, nullable=False),
    Column("opponent_account_id", String(36), nullable=False),
    Column("match_length", Integer, nullable=False),
    Column("won", Boolean, nullable=False),
    Column("share", Float),
    Column("reason", String(20), nullable=False),
    Column("rating_before", Float, nullable=False),
    Column("rating_after", Float, nullable=False),
    Column("experience_before", Integer, nullable=False),
    Column("experience_after", Integer, nullable=False),
    Column("opponent_rating_before", Float, nullable=False),
    Column("opponent_experience_before", Integer, nullable=False),
    Column("occurred_at", DateTime(timezone=True), nullable=False),
    Column("recorded_at", DateTime(timezone=True), nullable=False),
    Column("source_event_id", String(64), nullable=False),
)


@dataclass(frozen=True)
class RatingChange:
    """One player's line of history for one rated result."""

    account_id: str
    game_id: str
    game_number: int
    opponent_account_id: str
    match_length: int
    won: bool
    share: float | None
    reason: str
    before: Standing
    after: Standing
    opponent_before: Standing
    occurred_at: datetime
    source_event_id: str


class RatingsRepository:
    """The ratings consumer's writes, inside the inbox transaction it is given."""

    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def already_rated(self, game_id: str, game_number: int) -> bool:
        """Whether this result already moved the ratings (under another event id)."""
        query = select(
            exists().where(
                rating_changes.c.game_id == game_id, rating_changes.c.game_number == game_number
            )
        )
        return bool(await self._session.scalar(query))

    async def lock_standings(
        self, account_ids: Sequence[str], now: datetime
    ) -> dict[str, Standing]:
        """Both players' standings, their rows locked until the transaction ends.

        One statement creates a missing row at the start (1500, 0) and locks an
        existing one (the no-op update takes its row lock); its VALUES are in
        account-id order, which is the order the rows are locked in.
        """
        ordered = sorted(set(account_ids))
        values = insert(ratings).values(
            [
                {
                    "account_id": account_id,
                    "rating": START_RATING,
                    "experience": START_EXPERIENCE,
                    "updated_at": now,
                }
                for account_id in ordered
            ]
        )
        statement = values.on_conflict_do_update(
            index_elements=[ratings.c.account_id],
            set_={"account_id": values.excluded.account_id},
        ).returning(ratings.c.account_id, ratings.c.rating, ratings.c.experience)
        rows = (await self._session.execute(statement)).all()
        return {row.account_id: Standing(row.rating, row.experience) for row in rows}

    async def save(self, account_id: str, standing: Standing, now: datetime) -> None:
        await self._session.execute(
            update(ratings)
            .where(ratings.c.account_id == account_id)
            .values(rating=standing.rating, experience=standing.experience, updated_at=now)
        )

    async def record(self, changes: Sequence[RatingChange], now: datetime) -> None:
        await self._session.execute(
            rating_changes.insert(),
            [
                {
                    "account_id": change.account_id,
                    "game_id": change.game_id,
                    "game_number": change.game_number,
                    "opponent_account_id": change.opponent_account_id,
                    "match_length": change.match_length,
                    "won": change.won,
                    "share": change.share,
                    "reason": change.reason,
                    "rating_before": change.before.rating,
                    "rating_after": change.after.rating,
                    "experience_before": change.before.experience,
                    "experience_after": change.after.experience,
                    "opponent_rating_before": change.opponent_before.rating,
                    "opponent_experience_before": change.opponent_before.experience,
                    "occurred_at": change.occurred_at,
                    "recorded_at": now,
                    "source_event_id": change.source_event_id,
                }
                for change in changes
            ],
        )

    async def publish(self, envelopes: Sequence[Envelope]) -> None:
        """Events into the outbox, committed with the changes they announce."""
        if envelopes:
            await self._session.execute(
                outbox_row.insert(), [envelope.as_outbox_values() for envelope in envelopes]
            )
