"""The outbox promise: an event committed while the broker is down is delivered
once it is back, and a consumer applies it exactly once even when it arrives twice."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
import zlib
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import Column, Integer, MetaData, String, Table, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from services.kit.clock import ManualClock, SystemClock
from services.kit.db import UnitOfWork, make_engine
from services.kit.events.connection import KafkaConnection
from services.kit.events.consumer import EventConsumer
from services.kit.events.envelope import ReceivedEvent
from services.kit.events.kafka import make_consumer, make_producer
from services.kit.events.relay import OutboxRelay
from services.kit.events.tables import (
    event_metadata,
    outbox_row,
    parked_event_row,
    parked_metadata,
)
from tavla.accounts.v1 import events_pb2
from tests.support.kafka import event_signer, event_verifier, headers_of, read_events
from tests.support.services import new_database

TOPIC = "tavla.accounts.v1"
effects = Table(
    "welcome_bonus_effects",
    MetaData(),
    Column("account_id", String(36), primary_key=True),
    Column("times_applied", Integer, nullable=False),
)


async def apply_welcome(session: AsyncSession, event: ReceivedEvent) -> None:
    registered = events_pb2.AccountRegistered.FromString(event.payload)
    await session.execute(
        effects.insert().values(account_id=registered.account_id, times_applied=1)
    )


async def wait_for(predicate: Any, timeout: float = 30.0) -> None:
    async with asyncio.timeout(timeout):
        while not await predicate():
            await asyncio.sleep(0.1)


@pytest.fixture
async def database(postgres_server: Any) -> Any:
    name = new_database(postgres_server, "outbox")
    engine = make_engine(postgres_server.url(name))
    async with engine.begin() as connection:
        await connection.run_sync(event_metadata.create_all)
        await connection.run_sync(parked_metadata.create_all)
        await connection.run_sync(effects.metadata.create_all)
    yield engine
    await engine.dispose()


async def test_event_written_while_broker_down_is_delivered_and_applied_once(
    database: Any, kafka_broker: Any
) -> None:
    clock = SystemClock()
    sessions = async_sessionmaker(database, expire_on_commit=False)
    relay = OutboxRelay(
        service="test",
        engine=database,
        producer_factory=lambda: make_producer(
            KafkaConnection(kafka_broker.bootstrap), service="test", idempotence=False
        ),
        clock=clock,
        signer=event_signer("accounts"),  # as the accounts service's relay signs
        poll_seconds=0.1,
    )
    account_id = str(uuid.uuid4())

    kafka_broker.stop()
    try:
        async with UnitOfWork(sessions, source="test", clock=clock) as uow:
            uow.publish(TOPIC, account_id, events_pb2.AccountRegistered(account_id=account_id))
            await uow.commit()
        with pytest.raises(Exception):  # noqa: B017 - whatever the client raises, nothing is sent
            await relay.publish_pending()
        assert await unsent(database) == 1
    finally:
        kafka_broker.restart()
        kafka_broker.create_topics_from_file()

    consumer = EventConsumer(
        service="test",
        name=f"welcome-{uuid.uuid4().hex[:6]}",
        sessions=sessions,
        consumer_factory=lambda: make_consumer(
            KafkaConnection(kafka_broker.bootstrap),
            group=f"test-{uuid.uuid4().hex[:6]}",
            topics=[TOPIC],
        ),
        handlers={"tavla.accounts.v1.AccountRegistered": apply_welcome},
        clock=clock,
        verifier=event_verifier(),
    )
    relay_task = asyncio.create_task(relay.run())
    consumer_task = asyncio.create_task(consumer.run())
    try:
        await wait_for(lambda: applied(database, account_id, at_least=1))
        assert await unsent(database) == 0

        # Redeliver: the relay sends the same row (same ce_id) again, as after a crash
        # between the broker's acknowledgement and marking the row sent.
        async with database.begin() as connection:
            await connection.execute(update(outbox_row).values(sent_at=None))
        relay.wake()
        await wait_for(lambda: consumed_duplicates(consumer_task, database))
    finally:
        consumer.stop()
        consumer_task.cancel()
        relay_task.cancel()
        await asyncio.gather(consumer_task, relay_task, return_exceptions=True)
        await relay.stop(drain_seconds=1)

    async with database.connect() as connection:
        rows = (await connection.execute(select(effects))).all()
    assert [(row.account_id, row.times_applied) for row in rows] == [(account_id, 1)]


async def unsent(engine: Any) -> int:
    async with engine.connect() as connection:
        count = await connection.scalar(
            select(func.count()).select_from(outbox_row).where(outbox_row.c.sent_at.is_(None))
        )
    return int(count)


async def applied(engine: Any, account_id: str, at_least: int) -> bool:
    async with engine.connect() as connection:
        count = await connection.scalar(
            select(func.count()).select_from(effects).where(effects.c.account_id == account_id)
        )
    return int(count) >= at_least


async def consumed_duplicates(task: asyncio.Task[None], engine: Any) -> bool:
    """The redelivered copy reached the consumer: the metric of duplicates moved."""
    from prometheus_client import REGISTRY

    value = REGISTRY.get_sample_value(
        "tavla_events_consumed_total",
        {"service": "test", "topic": TOPIC, "outcome": "duplicate"},
    )
    return bool(value and value >= 1) and await unsent(engine) == 0


def direct_consumer(database: Any, name: str, handler: Any) -> EventConsumer:
    """A consumer handed events by the test itself: no broker involved."""
    return EventConsumer(
        service="test",
        name=name,
        sessions=async_sessionmaker(database, expire_on_commit=False),
        consumer_factory=lambda: (_ for _ in ()).throw(AssertionError("no broker needed")),
        handlers={"tavla.accounts.v1.AccountRegistered": handler},
        clock=SystemClock(),
    )


def registered_event(account_id: str) -> ReceivedEvent:
    return ReceivedEvent(
        event_id=str(uuid.uuid4()),
        ce_type="tavla.accounts.v1.AccountRegistered",
        source="//tavla/test",
        topic=TOPIC,
        key=account_id,
        payload=events_pb2.AccountRegistered(account_id=account_id).SerializeToString(),
        headers={},
    )


async def test_handler_sees_each_event_id_once_when_handed_the_same_event_twice(
    database: Any,
) -> None:
    consumer = direct_consumer(database, "direct", apply_welcome)
    account_id = str(uuid.uuid4())
    event = registered_event(account_id)
    assert await consumer.handle(event) is True
    assert await consumer.handle(event) is False
    assert await applied(database, account_id, at_least=1)


async def test_a_failing_handler_leaves_no_inbox_row_so_the_event_is_retried(
    database: Any,
) -> None:
    calls = 0

    async def flaky(session: AsyncSession, event: ReceivedEvent) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("database hiccup")
        await apply_welcome(session, event)

    consumer = direct_consumer(database, "flaky", flaky)
    account_id = str(uuid.uuid4())
    event = registered_event(account_id)
    with pytest.raises(RuntimeError):
        await consumer.handle(event)
    assert await consumer.handle(event) is True
    assert await applied(database, account_id, at_least=1)


async def test_sent_rows_are_purged_after_the_retention_window_unsent_ones_never(
    database: Any,
) -> None:
    clock = ManualClock()
    relay = OutboxRelay(
        service="test",
        engine=database,
        producer_factory=lambda: (_ for _ in ()).throw(AssertionError("nothing is sent")),
        clock=clock,
        signer=event_signer("accounts"),
        retention=timedelta(hours=1),
        purge_batch_size=2,  # several batches
    )
    sessions = async_sessionmaker(database, expire_on_commit=False)
    for _ in range(5):
        async with UnitOfWork(sessions, source="test", clock=clock) as uow:
            account_id = str(uuid.uuid4())
            uow.publish(TOPIC, account_id, events_pb2.AccountRegistered(account_id=account_id))
            await uow.commit()
    async with database.begin() as connection:  # four sent now; the newest one is not
        newest = await connection.scalar(select(func.max(outbox_row.c.seq)))
        await connection.execute(
            update(outbox_row).where(outbox_row.c.seq < newest).values(sent_at=clock.now())
        )
    assert await relay.purge_sent() == 0  # still within the window
    clock.advance(timedelta(hours=1, seconds=1))
    assert await relay.purge_sent() == 4
    async with database.connect() as connection:
        left = (await connection.execute(select(outbox_row.c.seq, outbox_row.c.sent_at))).all()
    assert [(row.seq, row.sent_at) for row in left] == [(newest, None)]


async def test_a_relay_sends_nothing_while_another_relay_of_the_service_holds_the_lock(
    database: Any, kafka_broker: Any
) -> None:
    """One relay per service publishes at a time (each aggregate's events stay in order)."""
    clock = SystemClock()
    sessions = async_sessionmaker(database, expire_on_commit=False)
    keys = [str(uuid.uuid4()) for _ in range(3)]
    async with UnitOfWork(sessions, source="test", clock=clock) as uow:
        for key in keys:
            uow.publish(TOPIC, key, events_pb2.AccountRegistered(account_id=key))
        await uow.commit()

    def refuse() -> Any:
        raise AssertionError("a relay without the lock must not send")

    blocked = OutboxRelay(
        service="locked",
        engine=database,
        producer_factory=refuse,
        clock=clock,
        signer=event_signer("accounts"),
    )
    relay = OutboxRelay(
        service="locked",
        engine=database,
        producer_factory=lambda: make_producer(
            KafkaConnection(kafka_broker.bootstrap), service="test", idempotence=False
        ),
        clock=clock,
        signer=event_signer("accounts"),
        batch_size=2,  # two rounds: the oldest first
    )
    async with database.connect() as holder, holder.begin():  # the other relay's transaction
        lock = func.pg_try_advisory_xact_lock(zlib.crc32(b"tavla-outbox-locked"))
        assert await holder.scalar(select(lock))
        assert await blocked.publish_pending() == 0
        assert await unsent(database) == 3
    try:
        assert await relay.publish_pending() == 2
        assert await relay.publish_pending() == 1
    finally:
        await relay.stop(drain_seconds=1)
    assert await unsent(database) == 0


async def test_a_record_the_broker_can_never_take_is_parked_and_the_rest_go_out(
    database: Any, kafka_broker: Any
) -> None:
    """One event too large for Kafka used to fail its batch, and so every later event, for ever."""
    clock = SystemClock()
    sessions = async_sessionmaker(database, expire_on_commit=False)
    keys = [str(uuid.uuid4()) for _ in range(3)]
    async with UnitOfWork(sessions, source="test", clock=clock) as uow:
        for number, key in enumerate(keys):
            padding = "x" * (2 * 1024 * 1024) if number == 1 else ""  # past the 1 MiB limit
            uow.publish(TOPIC, key, events_pb2.AccountRegistered(account_id=key + padding))
        await uow.commit()
    async with database.connect() as connection:
        rows = (await connection.execute(select(outbox_row.c.event_id).order_by(outbox_row.c.seq)))
        event_ids = [row.event_id for row in rows]
    relay = OutboxRelay(
        service="big",
        engine=database,
        producer_factory=lambda: make_producer(
            KafkaConnection(kafka_broker.bootstrap), service="test", idempotence=False
        ),
        clock=clock,
        signer=event_signer("accounts"),
    )
    try:
        assert await relay.publish_pending() == 3
    finally:
        await relay.stop(drain_seconds=1)
    assert await unsent(database) == 0
    published = await read_events(kafka_broker.bootstrap, TOPIC, {event_ids[0], event_ids[2]})
    assert event_ids[1] not in {headers_of(record).get("ce_id") for record in published}
    async with database.connect() as connection:
        [parked] = (await connection.execute(select(parked_event_row))).all()
    assert (parked.consumer, parked.reason, parked.event_id) == (
        "big.relay", "unpublishable", event_ids[1]
    )  # fmt: skip
    assert "MessageSizeTooLarge" in parked.error


async def test_an_idle_relay_waits_for_a_wake_and_looks_again_soon_after_one(
    database: Any, kafka_broker: Any
) -> None:
    """``poll_idle_every``: while nothing wakes it the relay does not look (an idle process
    costs one poll a minute here), a wake publishes at once, and a woken round that found
    the lock held by another replica's relay looks again after ``poll_seconds``."""
    clock = SystemClock()
    sessions = async_sessionmaker(database, expire_on_commit=False)
    relay = OutboxRelay(
        service="idle",
        engine=database,
        producer_factory=lambda: make_producer(
            KafkaConnection(kafka_broker.bootstrap), service="test", idempotence=False
        ),
        clock=clock,
        signer=event_signer("accounts"),
        poll_seconds=1.0,
    )
    relay.poll_idle_every(60.0)

    async def record_one() -> None:  # a commit that does not wake the relay
        async with UnitOfWork(sessions, source="test", clock=clock) as uow:
            key = str(uuid.uuid4())
            uow.publish(TOPIC, key, events_pb2.AccountRegistered(account_id=key))
            await uow.commit()

    running = asyncio.create_task(relay.run())
    try:
        await asyncio.sleep(0.5)  # its first round found nothing: idle from here
        await record_one()
        await asyncio.sleep(2.5)  # past two short polls: an idle relay did not look
        assert await unsent(database) == 1
        relay.wake()
        await wait_for(lambda: _none_unsent(database), timeout=5.0)

        await record_one()
        async with database.connect() as holder, holder.begin():  # another replica's relay
            lock = func.pg_try_advisory_xact_lock(zlib.crc32(b"tavla-outbox-idle"))
            assert await holder.scalar(select(lock))
            relay.wake()
            await asyncio.sleep(0.3)  # the woken round found the lock held
            assert await unsent(database) == 1
        await wait_for(lambda: _none_unsent(database), timeout=5.0)  # not the idle minute
    finally:
        running.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await running
        await relay.stop(drain_seconds=1)


async def _none_unsent(database: Any) -> bool:
    return await unsent(database) == 0
