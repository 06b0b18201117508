"""Group commit for a consumer's small events: many applied in one inbox transaction.

The kit's consumer applies a batch's keys concurrently, each event in its own
transaction (begin, its inbox row, the handler, commit). For an event whose effect is
a row or two (a login's sightings), those round trips and that statement overhead are
most of its cost. A :class:`GroupedEventConsumer` sends the events of its grouped types
to a group instead: while one group is written, the events its keys deliver meanwhile
wait, and go together in the next (the first event goes at once). A group is one
transaction: the inbox rows of all its events in one statement (an event id applied
before, or twice in the group, is a duplicate and not handed on), then the group
handler with the new events, then one commit: all of the group applied, or none.

Exactly once holds as for one event: the inbox rows commit with the effects, and the
offsets are committed after the batch (a crash in between redelivers the batch, whose
events then find their inbox rows). Per-key order holds: a key's next event is
delivered only once its previous one's group has committed. A group that fails
(whatever the error) is rolled back whole, and each of its events goes the one-event
path (:meth:`EventConsumer.apply`), where an event's own failure is retried and parked
as always: no event fails because another one shared its group.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

from prometheus_client import Counter, Histogram
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from services.kit.clock import Clock
from services.kit.events.consumer import ConsumerFactory, EventConsumer, Handler
from services.kit.events.envelope import ReceivedEvent
from services.kit.events.tables import inbox_row
from services.kit.logging import get_logger
from services.kit.metrics import EVENTS_CONSUMED

log = get_logger(__name__)

GROUPS = Counter(
    "tavla_consumer_event_groups",
    "Event groups applied in one transaction, by outcome (committed, or failed: its "
    "events applied one by one).",
    ["consumer", "outcome"],
)
GROUP_SIZE = Histogram(
    "tavla_consumer_event_group_size",
    "Events per event group.",
    ["consumer"],
    buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256),
)

# Applies a group's new events (each once, in the order they came) in the group's transaction.
GroupHandler = Callable[[AsyncSession, Sequence[ReceivedEvent]], Awaitable[None]]
# What an event's group came to: True applied, False a duplicate, None: the group failed
# (go the one-event path).
Outcome = bool | None

# The group's inbox rows from arrays: one statement text whatever the group's size
# (compiled and prepared once). The ids it returns are the events new to this consumer.
_CLAIM = text(
    f"INSERT INTO {inbox_row.name} (event_id, consumer, ce_type, processed_at) "
    "SELECT id, CAST(:consumer AS varchar), type, CAST(:at AS timestamptz) "
    "FROM unnest(CAST(:ids AS varchar[]), CAST(:types AS varchar[])) AS claimed(id, type) "
    "ON CONFLICT DO NOTHING RETURNING event_id"
)


@dataclass(eq=False)
class _Waiting:
    event: ReceivedEvent
    done: asyncio.Future[Outcome] = field(init=False)

    def __post_init__(self) -> None:
        self.done = asyncio.get_running_loop().create_future()


class EventGroups:
    """Queues events and writes them in groups of at most ``max_group``, one group at a time."""

    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        *,
        consumer: str,
        clock: Clock,
        handler: GroupHandler,
        max_group: int = 256,
    ) -> None:
        self._sessions = sessions
        self._consumer = consumer
        self._clock = clock
        self._handler = handler
        self._max_group = max_group
        self._waiting: list[_Waiting] = []
        self._writer: asyncio.Task[None] | None = None

    async def apply(self, event: ReceivedEvent) -> Outcome:
        waiting = _Waiting(event)
        self._waiting.append(waiting)
        if self._writer is None:
            self._writer = asyncio.create_task(self._write_groups())
        return await waiting.done

    async def _write_groups(self) -> None:
        group: list[_Waiting] = []
        try:
            while self._waiting:
                group = self._waiting[: self._max_group]
                del self._waiting[: self._max_group]
                outcomes = await self._write_group([w.event for w in group])
                _settle(group, outcomes)
                group = []
                # The callers just answered deliver their keys' next events: let them queue.
                await asyncio.sleep(0)
        except BaseException:  # cancelled (shutdown): nobody may wait forever
            _settle(group + self._waiting, [None] * (len(group) + len(self._waiting)))
            self._waiting = []
            raise
        finally:
            self._writer = None

    async def _write_group(self, events: Sequence[ReceivedEvent]) -> list[Outcome]:
        # An event id twice in the group (a redelivery meeting its first delivery): the
        # first one counts, the others are duplicates.
        first = {event.event_id: n for n, event in reversed(list(enumerate(events)))}
        GROUP_SIZE.labels(self._consumer).observe(len(events))
        try:
            async with self._sessions() as session, session.begin():
                ordered = [events[n] for n in sorted(first.values())]
                claimed = set(await session.scalars(_CLAIM, {
                    "ids": [e.event_id for e in ordered],
                    "types": [e.ce_type for e in ordered],
                    "consumer": self._consumer,
                    "at": self._clock.now(),
                }))  # fmt: skip
                applied = {n for event_id, n in first.items() if event_id in claimed}
                new: list[Outcome] = [n in applied for n in range(len(events))]
                fresh = [e for e, is_new in zip(events, new, strict=True) if is_new]
                if fresh:
                    await self._handler(session, fresh)
        except Exception as error:  # each event goes the one-event path
            log.warning("event_group_failed", consumer=self._consumer, events=len(events),
                        error=repr(error))  # fmt: skip
            GROUPS.labels(self._consumer, "failed").inc()
            return [None] * len(events)
        GROUPS.labels(self._consumer, "committed").inc()
        return new


def _settle(group: Sequence[_Waiting], outcomes: Sequence[Outcome]) -> None:
    for waiting, outcome in zip(group, outcomes, strict=True):
        if not waiting.done.done():
            waiting.done.set_result(outcome)


class GroupedEventConsumer(EventConsumer):
    """A consumer whose events of ``grouped`` types are applied in groups (above); every
    other type, and every event of a group that failed, one per transaction.
    ``skipped_commit_seconds`` as :class:`EventConsumer`'s."""

    def __init__(
        self,
        *,
        service: str,
        name: str,
        sessions: async_sessionmaker[AsyncSession],
        consumer_factory: ConsumerFactory,
        handlers: Mapping[str, Handler],
        clock: Clock,
        grouped: Collection[str],
        group_handler: GroupHandler,
        batch_size: int = 64,
        skipped_commit_seconds: float = 0.0,
    ) -> None:
        super().__init__(
            service=service,
            name=name,
            sessions=sessions,
            consumer_factory=consumer_factory,
            handlers=handlers,
            clock=clock,
            batch_size=batch_size,
            skipped_commit_seconds=skipped_commit_seconds,
        )
        missing = set(grouped) - set(handlers)
        if missing:  # the one-event path must be able to apply every grouped event
            raise ValueError(f"grouped types without a handler: {sorted(missing)}")
        self._grouped = frozenset(grouped)
        self._groups = EventGroups(sessions, consumer=self.name, clock=clock,
                                   handler=group_handler)  # fmt: skip

    async def apply(self, event: ReceivedEvent) -> bool:
        if event.ce_type not in self._grouped:
            return await super().apply(event)
        outcome = await self._groups.apply(event)
        if outcome is None:
            return await super().apply(event)
        EVENTS_CONSUMED.labels(self._service, event.topic, "applied" if outcome else
                               "duplicate").inc()  # fmt: skip
        return outcome
