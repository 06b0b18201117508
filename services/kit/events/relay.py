"""The outbox relay: publishes committed events to Kafka and marks them sent.

At-least-once: a row's mark as sent commits only after the broker acknowledged
it (the mark is written in the same transaction that claimed the row), so a crash
or an outage in between means it is sent again (consumers dedupe on ``ce_id``).
Each record is signed as it is sent (``ce_signature``, :mod:`services.kit.events.signing`)
with the service's key: an outbox row never changes after its commit, so what is
signed is exactly what the service recorded.
No Kafka transaction wraps a batch (:mod:`services.kit.events.kafka` says why); on
Apache Kafka the producer is idempotent.
A PostgreSQL advisory lock lets one relay per service publish at a time, which
keeps each aggregate's events in commit order across replicas.

A record the broker refuses for itself (too large, corrupt) would fail every batch
it is in for ever; it is parked instead (``parked_events``, consumer
``<service>.relay``, reason ``unpublishable``, offset = its outbox ``seq``), counted
and alerted, and the batch goes out without it. The consumers then never see that
event: what it carried must be redone by hand (docs/runbook.md). Anything else
(the broker away, credentials, a topic missing) keeps every row and retries.

Sent rows are kept for ``retention`` (for inspection and replays by hand), then
purged in batches every ``purge_interval_seconds``: the outbox is a transport, not
the record (the game's action log and the wallet's ledger are).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import zlib
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import asyncpg  # type: ignore[import-untyped]
from aiokafka import AIOKafkaProducer
from aiokafka.errors import (
    CorruptRecordException,
    MessageSizeTooLargeError,
    RecordListTooLargeError,
    RecordTooLargeError,
)
from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncEngine

from services.kit.clock import Clock
from services.kit.events.signing import SIGNATURE_HEADER, EventSigner
from services.kit.events.tables import outbox_row, parked_event_row
from services.kit.logging import get_logger
from services.kit.metrics import EVENTS_PARKED, EVENTS_PUBLISHED, OUTBOX_PENDING

log = get_logger(__name__)

ProducerFactory = Callable[[], AIOKafkaProducer]

# What the broker refuses for the record itself, however often it is sent: parked, so
# that one record never holds back the service's every later event.
UNPUBLISHABLE = (
    MessageSizeTooLargeError,
    RecordTooLargeError,
    RecordListTooLargeError,
    CorruptRecordException,
)
# parked_events.partition of a row the relay could not publish (its offset is its seq).
UNPUBLISHED_PARTITION = -1

_OUTBOX = outbox_row.name
# Mark the oldest unsent rows sent and return them, if this relay gets the lock
# ($1 the time, $2 the lock key, $3 the batch size). The lock is an uncorrelated
# sub-select: PostgreSQL tries it once, before looking at any row, and finds no row
# when another relay of the service holds it. One statement where there were three
# saves two round trips per publish.
CLAIM = (
    f"UPDATE {_OUTBOX} SET sent_at = $1 WHERE seq IN ("
    f"SELECT seq FROM {_OUTBOX} WHERE sent_at IS NULL "
    "AND (SELECT pg_try_advisory_xact_lock($2::bigint)) IS true "
    "ORDER BY seq LIMIT $3) "
    "RETURNING seq, event_id, topic, key, ce_type, payload, headers"
)
COUNT_UNSENT = f"SELECT count(*) FROM {_OUTBOX} WHERE sent_at IS NULL"
# A row the broker refused for good, parked in the claim's transaction (headers: JSON text).
PARK = (
    f'INSERT INTO {parked_event_row.name} (consumer, topic, partition, "offset", key, '
    "event_id, ce_type, payload, headers, reason, error, attempts, parked_at) "
    "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb, 'unpublishable', $10, 1, $11) "
    "ON CONFLICT DO NOTHING"
)


class OutboxRelay:
    def __init__(
        self,
        *,
        service: str,
        engine: AsyncEngine,
        producer_factory: ProducerFactory,
        clock: Clock,
        signer: EventSigner,
        poll_seconds: float = 0.5,
        batch_size: int = 500,
        coalesce_seconds: float = 0.005,
        retention: timedelta = timedelta(hours=72),
        purge_interval_seconds: float = 300.0,
        purge_batch_size: int = 5000,
    ) -> None:
        self._service = service
        self._engine = engine
        self._producer_factory = producer_factory
        self._clock = clock
        self._signer = signer
        self._poll_seconds = poll_seconds
        self._idle_poll_seconds = poll_seconds  # see poll_idle_every
        self._batch_size = batch_size
        self._coalesce_seconds = coalesce_seconds
        self._retention = retention
        self._purge_interval = purge_interval_seconds
        self._purge_batch_size = purge_batch_size
        self._next_purge = time.monotonic() + purge_interval_seconds
        self._lock_key = zlib.crc32(f"tavla-outbox-{service}".encode())
        self._producer: AIOKafkaProducer | None = None
        self._wakeup = asyncio.Event()
        self._stopping = False

    def wake(self) -> None:
        """Called after a commit that recorded events: publish now, not at the next poll."""
        self._wakeup.set()

    def poll_idle_every(self, seconds: float) -> None:
        """Look for unsent rows only every ``seconds`` while nothing happens, for a service
        whose every outbox write calls :meth:`wake` after its commit (its units of work and
        its consumers' transactions alike): an idle process then costs one poll per
        ``seconds``, not two a second. After a round that was woken or sent anything the
        relay looks again after ``poll_seconds``, as before: that round may have found the
        lock held by another replica's relay, whose claim did not see this replica's
        commit. Never call it for a service with a writer that does not wake the relay:
        its events would wait up to ``seconds``."""
        self._idle_poll_seconds = max(seconds, self._poll_seconds)

    def _next_look(self, woken: bool, sent: int) -> float:
        """Seconds to wait for a wake before looking again, after a round that worked."""
        return self._poll_seconds if woken or sent else self._idle_poll_seconds

    async def run(self) -> None:
        backoff = self._poll_seconds
        while not self._stopping:
            # Cleared before publishing: a commit landing meanwhile wakes the next round.
            woken = self._wakeup.is_set()
            self._wakeup.clear()
            try:
                sent = total = await self.publish_pending()
                while sent >= self._batch_size:
                    sent = await self.publish_pending()
                    total += sent
                backoff = self._poll_seconds
                wait = self._next_look(woken, total)
            except Exception as error:  # broker or database away: keep rows, retry later
                log.warning("outbox_publish_failed", error=repr(error))
                await self._drop_producer()
                backoff = wait = min(backoff * 2, 10.0)
            await self._purge_when_due()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wakeup.wait(), timeout=wait)
            if self._wakeup.is_set():
                # Under load every commit wakes the relay: a few milliseconds let the
                # commits of concurrent calls join one batch instead of one round each.
                await asyncio.sleep(self._coalesce_seconds)

    async def stop(self, drain_seconds: float = 5.0) -> None:
        """Flush what is pending (within the deadline), then close the producer."""
        self._stopping = True
        self._wakeup.set()
        try:
            async with asyncio.timeout(drain_seconds):
                while await self.publish_pending():
                    pass
        except Exception as error:
            log.warning("outbox_drain_incomplete", error=repr(error))
        await self._drop_producer()

    async def publish_pending(self) -> int:
        """Publish one batch; returns how many rows were sent (0 when none or locked).

        One statement takes the relay lock, picks the oldest unsent rows and marks
        them sent; its transaction commits only once the broker has acknowledged
        every one of them, so a failed send rolls the marks back (they stay unsent).

        The round runs on the pooled connection's asyncpg connection itself, with
        statements asyncpg prepares once per connection: the relay runs a round every
        few milliseconds under load, and SQLAlchemy's layers (the compiled-statement
        cache, the greenlet hops, result rows) were half of a round's CPU.
        """
        async with self._engine.connect() as pooled:
            connection: asyncpg.Connection = (await pooled.get_raw_connection()).driver_connection
            async with connection.transaction():
                claimed = await connection.fetch(
                    CLAIM, self._clock.now(), self._lock_key, self._batch_size
                )
                rows = sorted(claimed, key=lambda row: row["seq"])  # RETURNING keeps no order
                if rows:
                    await self._send(connection, rows)
                pending = 0
                if len(rows) == self._batch_size:  # a backlog: worth counting
                    pending = await connection.fetchval(COUNT_UNSENT) or 0
            OUTBOX_PENDING.labels(self._service).set(pending)
            return len(rows)

    async def purge_sent(self) -> int:
        """Delete rows sent before the retention window, a batch at a time; returns how many."""
        cutoff = self._clock.now() - self._retention
        purged = 0
        while True:
            oldest = (
                select(outbox_row.c.seq)
                .where(outbox_row.c.sent_at < cutoff)
                .order_by(outbox_row.c.seq)
                .limit(self._purge_batch_size)
            )
            async with self._engine.begin() as connection:
                result = await connection.execute(
                    delete(outbox_row).where(outbox_row.c.seq.in_(oldest))
                )
            purged += result.rowcount
            if result.rowcount < self._purge_batch_size:
                return purged

    async def _purge_when_due(self) -> None:
        """Purge on schedule; a failure waits for the next one (the producer is not at fault)."""
        if time.monotonic() < self._next_purge:
            return
        self._next_purge = time.monotonic() + self._purge_interval
        try:
            purged = await self.purge_sent()
        except Exception as error:
            log.warning("outbox_purge_failed", error=repr(error))
            return
        if purged:
            log.info(
                "outbox_purged", rows=purged, retention_hours=self._retention / timedelta(hours=1)
            )

    async def _send(self, connection: asyncpg.Connection, rows: list[Any]) -> None:
        """Send ``rows`` and wait for every acknowledgement (no transaction: see ``kafka``).

        A row the broker can never take (:data:`UNPUBLISHABLE`: too large, corrupt) is
        parked instead, in the same transaction that marks the batch sent, so it no
        longer holds every later event of the service back. Any other failure (the
        broker away, a topic not writable) fails the whole batch, to be retried.
        """
        producer = await self._ready_producer()
        sent: list[tuple[Any, asyncio.Future[Any]]] = []
        refused: list[tuple[Any, BaseException]] = []
        for row in rows:
            headers = [(name, str(value).encode()) for name, value in row["headers"].items()]
            signature = self._signer.sign(row["topic"], row["key"], row["payload"], row["headers"])
            headers.append((SIGNATURE_HEADER, signature.encode()))
            try:
                delivery = await producer.send(
                    row["topic"], value=row["payload"], key=row["key"].encode(), headers=headers
                )
            except UNPUBLISHABLE as error:
                refused.append((row, error))
                continue
            sent.append((row, delivery))
        results = await asyncio.gather(*(delivery for _, delivery in sent), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException) and not isinstance(result, UNPUBLISHABLE):
                raise result
        refused += [
            (row, result)
            for (row, _), result in zip(sent, results, strict=True)
            if isinstance(result, BaseException)
        ]
        if refused:
            await self._park(connection, refused)
        published = Counter(
            row["topic"]
            for (row, _), result in zip(sent, results, strict=True)
            if not isinstance(result, BaseException)
        )
        for topic, count in published.items():  # one metric update per topic, not per event
            EVENTS_PUBLISHED.labels(self._service, topic).inc(count)

    async def _park(self, connection: asyncpg.Connection, refused: list[tuple[Any, Any]]) -> None:
        """Record rows the broker refused for good in ``parked_events`` (offset: their seq)."""
        name = f"{self._service}.relay"
        now = self._clock.now()
        await connection.executemany(
            PARK,
            [
                (name, row["topic"], UNPUBLISHED_PARTITION, row["seq"], row["key"],
                 row["event_id"], row["ce_type"], row["payload"], json.dumps(row["headers"]),
                 repr(error)[:4000], now)
                for row, error in refused
            ],
        )  # fmt: skip
        for row, error in refused:
            EVENTS_PARKED.labels(self._service, name, "unpublishable").inc()
            log.error(
                "event_unpublishable",
                seq=row["seq"],
                event_id=row["event_id"],
                topic=row["topic"],
                ce_type=row["ce_type"],
                error=repr(error),
            )

    async def _ready_producer(self) -> AIOKafkaProducer:
        if self._producer is None:
            producer = self._producer_factory()
            try:
                await producer.start()
            except Exception:
                await producer.stop()
                raise
            self._producer = producer
        return self._producer

    async def _drop_producer(self) -> None:
        producer, self._producer = self._producer, None
        if producer is not None:
            try:
                await producer.stop()
            except Exception as error:
                log.warning("producer_stop_failed", error=repr(error))
