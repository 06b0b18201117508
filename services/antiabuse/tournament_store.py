"""The tournament matches anti-abuse keeps (migration 0011): one row per decided match.

``MatchDecided`` (``tavla.tournaments.v1``) names the tournament, the match (its id
names the round: ``r2m3``), the game it was played in (none for a match forfeited
before its game was created), winner and loser, and how it was decided (``played``,
``no_show``, ``disconnected``). A bye has no loser and is not kept. The same match
decided again (a replay, a new event id) is the same row.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Column, DateTime, Index, SmallInteger, String, Table, or_, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from services.antiabuse.domain.findings import pair
from services.antiabuse.domain.tournament_play import TournamentMatch
from services.antiabuse.tables import ID, metadata

tournament_matches = Table(
    "tournament_matches",
    metadata,
    Column("tournament_id", String(ID), primary_key=True),
    Column("match_id", String(ID), primary_key=True),
    Column("round", SmallInteger, nullable=False),
    Column("game_id", String(ID), nullable=False),
    Column("winner_account_id", String(ID), nullable=False),
    Column("loser_account_id", String(ID), nullable=False),
    Column("low_account_id", String(ID), nullable=False),
    Column("high_account_id", String(ID), nullable=False),
    Column("decision", String(16), nullable=False),
    Column("decided_at", DateTime(timezone=True), nullable=False),
)
Index("tournament_matches_by_game", tournament_matches.c.game_id)
Index("tournament_matches_by_low", tournament_matches.c.low_account_id,
      tournament_matches.c.decided_at)
Index("tournament_matches_by_high", tournament_matches.c.high_account_id,
      tournament_matches.c.decided_at)


class TournamentFacts:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def decided(self, match: TournamentMatch) -> bool:
        """Keep a decided match; False when it was kept already (a replay)."""
        low, high = pair(match.winner, match.loser)
        inserted = await self._session.scalar(
            insert(tournament_matches)
            .values(
                tournament_id=match.tournament_id,
                match_id=match.match_id,
                round=match.round,
                game_id=match.game_id,
                winner_account_id=match.winner,
                loser_account_id=match.loser,
                low_account_id=low,
                high_account_id=high,
                decision=match.decision,
                decided_at=match.at,
            )
            .on_conflict_do_nothing()
            .returning(tournament_matches.c.match_id)
        )
        return inserted is not None

    async def by_game(self, game_id: str) -> TournamentMatch | None:
        """The tournament match played in ``game_id``, if it was one."""
        if not game_id:
            return None
        row = (
            await self._session.execute(
                select(tournament_matches).where(tournament_matches.c.game_id == game_id)
            )
        ).first()
        return _match(row) if row is not None else None

    async def of_account(self, account_id: str, since: datetime) -> list[TournamentMatch]:
        """The account's decided tournament matches since ``since``, oldest first."""
        m = tournament_matches.c
        rows = await self._session.execute(
            select(tournament_matches)
            .where(
                or_(m.low_account_id == account_id, m.high_account_id == account_id),
                m.decided_at >= since,
            )
            .order_by(m.decided_at, m.match_id)
        )
        return [_match(row) for row in rows]

    async def between(self, first: str, second: str, since: datetime) -> list[TournamentMatch]:
        """The pair's decided tournament matches since ``since``, oldest first."""
        low, high = pair(first, second)
        m = tournament_matches.c
        rows = await self._session.execute(
            select(tournament_matches)
            .where(m.low_account_id == low, m.high_account_id == high, m.decided_at >= since)
            .order_by(m.decided_at, m.match_id)
        )
        return [_match(row) for row in rows]


def _match(row: object) -> TournamentMatch:
    return TournamentMatch(
        tournament_id=row.tournament_id,  # type: ignore[attr-defined]
        match_id=row.match_id,  # type: ignore[attr-defined]
        game_id=row.game_id,  # type: ignore[attr-defined]
        winner=row.winner_account_id,  # type: ignore[attr-defined]
        loser=row.loser_account_id,  # type: ignore[attr-defined]
        decision=row.decision,  # type: ignore[attr-defined]
        at=row.decided_at,  # type: ignore[attr-defined]
    )
