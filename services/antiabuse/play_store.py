"""The play facts the assistance and consulting detectors read (migration 0005).

``analysed_decisions``: one row per decision of a player in an analysed session
(``MatchAnalysed`` on ``tavla.analysis.v1``), keyed by (session, account,
sequence), so a replayed or re-announced analysis changes nothing.
``game_windows``: when each game of a session started and ended (``GameStarted``,
``GameEnded`` on ``tavla.game.v1``), per player. ``decision_population``: running
sums over every player's counted decisions, for the evidence, in ``POPULATION_ROWS``
rows (a player's sums go to the row of their account's hash, read as their total):
one row would be locked by every analysis until its transaction ends, so analyses of
unrelated players would wait for each other there. ``account_paces`` (migration 0016):
each account's counted think times and the sum of their logs, its pace (the mean log
think time) read as the population's paces by consulting; a row per account, locked only
by that account's analyses. ``pace_buckets`` (migration 0017): those paces counted per
bucket (:data:`PACE_STEP`) for the accounts with ``PACE_LEAST`` think times or more, kept
in the same transaction as each pace changes, so that consulting's population line reads
at most ``POPULATION_ROWS`` times the buckets in use (a few thousand rows) rather than
every account's pace: exact, never stale. Its rows are split like ``decision_population``'s
(an account's go to its hash's row) and written after that row in the same transaction,
which every writer of them takes first: they add no lock another transaction could take
in the other order, and an analysis that leaves the account's bucket where it was (most,
once an account has played a while) writes none.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from datetime import datetime, timedelta

from sqlalchemy import (
    BigInteger,
    Boolean,
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
    text,
)
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from services.antiabuse.domain.assistance import Move, Population
from services.antiabuse.domain.consulting_play import (
    DEFAULT_POLICY,
    PACE_STEP,
    GameKey,
    PacePopulation,
    Played,
    Window,
    log_seconds,
)
from services.antiabuse.tables import ID, metadata

RECENT_ROWS = 4000  # a player's latest decisions read: the window (600 counted) and its history
WINDOW_GAMES = 2000  # a player's latest game windows read
RUNNING_AT_MOST = timedelta(hours=12)  # a game not ended after this is not running
POPULATION_ROWS = 32
# A window's span as a range, as the GiST index ``game_windows_by_time`` (migration 0018)
# holds it: a finished window the closed range between its ends (in either order), a
# running one unbounded. It contains the span :func:`consulting_play.overlapping` reads
# (a running game's until now), so what overlaps there overlaps here too.
WINDOW_SPAN = (
    "(CASE WHEN {t}.ended_at IS NULL THEN tstzrange({t}.started_at, NULL, '[)') "
    "ELSE tstzrange(least({t}.started_at, {t}.ended_at), greatest({t}.started_at, "
    "{t}.ended_at), '[]') END)"
)
# The accounts whose windows overlap one of an account's latest finished windows (those
# :meth:`PlayFacts.windows` reads), running ones included, with how many of its games each
# overlapped: one index probe per window of the account's.
_OVERLAPPING = text(
    "WITH own AS (SELECT game_id, game_number, started_at, ended_at FROM game_windows "
    "WHERE account_id = :account AND started_at IS NOT NULL AND ended_at IS NOT NULL "
    "ORDER BY started_at DESC LIMIT :games) "
    "SELECT g.account_id, count(DISTINCT (o.game_id, o.game_number)) FROM own o "
    f"JOIN game_windows g ON {WINDOW_SPAN.format(t='g')} && "
    "tstzrange(least(o.started_at, o.ended_at), greatest(o.started_at, o.ended_at), '[]') "
    "WHERE g.started_at IS NOT NULL AND g.account_id <> :account AND g.game_id <> o.game_id "
    "AND (g.ended_at IS NOT NULL OR (g.started_at >= :since AND g.started_at <= :now)) "
    "GROUP BY g.account_id"
)
PACE_LEAST = DEFAULT_POLICY.pace_min  # think times before an account counts in pace_buckets

analysed_decisions = Table(
    "analysed_decisions",
    metadata,
    Column("game_id", String(ID), primary_key=True),
    Column("account_id", String(ID), primary_key=True),
    Column("seq", Integer, primary_key=True),
    Column("game_number", Integer, nullable=False),
    Column("kind", String(12), nullable=False),
    Column("counted", Boolean, nullable=False),
    Column("error", Float, nullable=False),
    Column("seconds", Float),
    Column("analysed_at", DateTime(timezone=True), nullable=False),
    Column("rank", SmallInteger),  # 0013: the play's rank and the alternatives' losses
    Column("second_loss", Float),
    Column("third_loss", Float),
)
Index(
    "analysed_decisions_by_account",
    analysed_decisions.c.account_id,
    analysed_decisions.c.analysed_at,
)

game_windows = Table(
    "game_windows",
    metadata,
    Column("game_id", String(ID), primary_key=True),
    Column("game_number", Integer, primary_key=True),
    Column("account_id", String(ID), primary_key=True),
    Column("started_at", DateTime(timezone=True)),
    Column("ended_at", DateTime(timezone=True)),
)
Index("game_windows_by_account", game_windows.c.account_id, game_windows.c.started_at)

decision_population = Table(
    "decision_population",
    metadata,
    Column("id", SmallInteger, primary_key=True),
    Column("decisions", BigInteger, nullable=False),
    Column("error_sum", Float, nullable=False),
    Column("error_squares", Float, nullable=False),
)

account_paces = Table(
    "account_paces",
    metadata,
    Column("account_id", String(ID), primary_key=True),
    Column("think_times", Integer, nullable=False),  # counted decisions with a think time
    Column("log_seconds", Float, nullable=False),  # the sum of their natural logs
)

pace_buckets = Table(
    "pace_buckets",
    metadata,
    Column("row_id", SmallInteger, primary_key=True),  # decision_population's row of the account
    Column("bucket", Integer, primary_key=True),  # floor(pace / PACE_STEP)
    Column("accounts", Integer, nullable=False),  # with PACE_LEAST think times or more
)


def population_row(account_id: str) -> int:
    """The account's row of ``decision_population`` and ``pace_buckets`` (1 to 32)."""
    return zlib.crc32(account_id.encode()) % POPULATION_ROWS + 1


def pace_bucket(think_times: int, log_seconds: float) -> int | None:
    """An account's bucket in ``pace_buckets``, None under ``PACE_LEAST`` think times."""
    if think_times < PACE_LEAST:
        return None
    return math.floor(log_seconds / think_times / PACE_STEP)


class PlayFacts:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def analysed(
        self, game_id: str, account_id: str, moves: Sequence[Move], at: datetime
    ) -> bool:
        """Keep a player's decisions of one analysed session; False when kept already."""
        if not moves:
            return False
        rows = [
            {
                "game_id": game_id,
                "account_id": account_id,
                "seq": seq,
                "game_number": m.game_number,
                "kind": m.kind,
                "counted": m.counted,
                "error": m.error,
                "seconds": m.seconds,
                "analysed_at": at,
                "rank": m.rank,
                "second_loss": m.second_loss,
                "third_loss": m.third_loss,
            }
            for seq, m in enumerate(moves)
        ]
        c = analysed_decisions.c
        kept = await self._session.scalar(
            select(c.seq).where(c.game_id == game_id, c.account_id == account_id).limit(1)
        )
        if kept is not None:  # the player is locked: nobody else is adding it meanwhile
            return False
        await self._session.execute(insert(analysed_decisions), rows)
        row = population_row(account_id)
        await self._count(row, [m.error for m in moves if m.counted])  # the row's lock first
        await self._pace(account_id, row, [m.seconds for m in moves if m.counted])
        return True

    async def _pace(self, account_id: str, row: int, seconds: Sequence[float | None]) -> None:
        """Add a session's counted think times to the account's pace, and move the account
        in ``pace_buckets`` when its bucket changed (the account is locked: its pace does not
        change meanwhile)."""
        logs = [log_seconds(s) for s in seconds if s is not None and math.isfinite(s)]
        if not logs:
            return
        c = account_paces.c
        # The row before, read in the same statement (one snapshot: the upsert's change
        # is not seen by it), so the bucket it leaves costs no round trip of its own.
        before = (
            select(c.think_times.label("times"), c.log_seconds.label("logs"))
            .where(c.account_id == account_id)
            .cte("before")
        )
        statement = insert(account_paces).values(
            account_id=account_id, think_times=len(logs), log_seconds=sum(logs)
        )
        after = (
            await self._session.execute(
                statement.on_conflict_do_update(
                    index_elements=["account_id"],
                    set_={
                        "think_times": c.think_times + statement.excluded.think_times,
                        "log_seconds": c.log_seconds + statement.excluded.log_seconds,
                    },
                )
                .returning(
                    c.think_times,
                    c.log_seconds,
                    select(before.c.times).scalar_subquery().label("times_before"),
                    select(before.c.logs).scalar_subquery().label("logs_before"),
                )
                .add_cte(before)
            )
        ).one()
        first = after.times_before is None  # the account's first think times
        old = None if first else pace_bucket(after.times_before, after.logs_before)
        new = pace_bucket(after.think_times, after.log_seconds)
        if old != new:
            await self._move(row, old, new)

    async def _move(self, row: int, old: int | None, new: int | None) -> None:
        """One account out of bucket ``old`` and into ``new`` (None: not counted there)."""
        changes = [(b, n) for b, n in ((old, -1), (new, 1)) if b is not None]
        for bucket, change in sorted(changes):  # one order for the row's buckets
            statement = insert(pace_buckets).values(row_id=row, bucket=bucket, accounts=change)
            await self._session.execute(
                statement.on_conflict_do_update(
                    index_elements=["row_id", "bucket"],
                    set_={"accounts": pace_buckets.c.accounts + statement.excluded.accounts},
                )
            )

    async def paces(self, least: int = PACE_LEAST) -> PacePopulation:
        """The accounts' paces (``least`` think times or more), counted per bucket: from
        ``pace_buckets`` (bounded by its rows, not the accounts) for ``PACE_LEAST``, from
        every account's pace for another ``least`` (a policy that asks for one)."""
        if least != PACE_LEAST:
            return await self.paces_of_every_account(least)
        c = pace_buckets.c
        rows = await self._session.execute(
            select(c.bucket, func.sum(c.accounts).label("accounts"))
            .group_by(c.bucket)
            .having(func.sum(c.accounts) > 0)
        )
        return PacePopulation({int(r.bucket): int(r.accounts) for r in rows})

    async def paces_of_every_account(self, least: int) -> PacePopulation:
        """:meth:`paces` read from every account's pace (a whole-table read)."""
        c = account_paces.c
        bucket = func.floor(c.log_seconds / c.think_times / PACE_STEP).label("bucket")
        rows = await self._session.execute(
            select(bucket, func.count().label("accounts"))
            .where(c.think_times >= least)
            .group_by(bucket)
        )
        return PacePopulation({int(r.bucket): int(r.accounts) for r in rows})

    async def _count(self, shard: int, values: list[float]) -> None:
        """Add a session's counted errors to the population's running sums (one row's)."""
        statement = insert(decision_population).values(
            id=shard,
            decisions=len(values),
            error_sum=sum(values),
            error_squares=sum(v * v for v in values),
        )
        await self._session.execute(
            statement.on_conflict_do_update(
                index_elements=["id"],
                set_={
                    "decisions": decision_population.c.decisions + statement.excluded.decisions,
                    "error_sum": decision_population.c.error_sum + statement.excluded.error_sum,
                    "error_squares": decision_population.c.error_squares
                    + statement.excluded.error_squares,
                },
            )
        )

    async def population(self) -> Population | None:
        c = decision_population.c
        row = (
            await self._session.execute(
                select(func.sum(c.decisions).label("decisions"),
                       func.sum(c.error_sum).label("error_sum"),
                       func.sum(c.error_squares).label("error_squares"))
            )
        ).one()
        if row.decisions is None or row.decisions < 2:
            return None
        n = int(row.decisions)
        centre = row.error_sum / n
        variance = max(0.0, (row.error_squares - n * centre * centre) / (n - 1))
        return Population(n, centre, math.sqrt(variance))

    async def moves(self, account_id: str) -> list[Move]:
        """The player's latest decisions (at most RECENT_ROWS), oldest first."""
        c = analysed_decisions.c
        rows = await self._session.execute(
            select(analysed_decisions)
            .where(c.account_id == account_id)
            .order_by(c.analysed_at.desc(), c.game_id.desc(), c.seq.desc())
            .limit(RECENT_ROWS)
        )
        found = [
            Move(r.game_id, r.game_number, r.kind, r.counted, r.error, r.seconds,
                 r.rank, r.second_loss, r.third_loss)
            for r in rows
        ]
        return found[::-1]

    async def played(self, account_id: str, game_ids: Sequence[str]) -> list[Played]:
        c = analysed_decisions.c
        rows = await self._session.execute(
            select(c.game_id, c.game_number, c.counted, c.error, c.seconds).where(
                c.account_id == account_id, c.game_id.in_(sorted(set(game_ids)))
            )
        )
        return [Played(r.game_id, r.game_number, r.counted, r.error, r.seconds) for r in rows]

    async def counted(
        self, accounts: Sequence[str], game_ids: Sequence[str]
    ) -> dict[str, dict[GameKey, int]]:
        """Each account's counted decisions per game of ``game_ids``' sessions: what
        consulting's minimum counts need, without the decisions."""
        c = analysed_decisions.c
        rows = await self._session.execute(
            select(c.account_id, c.game_id, c.game_number, func.count())
            .where(
                c.account_id.in_(sorted(set(accounts))),
                c.game_id.in_(sorted(set(game_ids))),
                c.counted,
            )
            .group_by(c.account_id, c.game_id, c.game_number)
        )
        found: dict[str, dict[GameKey, int]] = {a: {} for a in accounts}
        for account_id, game_id, game_number, n in rows:
            found[account_id][(game_id, game_number)] = n
        return found

    async def started(
        self, game_id: str, game_number: int, accounts: Sequence[str], at: datetime
    ) -> None:
        await self._window(game_id, game_number, accounts, "started_at", at)

    async def ended(
        self, game_id: str, game_number: int, accounts: Sequence[str], at: datetime
    ) -> None:
        await self._window(game_id, game_number, accounts, "ended_at", at)

    async def _window(
        self, game_id: str, game_number: int, accounts: Sequence[str], side: str, at: datetime
    ) -> None:
        rows = [
            {"game_id": game_id, "game_number": game_number, "account_id": a, side: at}
            for a in sorted({a for a in accounts if a})
        ]
        if not rows:
            return
        statement = insert(game_windows).values(rows)
        await self._session.execute(
            statement.on_conflict_do_update(
                index_elements=["game_id", "game_number", "account_id"],
                set_={side: statement.excluded[side]},
            )
        )

    async def windows(self, account_id: str) -> list[Window]:
        """The player's latest finished games (both ends known)."""
        c = game_windows.c
        rows = await self._session.execute(
            select(game_windows)
            .where(c.account_id == account_id, c.started_at.is_not(None), c.ended_at.is_not(None))
            .order_by(c.started_at.desc())
            .limit(WINDOW_GAMES)
        )
        return [Window(r.game_id, r.game_number, r.started_at, r.ended_at) for r in rows]

    async def overlapping_accounts(self, account_id: str, now: datetime) -> dict[str, int]:
        """The accounts with a game, in another session, that ran while one of
        ``account_id``'s latest finished games did (a running one: started since ``now -
        RUNNING_AT_MOST``), each with how many of those games of ``account_id``'s it
        overlapped. A superset of the accounts :func:`consulting_play.overlapping` finds
        on :meth:`windows` against their :meth:`windows_of` and :meth:`running_of` (it
        reads every window of theirs, not their latest ``WINDOW_GAMES``; and a window's
        ends as a closed range): the caller reads those and asks again."""
        rows = await self._session.execute(
            _OVERLAPPING,
            {"account": account_id, "games": WINDOW_GAMES, "since": now - RUNNING_AT_MOST,
             "now": now},
        )  # fmt: skip
        return {account: int(n) for account, n in rows}

    async def windows_of(self, accounts: Sequence[str]) -> dict[str, list[Window]]:
        """:meth:`windows` of each of ``accounts``, in one read."""
        c = game_windows.c
        latest = (
            func.row_number()
            .over(partition_by=c.account_id, order_by=c.started_at.desc())
            .label("latest")
        )
        ranked = (
            select(game_windows, latest)
            .where(
                c.account_id.in_(sorted(set(accounts))),
                c.started_at.is_not(None),
                c.ended_at.is_not(None),
            )
            .subquery()
        )
        rows = await self._session.execute(
            select(ranked)
            .where(ranked.c.latest <= WINDOW_GAMES)
            .order_by(ranked.c.account_id, ranked.c.started_at.desc())
        )
        found: dict[str, list[Window]] = {a: [] for a in accounts}
        for r in rows:
            found[r.account_id].append(Window(r.game_id, r.game_number, r.started_at, r.ended_at))
        return found

    async def running_of(
        self, accounts: Sequence[str], now: datetime
    ) -> dict[str, list[Window]]:
        """:meth:`running` of each of ``accounts``, in one read."""
        c = game_windows.c
        rows = await self._session.execute(
            select(game_windows).where(
                c.account_id.in_(sorted(set(accounts))),
                c.started_at >= now - RUNNING_AT_MOST,
                c.started_at <= now,
                c.ended_at.is_(None),
            )
        )
        found: dict[str, list[Window]] = {a: [] for a in accounts}
        for r in rows:
            found[r.account_id].append(Window(r.game_id, r.game_number, r.started_at, now))
        return found

    async def running(self, account_id: str, now: datetime) -> list[Window]:
        """The player's games started since ``now - RUNNING_AT_MOST`` and not ended yet, as
        windows running until ``now`` (a game at another table at this moment; one started
        longer ago whose end never came is taken for lost, not running)."""
        c = game_windows.c
        rows = await self._session.execute(
            select(game_windows).where(
                c.account_id == account_id,
                c.started_at >= now - RUNNING_AT_MOST,
                c.started_at <= now,
                c.ended_at.is_(None),
            )
        )
        return [Window(r.game_id, r.game_number, r.started_at, now) for r in rows]
