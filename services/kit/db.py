"""The database: one async SQLAlchemy engine per service, and the unit of work.

A use case opens a :class:`UnitOfWork`, changes rows through repositories,
records events with :meth:`UnitOfWork.publish`, and commits: the state change
and its events land in one transaction (the transactional outbox), or neither.
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import Any, Self

from google.protobuf.message import Message
from sqlalchemy import event
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)

from services.kit.clock import Clock
from services.kit.events.envelope import Envelope
from services.kit.events.tables import outbox_row

# Every statement is planned for the values it is run with. PostgreSQL would
# otherwise switch a prepared statement to a generic plan after five runs and keep
# it for the connection's life; one made on a fresh deployment's small tables
# scans them sequentially as they grow, until the next ANALYZE. A hot path that
# wants generic plans asks for them (the wallet's settlement groups do).
_SERVER_SETTINGS = {"plan_cache_mode": "force_custom_plan"}


def make_engine(url: str, *, pool_size: int = 10) -> AsyncEngine:
    """The service's engine; a pooled connection the database closed is replaced at checkout.

    A database restart must not leave dead connections behind. SQLAlchemy's
    ``pool_pre_ping`` ensured that with three round trips on every checkout (BEGIN,
    an empty query, ROLLBACK: a tenth of a small service's CPU per call); asyncpg
    already knows a connection whose socket the server closed, so the checkout asks
    it instead (:func:`_replace_closed`). A connection that dies unnoticed fails its
    statement as a disconnect, and SQLAlchemy then replaces every connection the
    pool held before it.
    """
    engine = create_async_engine(
        url,
        pool_size=pool_size,
        max_overflow=pool_size,
        connect_args={"server_settings": _SERVER_SETTINGS},
    )
    event.listen(engine.sync_engine, "checkout", _replace_closed)
    return engine


def _replace_closed(dbapi_connection: Any, record: Any, proxy: Any) -> None:
    """A checkout of a connection asyncpg knows is closed gets a new one instead."""
    if dbapi_connection.driver_connection.is_closed():
        raise DisconnectionError("the database closed this pooled connection")


async def database_reachable(engine: AsyncEngine) -> bool:
    """Whether a pooled connection answers ``SELECT 1``. Readiness asks every few seconds in
    every process: the statement goes on the asyncpg connection itself, without the ORM's
    execution (no transaction is begun: the checkin sends nothing either). A connection
    that died is closed for asyncpg, and the next checkout replaces it."""
    try:
        async with engine.connect() as connection:
            driver: Any = (await connection.get_raw_connection()).driver_connection
            await driver.fetchval("SELECT 1")
        return True
    except Exception:
        return False


async def statements_alone(session: AsyncSession) -> None:
    """Make each of ``session``'s statements commit on its own, with no BEGIN, COMMIT or
    ROLLBACK sent (call before its first statement). For a statement that is a whole
    transaction by itself, or reads that each take their own snapshot anyway (READ
    COMMITTED); the pool resets the connection when it is given back."""
    await session.connection(execution_options={"isolation_level": "AUTOCOMMIT"})


class UnitOfWork:
    """One transaction; services subclass it to attach their repositories in ``_start``."""

    session: AsyncSession

    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        *,
        source: str,
        clock: Clock,
        on_commit: Callable[[], None] = lambda: None,
    ) -> None:
        self._sessions = sessions
        self._source = source
        self.clock = clock
        self._on_commit = on_commit
        self._pending: list[Envelope] = []

    async def __aenter__(self) -> Self:
        self.session = self._sessions()
        self._pending = []
        self._start()
        return self

    def _start(self) -> None:
        """Hook for subclasses: build repositories over ``self.session``."""

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        try:
            await self.session.rollback()
        finally:
            await self.session.close()

    async def autocommit(self) -> None:
        """This unit of work's statements each commit on their own (:func:`statements_alone`)."""
        await statements_alone(self.session)

    def publish(self, topic: str, key: str, message: Message) -> Envelope:
        """Record an event; it reaches the outbox table in this transaction's commit."""
        envelope = Envelope.wrap(
            topic=topic, key=key, message=message, source=self._source, now=self.clock.now()
        )
        self._pending.append(envelope)
        return envelope

    async def commit(self) -> None:
        if self._pending:
            await self.session.execute(
                outbox_row.insert(), [envelope.as_outbox_values() for envelope in self._pending]
            )
        await self.session.commit()
        had_events = bool(self._pending)
        self._pending = []
        if had_events:
            self._on_commit()
