"""The facts consumer's sighting groups (real PostgreSQL): a batch's registrations and
logins applied many to a transaction, exactly once.

- a batch of 40 accounts on one /64 (their registrations and logins) and a pair sharing
  a device, delivered as the broker hands a batch over: every sighting recorded, the
  pair alerted and restricted once, in groups rather than a transaction per event; the
  same batch delivered again (a crash before its offsets were committed) changes no
  row, no alert and publishes nothing; the same facts under new event ids neither;
- one event id twice in one group: applied once;
- an event the database refuses (an account id longer than the column) fails its group:
  every other event of it is applied one by one, the refused one is parked.

The events are built and signed as their producers publish them and handed to the
consumer's ``handle_batch`` (the broker plays no part in what is tested here).
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker

from services.antiabuse.consumers import facts_consumer
from services.kit.clock import SystemClock
from services.kit.db import make_engine
from services.kit.events.consumer import Delivery, EventConsumer
from services.kit.events.envelope import Envelope, ReceivedEvent
from services.kit.events.grouped import GROUPS
from tavla.antiabuse.v1 import events_pb2 as antiabuse_events
from tests.support import antiabuse as support
from tests.support.kafka import event_verifier, kafka_headers
from tests.support.services import migrated_database

RESTRICTED = antiabuse_events.PairRestricted.DESCRIPTOR.full_name
FACTS = "antiabuse.facts"


@pytest.fixture
async def consumer(postgres_server: Any) -> AsyncIterator[tuple[AsyncEngine, EventConsumer]]:
    url = postgres_server.url(await migrated_database(postgres_server, "groups", "antiabuse"))
    engine = make_engine(url)
    facts = facts_consumer(sessions=async_sessionmaker(engine, expire_on_commit=False),
                           consumer_factory=_no_broker, clock=SystemClock())  # fmt: skip
    facts.trust(event_verifier())
    yield engine, facts
    await engine.dispose()


def _no_broker() -> Any:
    raise AssertionError("this consumer is handed its events")


def delivered(envelopes: Sequence[Envelope]) -> list[Delivery]:
    """The envelopes signed by their producers, as one batch of one partition."""
    events = [ReceivedEvent.from_kafka(e.topic, e.key.encode(), e.payload, kafka_headers(e))
              for e in envelopes]  # fmt: skip
    return [Delivery.of(event, offset=n) for n, event in enumerate(events)]


def renamed(envelope: Envelope) -> Envelope:
    """The same fact under a new event id (a producer that published it twice)."""
    event_id = str(uuid.uuid4())
    return replace(envelope, event_id=event_id, headers={**envelope.headers, "ce_id": event_id})


def shared_network(count: int) -> tuple[list[str], list[Envelope]]:
    """``count`` accounts registering and logging in on one public /64, a device each."""
    block = "2a02:" + ":".join(f"{random.randrange(0x100, 0xFFFF):x}" for _ in range(3))
    members = [str(uuid.uuid4()) for _ in range(count)]
    events = [support.registered(a, f"{a}@example.com", "Player") for a in members]
    events += [support.logged_in(a, f"dev-{a[:12]}", f"{block}::{i + 1:x}")
               for i, a in enumerate(members)]  # fmt: skip
    return members, events


async def snapshot(engine: AsyncEngine) -> dict[str, list[Any]]:
    """Every row a fact, an alert or a verdict leaves (the outbox by its events' content)."""
    queries = {
        "sightings": "SELECT account_id, kind, value, first_seen, last_seen FROM sightings",
        "alerts": "SELECT alert_id, severity, evidence_digest, updated_at FROM alerts",
        "history": "SELECT alert_id, sequence FROM alert_history",
        "restrictions": "SELECT low_account_id, high_account_id FROM pair_restrictions",
        "outbox": "SELECT ce_type, key FROM outbox",
        "inbox": f"SELECT event_id FROM inbox WHERE consumer = '{FACTS}'",
        "parked": "SELECT event_id, reason FROM parked_events",
    }
    async with engine.connect() as connection:
        return {name: sorted(tuple(row) for row in (await connection.execute(text(sql))).all())
                for name, sql in queries.items()}  # fmt: skip


def groups(outcome: str) -> float:
    return GROUPS.labels(FACTS, outcome)._value.get()


async def test_a_batch_delivered_twice_counts_nothing_twice(
    consumer: tuple[AsyncEngine, EventConsumer],
) -> None:
    engine, facts = consumer
    _, nat = shared_network(40)
    first, second = sorted(str(uuid.uuid4()) for _ in range(2))
    device, net = f"dev-{uuid.uuid4().hex[:8]}", support.fresh_network()
    pair = [support.registered(first, f"{first}@example.com", "Anna"),
            support.registered(second, f"{second}@example.org", "Bert"),
            support.logged_in(first, device, f"{net}.1"),
            support.logged_in(second, device, f"{net}.2")]  # fmt: skip
    batch = nat + pair
    committed = groups("committed")

    await facts.handle_batch(delivered(batch))
    once = await snapshot(engine)

    # A key's events go one after another, different keys' together: two logins per
    # account, so a few groups, not a transaction per event.
    assert 2 <= groups("committed") - committed <= 4
    assert len(once["inbox"]) == len(batch)
    assert len(once["sightings"]) == 40 * 5 + 2 * 2 + 2 * 3  # mailbox, name, device, address, /64
    assert len(once["alerts"]) == 1 and len(once["restrictions"]) == 1
    assert once["restrictions"] == [(first, second)]
    assert [ce for ce, _ in once["outbox"]].count(RESTRICTED) == 1
    assert once["parked"] == []

    await facts.handle_batch(delivered(batch))  # redelivered: its offsets were not committed
    assert await snapshot(engine) == once

    await facts.handle_batch(delivered([renamed(e) for e in batch]))  # the same facts again
    again = await snapshot(engine)
    assert len(again["inbox"]) == 2 * len(batch)
    assert {k: v for k, v in again.items() if k != "inbox"} == {
        k: v for k, v in once.items() if k != "inbox"
    }


async def test_one_event_twice_in_a_group_is_applied_once(
    consumer: tuple[AsyncEngine, EventConsumer],
) -> None:
    engine, facts = consumer
    account, net = str(uuid.uuid4()), support.fresh_network()
    event = delivered([support.logged_in(account, "dev-twice", f"{net}.7")])[0].event
    assert event is not None

    applied = await asyncio.gather(facts.apply(event), facts.apply(event))

    assert sorted(applied) == [False, True]
    rows = await snapshot(engine)
    assert rows["inbox"] == [(event.event_id,)]
    assert len([r for r in rows["sightings"] if r[0] == account]) == 3


async def test_an_event_the_database_refuses_fails_no_other_event_of_its_group(
    consumer: tuple[AsyncEngine, EventConsumer],
) -> None:
    engine, facts = consumer
    members, nat = shared_network(10)
    refused = support.logged_in("x" * 65, "dev-long", "2001:db8::1")  # past the id column
    failed = groups("failed")

    await facts.handle_batch(delivered([*nat[:10], refused, *nat[10:]]))

    rows = await snapshot(engine)
    assert groups("failed") > failed  # its group fell back to one event at a time
    assert {r[0] for r in rows["sightings"]} == set(members)
    assert len(rows["sightings"]) == 10 * 5
    assert rows["parked"] == [(refused.event_id, "handler")]
    assert len(rows["inbox"]) == len(nat)
