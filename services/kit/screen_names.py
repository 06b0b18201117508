"""Players' screen names where a service shows players: a local copy of the accounts
service's word.

The accounts service owns screen names: a player chooses theirs at registration
(``AccountRegistered.display_name``) or, for an account opened before screen names had
rules, once later (``ScreenNameChosen``), both on ``tavla.accounts.v1`` keyed by account.
A service that names players in what it returns or records (the game: its seats, table
chat, the match record) keeps a copy, the ``screen_names`` table, written by
:func:`screen_names_consumer` in the kit's inbox transaction, and reads it with
:func:`names_of`. A copy rather than a call to accounts for every game: the answer is
local and the service keeps working while accounts is down; what it costs is the
consumer's lag (a player who registered a moment ago may be shown by their id until it
arrives). A later event replaces an earlier one; a replayed older one changes nothing.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import UTC, datetime

from google.protobuf.timestamp_pb2 import Timestamp
from sqlalchemy import Column, DateTime, MetaData, String, Table, func, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from services.kit.clock import Clock
from services.kit.events.consumer import ConsumerFactory, EventConsumer
from services.kit.events.envelope import ReceivedEvent
from services.kit.logging import get_logger
from tavla.accounts.v1 import events_pb2 as account_events

log = get_logger(__name__)

REGISTERED = account_events.AccountRegistered.DESCRIPTOR.full_name
CHOSEN = account_events.ScreenNameChosen.DESCRIPTOR.full_name
CONSUMER_NAME = "screen-names"
MAX_NAME = 100  # wider than any name accounts accepts

# Its own MetaData, as the self-exclusions copy: services' stores add it beside theirs.
screen_name_metadata = MetaData()

screen_names = Table(
    "screen_names",
    screen_name_metadata,
    Column("account_id", String(64), primary_key=True),
    Column("screen_name", String(MAX_NAME), nullable=False),
    # When accounts said it (the event's time): an older event never replaces a newer name.
    Column("said_at", DateTime(timezone=True), nullable=False),
)


def create_screen_names_migration() -> None:
    """Call from the Alembic revision that gives a service its copy."""
    from alembic import op

    screen_name_metadata.create_all(op.get_bind())


def drop_screen_names_migration() -> None:
    from alembic import op

    screen_name_metadata.drop_all(op.get_bind())


def consumer_group(service: str) -> str:
    """Each service reads every name: a consumer group of its own."""
    return f"{service}.{CONSUMER_NAME}"


async def record_screen_name(
    session: AsyncSession, account_id: str, name: str, said_at: datetime
) -> None:
    """Keep ``name`` for ``account_id`` unless a name said later is kept already."""
    statement = insert(screen_names).values(
        account_id=account_id, screen_name=name, said_at=said_at
    )
    await session.execute(
        statement.on_conflict_do_update(
            index_elements=[screen_names.c.account_id],
            set_={"screen_name": name, "said_at": said_at},
            where=screen_names.c.said_at <= said_at,
        )
    )


async def names_of(session: AsyncSession, account_ids: Collection[str]) -> dict[str, str]:
    """The screen names known for ``account_ids`` (an account without one is left out)."""
    if not account_ids:
        return {}
    query = select(screen_names.c.account_id, screen_names.c.screen_name).where(
        screen_names.c.account_id.in_(list(account_ids))
    )
    return {row.account_id: row.screen_name for row in await session.execute(query)}


async def account_named(session: AsyncSession, name: str) -> str | None:
    """The account whose screen name is ``name``, ignoring case, or None. Accounts keeps
    names unique ignoring case (and look-alike characters), so at most one matches."""
    query = select(screen_names.c.account_id).where(
        func.lower(screen_names.c.screen_name) == name.strip().lower()
    )
    return (await session.execute(query.limit(1))).scalar()


class ScreenNameHandler:
    """Applies AccountRegistered and ScreenNameChosen to the local copy."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock

    async def registered(self, session: AsyncSession, event: ReceivedEvent) -> None:
        fact = account_events.AccountRegistered.FromString(event.payload)
        await self._keep(session, event, fact.account_id, fact.display_name, fact.occurred_at)

    async def chosen(self, session: AsyncSession, event: ReceivedEvent) -> None:
        fact = account_events.ScreenNameChosen.FromString(event.payload)
        await self._keep(session, event, fact.account_id, fact.screen_name, fact.occurred_at)

    async def _keep(
        self, session: AsyncSession, event: ReceivedEvent, account_id: str, name: str,
        at: Timestamp,
    ) -> None:
        if not account_id or len(account_id) > 64 or not name or len(name) > MAX_NAME:
            log.error("screen_name_unreadable", event_id=event.event_id)
            return
        said_at = at.ToDatetime(tzinfo=UTC) if at.seconds or at.nanos else self._clock.now()
        await record_screen_name(session, account_id, name, said_at)


def screen_names_consumer(
    *,
    sessions: async_sessionmaker[AsyncSession],
    consumer_factory: ConsumerFactory,
    clock: Clock,
    service: str,
) -> EventConsumer:
    """The consumer (group :func:`consumer_group`) that keeps a service's copy."""
    handler = ScreenNameHandler(clock)
    return EventConsumer(
        service=service,
        name=CONSUMER_NAME,
        sessions=sessions,
        consumer_factory=consumer_factory,
        handlers={REGISTERED: handler.registered, CHOSEN: handler.chosen},
        clock=clock,
    )
