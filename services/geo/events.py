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
import json
from collections.abc import Callable, Sequence
from datetime import datetime

from google.protobuf.message import Message
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from services.kit.clock import Clock
from services.kit.events.envelope import Envelope
from services.kit.events.tables import outbox_row
from tavla.geo.v1 import events_pb2, geo_pb2

TOPIC = "tavla.geo.v1"


def location_events(
    decision: geo_pb2.LocationDecision, request: geo_pb2.CheckLocationRequest, now: datetime
) -> list[Message]:
    """``LocationChecked``, and ``LocationBlocked`` too when the decision is a block."""
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
    )
    checked.occurred_at.FromDatetime(now)
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
        )
        blocked.occurred_at.FromDatetime(now)
        events.append(blocked)
    return events


# A group's outbox rows as one statement whatever its size: the columns as arrays,
# unnested (one statement text, so asyncpg prepares it once per connection). One
# statement is one implicit transaction: all the rows or none.
_INSERT_GROUP = text(
    f"INSERT INTO {outbox_row.name} "
    "(event_id, topic, key, ce_type, payload, headers, created_at) "
    "SELECT id, topic, key, type, payload, CAST(headers AS jsonb), created "
    "FROM unnest(CAST(:ids AS varchar[]), CAST(:topics AS varchar[]), "
    "CAST(:keys AS varchar[]), CAST(:types AS varchar[]), CAST(:payloads AS bytea[]), "
    "CAST(:headers AS text[]), CAST(:created AS timestamptz[])) "
    "AS rows(id, topic, key, type, payload, headers, created)"
)


async def write_group(engine: AsyncEngine, envelopes: Sequence[Envelope]) -> None:
    """Insert a group's events into the outbox in one statement.

    With ``engine`` in AUTOCOMMIT (as :class:`DecisionLog` uses it) that statement is all
    that is sent: no BEGIN and no COMMIT, two round trips fewer, and no ORM session,
    whose bookkeeping on the event loop that answers calls was a sixth of its time at
    500 calls/s. Any other engine gets an ordinary transaction around it.
    """
    async with engine.connect() as connection:
        await connection.execute(_INSERT_GROUP, {
            "ids": [e.event_id for e in envelopes],
            "topics": [e.topic for e in envelopes],
            "keys": [e.key for e in envelopes],
            "types": [e.ce_type for e in envelopes],
            "payloads": [e.payload for e in envelopes],
            "headers": [json.dumps(e.headers) for e in envelopes],
            "created": [e.created_at for e in envelopes],
        })  # fmt: skip
        await connection.commit()


# Decisions in one transaction at most: bounds a commit's size under a burst.
MAX_GROUP = 256
Waiting = tuple[list[Envelope], "asyncio.Future[None]"]


class DecisionLog:
    """Records decisions as events, through the outbox, in group commits (module docstring)."""

    def __init__(
        self,
        engine: AsyncEngine,
        *,
        source: str,
        clock: Clock,
        on_commit: Callable[[], None] = lambda: None,
    ) -> None:
        self._engine = engine.execution_options(isolation_level="AUTOCOMMIT")
        self._on_commit = on_commit
        self._source = source
        self._clock = clock
        self._queue: list[Waiting] = []
        self._writer: asyncio.Task[None] | None = None
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
        # Shielded: a caller that gives up does not take the commit (or the others) with it.
        await asyncio.shield(done)

    async def _write(self) -> None:
        while self._queue:
            group, self._queue = self._queue[:MAX_GROUP], self._queue[MAX_GROUP:]
            try:
                await write_group(
                    self._engine, [envelope for envelopes, _ in group for envelope in envelopes]
                )
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
