"""Suspended and terminated accounts: a local copy of the accounts service's word.

Anti-abuse's sanctions reach the accounts service, which publishes ``AccountSuspended``
and ``AccountTerminated`` (topic ``tavla.accounts.v1``, keyed by account) when it
freezes or closes an account. Its sessions end at once, but an access token already
issued keeps working until it expires (``TAVLA_JWT_TTL_SECONDS``). A service that
lets a player speak to others before that (the game's lobby chat) keeps a copy in its
own database, the ``account_suspensions`` table, written by :func:`suspensions_consumer`
in the same transaction as the kit's inbox row, and refuses such a player at once
(:func:`require_not_suspended`: PERMISSION_DENIED saying why). As
:mod:`services.kit.self_exclusion`'s copy, it is local, so the guard holds while
accounts is down. A termination is never undone and the accounts service has no call
that lifts a suspension, so the copy only ever records: a termination replaces a
suspension, never the other way round.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Column, DateTime, MetaData, String, Table, case, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from services.kit.clock import Clock
from services.kit.errors import PermissionDenied
from services.kit.events.consumer import ConsumerFactory, EventConsumer
from services.kit.events.envelope import ReceivedEvent
from services.kit.logging import get_logger
from tavla.accounts.v1 import events_pb2 as account_events

log = get_logger(__name__)

SUSPENDED_EVENT = account_events.AccountSuspended.DESCRIPTOR.full_name
TERMINATED_EVENT = account_events.AccountTerminated.DESCRIPTOR.full_name
CONSUMER_NAME = "suspensions"
SUSPENDED = "suspended"
TERMINATED = "terminated"

# Its own MetaData, as the self-exclusions': services' stores add the table beside theirs.
suspension_metadata = MetaData()

account_suspensions = Table(
    "account_suspensions",
    suspension_metadata,
    Column("account_id", String(36), primary_key=True),
    Column("kind", String(16), nullable=False),  # SUSPENDED or TERMINATED
    Column("since", DateTime(timezone=True), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
)


def create_suspensions_migration() -> None:
    """Call from the Alembic revision that gives a service its copy."""
    from alembic import op

    suspension_metadata.create_all(op.get_bind())


def drop_suspensions_migration() -> None:
    from alembic import op

    suspension_metadata.drop_all(op.get_bind())


def consumer_group(service: str) -> str:
    """Each service reads every sanction: a consumer group of its own."""
    return f"{service}.{CONSUMER_NAME}"


async def record_suspension(
    session: AsyncSession, account_id: str, kind: str, since: datetime, at: datetime
) -> None:
    """Record ``account_id`` as ``kind``; a termination is never turned back into a
    suspension (a late or replayed AccountSuspended changes nothing after it)."""
    statement = insert(account_suspensions).values(
        account_id=account_id, kind=kind, since=since, updated_at=at
    )
    kept = account_suspensions.c.kind == TERMINATED
    await session.execute(
        statement.on_conflict_do_update(
            index_elements=[account_suspensions.c.account_id],
            set_={
                "kind": case((kept, account_suspensions.c.kind), else_=statement.excluded.kind),
                "since": case((kept, account_suspensions.c.since), else_=statement.excluded.since),
                "updated_at": at,
            },
        )
    )


async def suspension_of(session: AsyncSession, account_id: str) -> str | None:
    """``SUSPENDED`` or ``TERMINATED`` for a sanctioned account, None otherwise."""
    query = select(account_suspensions.c.kind).where(
        account_suspensions.c.account_id == account_id
    )
    found: str | None = (await session.execute(query)).scalar_one_or_none()
    return found


def refusal(kind: str, what: str) -> PermissionDenied:
    """What a suspended or terminated player is told when they try ``what``."""
    state = "closed" if kind == TERMINATED else "suspended"
    return PermissionDenied(f"your account is {state}: {what} is closed to you; contact support")


async def require_not_suspended(session: AsyncSession, account_id: str, what: str) -> None:
    """Refuse (:func:`refusal`) a player whose account is suspended or terminated."""
    kind = await suspension_of(session, account_id)
    if kind is not None:
        raise refusal(kind, what)


class SuspensionHandler:
    """Applies AccountSuspended and AccountTerminated to the local copy, in the consumer's
    inbox transaction."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock

    async def suspended(self, session: AsyncSession, event: ReceivedEvent) -> None:
        fact = account_events.AccountSuspended.FromString(event.payload)
        await self._record(session, event, fact.account_id, SUSPENDED)

    async def terminated(self, session: AsyncSession, event: ReceivedEvent) -> None:
        fact = account_events.AccountTerminated.FromString(event.payload)
        await self._record(session, event, fact.account_id, TERMINATED)

    async def _record(
        self, session: AsyncSession, event: ReceivedEvent, account_id: str, kind: str
    ) -> None:
        if not account_id or len(account_id) > 36:
            log.error("suspension_unreadable", event_id=event.event_id)
            return
        now = self._clock.now()
        await record_suspension(session, account_id, kind, now, now)
        log.info("suspension_recorded", account_id=account_id, kind=kind)


def suspensions_consumer(
    *,
    sessions: async_sessionmaker[AsyncSession],
    consumer_factory: ConsumerFactory,
    clock: Clock,
    service: str,
) -> EventConsumer:
    """The consumer (group :func:`consumer_group`) that keeps a service's copy."""
    handler = SuspensionHandler(clock)
    return EventConsumer(
        service=service,
        name=CONSUMER_NAME,
        sessions=sessions,
        consumer_factory=consumer_factory,
        handlers={SUSPENDED_EVENT: handler.suspended, TERMINATED_EVENT: handler.terminated},
        clock=clock,
    )
