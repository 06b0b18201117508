"""No single event stops a consumer, on the real broker and PostgreSQL.

A poison event (its effect fails in the database every time, as "bigint out of
range" did in the wallet) used to cancel its batch and restart it from the last
commit for ever: no later event of any key was applied. Now it is retried, parked
with where it sat on the broker and why, and the consumer commits past it; the
events of other keys are applied, a later event of its own key waits behind it,
an unsigned event is parked and applied never, and ``tavla events replay`` applies
the parked ones in order once the cause is fixed.
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from prometheus_client import REGISTRY
from sqlalchemy import Column, Integer, MetaData, String, Table, event, select, text
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)

from services.kit.clock import SystemClock
from services.kit.db import make_engine
from services.kit.events.connection import KafkaConnection
from services.kit.events.consumer import EventConsumer
from services.kit.events.envelope import Envelope, ReceivedEvent
from services.kit.events.kafka import make_consumer
from services.kit.events.tables import event_metadata, parked_event_row, parked_metadata
from tavla.accounts.v1 import events_pb2
from tests.support.kafka import consumed_past, event_verifier, publish, skip_backlog
from tests.support.processes import tavla
from tests.support.services import new_database

TOPIC = "tavla.accounts.v1"
REGISTERED = "tavla.accounts.v1.AccountRegistered"
welcomes = Table(
    "welcomes",
    MetaData(),
    Column("seq", Integer, primary_key=True, autoincrement=True),
    # Too short for the poison's account id: its insert fails in PostgreSQL every time.
    Column("account_id", String(36), nullable=False),
)


async def welcome(session: AsyncSession, event: ReceivedEvent) -> None:
    registered = events_pb2.AccountRegistered.FromString(event.payload)
    await session.execute(welcomes.insert().values(account_id=registered.account_id))


def registered(key: str, account_id: str) -> Envelope:
    message = events_pb2.AccountRegistered(account_id=account_id)
    return Envelope.wrap(topic=TOPIC, key=key, message=message, source="accounts",
                         now=datetime.now(UTC))  # fmt: skip


@pytest.fixture
async def database(postgres_server: Any) -> Any:
    name = new_database(postgres_server, "isolation")
    engine = make_engine(postgres_server.url(name))
    async with engine.begin() as connection:
        for metadata in (event_metadata, parked_metadata, welcomes.metadata):
            await connection.run_sync(metadata.create_all)
    yield engine, postgres_server.url(name)
    await engine.dispose()


async def welcomed(engine: AsyncEngine) -> list[str]:
    async with engine.connect() as connection:
        rows = await connection.execute(select(welcomes.c.account_id).order_by(welcomes.c.seq))
    return [row.account_id for row in rows]


async def parked(engine: AsyncEngine) -> list[Any]:
    async with engine.connect() as connection:
        return list(
            await connection.execute(select(parked_event_row).order_by(parked_event_row.c.id))
        )


async def eventually(check: Any, what: str, timeout: float = 60.0) -> None:
    try:
        async with asyncio.timeout(timeout):
            while not await check():
                await asyncio.sleep(0.1)
    except TimeoutError:
        raise AssertionError(what) from None


async def test_a_poison_event_is_parked_and_every_other_key_goes_on(
    database: Any, kafka_broker: Any
) -> None:
    engine, url = database
    run = uuid.uuid4().hex[:8]
    poison_key, forged_key = f"poison-{run}", f"forged-{run}"
    poison = registered(poison_key, f"{poison_key}-{'x' * 40}")  # longer than the column
    behind = registered(poison_key, f"behind-{run}")  # the poison key's next event
    others = [registered(f"ok{n}-{run}", f"ok{n}-{run}") for n in range(3)]
    forged = registered(forged_key, f"forged-{run}")
    genuine = registered(forged_key, f"genuine-{run}")
    positions = await publish(kafka_broker.bootstrap, [poison, behind, *others])
    positions += await publish(kafka_broker.bootstrap, [forged], signed_as=None)
    positions += await publish(kafka_broker.bootstrap, [genuine])

    group = f"isolation-{run}"
    consumer = _welcome_consumer(
        engine, kafka_broker.bootstrap, f"welcome-{run}", group,
        attempts=3, retry_seconds=0.05, replay_poll_seconds=0.2,
    )  # fmt: skip
    consumer.trust(event_verifier())
    task = asyncio.create_task(consumer.run())
    try:
        everything_else = {f"ok{n}-{run}" for n in range(3)} | {f"genuine-{run}"}
        await eventually(
            lambda: _has(engine, everything_else), "the other keys' events were not applied"
        )
        await eventually(
            lambda: consumed_past(kafka_broker.bootstrap, group, TOPIC, positions),
            "the consumer did not commit past the parked events",
        )
        rows = {row.event_id: row for row in await parked(engine)}
        assert set(rows) == {poison.event_id, behind.event_id, forged.event_id}
        first = rows[poison.event_id]
        assert (first.reason, first.attempts, first.topic, first.key) == (
            "handler", 3, TOPIC, poison_key
        )  # fmt: skip
        assert (first.partition, first.offset) == positions[0]
        assert "value too long" in first.error
        assert rows[behind.event_id].reason == "behind_parked"
        assert rows[forged.event_id].reason == "signature"
        assert "unsigned" in rows[forged.event_id].error
        assert f"forged-{run}" not in await welcomed(engine)  # never applied
        assert f"behind-{run}" not in await welcomed(engine)  # not ahead of the poison
        assert _parked_metric(consumer.name, "handler") == 1
        assert _parked_metric(consumer.name, "signature") == 1

        # The operator lists them, fixes the cause, and replays the key's two in order.
        env = dict(os.environ)
        code, output = await tavla("events", "parked", "--database-url", url, env=env)
        assert code == 0, output
        listed = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
        assert {line["event_id"]: line["reason"] for line in listed} == {
            poison.event_id: "handler", behind.event_id: "behind_parked",
            forged.event_id: "signature",
        }  # fmt: skip
        async with engine.begin() as connection:
            await connection.execute(text("ALTER TABLE welcomes ALTER account_id TYPE text"))
        await engine.dispose()  # statements prepared before the change are stale
        ids = [str(rows[e.event_id].id) for e in (poison, behind)]
        code, output = await tavla(
            "events", "replay", "--id", ids[0], "--id", ids[1], "--database-url", url, env=env
        )
        assert code == 0 and '"replay_requested": 2' in output, output
        await eventually(
            lambda: _has(engine, {poison.key + "-" + "x" * 40, f"behind-{run}"}),
            "the replayed events were not applied",
        )
        order = await welcomed(engine)
        assert order.index(f"poison-{run}-{'x' * 40}") < order.index(f"behind-{run}")
        code, output = await tavla(
            "events", "discard", "--id", str(rows[forged.event_id].id), "--database-url", url,
            env=env,
        )  # fmt: skip
        assert code == 0 and '"discarded": 1' in output, output
        resolutions = {row.event_id: row.resolution for row in await parked(engine)}
        assert resolutions == {
            poison.event_id: "replayed", behind.event_id: "replayed",
            forged.event_id: "discarded",
        }  # fmt: skip

        # The key is no longer held back: its next event is applied at once.
        await publish(kafka_broker.bootstrap, [registered(poison_key, f"after-{run}")])
        await eventually(lambda: _has(engine, {f"after-{run}"}), "the key stayed blocked")
    finally:
        consumer.stop()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def _has(engine: AsyncEngine, wanted: set[str]) -> bool:
    return wanted <= set(await welcomed(engine))


def _parked_metric(consumer: str, reason: str) -> float | None:
    return REGISTRY.get_sample_value(
        "tavla_events_parked_total",
        {"service": "isolation", "consumer": consumer, "reason": reason},
    )


async def test_the_database_away_retries_the_batch_without_leaving_the_group(
    database: Any, kafka_broker: Any
) -> None:
    """A database that blinks used to make the consumer leave its group and join again: a
    rebalance for every member, seconds of lag (17 s of settlements once). Now the batch
    is tried again in place; nothing is parked and the consumer is never rebuilt."""
    engine, _ = database
    run = uuid.uuid4().hex[:8]
    events = [registered(f"blink{n}-{run}", f"blink{n}-{run}") for n in range(3)]
    await publish(kafka_broker.bootstrap, events)
    outage = {"failures_left": 4}

    async def blinking(session: AsyncSession, event: ReceivedEvent) -> None:
        if outage["failures_left"] > 0:
            outage["failures_left"] -= 1
            raise ConnectionRefusedError("the database is away")  # as asyncpg raises it
        await welcome(session, event)

    built = []

    def factory() -> Any:
        built.append(1)
        connection = KafkaConnection(kafka_broker.bootstrap)
        return make_consumer(connection, group=f"blink-{run}", topics=[TOPIC])

    consumer = EventConsumer(
        service="isolation", name=f"blink-{run}",
        sessions=async_sessionmaker(engine, expire_on_commit=False),
        consumer_factory=factory, handlers={REGISTERED: blinking}, clock=SystemClock(),
    )  # fmt: skip
    consumer.trust(event_verifier())
    task = asyncio.create_task(consumer.run())
    try:
        wanted = {f"blink{n}-{run}" for n in range(3)}
        await eventually(lambda: _has(engine, wanted), "the events were not applied")
        assert outage["failures_left"] == 0  # the outage was met...
        assert len(built) == 1  # ...and the consumer kept its place in the group
        # An outage is nobody's fault (the topic also holds the test before's events).
        assert not [row for row in await parked(engine) if row.key.startswith("blink")]
        ours = [account for account in await welcomed(engine) if account in wanted]
        assert sorted(ours) == sorted(wanted)  # each applied once
        retried = REGISTRY.get_sample_value(
            "tavla_consumer_batches_retried_total",
            {"service": "isolation", "consumer": consumer.name},
        )
        assert retried is not None and retried >= 1
    finally:
        consumer.stop()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_a_replay_poll_runs_its_statements_on_their_own_and_still_claims(
    database: Any,
) -> None:
    """A poll's claim and reloads send no BEGIN, COMMIT or ROLLBACK (asyncpg's query log),
    still claim what an operator asked to replay, and leave the pooled connection
    transactional for the next user (a rolled-back insert stays out)."""
    _, url = database
    engine = create_async_engine(url, pool_size=1, max_overflow=0)  # one connection, reused
    sent: list[str] = []

    def log_queries(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.driver_connection.add_query_logger(
            lambda record: sent.append(record.query.split()[0].rstrip(";").upper())
        )

    event.listen(engine.sync_engine, "connect", log_queries)
    sessions = async_sessionmaker(engine, expire_on_commit=False)
    consumer = EventConsumer(
        service="isolation", name=f"poll-{uuid.uuid4().hex[:8]}", sessions=sessions,
        consumer_factory=lambda: (_ for _ in ()).throw(AssertionError("no broker")),
        handlers={REGISTERED: welcome}, clock=SystemClock(),
    )  # fmt: skip
    try:
        await consumer.serve_replays()  # nothing asked: the claim and the reloads alone
        await asyncio.sleep(0)  # asyncpg calls its query loggers soon after, not at once
        assert not {"BEGIN", "COMMIT", "ROLLBACK"} & set(sent), sent

        async with sessions() as session, session.begin():  # a park an operator asked to replay
            await session.execute(
                parked_event_row.insert().values(
                    consumer=consumer.name, topic=TOPIC, partition=0, offset=1, key="k",
                    event_id="e-1", ce_type=REGISTERED, payload=b"", headers={},
                    reason="malformed", error="no headers", attempts=0,
                    parked_at=datetime.now(UTC), replay_requested_at=datetime.now(UTC),
                )
            )  # fmt: skip
        assert await consumer.serve_replays() == 0  # claimed; still malformed, so kept
        async with engine.connect() as connection:
            requested = await connection.scalar(
                select(parked_event_row.c.replay_requested_at).where(
                    parked_event_row.c.consumer == consumer.name
                )
            )
        assert requested is None  # the claim committed by itself

        async with sessions() as session:  # the same connection, back in a transaction
            await session.execute(welcomes.insert().values(account_id="rolled-back"))
            await session.rollback()
        assert "rolled-back" not in await welcomed(engine)
        await asyncio.sleep(0)
        assert sent[-2:] == ["BEGIN", "ROLLBACK"]  # the log sees a transaction's, for contrast
    finally:
        await engine.dispose()


def excluded(key: str) -> Envelope:
    """An accounts event the welcome consumer has no handler for."""
    message = events_pb2.AccountSelfExcluded(account_id=key)
    return Envelope.wrap(topic=TOPIC, key=key, message=message, source="accounts",
                         now=datetime.now(UTC))  # fmt: skip


async def test_batches_of_skipped_events_are_committed_with_the_next_applied_one(
    database: Any, kafka_broker: Any
) -> None:
    """``skipped_commit_seconds``: batches with nothing to apply cost no commit of their own;
    their offsets go with the next batch applied, or when the consumer stops."""
    engine, _ = database
    run = uuid.uuid4().hex[:8]
    consumer, group, task = await _skipping_consumer(engine, kafka_broker.bootstrap, run, 3600.0)
    try:
        skipped = await publish(kafka_broker.bootstrap, [excluded(f"x{n}-{run}") for n in range(4)])
        await eventually(lambda: _read_all(consumer.name), "the skipped events were not read")
        await asyncio.sleep(1.5)  # a batch committed on its own would be by now
        assert not await consumed_past(kafka_broker.bootstrap, group, TOPIC, skipped)

        applied = await publish(kafka_broker.bootstrap, [registered(f"then-{run}", f"then-{run}")])
        await eventually(
            lambda: consumed_past(kafka_broker.bootstrap, group, TOPIC, skipped + applied),
            "the applied batch did not commit the skipped ones' offsets with its own",
        )
        last = await publish(kafka_broker.bootstrap, [excluded(f"y-{run}")])
        await asyncio.sleep(1.5)  # fetched (the gauge may still show the backlog before it)
        await eventually(lambda: _read_all(consumer.name), "the last skipped event was not read")
        assert not await consumed_past(kafka_broker.bootstrap, group, TOPIC, last)
    finally:
        consumer.stop()
        await asyncio.wait_for(task, 30)
    assert await consumed_past(kafka_broker.bootstrap, group, TOPIC, last)  # committed at stop


async def test_skipped_events_on_a_quiet_topic_are_committed_once_their_time_is_up(
    database: Any, kafka_broker: Any
) -> None:
    """With nothing applied after them, skipped batches are committed ``skipped_commit_seconds``
    after the last commit: a quiet topic's group does not stay behind its end."""
    engine, _ = database
    run = uuid.uuid4().hex[:8]
    consumer, group, task = await _skipping_consumer(engine, kafka_broker.bootstrap, run, 1.0)
    try:
        skipped = await publish(kafka_broker.bootstrap, [excluded(f"q{n}-{run}") for n in range(3)])
        await eventually(
            lambda: consumed_past(kafka_broker.bootstrap, group, TOPIC, skipped),
            "skipped events on a quiet topic were never committed",
        )
    finally:
        consumer.stop()
        await asyncio.wait_for(task, 30)


async def _skipping_consumer(
    engine: Any, bootstrap: str, run: str, skipped_commit_seconds: float
) -> tuple[EventConsumer, str, asyncio.Task[None]]:
    """The welcome consumer with ``skipped_commit_seconds``, running, its first event applied.

    Its group starts past the module's earlier events: one of them (a poison event, parked
    after its retries) applied in a later batch would commit the skipped ones with it.
    """
    group = f"skipping-{run}"
    consumer = _welcome_consumer(
        engine, bootstrap, group, group,
        gather_ms=200, skipped_commit_seconds=skipped_commit_seconds,
    )  # fmt: skip
    consumer.trust(event_verifier())
    await skip_backlog(bootstrap, group, TOPIC, events_pb2.AccountSelfExcluded(account_id=run))
    task = asyncio.create_task(consumer.run())
    await publish(bootstrap, [registered(f"first-{run}", f"first-{run}")])
    await eventually(lambda: _has(engine, {f"first-{run}"}), "the first event not applied")
    return consumer, group, task


async def _read_all(consumer: str) -> bool:
    backlog = REGISTRY.get_sample_value(
        "tavla_consumer_lag", {"service": "isolation", "consumer": consumer, "topic": TOPIC}
    )
    return backlog == 0


def _welcome_consumer(
    engine: Any,
    bootstrap: str,
    name: str,
    group: str,
    *,
    gather_ms: int | None = None,
    **options: Any,
) -> EventConsumer:
    """The welcome handler's consumer of ``TOPIC`` in ``group`` (``options``: the consumer's)."""
    return EventConsumer(
        service="isolation",
        name=name,
        sessions=async_sessionmaker(engine, expire_on_commit=False),
        consumer_factory=lambda: make_consumer(
            KafkaConnection(bootstrap), group=group, topics=[TOPIC], gather_ms=gather_ms
        ),
        handlers={REGISTERED: welcome},
        clock=SystemClock(),
        **options,
    )
