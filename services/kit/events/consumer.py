"""Consumers that apply each event exactly once, and set aside the ones they cannot.

The event id goes into the ``inbox`` table in the same transaction as the
handler's effect; a redelivered event finds its id there and is skipped. The
Kafka offset is committed only after that transaction, so a crash in between
means redelivery, never loss.

Records are fetched in batches (up to ``batch_size``): one key's events are
applied in their order, different keys' concurrently, and the offsets are
committed once the whole batch is done. Kafka orders events per partition
and producers key them by aggregate, so per-key order is all a handler may rely
on; concurrency lets a handler group work (the wallet settles concurrent games
in one transaction). A consumer that reads a busy topic for a few of its types
(tournaments reads every game event for the match results) may be given
``skipped_commit_seconds``: a batch with nothing it applies or parks then has its
offsets committed with the next batch that has, or after that many seconds (on a
quiet topic, at the first fetch that comes back empty), instead of a broker round trip
of its own; a restart reads such a batch again and skips it again. By default every
batch is committed. A record that is a well-formed event of a type the consumer has no
handler for is skipped before its :class:`Delivery` is built
(:meth:`EventConsumer._skipped_unread`), as it would be after.

No single event stops a consumer. Before an event is applied its producer is
proven (:mod:`services.kit.events.signing`): an unsigned, forged or
non-owner's event is parked (reason ``signature``) and never applied. A handler
that fails is tried again with a doubling back-off, ``attempts`` times in all;
then the event is parked (reason ``handler``) in the ``parked_events`` table of
the service's database (topic, partition, offset, ``ce_id``, the error, the
attempts), counted in ``tavla_events_parked_total`` and logged at error level,
and the consumer commits past it and goes on with the others. A record without
CloudEvents headers is parked as ``malformed``.

Per-key order is kept: once an event is parked for its handler, every later
event of the same topic and key is parked behind it (reason ``behind_parked``)
instead of being applied out of order, until an operator replays or discards
them (``tavla events parked`` / ``replay`` / ``discard``, :mod:`services.kit.events.parked`).
A signature or malformed park does not hold its key back: such a record is not
one of the aggregate's events, and the real ones after it must go on.

The consumer serves replay requests itself, every ``replay_poll_seconds`` while it knows
of open parks and every ``replay_idle_poll_seconds`` (30) while it knows of none
(:meth:`EventConsumer._replay_poll_interval` says why no request waits the longer one): one
replica claims the requests (they are cleared as it takes them, in one statement),
applies the parked events of each key in the order they were parked, with the same
verification and inbox, and resolves their rows; one that fails again stays
parked with its new error. The keys held back are cached per replica, reloaded
at start, after each replay round and when partitions move, and confirmed in the
table before an event is parked behind one, so a replay by another replica
releases its key at once. The poll's claim and reload are single statements run on
their own (:meth:`EventConsumer._statements`: no ``BEGIN``, ``COMMIT`` or ``ROLLBACK``
round trips around them), sent as text that asyncpg prepares once a connection (no ORM
execution), the reload one grouped read of the open parks (the keys held back and the
gauge's count together): a poll that finds nothing costs every consumer of every replica
two round trips on one pooled connection.

Infrastructure failures are not an event's fault: a database that is away (a
connection error) makes the consumer try the whole batch again in place, keeping
its partitions, rather than park every event that meets it; a longer outage, or
the broker away, restarts the consumer from its last commit.
"""

from __future__ import annotations

import asyncio
import operator
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import asyncpg  # type: ignore[import-untyped]
from aiokafka import AIOKafkaConsumer, TopicPartition
from sqlalchemy import func, select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from services.kit.clock import Clock
from services.kit.db import statements_alone
from services.kit.env import ConfigError
from services.kit.events.envelope import REQUEST_ID_HEADER, ReceivedEvent
from services.kit.events.signing import EventVerifier, SignatureRefused
from services.kit.events.tables import inbox_row, parked_event_row
from services.kit.failpoints import failpoint
from services.kit.logging import bind_request_id, get_logger
from services.kit.metrics import (
    BATCHES_RETRIED,
    CONSUMER_LAG,
    EVENTS_CONSUMED,
    EVENTS_PARKED,
    EVENTS_PARKED_OPEN,
    EVENTS_RETRIED,
)
from services.kit.retry import is_transient

log = get_logger(__name__)

Handler = Callable[[AsyncSession, ReceivedEvent], Awaitable[None]]
ConsumerFactory = Callable[[], AIOKafkaConsumer]

# Parks that hold the rest of their key back (see the module docstring).
BLOCKING_REASONS = ("handler", "behind_parked")
# The replay poll's two statements, as text asyncpg prepares once a connection: every
# consumer of every replica runs them every few seconds, and the ORM's execution of them
# was most of an idle consumer's CPU. $1 the consumer's name.
_PARKED = parked_event_row.name
# The open parks by key: whether any holds the key back ($2 the blocking reasons), and how
# many there are.
_OPEN_PARKS = (
    f"SELECT topic, key, bool_or(reason = ANY($2::varchar[])) AS blocking, "
    f"count(*) AS parks FROM {_PARKED} WHERE consumer = $1 AND resolved_at IS NULL "
    "GROUP BY topic, key"
)
# The replay requests claimed (cleared as they are taken): their ids.
_CLAIM = (
    f"UPDATE {_PARKED} SET replay_requested_at = NULL WHERE consumer = $1 "
    "AND resolved_at IS NULL AND replay_requested_at IS NOT NULL RETURNING id"
)

# How often batches a consumer skips whole report its backlog (tavla_consumer_lag).
LAG_REPORT_SECONDS = 1.0
# A header's value (headers are (name, value) pairs).
_VALUE = operator.itemgetter(1)

# A batch that meets the database away is tried again in place, pausing 0.1 s, 0.2 s ...
# up to 2 s, for a minute at most: far inside the broker's five-minute poll interval.
TRANSIENT_FIRST_PAUSE_SECONDS = 0.1
TRANSIENT_MAX_PAUSE_SECONDS = 2.0
TRANSIENT_RETRY_SECONDS = 60.0


@dataclass(frozen=True)
class Delivery:
    """One record as fetched: where it sits on the broker, and its event if it has one."""

    topic: str
    partition: int
    offset: int
    key: str
    value: bytes
    headers: dict[str, str]
    event: ReceivedEvent | None
    problem: str = ""

    @classmethod
    def from_record(cls, record: Any) -> Delivery:
        raw_headers = list(record.headers or ())
        headers = {name: raw.decode(errors="replace") for name, raw in raw_headers}
        key = (record.key or b"").decode(errors="replace")
        value = record.value or b""
        try:
            event: ReceivedEvent | None = ReceivedEvent.from_kafka(
                record.topic, record.key, value, raw_headers
            )
            problem = ""
        except ValueError as error:  # UnicodeDecodeError is one
            event, problem = None, str(error)
        return cls(
            record.topic, record.partition, record.offset, key, value, headers, event, problem
        )

    @classmethod
    def of(cls, event: ReceivedEvent, partition: int = 0, offset: int = 0) -> Delivery:
        """An event handed over directly (tests, replays): no broker record behind it."""
        return cls(event.topic, partition, offset, event.key, event.payload, event.headers, event)


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
        verifier: EventVerifier | None = None,
        attempts: int = 4,
        retry_seconds: float = 0.2,
        replay_poll_seconds: float = 5.0,
        replay_idle_poll_seconds: float = 30.0,
        skipped_commit_seconds: float = 0.0,
    ) -> None:
        self.name = f"{service}.{name}"
        self._batch_size = batch_size
        self._service = service
        self._sessions = sessions
        self._consumer_factory = consumer_factory
        self._handlers = handlers
        self._clock = clock
        self._stopping = False
        self.verifier = verifier
        self._attempts = max(attempts, 1)
        self._retry_seconds = retry_seconds
        self._replay_poll_seconds = replay_poll_seconds
        self._replay_idle_poll_seconds = max(replay_idle_poll_seconds, replay_poll_seconds)
        self._next_replay_poll = 0.0
        # The open parks at the last reload, plus those parked since (None: not loaded yet).
        self._open_parks: int | None = None
        self._skipped_commit_seconds = skipped_commit_seconds
        # (topic, key) with an open blocking park: their later events park behind it.
        self._blocked: set[tuple[str, str]] = set()
        # The handled types as their header bytes: what a record is skipped by.
        self._handled_raw = frozenset(ce_type.encode() for ce_type in handlers)
        self._next_lag_report = 0.0  # when a batch it skips reports the backlog again
        self._client: AIOKafkaConsumer | None = None  # the running one (broker_answered_within)

    def trust(self, verifier: EventVerifier) -> None:
        """Verify producers with ``verifier`` (the service's runtime gives every consumer one)."""
        self.verifier = verifier

    async def run(self) -> None:
        if self.verifier is None:
            raise ConfigError(
                f"consumer {self.name} has no event verifier: it would apply events "
                "whoever wrote them"
            )
        while not self._stopping:
            consumer = self._consumer_factory()
            try:
                await consumer.start()
                self._client = consumer
                await self.refresh_parked()
                assigned = set(consumer.assignment())
                uncommitted = False  # skipped batches read but not committed yet
                next_commit = time.monotonic() + self._skipped_commit_seconds
                while not self._stopping:
                    await self._serve_replays_when_due()
                    if set(consumer.assignment()) != assigned:  # partitions moved: their parks
                        assigned = set(consumer.assignment())
                        await self.refresh_parked()
                    fetched = await consumer.getmany(timeout_ms=1000, max_records=self._batch_size)
                    records = [record for batch in fetched.values() for record in batch]
                    # The backlog including the batch about to be applied.
                    in_hand = {tp: len(b) for tp, b in fetched.items()}
                    if not records:
                        await self._report_lag(consumer, in_hand)
                        if uncommitted and time.monotonic() >= next_commit:
                            await consumer.commit()  # a quiet topic: skipped ones wait no longer
                            uncommitted = False
                            next_commit = time.monotonic() + self._skipped_commit_seconds
                        continue
                    deliveries = [
                        Delivery.from_record(r) for r in records if not self._skipped_unread(r)
                    ]
                    if not self._concerns(deliveries) and time.monotonic() < next_commit:
                        uncommitted = True  # read again after a restart, and skipped again
                        # A busy topic's batches of skipped types come several a second:
                        # the backlog is reported once a second from them.
                        if time.monotonic() >= self._next_lag_report:
                            self._next_lag_report = time.monotonic() + LAG_REPORT_SECONDS
                            await self._report_lag(consumer, in_hand)
                        continue
                    await self._report_lag(consumer, in_hand)
                    await self._apply_batch(deliveries)
                    # The batch's effects are committed, its offsets not yet: a crash
                    # here means redelivery, which the inbox must absorb (a test kills here).
                    failpoint(f"{self.name}.after_db_commit")
                    await consumer.commit()
                    uncommitted = False
                    next_commit = time.monotonic() + self._skipped_commit_seconds
                    await self._report_lag(consumer, {})
                if uncommitted:  # stopping between batches: every batch read was handled
                    await consumer.commit()
            except asyncio.CancelledError:
                raise
            except Exception as error:  # broker or database away: retry from the last commit
                log.warning("consumer_failed", consumer=self.name, error=repr(error))
                await asyncio.sleep(1.0)
            finally:
                self._client = None
                await consumer.stop()

    def broker_answered_within(self, seconds: float) -> bool:
        """Whether the broker answered one of this consumer's fetches (with no error) in the
        last ``seconds``: readiness's proof that the broker serves this process, with no
        connection of its own (:class:`services.kit.server.Readiness`). A consumer fetches
        all the time, idle or not (a gathering one about once a ``gather_ms``), but not while
        records it fetched wait to be applied: then this is False, and readiness asks the
        broker itself."""
        client = self._client
        if client is None:
            return False
        since_ms = (time.time() - seconds) * 1000  # aiokafka stamps fetches in wall-clock ms
        try:
            return any(
                (client.last_poll_timestamp(partition) or 0) >= since_ms
                for partition in client.assignment()
            )
        except Exception:  # a partition moved away meanwhile: not proof, and never an error
            return False

    async def _report_lag(
        self, consumer: AIOKafkaConsumer, in_hand: Mapping[TopicPartition, int]
    ) -> None:
        """Set ``tavla_consumer_lag`` per topic from what the consumer knows, no broker call.

        ``in_hand`` counts, per partition, records fetched but not applied yet. A
        partition not fetched from yet has no high watermark and counts 0.
        """
        backlog: dict[str, int] = {}
        try:
            for partition in consumer.assignment():
                highwater = consumer.highwater(partition)
                if highwater is None:
                    backlog.setdefault(partition.topic, 0)
                    continue
                position = await consumer.position(partition)
                behind = highwater - position + in_hand.get(partition, 0)
                backlog[partition.topic] = backlog.get(partition.topic, 0) + max(0, behind)
        except asyncio.CancelledError:
            raise
        except Exception as error:
            # A partition moved away mid-rebalance: the next batch reports. A metric
            # never stops the consumer.
            log.debug("consumer_lag_unknown", consumer=self.name, error=repr(error))
            return
        for topic, records in backlog.items():
            CONSUMER_LAG.labels(self._service, self.name, topic).set(records)

    async def _apply_batch(self, deliveries: Sequence[Delivery]) -> None:
        """:meth:`handle_batch`, retried in place while the database is away.

        The consumer keeps its partitions meanwhile (the client heartbeats on its own):
        leaving the group and joining again costs every member of the group a
        rebalance, seconds of lag each time the database blinks. Effects applied before
        the failure are applied again, which the inbox absorbs. Past
        ``TRANSIENT_RETRY_SECONDS`` (well inside the broker's poll interval) the failure
        escapes and the consumer starts over from its last commit.
        """
        give_up = time.monotonic() + TRANSIENT_RETRY_SECONDS
        pause = TRANSIENT_FIRST_PAUSE_SECONDS
        while True:
            try:
                await self.handle_batch(deliveries)
                return
            except Exception as error:
                if not is_transient(error) or self._stopping or time.monotonic() > give_up:
                    raise
                log.warning("consumer_batch_retried", consumer=self.name, error=repr(error))
                BATCHES_RETRIED.labels(self._service, self.name).inc()
                await asyncio.sleep(pause)
                pause = min(2 * pause, TRANSIENT_MAX_PAUSE_SECONDS)

    def stop(self) -> None:
        self._stopping = True

    def _concerns(self, deliveries: Sequence[Delivery]) -> bool:
        """Whether a batch holds anything this consumer would apply or park; a batch of
        events only of types it skips changes nothing here."""
        return any(d.event is None or self.wants(d.event) for d in deliveries)

    def wants(self, event: ReceivedEvent) -> bool:
        """Whether this consumer applies events of this type (others are skipped unverified)."""
        return event.ce_type in self._handlers

    def _skipped_unread(self, record: Any) -> bool:
        """Whether ``record`` is a well-formed event of a type this consumer skips: what
        :meth:`take` would skip, found without building its :class:`Delivery` (a consumer
        of a busy topic skips most of what it reads). Anything else, malformed records
        included, goes the whole way.

        Its headers are looked at as bytes, in C: the last value of each name (as
        ``ReceivedEvent.from_kafka`` takes them), and whether every value and the key are
        ASCII, so valid UTF-8 as that decoding requires; only a record with other bytes is
        decoded header by header (:meth:`_skipped_decoded`)."""
        headers = record.headers or ()
        try:
            named = dict(headers)
            ascii_only = b"".join(map(_VALUE, headers)).isascii()
        except (TypeError, ValueError):  # not (name, bytes) pairs: as the decoding finds
            return self._skipped_decoded(record)
        key = record.key or b""
        if not (ascii_only and key.isascii()):
            return self._skipped_decoded(record)
        ce_type = named.get("ce_type")
        return "ce_id" in named and ce_type is not None and ce_type not in self._handled_raw

    def _skipped_decoded(self, record: Any) -> bool:
        """:meth:`_skipped_unread` for a record with bytes other than ASCII: each value
        decoded."""
        ce_type, has_id = None, False
        try:
            for name, raw in record.headers or ():
                value = raw.decode()  # as ReceivedEvent.from_kafka: the last of a name counts
                if name == "ce_type":
                    ce_type = value
                has_id = has_id or name == "ce_id"
            (record.key or b"").decode()
        except UnicodeDecodeError:
            return False  # malformed: parked by take
        return has_id and ce_type is not None and ce_type not in self._handlers

    async def handle_batch(self, deliveries: Sequence[Delivery]) -> None:
        """Apply ``deliveries``: each key's in order, different keys concurrently.

        An event's own failure parks it and the others go on; only an
        infrastructure failure escapes (and cancels the rest: the batch is retried).
        """
        chains: dict[tuple[str, str], list[Delivery]] = {}
        for delivery in deliveries:
            chains.setdefault((delivery.topic, delivery.key), []).append(delivery)
        async with asyncio.TaskGroup() as group:  # an infrastructure failure cancels the others
            for chain in chains.values():
                group.create_task(self._apply_in_order(chain))

    async def _apply_in_order(self, chain: Sequence[Delivery]) -> None:
        for delivery in chain:
            await self.take(delivery)

    async def take(self, delivery: Delivery) -> bool:
        """Verify and apply one delivery, or park it; True when it was applied."""
        event = delivery.event
        if event is None:
            await self._park(delivery, "malformed", delivery.problem, attempts=0)
            return False
        if not self.wants(event):
            return False
        try:
            self._verify(event)
        except SignatureRefused as refused:
            await self._park(delivery, "signature", str(refused), attempts=0)
            return False
        if (event.topic, event.key) in self._blocked and await self._still_blocked(event):
            why = f"an earlier event of key {event.key!r} on {event.topic} is parked"
            await self._park(delivery, "behind_parked", why, attempts=0)
            return False
        error = await self._attempt(event)
        if error is None:
            return True
        await self._park(delivery, "handler", repr(error), attempts=self._attempts)
        self._blocked.add((event.topic, event.key))
        return False

    async def _still_blocked(self, event: ReceivedEvent) -> bool:
        """Asked of the table, not the cache: a replay elsewhere may have resolved the key."""
        async with self._sessions() as session:
            open_parks = await session.scalar(
                select(func.count())
                .select_from(parked_event_row)
                .where(
                    parked_event_row.c.consumer == self.name,
                    parked_event_row.c.topic == event.topic,
                    parked_event_row.c.key == event.key,
                    parked_event_row.c.resolved_at.is_(None),
                    parked_event_row.c.reason.in_(BLOCKING_REASONS),
                )
            )
        if not open_parks:
            self._blocked.discard((event.topic, event.key))
        return bool(open_parks)

    def _verify(self, event: ReceivedEvent) -> str:
        if self.verifier is None:
            raise SignatureRefused(f"consumer {self.name} has no event verifier")
        return self.verifier.producer(event.topic, event.key, event.payload, event.headers)

    async def _attempt(self, event: ReceivedEvent) -> Exception | None:
        """Apply with retries; the last error when every attempt failed, None once applied."""
        for attempt in range(1, self._attempts + 1):
            try:
                await self.handle(event)
                return None
            except Exception as error:
                if is_transient(error):
                    raise
                log.warning(
                    "event_failed",
                    consumer=self.name,
                    event_id=event.event_id,
                    ce_type=event.ce_type,
                    attempt=attempt,
                    error=repr(error),
                )
                if attempt == self._attempts:
                    return error
                EVENTS_RETRIED.labels(self._service, self.name).inc()
                await asyncio.sleep(self._retry_seconds * 2 ** (attempt - 1))
        return None  # not reached: the loop returns

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

    async def _park(self, delivery: Delivery, reason: str, error: str, *, attempts: int) -> None:
        """Record the delivery in ``parked_events`` (once per broker position), count and log it."""
        event = delivery.event
        async with self._sessions() as session, session.begin():
            parked = await session.scalar(
                insert(parked_event_row)
                .values(
                    consumer=self.name,
                    topic=delivery.topic,
                    partition=delivery.partition,
                    offset=delivery.offset,
                    key=delivery.key[:200],
                    event_id=(event.event_id if event else delivery.headers.get("ce_id", ""))[:200],
                    ce_type=(event.ce_type if event else delivery.headers.get("ce_type", ""))[:200],
                    payload=delivery.value,
                    headers=delivery.headers,
                    reason=reason,
                    error=error[:4000],
                    attempts=attempts,
                    parked_at=self._clock.now(),
                )
                .on_conflict_do_nothing()
                .returning(parked_event_row.c.id)
            )
        if parked is None:
            return  # parked before, and redelivered since: one row is enough
        self._open_parks = (self._open_parks or 0) + 1  # replays may be asked for it now
        self._next_replay_poll = min(
            self._next_replay_poll, time.monotonic() + self._replay_poll_seconds
        )
        EVENTS_PARKED.labels(self._service, self.name, reason).inc()
        log.error(
            "event_parked",
            consumer=self.name,
            parked_id=parked,
            reason=reason,
            topic=delivery.topic,
            partition=delivery.partition,
            offset=delivery.offset,
            event_id=event.event_id if event else None,
            ce_type=event.ce_type if event else None,
            attempts=attempts,
            error=error,
        )

    @asynccontextmanager
    async def _statements(self) -> AsyncIterator[AsyncSession]:
        """A session whose statements each commit on their own (autocommit), for a single
        statement that needs no transaction around it, or reads whose each statement takes
        its own snapshot anyway (PostgreSQL's READ COMMITTED)."""
        async with self._sessions() as session:
            await statements_alone(session)
            yield session

    async def refresh_parked(self) -> None:
        """Reload the keys held back by open parks, and the gauge of open parks."""
        async with self._statements() as session:
            await self._reload_parked(session)

    async def _reload_parked(self, session: AsyncSession) -> None:
        """:meth:`refresh_parked` in ``session``: one statement, the open parks by key."""
        connection = await _driver_connection(session)
        keys = await connection.fetch(_OPEN_PARKS, self.name, list(BLOCKING_REASONS))
        self._blocked = {(row["topic"], row["key"]) for row in keys if row["blocking"]}
        self._open_parks = sum(row["parks"] for row in keys)
        EVENTS_PARKED_OPEN.labels(self._service, self.name).set(self._open_parks)

    async def _serve_replays_when_due(self) -> None:
        if time.monotonic() < self._next_replay_poll:
            return
        await self.serve_replays()
        self._next_replay_poll = time.monotonic() + self._replay_poll_interval()

    def _replay_poll_interval(self) -> float:
        """``replay_poll_seconds`` while this consumer has open parks, else the idle interval.

        A replay can only be asked for a park that exists, and some replica always knows of
        it and polls at the short interval: the one that parked it counts it at once, a
        replica that starts or takes the partitions over reloads the open parks. So a
        replica with none polls every ``replay_idle_poll_seconds`` (for the gauge, and in
        case it is the only replica left), and an idle consumer's two statements come every
        half minute, not every five seconds."""
        if self._open_parks == 0:
            return self._replay_idle_poll_seconds
        return self._replay_poll_seconds

    async def serve_replays(self) -> int:
        """Apply the parked events an operator asked to replay; returns how many were applied.

        In the order they were parked, so a key's events keep theirs; a request whose
        key still has an earlier open park that is not replayed stays parked.
        """
        async with self._statements() as session:
            requested = await self._requested(session)
            if not requested:  # the usual poll: two statements on one connection
                await self._reload_parked(session)
                return 0
        applied = 0
        for row in requested:
            applied += await self._replay(row)
        log.info("parked_replayed", consumer=self.name, requested=len(requested), applied=applied)
        await self.refresh_parked()
        return applied

    async def _requested(self, session: AsyncSession) -> list[Any]:
        """Claim the replay requests: one replica takes them all (the others find none).
        One statement, committed by itself (``session`` is :meth:`_statements`')."""
        connection = await _driver_connection(session)
        claimed = [row["id"] for row in await connection.fetch(_CLAIM, self.name)]
        if not claimed:  # the usual poll
            return []
        rows = await session.execute(  # the claimed rows whole, in the order they were parked
            select(parked_event_row)
            .where(parked_event_row.c.id.in_(claimed))
            .order_by(parked_event_row.c.id)
        )
        return list(rows.all())

    async def _replay(self, row: Any) -> int:
        """Replay one parked row: resolved when applied (or already applied), kept otherwise."""
        if await self._earlier_open_park(row):
            await self._keep_parked(row, "an earlier parked event of its key is still open")
            return 0
        headers = dict(row.headers)
        try:
            event = ReceivedEvent.from_kafka(
                row.topic, row.key.encode(), row.payload, _encoded(headers.items())
            )
            self._verify(event)
        except (ValueError, SignatureRefused) as refused:
            await self._keep_parked(row, str(refused))
            return 0
        error = await self._attempt(event)  # with the same retries as a first delivery
        if error is not None:
            await self._keep_parked(row, repr(error))
            return 0
        await self._resolve(row.id, "replayed")
        return 1

    async def _earlier_open_park(self, row: Any) -> bool:
        async with self._sessions() as session:
            earlier = await session.scalar(
                select(func.count())
                .select_from(parked_event_row)
                .where(
                    parked_event_row.c.consumer == self.name,
                    parked_event_row.c.topic == row.topic,
                    parked_event_row.c.key == row.key,
                    parked_event_row.c.id < row.id,
                    parked_event_row.c.resolved_at.is_(None),
                    parked_event_row.c.reason.in_(BLOCKING_REASONS),
                )
            )
        return bool(earlier)

    async def _keep_parked(self, row: Any, error: str) -> None:
        async with self._sessions() as session, session.begin():
            await session.execute(
                update(parked_event_row)
                .where(parked_event_row.c.id == row.id)
                .values(
                    error=error[:4000],
                    attempts=parked_event_row.c.attempts + 1,
                )
            )
        log.error("parked_replay_failed", consumer=self.name, parked_id=row.id, error=error)

    async def _resolve(self, parked_id: int, resolution: str) -> None:
        async with self._sessions() as session, session.begin():
            await session.execute(
                update(parked_event_row)
                .where(parked_event_row.c.id == parked_id)
                .values(resolved_at=self._clock.now(), resolution=resolution)
            )


async def _driver_connection(session: AsyncSession) -> asyncpg.Connection:
    """The asyncpg connection under ``session`` (checked out for it)."""
    connection = await session.connection()
    driver: asyncpg.Connection = (await connection.get_raw_connection()).driver_connection
    return driver


def _encoded(headers: Iterable[tuple[str, str]]) -> list[tuple[str, bytes]]:
    return [(name, value.encode()) for name, value in headers]
