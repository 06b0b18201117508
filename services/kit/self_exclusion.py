"""Self-exclusion where play starts: a local copy of the accounts service's word.

The accounts service owns self-exclusion and publishes ``AccountSelfExcluded``
(topic ``tavla.accounts.v1``, keyed by account) when a player excludes
themself. Every service that lets a player start playing, real money or play
money alike (matchmaking: tables and the queue; the game: game creation), keeps
a copy in its own database, the ``self_exclusions`` table, written by
:func:`self_exclusions_consumer` in the same transaction as the kit's inbox row,
and reads it before it seats anyone: a self-excluded player is refused at the
first call, with FAILED_PRECONDITION saying until when (:func:`refusal`). The
copy only ever lengthens an exclusion (the accounts service allows no
shortening), so a replayed or late event cannot shorten one. A copy rather than
a call to accounts at every seat: the answer is local, and play keeps its
guard while accounts is down; what it costs is the consumer's lag after the
player's own SelfExclude call (well under a second with the broker up).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime

import asyncpg  # type: ignore[import-untyped]
from sqlalchemy import Column, DateTime, MetaData, String, Table, func, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from services.kit.clock import Clock
from services.kit.errors import FailedPrecondition
from services.kit.events.consumer import ConsumerFactory, EventConsumer
from services.kit.events.envelope import ReceivedEvent
from services.kit.logging import get_logger
from tavla.accounts.v1 import events_pb2 as account_events

log = get_logger(__name__)

ACCOUNTS_TOPIC = "tavla.accounts.v1"
SELF_EXCLUDED = account_events.AccountSelfExcluded.DESCRIPTOR.full_name
CONSUMER_NAME = "self-exclusions"

# Its own MetaData, as the outbox and inbox: services' stores add their tables beside it.
self_exclusion_metadata = MetaData()

self_exclusions = Table(
    "self_exclusions",
    self_exclusion_metadata,
    Column("account_id", String(36), primary_key=True),
    Column("excluded_until", DateTime(timezone=True), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
)


def create_self_exclusions_migration() -> None:
    """Call from the Alembic revision that gives a service its copy."""
    from alembic import op

    self_exclusion_metadata.create_all(op.get_bind())


def drop_self_exclusions_migration() -> None:
    from alembic import op

    self_exclusion_metadata.drop_all(op.get_bind())


def consumer_group(service: str) -> str:
    """Each service reads every exclusion: a consumer group of its own."""
    return f"{service}.{CONSUMER_NAME}"


async def record_self_exclusion(
    session: AsyncSession, account_id: str, until: datetime, at: datetime
) -> None:
    """Keep ``account_id`` out until ``until``, or later if already so (never shortened)."""
    statement = insert(self_exclusions).values(
        account_id=account_id, excluded_until=until, updated_at=at
    )
    await session.execute(
        statement.on_conflict_do_update(
            index_elements=[self_exclusions.c.account_id],
            set_={
                "excluded_until": func.greatest(
                    self_exclusions.c.excluded_until, statement.excluded.excluded_until
                ),
                "updated_at": at,
            },
        )
    )


async def excluded_until(
    session: AsyncSession, account_ids: Sequence[str], at: datetime
) -> dict[str, datetime]:
    """Those of ``account_ids`` self-excluded at ``at``, each with when their exclusion ends."""
    query = select(self_exclusions.c.account_id, self_exclusions.c.excluded_until).where(
        self_exclusions.c.account_id.in_(list(account_ids)),
        self_exclusions.c.excluded_until > at,
    )
    rows = (await session.execute(query)).all()
    return {row.account_id: row.excluded_until for row in rows}


# :func:`excluded_until` as one statement of fixed text, for a caller on the asyncpg
# connection itself (prepared once a connection; no ORM execution around it).
EXCLUDED = (
    "SELECT account_id, excluded_until FROM self_exclusions "
    "WHERE account_id = ANY($1::varchar[]) AND excluded_until > $2"
)


async def excluded_until_on(
    connection: asyncpg.Connection, account_ids: Sequence[str], at: datetime
) -> dict[str, datetime]:
    """:func:`excluded_until` on an asyncpg connection (a hot path's: a game created for
    every tournament match asks it)."""
    rows = await connection.fetch(EXCLUDED, list(account_ids), at)
    return {row["account_id"]: row["excluded_until"] for row in rows}


def refusal(until: datetime, who: str = "you are") -> FailedPrecondition:
    """What a self-excluded player (or, with ``who``, a service) is told when they try to play."""
    return FailedPrecondition(
        f"{who} self-excluded until {until.astimezone(UTC).isoformat(timespec='seconds')}: "
        "no tables, queues or games, for real or play money, until then"
    )


async def require_not_self_excluded(session: AsyncSession, account_id: str, at: datetime) -> None:
    """Refuse (:func:`refusal`) a player self-excluded at ``at``."""
    found = await excluded_until(session, [account_id], at)
    if account_id in found:
        raise refusal(found[account_id])


# What else a service does when a player excludes themself, in the same transaction
# (session, account id, end of the exclusion): matchmaking withdraws their open tables.
AfterExclusion = Callable[[AsyncSession, str, datetime], Awaitable[None]]


class SelfExclusionHandler:
    """Applies AccountSelfExcluded to the local copy, in the consumer's inbox transaction."""

    def __init__(self, clock: Clock, then: AfterExclusion | None = None) -> None:
        self._clock = clock
        self._then = then

    async def self_excluded(self, session: AsyncSession, event: ReceivedEvent) -> None:
        fact = account_events.AccountSelfExcluded.FromString(event.payload)
        if not fact.account_id or len(fact.account_id) > 36 or not fact.HasField("until"):
            log.error("self_exclusion_unreadable", event_id=event.event_id)
            return
        until = fact.until.ToDatetime(tzinfo=UTC)
        await record_self_exclusion(session, fact.account_id, until, self._clock.now())
        if self._then is not None and until > self._clock.now():
            await self._then(session, fact.account_id, until)
        log.info("self_exclusion_recorded", account_id=fact.account_id, until=until.isoformat())


def self_exclusions_consumer(
    *,
    sessions: async_sessionmaker[AsyncSession],
    consumer_factory: ConsumerFactory,
    clock: Clock,
    service: str,
    then: AfterExclusion | None = None,
) -> EventConsumer:
    """The consumer (group :func:`consumer_group`) that keeps a service's copy, and
    does ``then`` for each exclusion still running."""
    handler = SelfExclusionHandler(clock, then)
    return EventConsumer(
        service=service,
        name=CONSUMER_NAME,
        sessions=sessions,
        consumer_factory=consumer_factory,
        handlers={SELF_EXCLUDED: handler.self_excluded},
        clock=clock,
    )
