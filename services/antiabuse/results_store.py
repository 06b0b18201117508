"""The facts the play detectors read (migration 0006): how sessions ended, how they were
played, and how ratings moved; each kept once, whatever order its streams deliver them in.

- ``session_results``: one row per finished session (``GameEnded`` of a money game,
  ``MatchEnded``): winner, loser, why it ended, and for a session abandoned until
  the reconnect window closed, who left and the leaver's share of the stake (the
  analysis the game settled it with; absent when settled by the even split);
- ``session_analyses``: one row per player of a ``MatchAnalysed``: error per
  decision, counted decisions, the worst take and pass errors;
- ``rating_changes``: one row per ``RatingChanged`` (account and session).

A session's result and its analysis come on different topics: a detector that needs
both runs when the second arrives (:meth:`ResultFacts.played_games` joins them).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import (
    Column,
    DateTime,
    Float,
    Index,
    Integer,
    SmallInteger,
    String,
    Table,
    func,
    select,
)
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from services.antiabuse import tables as t
from services.antiabuse.domain.deliberate_disconnect import Stop
from services.antiabuse.domain.findings import pair
from services.antiabuse.domain.play import PlayedGame
from services.antiabuse.domain.rating_manipulation import RatingChange, Result
from services.antiabuse.tables import ID, metadata

session_results = Table(
    "session_results",
    metadata,
    Column("game_id", String(ID), primary_key=True),
    Column("winner_account_id", String(ID), nullable=False),
    Column("loser_account_id", String(ID), nullable=False),
    Column("low_account_id", String(ID), nullable=False),
    Column("high_account_id", String(ID), nullable=False),
    Column("reason", SmallInteger, nullable=False),
    Column("leaver_account_id", String(ID)),
    Column("leaver_share", Float),
    Column("ended_at", DateTime(timezone=True), nullable=False),
)
Index(
    "session_results_by_pair",
    session_results.c.low_account_id,
    session_results.c.high_account_id,
    session_results.c.ended_at,
)
Index(  # with the pair's index (low first): the sessions an account played, either side
    "session_results_by_high", session_results.c.high_account_id, session_results.c.ended_at
)
Index("session_results_by_leaver", session_results.c.leaver_account_id, session_results.c.ended_at)

session_analyses = Table(
    "session_analyses",
    metadata,
    Column("game_id", String(ID), primary_key=True),
    Column("account_id", String(ID), primary_key=True),
    Column("error_per_decision", Float, nullable=False),
    Column("decisions", Integer, nullable=False),
    Column("worst_take_error", Float, nullable=False),
    Column("worst_pass_error", Float, nullable=False),
    Column("analysed_at", DateTime(timezone=True), nullable=False),
)
Index("session_analyses_by_account", session_analyses.c.account_id)

rating_changes = Table(
    "rating_changes",
    metadata,
    Column("game_id", String(ID), primary_key=True),
    Column("account_id", String(ID), primary_key=True),
    Column("opponent_account_id", String(ID), nullable=False),
    Column("previous_rating", Float, nullable=False),
    Column("new_rating", Float, nullable=False),
    Column("changed_at", DateTime(timezone=True), nullable=False),
)
Index("rating_changes_by_account", rating_changes.c.account_id, rating_changes.c.changed_at)


@dataclass(frozen=True)
class SessionResult:
    game_id: str
    winner: str
    loser: str
    reason: int
    leaver: str | None
    leaver_share: float | None
    at: datetime


@dataclass(frozen=True)
class SessionAnalysis:
    game_id: str
    account_id: str
    error_per_decision: float
    decisions: int
    worst_take_error: float
    worst_pass_error: float
    at: datetime


class ResultFacts:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def ended(self, result: SessionResult) -> bool:
        """Keep a session's result; False when it was kept already (a replay)."""
        low, high = pair(result.winner, result.loser)
        inserted = await self._session.scalar(
            insert(session_results)
            .values(
                game_id=result.game_id,
                winner_account_id=result.winner,
                loser_account_id=result.loser,
                low_account_id=low,
                high_account_id=high,
                reason=result.reason,
                leaver_account_id=result.leaver,
                leaver_share=result.leaver_share,
                ended_at=result.at,
            )
            .on_conflict_do_nothing()
            .returning(session_results.c.game_id)
        )
        return inserted is not None

    async def analysed(self, rows: list[SessionAnalysis]) -> bool:
        """Keep a session's analysis; False when it was kept already."""
        if not rows:
            return False
        result = await self._session.execute(
            insert(session_analyses)
            .values(
                [
                    {
                        "game_id": r.game_id,
                        "account_id": r.account_id,
                        "error_per_decision": r.error_per_decision,
                        "decisions": r.decisions,
                        "worst_take_error": r.worst_take_error,
                        "worst_pass_error": r.worst_pass_error,
                        "analysed_at": r.at,
                    }
                    for r in rows
                ]
            )
            .on_conflict_do_nothing()
        )
        return bool(result.rowcount)  # type: ignore[attr-defined]

    async def rated(
        self,
        game_id: str,
        account_id: str,
        opponent: str,
        previous: float,
        new: float,
        at: datetime,
    ) -> bool:
        inserted = await self._session.scalar(
            insert(rating_changes)
            .values(
                game_id=game_id,
                account_id=account_id,
                opponent_account_id=opponent,
                previous_rating=previous,
                new_rating=new,
                changed_at=at,
            )
            .on_conflict_do_nothing()
            .returning(rating_changes.c.game_id)
        )
        return inserted is not None

    async def result(self, game_id: str) -> SessionResult | None:
        row = (
            await self._session.execute(
                select(session_results).where(session_results.c.game_id == game_id)
            )
        ).first()
        if row is None:
            return None
        return SessionResult(
            row.game_id,
            row.winner_account_id,
            row.loser_account_id,
            row.reason,
            row.leaver_account_id,
            row.leaver_share,
            row.ended_at,
        )

    async def analysis_of(self, game_id: str) -> bool:
        """Whether the session's analysis has been kept."""
        found = await self._session.scalar(
            select(session_analyses.c.game_id).where(session_analyses.c.game_id == game_id).limit(1)
        )
        return found is not None

    async def leavers(self, game_id: str) -> list[str]:
        """Who lost their connection in ``game_id`` (``disconnects``), the latest last."""
        rows = await self._session.execute(
            select(t.disconnects.c.account_id, t.disconnects.c.occurred_at)
            .where(t.disconnects.c.game_id == game_id)
            .order_by(t.disconnects.c.occurred_at)
        )
        return list(dict.fromkeys(r.account_id for r in rows))

    async def played_games(self, account_id: str, since: datetime) -> list[PlayedGame]:
        """The account's finished sessions since ``since`` that are both ended and analysed."""
        a, r = session_analyses.c, session_results.c
        rows = await self._session.execute(
            select(session_analyses, r.winner_account_id, r.loser_account_id, r.ended_at)
            .join(session_results, r.game_id == a.game_id)
            .where(a.account_id == account_id, r.ended_at >= since)
            .order_by(r.ended_at)
        )
        return [
            PlayedGame(
                game_id=row.game_id,
                account_id=account_id,
                opponent=(
                    row.loser_account_id
                    if row.winner_account_id == account_id
                    else row.winner_account_id
                ),
                won=row.winner_account_id == account_id,
                error_per_decision=row.error_per_decision,
                decisions=row.decisions,
                worst_take_error=row.worst_take_error,
                worst_pass_error=row.worst_pass_error,
                at=row.ended_at,
            )
            for row in rows
        ]

    async def errors(self, account_ids: Iterable[str], since: datetime) -> dict[str, list[float]]:
        """Each account's error per decision in its sessions analysed since ``since``."""
        wanted = sorted(set(account_ids))
        found: dict[str, list[float]] = {account: [] for account in wanted}
        if not wanted:
            return found
        a = session_analyses.c
        rows = await self._session.execute(
            select(a.account_id, a.error_per_decision).where(
                a.account_id.in_(wanted), a.analysed_at >= since
            )
        )
        for row in rows:
            found[row.account_id].append(row.error_per_decision)
        return found

    async def stops(self, account_id: str, since: datetime) -> list[Stop]:
        """Sessions the account abandoned since ``since`` that were settled by analysis."""
        r = session_results.c
        rows = await self._session.execute(
            select(r.game_id, r.leaver_share, r.ended_at).where(
                r.leaver_account_id == account_id,
                r.leaver_share.is_not(None),
                r.ended_at >= since,
            )
        )
        return [Stop(row.game_id, account_id, row.leaver_share, row.ended_at) for row in rows]

    async def sessions_played(self, account_id: str, since: datetime) -> int:
        """How many sessions the account played (ended) since ``since``, on either side."""
        r = session_results.c
        total = 0
        for side in (r.low_account_id, r.high_account_id):  # each has an index of its own
            total += await self._session.scalar(
                select(func.count()).where(side == account_id, r.ended_at >= since)
            ) or 0
        return total

    async def pair_results(self, first: str, second: str, since: datetime) -> list[Result]:
        low, high = pair(first, second)
        r = session_results.c
        rows = await self._session.execute(
            select(r.game_id, r.winner_account_id, r.ended_at)
            .where(r.low_account_id == low, r.high_account_id == high, r.ended_at >= since)
            .order_by(r.ended_at, r.game_id)
        )
        return [Result(row.game_id, row.winner_account_id, row.ended_at) for row in rows]

    async def rating_changes(self, account_id: str, since: datetime) -> list[RatingChange]:
        """The account's rating changes, each with its opponent's rating before that session."""
        mine = rating_changes.alias("mine")
        theirs = rating_changes.alias("theirs")
        rows = await self._session.execute(
            select(
                mine.c.game_id,
                mine.c.previous_rating,
                mine.c.new_rating,
                mine.c.changed_at,
                theirs.c.previous_rating.label("opponent_rating"),
            )
            .outerjoin(
                theirs,
                (theirs.c.game_id == mine.c.game_id)
                & (theirs.c.account_id == mine.c.opponent_account_id),
            )
            .where(mine.c.account_id == account_id, mine.c.changed_at >= since)
            .order_by(mine.c.changed_at)
        )
        return [
            RatingChange(
                row.game_id,
                row.previous_rating,
                row.new_rating,
                row.opponent_rating,
                row.changed_at,
            )
            for row in rows
        ]
