"""Reading ratings: one player's (with rank) and the leaderboard.

A player without a row has never finished a rated match: 1500, experience 0,
and no rank (0). Ranks are competition ranks: 1 + the number of players rated
strictly higher, so equal ratings share a rank; the leaderboard lists equal
ratings by account id. Both read the ``ratings_by_rating`` index (migration 0002).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from services.kit.errors import InvalidArgument
from services.matchmaking.domain.ratings import NEW_PLAYER, Standing
from services.matchmaking.ratings.store import ratings

DEFAULT_LEADERBOARD = 10
MAX_LEADERBOARD = 100


@dataclass(frozen=True)
class RankedRating:
    account_id: str
    standing: Standing
    # None until the first rated match.
    updated_at: datetime | None
    # 0 = not ranked yet.
    rank: int


def leaderboard_size(limit: int) -> int:
    if limit < 0 or limit > MAX_LEADERBOARD:
        raise InvalidArgument(
            f"limit must be between 1 and {MAX_LEADERBOARD} "
            f"(0 = {DEFAULT_LEADERBOARD}), got {limit}"
        )
    return limit or DEFAULT_LEADERBOARD


class RatingQueries:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions

    async def rating(self, account_id: str) -> RankedRating:
        async with self._sessions() as session:
            row = (
                await session.execute(select(ratings).where(ratings.c.account_id == account_id))
            ).first()
            if row is None:
                return RankedRating(account_id, NEW_PLAYER, None, 0)
            higher = await session.scalar(
                select(func.count()).select_from(ratings).where(ratings.c.rating > row.rating)
            )
        return RankedRating(
            account_id, Standing(row.rating, row.experience), row.updated_at, (higher or 0) + 1
        )

    async def leaderboard(self, limit: int) -> Sequence[RankedRating]:
        """The ``limit`` highest-rated players, best first."""
        rank = func.rank().over(order_by=ratings.c.rating.desc()).label("rank")
        query = (
            select(ratings, rank)
            .order_by(ratings.c.rating.desc(), ratings.c.account_id)
            .limit(leaderboard_size(limit))
        )
        async with self._sessions() as session:
            rows = (await session.execute(query)).all()
        return [
            RankedRating(
                row.account_id, Standing(row.rating, row.experience), row.updated_at, row.rank
            )
            for row in rows
        ]
