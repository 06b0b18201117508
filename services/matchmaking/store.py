"""The lobby's tables and the forbidden pairs (SQLAlchemy Core; rows <-> domain), and the
ratings read for seating and quotes.

Seating is serialised per table by its row lock (``get_for_update``): two players
racing for the last seat queue on it, the first claims the seat and commits, the
second then sees the claim and is refused. The seat rows' unique constraints
(one seat number, one account per table) back that up in the schema itself.

A seating's statements are few and cached: a table is read with its seats in one
statement (the claim's read adds both players' self-exclusions, ratings and standing
forbidden pair), saved in one, and its hold ids are recorded by one conditional update
on its own (``record_holds``). Every statement here has a fixed shape, so SQLAlchemy
compiles each once per process (a multi-row ``VALUES`` would be compiled every time).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Float,
    Integer,
    MetaData,
    SmallInteger,
    String,
    Table,
    and_,
    bindparam,
    case,
    delete,
    func,
    or_,
    select,
    tuple_,
    update,
)
from sqlalchemy.dialects.postgresql import ARRAY, insert
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from services.kit.db import UnitOfWork
from services.kit.self_exclusion import self_exclusions
from services.matchmaking.domain import tables as domain
from services.matchmaking.ports import PlayerRating
from services.matchmaking.ticket_store import TicketRepository

metadata = MetaData()

STARTING_RATING = 1500.0

lobby_tables = Table(
    "lobby_tables",
    metadata,
    Column("table_id", String(36), primary_key=True),
    Column("owner_account_id", String(36), nullable=False),
    Column("idempotency_key", String(200), nullable=False),
    Column("status", String(10), nullable=False),
    Column("kind", String(12), nullable=False),
    Column("match_length", Integer, nullable=False),
    Column("stake_minor", BigInteger, nullable=False),
    Column("currency", String(8), nullable=False),
    Column("cube_cap", Integer, nullable=False),
    Column("beaver", Boolean, nullable=False),
    Column("jacoby", Boolean, nullable=False),
    Column("crawford", Boolean, nullable=False),
    Column("clock", String(20), nullable=False),
    Column("min_rating", Integer),
    Column("max_rating", Integer),
    Column("invited_account_id", String(36)),
    Column("game_id", String(64)),
    Column("attempt_id", String(36)),
    Column("attempt_account_id", String(36)),
    Column("attempt_deadline", DateTime(timezone=True)),
    Column("close_reason", String(200)),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
    # Table stakes (migration 0008).
    Column("table_stakes_minor", BigInteger, nullable=False, server_default="0"),
    Column("games_played", Integer, nullable=False, server_default="0"),
    Column("leaving_account_id", String(36)),
)

lobby_seats = Table(
    "lobby_seats",
    metadata,
    Column("table_id", String(36), primary_key=True),
    Column("seat", SmallInteger, primary_key=True),
    Column("account_id", String(36), nullable=False),
    Column("residence", String(10), nullable=False),
    Column("client_address", String(45), nullable=False),
    Column("device_id", String(128), nullable=False),
    Column("rating", Float),
    Column("hold_id", String(64), nullable=False),
    Column("sat_at", DateTime(timezone=True), nullable=False),
    Column("stake_left", BigInteger, nullable=False, server_default="0"),
)

forbidden_pairs = Table(
    "forbidden_pairs",
    metadata,
    Column("restriction_id", String(64), primary_key=True),
    Column("low_account_id", String(36), nullable=False),
    Column("high_account_id", String(36), nullable=False),
    Column("reason", String(40), nullable=False),
    Column("detail", String(500), nullable=False),
    Column("alert_id", String(64), nullable=False),
    Column("restricted_at", DateTime(timezone=True)),
    Column("lifted_at", DateTime(timezone=True)),
)

# Migration 0002's table (written by the ratings consumer); read here only.
ratings = Table(
    "ratings",
    metadata,
    Column("account_id", String(36), primary_key=True),
    Column("rating", Float, nullable=False),
    Column("experience", Integer, nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
)


@dataclass(frozen=True)
class TableFilter:
    """What ListTables narrows by; None or 0 = no filter on that field."""

    viewer_id: str
    currency: str = ""
    kind: domain.Kind | None = None
    include_playing: bool = False
    min_stake: int = 0
    max_stake: int = 0
    match_length: int = 0
    owner_rating: domain.RatingRange = field(default_factory=domain.RatingRange)
    viewer_rating: float = STARTING_RATING
    limit: int = 50
    after: tuple[datetime, str] | None = None


def _rules(row: Any) -> domain.Rules:
    return domain.Rules(
        kind=domain.Kind(row.kind),
        match_length=row.match_length,
        stake_minor=row.stake_minor,
        currency=row.currency,
        cube_cap=row.cube_cap,
        beaver=row.beaver,
        jacoby=row.jacoby,
        crawford=row.crawford,
        clock=row.clock,
        table_stakes_minor=row.table_stakes_minor,
    )


def _seat(row: Any) -> domain.Seat:
    sitter = domain.Sitter(row.account_id, row.residence, row.client_address, row.device_id)
    return domain.Seat(row.seat, sitter, row.rating, row.hold_id, row.stake_left)


# A table's seats beside its row (one row per seat, or one with NULL seats for none).
_SEAT_LABELS = {column.name: f"seat_{column.name}" for column in lobby_seats.c}


def _labelled_seat(row: Any) -> domain.Seat:
    seat = {name: getattr(row, label) for name, label in _SEAT_LABELS.items()}
    sitter = domain.Sitter(
        seat["account_id"], seat["residence"], seat["client_address"], seat["device_id"]
    )
    return domain.Seat(seat["seat"], sitter, seat["rating"], seat["hold_id"], seat["stake_left"])


def _table_with_seats(rows: Sequence[Any]) -> domain.Table | None:
    if not rows:
        return None
    seats = [_labelled_seat(row) for row in rows if row.seat_seat is not None]
    return _table(rows[0], seats)


@dataclass(frozen=True)
class JoinFacts:
    """What the claim of a seat reads with the locked table, for the owner and the joiner:
    self-exclusions not ended (None: none), ratings (None: no row yet, 1500) and the
    reason of a standing forbidden pair between them (None: none)."""

    owner_excluded_until: datetime | None
    joiner_excluded_until: datetime | None
    owner_rating: float | None
    joiner_rating: float | None
    forbidden_reason: str | None

    def excluded(self, owner_id: str, joiner_id: str) -> dict[str, datetime]:
        found = {owner_id: self.owner_excluded_until, joiner_id: self.joiner_excluded_until}
        return {account: until for account, until in found.items() if until is not None}

    def ratings(self) -> tuple[float, float]:
        return (
            STARTING_RATING if self.owner_rating is None else self.owner_rating,
            STARTING_RATING if self.joiner_rating is None else self.joiner_rating,
        )


def _table(row: Any, seats: Sequence[domain.Seat]) -> domain.Table:
    attempt = None
    if row.attempt_id is not None:
        attempt = domain.Attempt(row.attempt_id, row.attempt_account_id, row.attempt_deadline)
    return domain.Table(
        table_id=row.table_id,
        owner_id=row.owner_account_id,
        rules=_rules(row),
        status=domain.Status(row.status),
        created_at=row.created_at,
        seats=tuple(sorted(seats, key=lambda seat: seat.number)),
        rating_range=domain.RatingRange(row.min_rating, row.max_rating),
        invited_account_id=row.invited_account_id or "",
        game_id=row.game_id or "",
        attempt=attempt,
        close_reason=row.close_reason or "",
        games_played=row.games_played,
        leaving_id=row.leaving_account_id or "",
    )


def _table_row(table: domain.Table, now: datetime) -> dict[str, Any]:
    rules = table.rules
    attempt = table.attempt
    return {
        "status": table.status.value,
        "kind": rules.kind.value,
        "match_length": rules.match_length,
        "stake_minor": rules.stake_minor,
        "currency": rules.currency,
        "cube_cap": rules.cube_cap,
        "beaver": rules.beaver,
        "jacoby": rules.jacoby,
        "crawford": rules.crawford,
        "clock": rules.clock,
        "min_rating": table.rating_range.low,
        "max_rating": table.rating_range.high,
        "invited_account_id": table.invited_account_id or None,
        "game_id": table.game_id or None,
        "attempt_id": attempt.attempt_id if attempt else None,
        "attempt_account_id": attempt.account_id if attempt else None,
        "attempt_deadline": attempt.deadline if attempt else None,
        "close_reason": table.close_reason or None,
        "updated_at": now,
        "table_stakes_minor": rules.table_stakes_minor,
        "games_played": table.games_played,
        "leaving_account_id": table.leaving_id or None,
    }


def _seat_row(table_id: str, seat: domain.Seat, now: datetime) -> dict[str, Any]:
    sitter = seat.sitter
    return {
        "table_id": table_id,
        "seat": seat.number,
        "account_id": sitter.account_id,
        "residence": sitter.residence,
        "client_address": sitter.address,
        "device_id": sitter.device_id,
        "rating": seat.rating,
        "hold_id": seat.hold_id,
        "sat_at": now,
        "stake_left": seat.stake_left,
    }


class TableRepository:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def add(self, table: domain.Table, idempotency_key: str, now: datetime) -> None:
        await self._session.execute(
            lobby_tables.insert().values(
                table_id=table.table_id,
                owner_account_id=table.owner_id,
                idempotency_key=idempotency_key,
                created_at=table.created_at,
                **_table_row(table, now),
            )
        )
        await self._write_seats(table, now)

    async def save(self, table: domain.Table, now: datetime) -> None:
        """The table row, its seats and no seat past them, in one statement (one round trip)."""
        await self._session.execute(_SAVE, {**_saved_row(table, now), **_seat_arrays(table, now)})

    async def _write_seats(self, table: domain.Table, now: datetime) -> None:
        if table.seats:
            await self._session.execute(_UPSERT_SEATS, _seat_arrays(table, now))

    async def get(self, table_id: str, *, lock: bool = False) -> domain.Table | None:
        """The table with its seats: in one statement, or (``lock``) its row locked and then
        its seats read, so that they are those committed before the lock was granted (a
        statement that waits for a row lock sees the other rows of its join as they were
        when it started)."""
        if not lock:
            rows = (await self._session.execute(_WITH_SEATS, {"the_table_id": table_id})).all()
            return _table_with_seats(rows)
        row = (await self._session.execute(_LOCK, {"the_table_id": table_id})).first()
        if row is None:
            return None
        return _table(row, (await self._seats_of([table_id])).get(table_id, []))

    async def locked_with(
        self, table_id: str, seats: Sequence[domain.Seat]
    ) -> domain.Table | None:
        """The table's row locked, with ``seats`` as the caller knows them (one statement):
        for a seating attempt's own steps, whose seats only the attempt writes while it
        holds the free seat (the caller checks that it still does)."""
        row = (await self._session.execute(_LOCK, {"the_table_id": table_id})).first()
        return None if row is None else _table(row, seats)

    async def for_join(
        self, table_id: str, joiner_id: str, now: datetime
    ) -> tuple[domain.Table | None, JoinFacts | None]:
        """The table locked with its seats, and what its claim by ``joiner_id`` needs to
        know about the owner and the joiner (:class:`JoinFacts`), in one statement.

        The seats are as they were when the statement started, which a wait for the lock
        may make stale: only an open table's seats are to be trusted (its one seat, the
        owner's, whose sitter never changes); the caller reads any other again
        (:meth:`get` with ``lock``, with no wait then)."""
        values = {"the_table_id": table_id, "the_joiner_id": joiner_id, "the_time": now}
        rows = (await self._session.execute(_FOR_JOIN, values)).all()
        if not rows:
            return None, None
        row = rows[0]
        facts = JoinFacts(
            row.owner_excluded_until, row.joiner_excluded_until, row.owner_rating,
            row.joiner_rating, row.forbidden_reason,
        )  # fmt: skip
        return _table_with_seats(rows), facts

    async def record_holds(
        self, table_id: str, attempt_id: str, holds: tuple[str, str], now: datetime
    ) -> bool:
        """Both seats' hold ids (owner's, joiner's) recorded for the seating attempt
        ``attempt_id``, in one statement that needs no transaction of its own: False when
        the attempt no longer holds the seat (the table's row, locked by the update, says
        so after any concurrent change commits)."""
        values = {
            "the_table_id": table_id, "the_attempt_id": attempt_id, "the_time": now,
            "owner_hold": holds[0], "joiner_hold": holds[1],
        }  # fmt: skip
        return len((await self._session.execute(_RECORD_HOLDS, values)).all()) == 2

    async def of_game(self, game_id: str, *, lock: bool = False) -> domain.Table | None:
        """The table whose latest game is ``game_id`` (index ``lobby_tables_game``)."""
        query = select(lobby_tables.c.table_id).where(lobby_tables.c.game_id == game_id)
        table_id = (await self._session.execute(query)).scalar()
        return None if table_id is None else await self.get(table_id, lock=lock)

    async def _seats_of(self, table_ids: Sequence[str]) -> dict[str, list[domain.Seat]]:
        found: dict[str, list[domain.Seat]] = {}
        if not table_ids:
            return found
        rows = await self._session.execute(
            select(lobby_seats).where(lobby_seats.c.table_id.in_(list(table_ids)))
        )
        for row in rows:
            found.setdefault(row.table_id, []).append(_seat(row))
        return found

    async def stale_attempts(self, now: datetime, limit: int) -> list[domain.Table]:
        """Tables SEATING past their attempt's deadline, locked; those another replica
        has locked are skipped (it is taking them on)."""
        rows = list(
            await self._session.execute(
                select(lobby_tables)
                .where(lobby_tables.c.status == "seating", lobby_tables.c.attempt_deadline <= now)
                .order_by(lobby_tables.c.attempt_deadline)
                .limit(limit)
                .with_for_update(skip_locked=True)
            )
        )
        seats = await self._seats_of([row.table_id for row in rows])
        return [_table(row, seats.get(row.table_id, [])) for row in rows]

    async def open_of_owner(self, owner_id: str) -> list[domain.Table]:
        """The owner's tables still waiting for an opponent, locked."""
        rows = list(
            await self._session.execute(
                select(lobby_tables)
                .where(lobby_tables.c.owner_account_id == owner_id, lobby_tables.c.status == "open")
                .order_by(lobby_tables.c.table_id)
                .with_for_update()
            )
        )
        seats = await self._seats_of([row.table_id for row in rows])
        return [_table(row, seats.get(row.table_id, [])) for row in rows]

    async def by_key(self, owner_id: str, idempotency_key: str) -> domain.Table | None:
        table_id = await self._session.scalar(
            select(lobby_tables.c.table_id).where(
                lobby_tables.c.owner_account_id == owner_id,
                lobby_tables.c.idempotency_key == idempotency_key,
            )
        )
        return None if table_id is None else await self.get(table_id)

    async def listing(self, wanted: TableFilter) -> list[domain.Table]:
        """Tables the viewer may see, newest first, after the page cursor."""
        owner_rating = func.coalesce(ratings.c.rating, STARTING_RATING)
        statuses = ["open", "seating", "playing"] if wanted.include_playing else ["open"]
        t = lobby_tables
        conditions: list[Any] = [
            t.c.status.in_(statuses),
            or_(
                t.c.invited_account_id.is_(None),
                t.c.invited_account_id == wanted.viewer_id,
                t.c.owner_account_id == wanted.viewer_id,
            ),
            # Tables whose range leaves the viewer out are not theirs to join.
            or_(t.c.min_rating.is_(None), t.c.min_rating <= wanted.viewer_rating,
                t.c.owner_account_id == wanted.viewer_id),
            or_(t.c.max_rating.is_(None), t.c.max_rating >= wanted.viewer_rating,
                t.c.owner_account_id == wanted.viewer_id),
        ]
        if wanted.currency:
            conditions.append(t.c.currency == wanted.currency)
        if wanted.kind is not None:
            conditions.append(t.c.kind == wanted.kind.value)
        if wanted.min_stake:
            conditions.append(t.c.stake_minor >= wanted.min_stake)
        if wanted.max_stake:
            conditions.append(t.c.stake_minor <= wanted.max_stake)
        if wanted.match_length:
            conditions.append(t.c.match_length == wanted.match_length)
        if wanted.owner_rating.low is not None:
            conditions.append(owner_rating >= wanted.owner_rating.low)
        if wanted.owner_rating.high is not None:
            conditions.append(owner_rating <= wanted.owner_rating.high)
        if wanted.after is not None:
            conditions.append(tuple_(t.c.created_at, t.c.table_id) < tuple_(*wanted.after))
        query = (
            select(t)
            .select_from(t.outerjoin(ratings, ratings.c.account_id == t.c.owner_account_id))
            .where(and_(*conditions))
            .order_by(t.c.created_at.desc(), t.c.table_id.desc())
            .limit(wanted.limit)
        )
        rows = list(await self._session.execute(query))
        seats = await self._seats_of([row.table_id for row in rows])
        return [_table(row, seats.get(row.table_id, [])) for row in rows]


# The seating's statements, built once: SQLAlchemy then computes each one's cache key
# once, not at every execution (for statements this size that costs as much as the rest
# of the call's Python).

# Named unlike any column: an UPDATE takes an execution value named after a column of
# its table as one more column to set.
_TABLE_ID = bindparam("the_table_id", type_=String)


def _saved_row(table: domain.Table, now: datetime) -> dict[str, Any]:
    row = {f"t_{name}": value for name, value in _table_row(table, now).items()}
    return {**row, "the_table_id": table.table_id, "seat_count": len(table.seats)}


def _seat_arrays(table: domain.Table, now: datetime) -> dict[str, Any]:
    rows = [_seat_row(table.table_id, seat, now) for seat in table.seats]
    arrays = {f"seat_{c.name}s": [row[c.name] for row in rows] for c in _SEAT_COLUMNS}
    return {**arrays, "seats_table_id": table.table_id}


_SEAT_COLUMNS = [column for column in lobby_seats.c if column.name != "table_id"]


def _upsert_seats() -> Any:
    """A table's seats written from arrays of their columns (``sat_at`` kept): the same
    statement for one seat, two or none."""
    seats = (
        func.unnest(
            *(bindparam(f"seat_{c.name}s", type_=ARRAY(c.type)) for c in _SEAT_COLUMNS)
        )
        .table_valued(*(column.name for column in _SEAT_COLUMNS))
        .render_derived(with_types=False)
    )
    statement = insert(lobby_seats).from_select(
        ["table_id", *(column.name for column in _SEAT_COLUMNS)],
        select(
            bindparam("seats_table_id", type_=String),
            *(seats.c[column.name] for column in _SEAT_COLUMNS),
        ),
    )
    return statement.on_conflict_do_update(
        index_elements=[lobby_seats.c.table_id, lobby_seats.c.seat],
        set_={
            column.name: statement.excluded[column.name]
            for column in lobby_seats.c
            if column.name not in ("table_id", "seat", "sat_at")
        },
    )


def _save() -> Any:
    """The table row, its seats, and no seat past them (data-modifying CTEs run once
    whatever the main statement reads of them)."""
    # Every column but those a table keeps from its creation (_table_row's keys).
    kept = ("table_id", "owner_account_id", "idempotency_key", "created_at")
    saved = [column.name for column in lobby_tables.c if column.name not in kept]
    changed = (
        update(lobby_tables)
        .where(lobby_tables.c.table_id == _TABLE_ID)
        .values({name: bindparam(f"t_{name}", type_=lobby_tables.c[name].type) for name in saved})
        .returning(lobby_tables.c.table_id)
        .cte("changed_table")
    )
    vacated = (
        delete(lobby_seats)
        .where(
            lobby_seats.c.table_id == _TABLE_ID,
            lobby_seats.c.seat >= bindparam("seat_count", type_=SmallInteger),
        )
        .returning(lobby_seats.c.seat)
        .cte("vacated_seats")
    )
    return _UPSERT_SEATS.add_cte(changed, vacated)


def _with_seats(lock: bool = False) -> Any:
    """The table's row beside each of its seats (labelled ``seat_*``; one row of NULL
    seats for a table without any); ``lock``: the table's row only."""
    query = (
        select(
            lobby_tables,
            *(column.label(_SEAT_LABELS[column.name]) for column in lobby_seats.c),
        )
        .select_from(
            lobby_tables.outerjoin(lobby_seats, lobby_seats.c.table_id == lobby_tables.c.table_id)
        )
        .where(lobby_tables.c.table_id == _TABLE_ID)
    )
    return query.with_for_update(of=lobby_tables) if lock else query


def _for_join() -> Any:
    """:func:`_with_seats` locked, with the owner's and the joiner's self-exclusions not
    ended at ``now``, their ratings and their pair's standing forbidden reason."""
    owner = lobby_tables.c.owner_account_id
    joiner = bindparam("the_joiner_id", type_=String)
    now = bindparam("the_time", type_=DateTime(timezone=True))

    def excluded(account: Any) -> Any:
        return (
            select(self_exclusions.c.excluded_until)
            .where(self_exclusions.c.account_id == account, self_exclusions.c.excluded_until > now)
            .scalar_subquery()
        )

    def rating(account: Any) -> Any:
        return select(ratings.c.rating).where(ratings.c.account_id == account).scalar_subquery()

    forbidden = (
        select(forbidden_pairs.c.reason)
        .where(
            forbidden_pairs.c.low_account_id == func.least(owner, joiner),
            forbidden_pairs.c.high_account_id == func.greatest(owner, joiner),
            forbidden_pairs.c.lifted_at.is_(None),
            forbidden_pairs.c.restricted_at.is_not(None),
        )
        .order_by(forbidden_pairs.c.restricted_at)
        .limit(1)
        .scalar_subquery()
    )
    return _with_seats(lock=True).add_columns(
        excluded(owner).label("owner_excluded_until"),
        excluded(joiner).label("joiner_excluded_until"),
        rating(owner).label("owner_rating"),
        rating(joiner).label("joiner_rating"),
        forbidden.label("forbidden_reason"),
    )


def _record_holds() -> Any:
    """Both seats' hold ids, only while the attempt holds the table (its row locked by the
    update, which checks the row as committed once any concurrent change has)."""
    attempt = (
        update(lobby_tables)
        .where(
            lobby_tables.c.table_id == _TABLE_ID,
            lobby_tables.c.status == domain.Status.SEATING.value,
            lobby_tables.c.attempt_id == bindparam("the_attempt_id", type_=String),
        )
        .values(updated_at=bindparam("the_time", type_=DateTime(timezone=True)))
        .returning(lobby_tables.c.table_id)
        .cte("attempt_holds")
    )
    owner_hold = bindparam("owner_hold", type_=String)
    joiner_hold = bindparam("joiner_hold", type_=String)
    recorded = (
        update(lobby_seats)
        .where(lobby_seats.c.table_id == attempt.c.table_id, lobby_seats.c.seat.in_([0, 1]))
        .values(hold_id=case((lobby_seats.c.seat == 0, owner_hold), else_=joiner_hold))
        .returning(lobby_seats.c.seat)
    )
    return recorded.add_cte(attempt)


_UPSERT_SEATS = _upsert_seats()
_SAVE = _save()
_LOCK = select(lobby_tables).where(lobby_tables.c.table_id == _TABLE_ID).with_for_update()
_WITH_SEATS = _with_seats()
_FOR_JOIN = _for_join()
_RECORD_HOLDS = _record_holds()


class ForbiddenPairRepository:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def standing_reason(self, first: str, second: str) -> str | None:
        """Why the pair may not play, if any restriction of theirs stands."""
        low, high = sorted((first, second))
        reason = await self._session.scalar(
            select(forbidden_pairs.c.reason)
            .where(
                forbidden_pairs.c.low_account_id == low,
                forbidden_pairs.c.high_account_id == high,
                forbidden_pairs.c.lifted_at.is_(None),
                forbidden_pairs.c.restricted_at.is_not(None),
            )
            .order_by(forbidden_pairs.c.restricted_at)
            .limit(1)
        )
        return None if reason is None else str(reason)

    async def among(self, account_ids: Sequence[str]) -> list[tuple[str, str]]:
        """The standing forbidden pairs whose both accounts are among ``account_ids``."""
        if len(account_ids) < 2:
            return []
        wanted = list(account_ids)
        f = forbidden_pairs
        rows = await self._session.execute(
            select(f.c.low_account_id, f.c.high_account_id)
            .where(
                f.c.low_account_id.in_(wanted),
                f.c.high_account_id.in_(wanted),
                f.c.lifted_at.is_(None),
                f.c.restricted_at.is_not(None),
            )
            .distinct()
        )
        return [(row.low_account_id, row.high_account_id) for row in rows]


async def restrict_pair(
    session: AsyncSession,
    *,
    restriction_id: str,
    pair: tuple[str, str],
    reason: str,
    detail: str,
    alert_id: str,
    at: datetime,
) -> None:
    """Record a restriction; one already lifted (its lift came first) stays lifted."""
    low, high = sorted(pair)
    statement = insert(forbidden_pairs).values(
        restriction_id=restriction_id,
        low_account_id=low,
        high_account_id=high,
        reason=reason,
        detail=detail[:500],
        alert_id=alert_id,
        restricted_at=at,
    )
    await session.execute(
        statement.on_conflict_do_update(
            index_elements=[forbidden_pairs.c.restriction_id],
            set_={"restricted_at": at, "reason": reason},
        )
    )


async def lift_pair(
    session: AsyncSession, *, restriction_id: str, pair: tuple[str, str], at: datetime
) -> None:
    """Lift a restriction; a lift that arrives before its restriction is kept as lifted."""
    low, high = sorted(pair)
    statement = insert(forbidden_pairs).values(
        restriction_id=restriction_id,
        low_account_id=low,
        high_account_id=high,
        reason="",
        detail="",
        alert_id="",
        lifted_at=at,
    )
    await session.execute(
        statement.on_conflict_do_update(
            index_elements=[forbidden_pairs.c.restriction_id], set_={"lifted_at": at}
        )
    )


class RatingRepository:
    """The ``ratings`` table read in a unit of work's transaction (a player without a row
    has 1500/0)."""

    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def ratings(self, account_ids: Sequence[str]) -> Mapping[str, PlayerRating]:
        found = {a: PlayerRating(a, STARTING_RATING, 0) for a in account_ids}
        if not account_ids:
            return found
        rows = await self._session.execute(
            select(ratings.c.account_id, ratings.c.rating, ratings.c.experience).where(
                ratings.c.account_id.in_(list(account_ids))
            )
        )
        for row in rows:
            found[row.account_id] = PlayerRating(row.account_id, row.rating, row.experience)
        return found


class StoredRatings:
    """The ``RatingSource`` over the ``ratings`` table, in a session of its own."""

    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions

    async def ratings(self, account_ids: Sequence[str]) -> Mapping[str, PlayerRating]:
        if not account_ids:
            return {}
        async with self._sessions() as session:
            return await RatingRepository(session).ratings(account_ids)


class MatchmakingUnitOfWork(UnitOfWork):
    tables: TableRepository
    forbidden: ForbiddenPairRepository
    tickets: TicketRepository
    ratings: RatingRepository

    def _start(self) -> None:
        self.tables = TableRepository(self.session)
        self.forbidden = ForbiddenPairRepository(self.session)
        self.tickets = TicketRepository(self.session)
        self.ratings = RatingRepository(self.session)
