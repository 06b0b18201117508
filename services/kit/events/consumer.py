"""Consumers that apply each event exactly once.

The event id goes into the ``inbox`` table in the same transaction as the
handler's effect; a redelivered event finds its id there and is skipped. The
Kafka offset is committed only after that transaction, so a crash in between
means redelivery, never loss.

Records are fetched in batches (up to ``batch_size``): one key's events are
applied in their order, different keys' concurrently, and the offsets are
committed once the whole batch is applied. Kafka orders events per partition
and producers key them by aggregate, so per-key order is all a handler may rely
on; concurrency lets a handler group work (the wallet settles concurrent games
in one transaction). A failure cancels the batch's other handlers and restarts
from the last commit: the inbox skips what was already applied.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence

from aiokafka import AIOKafkaConsumer
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from services.kit.clock import Clock
from services.kit.events.envelope import REQUEST_ID_HEADER, ReceivedEvent
from services.kit.events.tables import inbox_row
from services.kit.failpoints import failpoint
from services.kit.logging import bind_request_id, get_logger
from services.kit.metrics import EVENTS_CONSUMED

log = get_logger(__name__)

Handler = Callable[[AsyncSession, ReceivedEvent], Awaitable[None]]
ConsumerFactory = Callable[[], AIOKafkaConsumer]


class EventConsumer:
    def __init__(
        self,
        *,
        service: str,
        name: str,
        sessions: async_sessionmaker[AsyncSession],
        consumer_factory: ConsumerFactory,
        handlers: Mapping[str, Handler],
        clock: Clock,
        batch_size: int = 64,
    ) -> None:
        self.name = f"{service}.{name}"
        self._batch_size = batch_size
        self._service = service
        self._sessions = sessions
        self._consumer_factory = consumer_factory
        self._handlers = handlers
        self._clock = clock
        self._stopping = False

    async def run(self) -> None:
        while not self._stopping:
            consumer = self._consumer_factory()
            try:
                await consumer.start()
                while not self._stopping:
                    fetched = await consumer.getmany(
                        timeout_ms=1000, max_records=self._batch_size
                    )
                    records = [record for batch in fetched.values() for record in batch]
                    if not records:
                        continue
                    await self.handle_batch(
                        [
                            ReceivedEvent.from_kafka(r.topic, r.key, r.value, list(r.headers))
                            for r in records
                        ]
                    )
                    # The batch's effects are committed, its offsets not yet: a crash
                    # here means redelivery, which the inbox must absorb (a test kills here).
                    failpoint(f"{self.name}.after_db_commit")
                    await consumer.commit()
            except asyncio.CancelledError:
                raise
            except Exception as error:  # broker away or a handler bug: retry from the last commit
                log.warning("consumer_failed", consumer=self.name, error=repr(error))
                await asyncio.sleep(1.0)
            finally:
                await consumer.stop()

    def stop(self) -> None:
        self._stopping = True

    async def handle_batch(self, events: Sequence[ReceivedEvent]) -> None:
        """Apply ``events``: each key's in order, different keys concurrently."""
        chains: dict[tuple[str, str], list[ReceivedEvent]] = {}
        for event in events:
            chains.setdefault((event.topic, event.key), []).append(event)
        async with asyncio.TaskGroup() as group:  # one failure cancels the others
            for chain in chains.values():
                group.create_task(self._apply_in_order(chain))

    async def _apply_in_order(self, chain: Sequence[ReceivedEvent]) -> None:
        for event in chain:
            await self.handle(event)

    async def handle(self, event: ReceivedEvent) -> bool:
        """Apply one event; returns False when it was not for us or already applied."""
        if REQUEST_ID_HEADER in event.headers:  # its logs carry the request that caused it
            bind_request_id(event.headers[REQUEST_ID_HEADER])
        return await self.apply(event)

    async def apply(self, event: ReceivedEvent) -> bool:
        """:meth:`handle` without the logging context: the inbox transaction and the handler.

        A subclass with another way to apply some events overrides this one.
        """
        handler = self._handlers.get(event.ce_type)
        if handler is None:
            return False
        async with self._sessions() as session, session.begin():
            first_time = await session.scalar(
                insert(inbox_row)
                .values(
                    event_id=event.event_id,
                    consumer=self.name,
                    ce_type=event.ce_type,
                    processed_at=self._clock.now(),
                )
                .on_conflict_do_nothing()
                .returning(inbox_row.c.event_id)
            )
            if first_time is None:
                EVENTS_CONSUMED.labels(self._service, event.topic, "duplicate").inc()
                return False
            await handler(session, event)
        EVENTS_CONSUMED.labels(self._service, event.topic, "applied").inc()
        return True
