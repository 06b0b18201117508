"""The geo service's events on ``tavla.geo.v1``: every decision, and every block again.

Keyed by account id, or by the address when there is no account yet (a check
before registration). Written through the outbox in the transaction that records
the decision, so a decision the service answered is a decision on record.

Decisions are recorded in group commits (:class:`DecisionLog`): a call's events
are built in the call itself (its request id goes into their headers) and
queued; one writer commits everything queued so far in one transaction (one
``INSERT`` statement of all their outbox rows, :func:`write_group`), then
releases each waiting call. While a commit is in flight the next calls queue for
the next one, so at a few hundred calls a second each transaction carries
several decisions and none waits for more than the commit before it. A call
answers only after the commit that holds its events; if that commit fails,
every call in it fails and none is answered.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime

import asyncpg  # type: ignore[import-untyped]
from google.protobuf.message import Message

from services.kit.clock import Clock, protobuf_timestamp
from services.kit.db_notify import asyncpg_dsn
from services.kit.events.envelope import Envelope
from services.kit.events.tables import outbox_row
from services.kit.metrics import GROUP_COMMIT
from tavla.geo.v1 import events_pb2, geo_pb2

TOPIC = "tavla.geo.v1"


def location_events(
    decision: geo_pb2.LocationDecision, request: geo_pb2.CheckLocationRequest, now: datetime
) -> list[Message]:
    """``LocationChecked``, and ``LocationBlocked`` too when the decision is a block."""
    occurred_at = protobuf_timestamp(now)
    checked = events_pb2.LocationChecked(
        check_id=decision.check_id,
        account_id=request.account_id,
        ip_address=decision.evidence.ip_address,
        purpose=request.purpose,
        decision=decision.decision,
        reasons=decision.reasons,
        country_code=decision.country_code,
        region_code=decision.region_code,
        rules_version=decision.rules_version,
        evidence=decision.evidence,
        occurred_at=occurred_at,
    )
    events: list[Message] = [checked]
    if decision.decision == geo_pb2.DECISION_BLOCK:
        blocked = events_pb2.LocationBlocked(
            check_id=checked.check_id,
            account_id=checked.account_id,
            ip_address=checked.ip_address,
            purpose=checked.purpose,
            reasons=checked.reasons,
            country_code=checked.country_code,
            region_code=checked.region_code,
            rules_version=checked.rules_version,
            occurred_at=occurred_at,
        )
        events.append(blocked)
    return events


# A group's outbox rows as one statement whatever its size: the columns as arrays,
# unnested (one statement text, so asyncpg prepares it once per connection). One
# statement is one implicit transaction: all the rows or none.
INSERT_GROUP = (
    f"INSERT INTO {outbox_row.name} "
    "(event_id, topic, key, ce_type, payload, headers, created_at) "
    "SELECT id, topic, key, type, payload, CAST(headers AS jsonb), created "
    "FROM unnest($1::varchar[], $2::varchar[], $3::varchar[], $4::varchar[], $5::bytea[], "
    "$6::text[], $7::timestamptz[]) AS rows(id, topic, key, type, payload, headers, created)"
)
# Seconds to open the writer's connection before the group's calls fail.
CONNECT_SECONDS = 10.0

Connect = Callable[[], Awaitable[asyncpg.Connection]]


def connector(database_url: str) -> Connect:
    """Opens the writer's own connection to the service's database (the engine's URL).

    Without the engine's ``plan_cache_mode=force_custom_plan``: its one statement reads
    no table, so a generic plan (PostgreSQL's choice after five runs) is the right one.
    """
    dsn = asyncpg_dsn(database_url)
    return lambda: asyncpg.connect(dsn, timeout=CONNECT_SECONDS)


async def write_group(connection: asyncpg.Connection, envelopes: Sequence[Envelope]) -> None:
    """Insert a group's events into the outbox in one statement, outside any transaction.

    That statement is all that is sent: no BEGIN and no COMMIT (the statement commits
    itself), on asyncpg directly. SQLAlchemy's connection checkout, execution context
    and greenlet around this one statement were, profiled at 500 calls/s, a sixth of
    the CPU of the loop that answers calls, more than the statement itself.
    """
    await connection.execute(INSERT_GROUP, *Envelope.outbox_columns(envelopes))


# Decisions in one transaction at most: bounds a commit's size under a burst.
MAX_GROUP = 256
Waiting = tuple[list[Envelope], "asyncio.Future[None]"]


class DecisionLog:
    """Records decisions as events, through the outbox, in group commits (module docstring).

    The writer holds one connection of its own (``connect`` opens it), opened on the
    first group and kept: only one group is written at a time. A connection that was
    lost, or whose statement did not end with the database's answer (a timeout, a
    cancellation), is dropped, and the next group opens a new one.
    """

    def __init__(
        self,
        connect: Connect,
        *,
        source: str,
        clock: Clock,
        on_commit: Callable[[], None] = lambda: None,
    ) -> None:
        self._connect = connect
        self._connection: asyncpg.Connection | None = None
        self._on_commit = on_commit
        self._source = source
        self._clock = clock
        self._queue: list[Waiting] = []
        self._writer: asyncio.Task[None] | None = None
        self._commit_seconds = GROUP_COMMIT.labels(source)
        self.commits = 0  # transactions so far (tests and benchmarks read it)

    async def record(
        self, decision: geo_pb2.LocationDecision, request: geo_pb2.CheckLocationRequest
    ) -> None:
        """Return once the decision's events are committed; raise if their commit failed."""
        key = request.account_id or decision.evidence.ip_address
        now = self._clock.now()
        envelopes = [
            Envelope.wrap(topic=TOPIC, key=key, message=event, source=self._source, now=now)
            for event in location_events(decision, request, now)
        ]
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.append((envelopes, done))
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._write())
        # A caller that gives up cancels only its own future: the writer is a task of its
        # own, commits the group all the same and skips a future already done (no shield:
        # one future and a loop turn less per call).
        await done

    async def close(self) -> None:
        """Close the writer's connection (the service is stopping; calls have drained)."""
        connection, self._connection = self._connection, None
        if connection is not None and not connection.is_closed():
            try:
                await connection.close(timeout=CONNECT_SECONDS)
            except Exception:
                connection.terminate()

    async def _write(self) -> None:
        while self._queue:
            group, self._queue = self._queue[:MAX_GROUP], self._queue[MAX_GROUP:]
            try:
                await self._write_group([e for envelopes, _ in group for e in envelopes])
                self.commits += 1
                self._on_commit()
            except BaseException as error:
                # Even cancelled (the process stopping), no caller is left waiting: none of
                # this group is answered, and the queue behind it fails with it.
                failed = group if isinstance(error, Exception) else group + self._queue
                for _, done in failed:
                    if not done.done():
                        done.set_exception(error)
                if not isinstance(error, Exception):
                    self._queue = []
                    raise
                continue
            for _, done in group:
                if not done.done():
                    done.set_result(None)

    async def _write_group(self, envelopes: list[Envelope]) -> None:
        connection = self._connection
        if connection is None or connection.is_closed():
            connection = self._connection = await self._connect()
        started = time.perf_counter()
        try:
            await write_group(connection, envelopes)
            self._commit_seconds.observe(time.perf_counter() - started)
        except asyncpg.PostgresError:
            raise  # the database refused the statement; the connection is fine
        except BaseException:
            # Its state is unknown (the answer never came): start the next group afresh.
            self._connection = None
            connection.terminate()
            raise
