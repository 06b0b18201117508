"""How often a consumer polls for replay requests: every ``replay_poll_seconds`` while it
knows of open parks, every ``replay_idle_poll_seconds`` while it knows of none.

An operator can only ask to replay a park that exists, and the replica that parked it (or
one that starts, or takes its partitions over, and reloads the open parks) knows of it and
polls at the short interval; a replica with nothing parked need not poll every few
seconds, which every consumer of every idle process did.
"""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import async_sessionmaker

from services.kit.clock import SystemClock
from services.kit.db import make_engine
from services.kit.events.consumer import Delivery, EventConsumer
from services.kit.events.envelope import ReceivedEvent
from services.kit.events.tables import event_metadata, parked_event_row, parked_metadata
from tests.support.services import new_database

TOPIC = "tavla.accounts.v1"
SHORT, IDLE = 5.0, 30.0


@pytest.fixture
async def sessions(postgres_server: Any) -> Any:
    engine = make_engine(postgres_server.url(new_database(postgres_server, "polls")))
    async with engine.begin() as connection:
        for metadata in (event_metadata, parked_metadata):
            await connection.run_sync(metadata.create_all)
    yield async_sessionmaker(engine, expire_on_commit=False)
    await engine.dispose()


async def unused(session: Any, event: ReceivedEvent) -> None:
    raise AssertionError("nothing is applied here")


def replica(sessions: Any, name: str) -> EventConsumer:
    return EventConsumer(
        service="polls", name=name, sessions=sessions,
        consumer_factory=lambda: (_ for _ in ()).throw(AssertionError("no broker")),
        handlers={"tavla.accounts.v1.AccountRegistered": unused}, clock=SystemClock(),
        replay_poll_seconds=SHORT, replay_idle_poll_seconds=IDLE,
    )  # fmt: skip


def next_poll_in(consumer: EventConsumer) -> float:
    return consumer._next_replay_poll - time.monotonic()


def malformed(offset: int) -> Delivery:
    """A record without CloudEvents headers: parked as malformed, as the broker would give it."""
    return Delivery(TOPIC, 0, offset, "k", b"", {}, None, "no CloudEvents headers")


async def test_a_consumer_with_nothing_parked_polls_for_replays_at_the_idle_interval(
    sessions: Any,
) -> None:
    name = f"polls-{uuid.uuid4().hex[:8]}"
    first, second = replica(sessions, name), replica(sessions, name)
    await first._serve_replays_when_due()  # nothing parked anywhere
    assert IDLE - 1 < next_poll_in(first) <= IDLE

    # The first replica parks a record: it polls at the short interval from now on.
    await first.take(malformed(offset=7))
    assert next_poll_in(first) <= SHORT
    first._next_replay_poll = 0.0  # due now: the poll reloads and still finds the park
    await first._serve_replays_when_due()
    assert SHORT - 1 < next_poll_in(first) <= SHORT

    # Another replica (same consumer) starting now reloads the open parks: short too.
    await second.refresh_parked()
    await second._serve_replays_when_due()
    assert SHORT - 1 < next_poll_in(second) <= SHORT

    # Once the park is closed (discarded by an operator), both go back to the idle one.
    async with sessions() as session, session.begin():
        await session.execute(
            parked_event_row.update()
            .where(parked_event_row.c.consumer == f"polls.{name}")
            .values(resolved_at=datetime.now(UTC), resolution="discarded")
        )
    for consumer in (first, second):
        consumer._next_replay_poll = 0.0
        await consumer._serve_replays_when_due()
        assert IDLE - 1 < next_poll_in(consumer) <= IDLE
