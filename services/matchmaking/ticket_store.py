"""The queue's tickets (``queue_tickets``, migration 0005; SQLAlchemy Core; rows <-> domain).

Waves are serialised per pool by a transaction-scoped advisory lock
(:meth:`TicketRepository.lock_pool`): a replica that does not get it skips the
pool this round. Independently of the lock, a wave claims tickets with a
conditional update (``status = 'waiting'``) and refuses the whole wave if any
ticket was no longer waiting, so no ticket is ever paired twice even if two
waves met. The seating moves a pair's tickets on (matched, refused, waiting
again) in the transaction that starts or gives back their table.
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
    Float,
    Integer,
    MetaData,
    String,
    Table,
    func,
    select,
    update,
)
from sqlalchemy.ext.asyncio import AsyncSession

from services.kit.errors import Conflict
from services.matchmaking.domain import queue as domain
from services.matchmaking.domain.tables import Kind, Rules, Sitter

metadata = MetaData()

queue_tickets = Table(
    "queue_tickets",
    metadata,
    Column("ticket_id", String(36), primary_key=True),
    Column("account_id", String(36), nullable=False),
    Column("idempotency_key", String(200), nullable=False),
    Column("pool", String(120), nullable=False),
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
    Column("max_rating_difference", Float, nullable=False),
    Column("residence", String(10), nullable=False),
    Column("client_address", String(45), nullable=False),
    Column("device_id", String(128), nullable=False),
    Column("entered_at", DateTime(timezone=True), nullable=False),
    Column("table_id", String(36)),
    Column("game_id", String(64)),
    Column("opponent_account_id", String(36)),
    Column("rating", Float),
    Column("opponent_rating", Float),
    Column("reason", String(300)),
    Column("updated_at", DateTime(timezone=True), nullable=False),
)

_T = queue_tickets
WAITING = domain.TicketStatus.WAITING.value
SEATING = domain.TicketStatus.SEATING.value


def _ticket(row: Any) -> domain.QueueTicket:
    pairing = None
    if row.table_id is not None:
        pairing = domain.Pairing(
            row.table_id, row.opponent_account_id or "", row.rating or 0.0,
            row.opponent_rating or 0.0,
        )
    return domain.QueueTicket(
        ticket_id=row.ticket_id,
        sitter=Sitter(row.account_id, row.residence, row.client_address, row.device_id),
        rules=Rules(
            kind=Kind(row.kind),
            match_length=row.match_length,
            stake_minor=row.stake_minor,
            currency=row.currency,
            cube_cap=row.cube_cap,
            beaver=row.beaver,
            jacoby=row.jacoby,
            crawford=row.crawford,
            clock=row.clock,
        ),
        max_rating_difference=row.max_rating_difference,
        entered_at=row.entered_at,
        status=domain.TicketStatus(row.status),
        pairing=pairing,
        game_id=row.game_id or "",
        reason=row.reason or "",
    )


class TicketRepository:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def add(self, ticket: domain.QueueTicket, key: str, now: datetime) -> None:
        rules, sitter = ticket.rules, ticket.sitter
        await self._session.execute(
            _T.insert().values(
                ticket_id=ticket.ticket_id,
                account_id=sitter.account_id,
                idempotency_key=key,
                pool=ticket.pool,
                status=ticket.status.value,
                kind=rules.kind.value,
                match_length=rules.match_length,
                stake_minor=rules.stake_minor,
                currency=rules.currency,
                cube_cap=rules.cube_cap,
                beaver=rules.beaver,
                jacoby=rules.jacoby,
                crawford=rules.crawford,
                clock=rules.clock,
                max_rating_difference=ticket.max_rating_difference,
                residence=sitter.residence,
                client_address=sitter.address,
                device_id=sitter.device_id,
                entered_at=ticket.entered_at,
                updated_at=now,
            )
        )

    async def get(self, ticket_id: str, *, lock: bool = False) -> domain.QueueTicket | None:
        query = select(_T).where(_T.c.ticket_id == ticket_id)
        if lock:
            query = query.with_for_update()
        row = (await self._session.execute(query)).first()
        return None if row is None else _ticket(row)

    async def by_key(self, account_id: str, key: str) -> domain.QueueTicket | None:
        row = (
            await self._session.execute(
                select(_T).where(_T.c.account_id == account_id, _T.c.idempotency_key == key)
            )
        ).first()
        return None if row is None else _ticket(row)

    async def live_in_pool(self, account_id: str, pool: str) -> domain.QueueTicket | None:
        row = (
            await self._session.execute(
                select(_T).where(
                    _T.c.account_id == account_id,
                    _T.c.pool == pool,
                    _T.c.status.in_([WAITING, SEATING]),
                )
            )
        ).first()
        return None if row is None else _ticket(row)

    async def cancel(self, ticket_id: str, now: datetime) -> None:
        """Cancel the ticket if it is still waiting (a wave may have claimed it just now)."""
        await self._session.execute(
            update(_T)
            .where(_T.c.ticket_id == ticket_id, _T.c.status == WAITING)
            .values(status=domain.TicketStatus.CANCELLED.value, updated_at=now)
        )

    async def refuse_waiting(self, account_id: str, reason: str, now: datetime) -> None:
        """Refuse, with ``reason``, every ticket of the player still waiting to be paired."""
        await self._session.execute(
            update(_T)
            .where(_T.c.account_id == account_id, _T.c.status == WAITING)
            .values(status=domain.TicketStatus.REFUSED.value, reason=reason[:300], updated_at=now)
        )

    async def pools_waiting(self) -> list[str]:
        """The pools where at least two tickets wait (a wave could pair something)."""
        rows = await self._session.execute(
            select(_T.c.pool)
            .where(_T.c.status == WAITING)
            .group_by(_T.c.pool)
            .having(func.count() >= 2)
        )
        return [row.pool for row in rows]

    async def lock_pool(self, pool: str) -> bool:
        """This pool's wave lock for the transaction; False when another replica has it."""
        key = func.hashtextextended(f"tavla.matchmaking.queue:{pool}", 0)
        return bool(await self._session.scalar(select(func.pg_try_advisory_xact_lock(key))))

    async def waiting(self, pool: str) -> list[domain.QueueTicket]:
        """The pool's waiting tickets, locked (one a LeaveQueue holds is skipped)."""
        rows = await self._session.execute(
            select(_T)
            .where(_T.c.pool == pool, _T.c.status == WAITING)
            .with_for_update(skip_locked=True)
        )
        return [_ticket(row) for row in rows]

    async def claim(
        self, ticket: domain.QueueTicket, pairing: domain.Pairing, now: datetime
    ) -> None:
        """The ticket paired for ``pairing``'s table, only if it still waits; else Conflict
        (the caller's transaction, the whole wave, is then rolled back)."""
        claimed = await self._session.execute(
            update(_T)
            .where(_T.c.ticket_id == ticket.ticket_id, _T.c.status == WAITING)
            .values(
                status=SEATING,
                table_id=pairing.table_id,
                opponent_account_id=pairing.opponent_account_id,
                rating=pairing.rating,
                opponent_rating=pairing.opponent_rating,
                updated_at=now,
            )
        )
        if claimed.rowcount != 1:  # type: ignore[attr-defined]
            raise Conflict(f"ticket {ticket.ticket_id} is no longer waiting")

    async def seating_at(self, table_id: str) -> list[domain.QueueTicket]:
        """The tickets being seated at ``table_id`` (none for a lobby table), locked."""
        rows = await self._session.execute(
            select(_T)
            .where(_T.c.table_id == table_id, _T.c.status == SEATING)
            .with_for_update()
        )
        return [_ticket(row) for row in rows]

    async def matched(self, table_id: str, game_id: str, now: datetime) -> list[str]:
        """The tickets being seated at ``table_id`` matched with its game: their ids (none
        for a lobby table)."""
        rows = await self._session.execute(
            update(_T)
            .where(_T.c.table_id == table_id, _T.c.status == SEATING)
            .values(status=domain.TicketStatus.MATCHED.value, game_id=game_id, updated_at=now)
            .returning(_T.c.ticket_id)
        )
        return sorted(rows.scalars())

    async def refused(self, ticket_id: str, reason: str, now: datetime) -> None:
        await self._session.execute(
            update(_T)
            .where(_T.c.ticket_id == ticket_id, _T.c.status == SEATING)
            .values(
                status=domain.TicketStatus.REFUSED.value, reason=reason[:300], updated_at=now
            )
        )

    async def wait_again(self, ticket_ids: Sequence[str], now: datetime) -> None:
        """Back in the queue with the time it entered (its waiting bonus) kept."""
        await self._session.execute(
            update(_T)
            .where(_T.c.ticket_id.in_(list(ticket_ids)), _T.c.status == SEATING)
            .values(
                status=WAITING,
                table_id=None,
                opponent_account_id=None,
                rating=None,
                opponent_rating=None,
                updated_at=now,
            )
        )
