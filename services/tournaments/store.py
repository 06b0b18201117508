"""The tournaments' tables (SQLAlchemy Core; rows <-> domain).

A tournament row is the aggregate: its rules (the Rules message's JSON), the secret
seed, the status, the drawn seating order and a ``version``; its entrants are rows of
``registrations`` (a player who left keeps a row, ``left_at`` set, until their holds
are released: ``released_at``) and its bracket's matches rows of ``tournament_matches``
(seats, game, winner, decision). Every change loads the row ``FOR UPDATE`` and saves
it with the version one up, so registrations racing for the last seat, and results
arriving on two replicas, are applied one after the other. A save writes only the
matches that changed from the state loaded (a result: the match and the next round's
seat; a game created: its match), not the whole bracket; once the transaction is under
way, the lock and the save (matches, row, and any events given) are a statement each on
the asyncpg connection (:mod:`services.tournaments.writes`).

**The cache.** A 1,024-entrant tournament is 1,024 registrations and 1,023 matches:
reading it back for every change and every lobby poll was the largest part of the
service's CPU (py-spy under `tavla bench tournaments`: services/tournaments/README.md).
So each process keeps the latest committed state of the tournaments it changed
(:class:`TournamentCache`), keyed by the row's ``version``: a load reads the version
(locking the row for a change) and takes the cached aggregate when the version is the
same, reading the rows only when it is not (another replica changed it, or this
process never saw it). An entry is put only after its transaction committed (the
session's ``after_commit``), or from rows read back, keyed by the version of the
tournament's row they were read with. Either is never stale for its version: under the
row lock no writer can change the rows meanwhile, and without it (a lobby's read) the
registrations and matches read after the row show its version or a later one; a later one
means a change committed in between, and every change bumps the version in its own
transaction, so the database will never show that version again and the entry is never
given out. So a replica's lobby reads a tournament another replica changed once, not at
every poll. A satellite's tickets are not cached: they change under the target's lock (a
ticket used), so they are read on every load.

A satellite's tickets are rows of ``tickets``: the holds the wallet placed at the target
in the winner's name, ``used_at`` once they entered the winner (set once, under the
target's row lock), ``released_at`` once they went back because the target closed
without them.

``needs_work`` marks a tournament with something for the driver to do with other
services (fees, games to create, prizes, holds to release); it is set in the
transaction that made the work, so a crash loses none of it.

**Reads on their own.** What only reads (the driver's look for due tournaments, the
loads that choose its next step, the lobby's ``GetTournament`` and ``ListTournaments``)
goes through :class:`ReadingUnitOfWork`: its statements run on an autocommit
connection, each its own transaction, so a read costs its statements' round trips and
not a ``BEGIN`` and a ``ROLLBACK`` besides (on a lobby poll or a driver pass, half of
them). It sees nothing a transaction would have shown it more consistently: at
PostgreSQL's READ COMMITTED every statement of a transaction takes its own snapshot
anyway. It refuses to write, to lock and to commit, so a change can only be made in a
:class:`TournamentsUnitOfWork`, atomically.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any, Final

import asyncpg  # type: ignore[import-untyped]
from google.protobuf.message import Message
from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Integer,
    LargeBinary,
    MetaData,
    SmallInteger,
    String,
    Table,
    and_,
    event,
    func,
    or_,
    select,
    update,
)
from sqlalchemy.dialects.postgresql import JSONB, insert
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker
from sqlalchemy.orm import ORMExecuteState, Session
from sqlalchemy.sql.elements import ColumnElement

from services.kit.db import UnitOfWork
from services.kit.events.envelope import Envelope
from services.kit.events.tables import outbox_row
from services.kit.self_exclusion import excluded_until_on
from services.tournaments import messages, writes
from services.tournaments.domain import bracket as brackets
from services.tournaments.domain.lobby import Entrant, Status, Ticket, Tournament
from services.tournaments.domain.rules import Kind

metadata = MetaData()

tournaments = Table(
    "tournaments",
    metadata,
    Column("tournament_id", String(36), primary_key=True),
    Column("name", String(100), nullable=False),
    Column("idempotency_key", String(200), nullable=False, unique=True),
    Column("rules", JSONB, nullable=False),
    Column("currency", String(8), nullable=False),
    Column("seed", LargeBinary, nullable=False),
    Column("status", String(12), nullable=False),
    Column("seating", JSONB),  # the drawn order, once drawn; the matches are rows below
    Column("version", Integer, nullable=False),
    Column("needs_work", Boolean, nullable=False),
    Column("registration_closes_at", DateTime(timezone=True)),
    Column("starts_at", DateTime(timezone=True)),
    Column("cancel_reason", String(300), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("started_at", DateTime(timezone=True)),
    Column("finished_at", DateTime(timezone=True)),
    Column("prizes", JSONB),
)

registrations = Table(
    "registrations",
    metadata,
    Column("tournament_id", String(36), primary_key=True),
    Column("account_id", String(36), primary_key=True),
    Column("buy_in_hold_id", String(64), nullable=False),
    Column("fee_hold_id", String(64), nullable=False),
    Column("registered_at", DateTime(timezone=True), nullable=False),
    # 0 for a player's first entry, one more each time they come back after leaving:
    # the holds' idempotency keys carry it, so a new entry never replays a released hold.
    Column("entry", Integer, nullable=False),
    Column("left_at", DateTime(timezone=True)),
    Column("released_at", DateTime(timezone=True)),
)

tournament_matches = Table(
    "tournament_matches",
    metadata,
    Column("tournament_id", String(36), primary_key=True),
    Column("round", SmallInteger, primary_key=True),  # 1-based
    Column("position", SmallInteger, primary_key=True),  # 0-based from the top
    Column("top", String(36)),  # None: still to come (or a bye's empty seat)
    Column("bottom", String(36)),
    Column("game_id", String(64), nullable=False),
    Column("winner", String(36)),
    Column("decision", String(16)),
)

tickets = Table(
    "tickets",
    metadata,
    Column("satellite_id", String(36), primary_key=True),
    Column("account_id", String(36), primary_key=True),
    Column("target_id", String(36), nullable=False),
    Column("value", BigInteger, nullable=False),
    Column("buy_in_hold_id", String(64), nullable=False),
    Column("fee_hold_id", String(64), nullable=False),
    Column("issued_at", DateTime(timezone=True), nullable=False),
    Column("used_at", DateTime(timezone=True)),
    Column("released_at", DateTime(timezone=True)),
)


def _ticket(row: Any) -> Ticket:
    return Ticket(
        row.satellite_id, row.account_id, row.target_id, row.value,
        row.buy_in_hold_id, row.fee_hold_id, used=row.used_at is not None,
    )


def match_values(tournament_id: str, match: brackets.Match) -> dict[str, Any]:
    """A match's row."""
    return {
        "tournament_id": tournament_id,
        "round": match.round,
        "position": match.index,
        "top": match.players[0],
        "bottom": match.players[1],
        "game_id": match.game_id,
        "winner": match.winner,
        "decision": None if match.decision is None else match.decision.value,
    }


def bracket_from_rows(seating: Sequence[str], rows: Iterable[Any]) -> brackets.Bracket:
    """The bracket of the drawn ``seating`` from its match rows (any order)."""
    rounds: dict[int, list[brackets.Match]] = {}
    for row in sorted(rows, key=lambda found: (found.round, found.position)):
        rounds.setdefault(row.round, []).append(
            brackets.Match(
                round=row.round,
                index=row.position,
                players=(row.top, row.bottom),
                game_id=row.game_id,
                winner=row.winner,
                decision=None if row.decision is None else brackets.Decision(row.decision),
            )
        )
    return brackets.Bracket(
        len(seating), tuple(seating), tuple(tuple(rounds[r]) for r in sorted(rounds))
    )


def changed_matches(
    before: brackets.Bracket | None, after: brackets.Bracket
) -> list[brackets.Match]:
    """The matches of ``after`` that differ from ``before`` (all of them without one). The
    domain replaces only the matches a change touches and keeps the others (and untouched
    rounds) as the same objects, so this compares identities first."""
    if before is None or before.order != after.order:
        return list(after.matches())
    changed: list[brackets.Match] = []
    for old_round, new_round in zip(before.rounds, after.rounds, strict=True):
        if old_round is not new_round:
            changed.extend(
                new for old, new in zip(old_round, new_round, strict=True)
                if new is not old and new != old
            )
    return changed


class TournamentCache:
    """The latest committed aggregate (tickets aside) of the tournaments a process has
    changed or locked, each with its row's ``version``; the ``size`` most recent."""

    def __init__(self, size: int = 64) -> None:
        self._entries: OrderedDict[str, tuple[int, Tournament]] = OrderedDict()
        self._size = size
        # Versions saved by a transaction of this process whose commit has not been seen
        # yet: done once it committed (the state put) or rolled back.
        self._landing: dict[tuple[str, int], asyncio.Future[None]] = {}

    def committing(self, tournament_id: str, version: int) -> None:
        """A transaction of this process saved ``version``; its state comes at its commit."""
        if (tournament_id, version) not in self._landing:
            self._landing[(tournament_id, version)] = asyncio.get_running_loop().create_future()

    def landed(self, tournament_id: str, version: int) -> None:
        """That transaction ended (committed: its state was put first; or rolled back)."""
        landing = self._landing.pop((tournament_id, version), None)
        if landing is not None and not landing.done():
            landing.set_result(None)

    async def settled(self, tournament_id: str, version: int) -> Tournament | None:
        """:meth:`get`, waiting first for this process's own commit of ``version`` when the
        database shows it already and the commit's answer has not been handled yet (its
        state is then put; a rollback puts nothing). Another transaction waiting on the row
        lock gets it the moment PostgreSQL commits, often before this process has read the
        answer to the COMMIT: reading the whole tournament back then (1,024 entries and
        1,023 matches) was a round's games' largest cost."""
        landing = self._landing.get((tournament_id, version))
        if landing is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(landing), LANDING_SECONDS)
        return self.get(tournament_id, version)

    def get(self, tournament_id: str, version: int) -> Tournament | None:
        found = self._entries.get(tournament_id)
        if found is None or found[0] != version:
            return None
        self._entries.move_to_end(tournament_id)
        return found[1]

    def put(self, version: int, tournament: Tournament) -> None:
        found = self._entries.get(tournament.id)
        if found is not None and found[0] >= version:
            return  # a later commit's state is here already
        kept = found is not None and found[1].entrants is tournament.entrants
        # Entrants kept from the cached state are in the stored order already: no sort
        # (a result or a game changes no entrant; 1,024 sorted at every commit showed).
        committed = tournament if kept and not tournament.tickets else _committed_form(tournament)
        self._entries[tournament.id] = (version, committed)
        self._entries.move_to_end(tournament.id)
        for earlier in [k for k in self._landing if k[0] == tournament.id and k[1] < version]:
            self.landed(*earlier)  # a transaction whose end was never seen: nobody waits on
        while len(self._entries) > self._size:
            self._entries.popitem(last=False)


def _committed_form(tournament: Tournament) -> Tournament:
    """The aggregate as a load reads it back: no tickets (read on every load), the entrants
    in the stored order (registrations can commit out of their ``registered_at`` order)."""
    entrants = tournament.entrants
    ordered = tuple(sorted(entrants, key=lambda e: (e.registered_at, e.account_id)))
    if ordered != entrants or tournament.tickets:
        return replace(tournament, entrants=ordered, tickets=())
    return tournament


_PENDING: Final = "tavla.tournaments.cache_pending"
# How long a read waits for this process's own commit of the version it found (above).
LANDING_SECONDS: Final = 1.0


def _cache_after_commit(
    session: AsyncSession, cache: TournamentCache, version: int, tournament: Tournament
) -> None:
    """Put ``tournament`` in ``cache`` once (and only if) the session's transaction commits."""
    info = session.sync_session.info
    if _PENDING not in info:
        info[_PENDING] = []
        event.listen(session.sync_session, "after_commit", _put_pending)
        event.listen(session.sync_session, "after_rollback", _drop_pending)
    info[_PENDING].append((cache, version, tournament))


def _put_pending(session: Session) -> None:
    pending = session.info.get(_PENDING, [])
    for cache, version, tournament in pending:
        cache.put(version, tournament)
        cache.landed(tournament.id, version)
    pending.clear()


def _drop_pending(session: Session) -> None:
    pending = session.info.get(_PENDING, [])
    for cache, version, tournament in pending:
        cache.landed(tournament.id, version)
    pending.clear()


def _row(tournament: Tournament) -> dict[str, Any]:
    start = tournament.rules.start
    return {
        "status": tournament.status.value,
        "cancel_reason": tournament.cancel_reason,
        "started_at": tournament.started_at,
        "finished_at": tournament.finished_at,
        "registration_closes_at": getattr(start, "registration_closes_at", None),
        "starts_at": getattr(start, "starts_at", None),  # None: a Sit & Go, at once
    }


class TournamentRepository:
    def __init__(
        self, session: AsyncSession, cache: TournamentCache, *, reading: bool = False
    ) -> None:
        self._session = session
        self._cache = cache
        self._reading = reading  # autocommit: a lock would end with its statement
        self._loaded: dict[str, Tournament] = {}  # as read here: what a save compares with
        # The asyncpg connection of the session's transaction under way, and that transaction.
        self._driver: tuple[object, asyncpg.Connection] | None = None

    async def add(self, tournament: Tournament, key: str) -> None:
        await self._session.execute(
            insert(tournaments).values(
                tournament_id=tournament.id,
                name=tournament.name,
                idempotency_key=key,
                rules=messages.rules_json(tournament.rules),
                currency=tournament.rules.currency,
                seed=tournament.seed,
                version=1,
                needs_work=False,
                created_at=tournament.created_at,
                **_row(tournament),
            )
        )
        self._loaded[tournament.id] = tournament
        _cache_after_commit(self._session, self._cache, 1, tournament)

    async def id_of_key(self, key: str) -> str | None:
        found = await self._session.scalar(
            select(tournaments.c.tournament_id).where(tournaments.c.idempotency_key == key)
        )
        return None if found is None else str(found)

    async def get(self, tournament_id: str, *, lock: bool = False) -> Tournament | None:
        """The tournament (``lock``: its row locked until the transaction ends); from the
        cache when its version is the one stored."""
        version = await self._version(tournament_id, lock=lock)
        if version is None:
            return None
        found = self._cache.get(tournament_id, version) or await self._cache.settled(
            tournament_id, version
        )
        if found is None:
            row = (
                await self._session.execute(
                    select(tournaments).where(tournaments.c.tournament_id == tournament_id)
                )
            ).one()
            found = await self._aggregate(row)
            self._cache.put(row.version, found)  # see the module's docstring: never stale
        self._loaded[tournament_id] = found
        return await self._with_tickets(found)

    async def _version(self, tournament_id: str, *, lock: bool) -> int | None:
        """The row's version; ``lock``: the row locked until the transaction ends (on the
        asyncpg connection when the transaction is under way: :mod:`writes`)."""
        query = select(tournaments.c.version).where(tournaments.c.tournament_id == tournament_id)
        if lock:
            if self._reading:
                raise ReadOnlyWork("a tournament is locked only to change it, in a unit of work")
            driver = await self._in_transaction(begin=True)
            if driver is not None:
                return await writes.lock(driver, tournament_id)
            query = query.with_for_update()
        elif self._reading:  # autocommit: the statement alone, prepared on the connection
            return await writes.version(await writes.connection_of(self._session), tournament_id)
        return await self._session.scalar(query)

    async def _in_transaction(self, *, begin: bool = False) -> asyncpg.Connection | None:
        """:func:`writes.in_transaction` (``begin``: :func:`writes.begun`, the transaction
        begun if it was not), asked once a transaction of the session."""
        transaction = self._session.sync_session.get_transaction()
        if self._driver is not None and self._driver[0] is transaction:
            return self._driver[1]
        if begin:
            driver = await writes.begun(self._session)
            transaction = self._session.sync_session.get_transaction()  # begun by it
        else:
            driver = await writes.in_transaction(self._session)
        self._driver = None if driver is None else (transaction, driver)
        return driver

    async def excluded(self, account_ids: Sequence[str], at: datetime) -> dict[str, datetime]:
        """Those of ``account_ids`` self-excluded at ``at`` (the kit's copy), each with its
        end: one prepared statement on the connection (asked before every game created)."""
        connection = await writes.connection_of(self._session)
        return await excluded_until_on(connection, account_ids, at)

    async def prizes(self, tournament_id: str) -> dict[str, int]:
        found = await self._session.scalar(
            select(tournaments.c.prizes).where(tournaments.c.tournament_id == tournament_id)
        )
        return dict(found or {})

    async def listed(
        self, status: Sequence[str], currency: str, limit: int
    ) -> list[Tournament]:
        query = select(tournaments).order_by(tournaments.c.created_at.desc()).limit(limit)
        if status:
            query = query.where(tournaments.c.status.in_(list(status)))
        if currency:
            query = query.where(tournaments.c.currency == currency)
        rows = (await self._session.execute(query)).all()
        listed = []
        for row in rows:
            found = self._cache.get(row.tournament_id, row.version)
            if found is None:
                found = await self._aggregate(row)
                self._cache.put(row.version, found)  # as in get
            listed.append(await self._with_tickets(found))
        return listed

    async def _aggregate(self, row: Any) -> Tournament:
        """The tournament of ``row`` read from its rows (tickets aside)."""
        entrants = await self._session.execute(
            select(registrations)
            .where(
                registrations.c.tournament_id == row.tournament_id,
                registrations.c.left_at.is_(None),
            )
            .order_by(registrations.c.registered_at, registrations.c.account_id)
        )
        return Tournament(
            id=row.tournament_id,
            name=row.name,
            rules=messages.rules_from_json(row.rules),
            seed=bytes(row.seed),
            created_at=row.created_at,
            status=Status(row.status),
            entrants=tuple(
                Entrant(e.account_id, e.buy_in_hold_id, e.fee_hold_id, e.registered_at)
                for e in entrants
            ),
            bracket=await self._bracket(row),
            started_at=row.started_at,
            finished_at=row.finished_at,
            cancel_reason=row.cancel_reason,
        )

    async def _bracket(self, row: Any) -> brackets.Bracket | None:
        if row.seating is None:
            return None
        found = await self._session.execute(
            select(tournament_matches).where(
                tournament_matches.c.tournament_id == row.tournament_id
            )
        )
        return bracket_from_rows(row.seating, found)

    async def _with_tickets(self, tournament: Tournament) -> Tournament:
        """A satellite with its tickets as they are now (any other tournament as it is)."""
        if tournament.rules.kind is not Kind.SATELLITE:
            return tournament
        found = await self._session.execute(
            select(tickets)
            .where(tickets.c.satellite_id == tournament.id)
            .order_by(tickets.c.issued_at, tickets.c.account_id)
        )
        return replace(tournament, tickets=tuple(_ticket(ticket) for ticket in found))

    async def add_tickets(self, issued: Sequence[Ticket], at: datetime) -> None:
        """The satellite's tickets (a retry adds nothing: one per satellite and winner)."""
        for ticket in issued:
            await self._session.execute(
                insert(tickets)
                .values(
                    satellite_id=ticket.satellite_id,
                    account_id=ticket.account_id,
                    target_id=ticket.target_id,
                    value=ticket.value,
                    buy_in_hold_id=ticket.buy_in_hold_id,
                    fee_hold_id=ticket.fee_hold_id,
                    issued_at=at,
                )
                .on_conflict_do_nothing()
            )

    async def unused_tickets(self, target_id: str, account_id: str = "") -> list[Ticket]:
        """Tickets to ``target_id`` neither used nor released (``account_id``'s, if given)."""
        query = select(tickets).where(
            tickets.c.target_id == target_id,
            tickets.c.used_at.is_(None),
            tickets.c.released_at.is_(None),
        )
        if account_id:
            query = query.where(tickets.c.account_id == account_id)
        rows = await self._session.execute(query.order_by(tickets.c.issued_at))
        return [_ticket(row) for row in rows]

    async def use_ticket(self, ticket: Ticket, at: datetime) -> bool:
        """Mark the ticket used; False when it was used or released already."""
        result = await self._session.execute(
            update(tickets)
            .where(
                tickets.c.satellite_id == ticket.satellite_id,
                tickets.c.account_id == ticket.account_id,
                tickets.c.used_at.is_(None),
                tickets.c.released_at.is_(None),
            )
            .values(used_at=at)
        )
        return bool(result.rowcount)  # type: ignore[attr-defined]

    async def mark_ticket_released(self, ticket: Ticket, at: datetime) -> None:
        await self._session.execute(
            update(tickets)
            .where(
                tickets.c.satellite_id == ticket.satellite_id,
                tickets.c.account_id == ticket.account_id,
                tickets.c.used_at.is_(None),
            )
            .values(released_at=at)
        )

    async def entered_with_ticket(self, target_id: str, account_id: str) -> bool:
        found = await self._session.scalar(
            select(tickets.c.satellite_id).where(
                tickets.c.target_id == target_id,
                tickets.c.account_id == account_id,
                tickets.c.used_at.is_not(None),
            )
        )
        return found is not None

    async def save(
        self,
        tournament: Tournament,
        *,
        needs_work: bool | None,
        prizes: dict[str, int] | None = None,
        events: Sequence[Envelope] = (),
    ) -> None:
        """The tournament's row with the version one up, the matches that changed from the
        state loaded here (every match the first time its bracket is saved), and ``events``
        in the outbox; ``needs_work`` None leaves the driver's flag as it is. One statement
        once the transaction is under way (:mod:`writes`)."""
        if self._reading:
            raise ReadOnlyWork("a reading unit of work saves nothing")
        values: dict[str, Any] = _row(tournament)
        if needs_work is not None:
            values["needs_work"] = needs_work
        if prizes is not None:
            values["prizes"] = prizes
        changed: list[brackets.Match] = []
        if tournament.bracket is not None:
            before = self._loaded.get(tournament.id)
            drawn = before.bracket if before is not None else None
            if drawn is None or drawn.order != tournament.bracket.order:
                values["seating"] = list(tournament.bracket.order)
            changed = changed_matches(drawn, tournament.bracket)
        driver = await self._in_transaction()
        if driver is not None:
            version = await writes.save(driver, tournament.id, values, changed, events)
        else:
            version = await self._save_through_orm(tournament.id, values, changed, events)
        self._loaded[tournament.id] = tournament
        self._cache.committing(tournament.id, version)
        _cache_after_commit(self._session, self._cache, version, tournament)

    async def _save_through_orm(
        self,
        tournament_id: str,
        values: dict[str, Any],
        changed: list[brackets.Match],
        events: Sequence[Envelope],
    ) -> int:
        """:meth:`save` as a transaction's first statements (SQLAlchemy sends its BEGIN)."""
        await self._save_matches(tournament_id, changed)
        version = (
            await self._session.execute(
                update(tournaments)
                .where(tournaments.c.tournament_id == tournament_id)
                .values(version=tournaments.c.version + 1, **values)
                .returning(tournaments.c.version)
            )
        ).scalar_one()
        if events:
            await self._session.execute(
                outbox_row.insert(), [envelope.as_outbox_values() for envelope in events]
            )
        return int(version)

    async def _save_matches(self, tournament_id: str, changed: list[brackets.Match]) -> None:
        if not changed:
            return
        statement = insert(tournament_matches)
        await self._session.execute(
            statement.on_conflict_do_update(
                index_elements=[
                    tournament_matches.c.tournament_id,
                    tournament_matches.c.round,
                    tournament_matches.c.position,
                ],
                set_={
                    name: statement.excluded[name]
                    for name in ("top", "bottom", "game_id", "winner", "decision")
                },
            ),
            [match_values(tournament_id, match) for match in changed],
        )

    async def next_entry(self, tournament_id: str, account_id: str) -> int:
        """The number of ``account_id``'s next entry: 0, or one past the entry they left."""
        found = await self._session.scalar(
            select(registrations.c.entry).where(
                registrations.c.tournament_id == tournament_id,
                registrations.c.account_id == account_id,
            )
        )
        return 0 if found is None else int(found) + 1

    async def add_entrant(self, tournament_id: str, entrant: Entrant, entry: int) -> None:
        statement = insert(registrations).values(
            tournament_id=tournament_id,
            account_id=entrant.account_id,
            buy_in_hold_id=entrant.buy_in_hold_id,
            fee_hold_id=entrant.fee_hold_id,
            registered_at=entrant.registered_at,
            entry=entry,
        )
        await self._session.execute(
            statement.on_conflict_do_update(
                index_elements=[registrations.c.tournament_id, registrations.c.account_id],
                set_={
                    "buy_in_hold_id": entrant.buy_in_hold_id,
                    "fee_hold_id": entrant.fee_hold_id,
                    "registered_at": entrant.registered_at,
                    "entry": entry,
                    "left_at": None,
                    "released_at": None,
                },
            )
        )

    async def mark_left(self, tournament_id: str, account_id: str, at: datetime) -> None:
        await self._session.execute(
            update(registrations)
            .where(
                registrations.c.tournament_id == tournament_id,
                registrations.c.account_id == account_id,
            )
            .values(left_at=at)
        )

    async def to_release(self, tournament_id: str, *, everyone: bool) -> list[Entrant]:
        """Entries whose holds are still to go back: those who left, or (``everyone``: a
        cancelled event) every entry."""
        condition: ColumnElement[bool] = registrations.c.released_at.is_(None)
        if not everyone:
            condition = and_(condition, registrations.c.left_at.is_not(None))
        rows = await self._session.execute(
            select(registrations).where(registrations.c.tournament_id == tournament_id, condition)
        )
        return [
            Entrant(r.account_id, r.buy_in_hold_id, r.fee_hold_id, r.registered_at) for r in rows
        ]

    async def mark_released(self, tournament_id: str, account_id: str, at: datetime) -> None:
        await self._session.execute(
            update(registrations)
            .where(
                registrations.c.tournament_id == tournament_id,
                registrations.c.account_id == account_id,
            )
            .values(released_at=at)
        )

    async def due(self, now: datetime, limit: int = 50) -> list[str]:
        """Tournaments with work for the driver: flagged, registration past its close, or
        seated and past the start time."""
        if self._reading:  # the driver's pass: the statement alone, prepared
            connection = await writes.connection_of(self._session)
            rows = await connection.fetch(
                writes.DUE, now, limit, Status.REGISTERING.value, Status.SEATED.value
            )
            return [str(row["tournament_id"]) for row in rows]
        query = (
            select(tournaments.c.tournament_id)
            .where(
                or_(
                    tournaments.c.needs_work.is_(True),
                    and_(
                        tournaments.c.status == Status.REGISTERING.value,
                        tournaments.c.registration_closes_at <= now,
                    ),
                    and_(
                        tournaments.c.status == Status.SEATED.value,
                        or_(tournaments.c.starts_at.is_(None), tournaments.c.starts_at <= now),
                    ),
                )
            )
            .order_by(tournaments.c.created_at)
            .limit(limit)
        )
        return [str(found) for found in (await self._session.scalars(query))]

    async def next_due_at(self, now: datetime) -> datetime | None:
        """The earliest time after ``now`` at which a tournament comes due by the clock alone
        (a registration closing, a seated tournament's start); None when none is waiting."""
        if self._reading:  # after every pass of the driver: the statement alone, prepared
            connection = await writes.connection_of(self._session)
            found = await connection.fetchrow(
                writes.NEXT_DUE, now, Status.REGISTERING.value, Status.SEATED.value
            )
            return min((t for t in found.values() if t is not None), default=None)
        closes = select(func.min(tournaments.c.registration_closes_at)).where(
            tournaments.c.status == Status.REGISTERING.value,
            tournaments.c.registration_closes_at > now,
        )
        starts = select(func.min(tournaments.c.starts_at)).where(
            tournaments.c.status == Status.SEATED.value, tournaments.c.starts_at > now
        )
        times = (await self._session.execute(
            select(closes.scalar_subquery(), starts.scalar_subquery())
        )).one()  # fmt: skip
        return min((t for t in times if t is not None), default=None)


class TournamentsUnitOfWork(UnitOfWork):
    """The kit's unit of work with the tournaments' repository. An event made by
    :meth:`event` goes into the outbox with the tournament's save (its ``events``: one
    statement, :mod:`writes`) instead of a statement of its own at the commit, and wakes
    the relay once the commit is done as :meth:`publish`'s do."""

    tournaments: TournamentRepository

    def __init__(self, *args: Any, cache: TournamentCache, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._cache = cache
        self._made_events = False

    def _start(self) -> None:
        self.tournaments = TournamentRepository(self.session, self._cache)
        self._made_events = False

    def event(self, topic: str, key: str, message: Message) -> Envelope:
        """An event for the save to write (``tournaments.save(..., events=[...])``)."""
        self._made_events = True
        return Envelope.wrap(
            topic=topic, key=key, message=message, source=self._source, now=self.clock.now()
        )

    async def commit(self) -> None:
        await super().commit()
        if self._made_events:
            self._made_events = False
            self._on_commit()  # the relay: events to publish


class ReadOnlyWork(RuntimeError):
    """A write, a lock or a commit asked of a :class:`ReadingUnitOfWork` (a bug)."""


def reading_sessions(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    """Sessions on ``engine``'s pool whose connections run each statement on its own
    (autocommit: the asyncpg driver sends no ``BEGIN`` and no ``ROLLBACK``)."""
    return async_sessionmaker(
        engine.execution_options(isolation_level="AUTOCOMMIT"), expire_on_commit=False
    )


class ReadingUnitOfWork(TournamentsUnitOfWork):
    """Reads, each statement on its own, over :func:`reading_sessions` (the module's
    docstring says why); a write, a lock or a commit is refused (:class:`ReadOnlyWork`)."""

    def _start(self) -> None:
        self.tournaments = TournamentRepository(self.session, self._cache, reading=True)
        event.listen(self.session.sync_session, "do_orm_execute", _refuse_writes)

    def publish(self, topic: str, key: str, message: Message) -> Envelope:
        raise ReadOnlyWork("events are published by a unit of work that commits")

    def event(self, topic: str, key: str, message: Message) -> Envelope:
        raise ReadOnlyWork("events are saved by a unit of work that commits")

    async def commit(self) -> None:
        raise ReadOnlyWork("a reading unit of work has nothing to commit")


def _refuse_writes(state: ORMExecuteState) -> None:
    if not state.is_select:
        raise ReadOnlyWork(f"a reading unit of work ran {type(state.statement).__name__}")
