"""The tournaments' tables (SQLAlchemy Core; rows <-> domain).

A tournament row is the aggregate: its rules (the Rules message's JSON), the secret
seed, the status, the bracket (JSON) and a ``version``; its entrants are rows of
``registrations`` (a player who left keeps a row, ``left_at`` set, until their holds
are released: ``released_at``). Every change loads the row ``FOR UPDATE`` and saves
it with the version one up, so registrations racing for the last seat, and results
arriving on two replicas, are applied one after the other.

A satellite's tickets are rows of ``tickets``: the holds the wallet placed at the target
in the winner's name, ``used_at`` once they entered the winner (set once, under the
target's row lock), ``released_at`` once they went back because the target closed
without them.

``needs_work`` marks a tournament with something for the driver to do with other
services (fees, games to create, prizes, holds to release); it is set in the
transaction that made the work, so a crash loses none of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    and_,
    or_,
    select,
    update,
)
from sqlalchemy.dialects.postgresql import JSONB, insert
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.elements import ColumnElement

from services.kit.db import UnitOfWork
from services.tournaments import messages
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
    Column("bracket", JSONB),
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


def _row(tournament: Tournament) -> dict[str, Any]:
    start = tournament.rules.start
    return {
        "status": tournament.status.value,
        "bracket": (
            None if tournament.bracket is None else messages.bracket_json(tournament.bracket)
        ),
        "cancel_reason": tournament.cancel_reason,
        "started_at": tournament.started_at,
        "finished_at": tournament.finished_at,
        "registration_closes_at": getattr(start, "registration_closes_at", None),
        "starts_at": getattr(start, "starts_at", None),  # None: a Sit & Go, at once
    }


class TournamentRepository:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

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

    async def id_of_key(self, key: str) -> str | None:
        found = await self._session.scalar(
            select(tournaments.c.tournament_id).where(tournaments.c.idempotency_key == key)
        )
        return None if found is None else str(found)

    async def get(self, tournament_id: str, *, lock: bool = False) -> Tournament | None:
        query = select(tournaments).where(tournaments.c.tournament_id == tournament_id)
        if lock:
            query = query.with_for_update()
        row = (await self._session.execute(query)).one_or_none()
        if row is None:
            return None
        return await self._tournament(row)

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
        return [await self._tournament(row) for row in rows]

    async def _tournament(self, row: Any) -> Tournament:
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
            bracket=None if row.bracket is None else messages.bracket_from_json(row.bracket),
            started_at=row.started_at,
            finished_at=row.finished_at,
            cancel_reason=row.cancel_reason,
            tickets=await self._tickets(row),
        )

    async def _tickets(self, row: Any) -> tuple[Ticket, ...]:
        if messages.rules_from_json(row.rules).kind is not Kind.SATELLITE:
            return ()
        found = await self._session.execute(
            select(tickets)
            .where(tickets.c.satellite_id == row.tournament_id)
            .order_by(tickets.c.issued_at, tickets.c.account_id)
        )
        return tuple(_ticket(ticket) for ticket in found)

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
        needs_work: bool,
        prizes: dict[str, int] | None = None,
    ) -> None:
        values = {**_row(tournament), "needs_work": needs_work}
        if prizes is not None:
            values["prizes"] = prizes
        await self._session.execute(
            update(tournaments)
            .where(tournaments.c.tournament_id == tournament.id)
            .values(version=tournaments.c.version + 1, **values)
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


class TournamentsUnitOfWork(UnitOfWork):
    tournaments: TournamentRepository

    def _start(self) -> None:
        self.tournaments = TournamentRepository(self.session)
