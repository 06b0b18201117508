"""Two replicas of the facts consumer on one database (real PostgreSQL), events of one
component applied by both at once: per-account locks keep detection exact, and a large
component holds up nobody else.

- two accounts seen with one new device at once (neither has an account the other
  locks: the device itself is locked): one alert naming both;
- a ring whose logins link it through a chain of devices (each account shares one with
  the next), applied concurrently by two consumers: exactly one alert names the whole
  ring, no two alerts name the same accounts, each pair is restricted once;
- ten settlements of one pair, the loser losing all ten (1/1024 by chance), applied
  concurrently by two consumers: one chip-dumping alert, not two and not none;
- while a transaction holds the locks of a 1000-account component (as a detection
  of it does), an unrelated account's login is applied at once, and a login of one of
  the component's accounts waits until the transaction ends.

The events are built as their producers publish them (tests/support/antiabuse.py) and
handed to each consumer's ``apply`` (the inbox transaction and the handler, as a
delivery from the broker gets; the broker plays no part in what is tested here).
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from services.antiabuse import tables as t
from services.antiabuse.consumers import facts_consumer
from services.antiabuse.store import AccountLocks
from services.kit.clock import SystemClock
from services.kit.db import make_engine
from services.kit.events.consumer import EventConsumer
from services.kit.events.envelope import Envelope, ReceivedEvent
from services.kit.events.tables import outbox_row
from tavla.antiabuse.v1 import events_pb2 as antiabuse_events
from tests.support import antiabuse as support
from tests.support.services import migrated_database

RESTRICTED = antiabuse_events.PairRestricted.DESCRIPTOR.full_name


@pytest.fixture
async def replicas(postgres_server: Any) -> AsyncIterator[tuple[Sessions, list[EventConsumer]]]:
    url = postgres_server.url(await migrated_database(postgres_server, "locks", "antiabuse"))
    engines = [make_engine(url) for _ in range(3)]
    sessions = [async_sessionmaker(engine, expire_on_commit=False) for engine in engines]
    consumers = [
        facts_consumer(sessions=s, consumer_factory=_no_broker, clock=SystemClock())
        for s in sessions[:2]
    ]
    yield sessions[2], consumers
    for engine in engines:
        await engine.dispose()


Sessions = async_sessionmaker[AsyncSession]


def _no_broker() -> Any:
    raise AssertionError("these consumers are handed their events")


def received(envelope: Envelope) -> ReceivedEvent:
    return ReceivedEvent.from_kafka(
        envelope.topic, envelope.key.encode(), envelope.payload, envelope.kafka_headers()
    )


def made(accounts: Sequence[str]) -> list[Envelope]:
    """The accounts' sign-ups: made at one computer together with their logins there, one
    person's (a sitting alone is a handover)."""
    return [support.registered(a, f"{a}@example.com", "ring") for a in accounts]


async def apply_split(consumers: list[EventConsumer], envelopes: Sequence[Envelope]) -> None:
    """Every event at once, each by one of the two consumers at random."""
    applied = await asyncio.gather(
        *(random.choice(consumers).apply(received(e)) for e in envelopes)
    )
    assert all(applied)


async def alert_subjects(sessions: Sessions, detector: str) -> list[tuple[str, ...]]:
    """The subjects of each alert of ``detector``, one tuple per alert."""
    async with sessions() as session:
        rows = await session.execute(
            select(t.alert_subjects.c.alert_id, t.alert_subjects.c.account_id)
            .join(t.alerts, t.alerts.c.alert_id == t.alert_subjects.c.alert_id)
            .where(t.alerts.c.detector == detector)
        )
        by_alert: dict[str, list[str]] = {}
        for alert_id, account in rows:
            by_alert.setdefault(alert_id, []).append(account)
    return [tuple(sorted(accounts)) for accounts in by_alert.values()]


async def restricted_pairs(sessions: Sessions, ring: set[str]) -> list[tuple[str, str]]:
    """The pairs of ``ring`` that PairRestricted events in the outbox name, once each time."""
    async with sessions() as session:
        payloads = await session.scalars(
            select(outbox_row.c.payload).where(outbox_row.c.ce_type == RESTRICTED)
        )
        found = [antiabuse_events.PairRestricted.FromString(p) for p in payloads]
    return sorted(
        (v.account_id, v.other_account_id)
        for v in found
        if {v.account_id, v.other_account_id} <= ring
    )


@pytest.mark.parametrize("round_", range(3))
async def test_a_ring_linked_concurrently_by_two_replicas_is_one_alert(
    replicas: tuple[Sessions, list[EventConsumer]], round_: int
) -> None:
    sessions, consumers = replicas
    ring = sorted(str(uuid.uuid4()) for _ in range(8))
    devices = [f"dev-{uuid.uuid4().hex[:8]}" for _ in ring]
    net = support.fresh_network()
    # Account i logs in on device i and device i+1: the ring is a chain of shared devices,
    # so which logins link whom depends on which commit first.
    logins = [support.logged_in(a, devices[i], f"{net}.{i + 1}") for i, a in enumerate(ring)]
    logins += [support.logged_in(a, devices[i + 1], f"{net}.{i + 1}")
               for i, a in enumerate(ring[:-1])]  # fmt: skip
    random.shuffle(logins)

    await apply_split(consumers, made(ring))  # one person's accounts, made together there
    await apply_split(consumers, logins)

    alerts = await alert_subjects(sessions, "multi_accounting")
    mine = [subjects for subjects in alerts if set(subjects) <= set(ring)]
    assert tuple(ring) in mine  # the whole ring, once every login is in
    assert len(mine) == len(set(mine))  # never two alerts naming the same accounts
    expected = sorted((a, b) for i, a in enumerate(ring) for b in ring[i + 1:])
    assert await restricted_pairs(sessions, set(ring)) == expected  # each pair once


@pytest.mark.parametrize("round_", range(5))
async def test_two_accounts_first_seen_on_one_device_at_once_are_one_alert(
    replicas: tuple[Sessions, list[EventConsumer]], round_: int
) -> None:
    sessions, consumers = replicas
    pair = sorted(str(uuid.uuid4()) for _ in range(2))
    device, net = f"dev-{uuid.uuid4().hex[:8]}", support.fresh_network()
    first, second = (support.logged_in(a, device, f"{net}.{i + 1}") for i, a in enumerate(pair))
    await apply_split(consumers, made(pair))  # made together at that computer

    applied = await asyncio.gather(consumers[0].apply(received(first)),
                                   consumers[1].apply(received(second)))  # fmt: skip

    assert all(applied)
    assert (await alert_subjects(sessions, "multi_accounting")).count(tuple(pair)) == 1
    assert await restricted_pairs(sessions, set(pair)) == [tuple(pair)]


async def test_a_pair_settled_concurrently_by_two_replicas_is_one_dumping_alert(
    replicas: tuple[Sessions, list[EventConsumer]],
) -> None:
    sessions, consumers = replicas
    giver, receiver = str(uuid.uuid4()), str(uuid.uuid4())
    # Ten games the giver loses, 1000 cents each: 10,000 net, all one way, 1/1024 by chance.
    settlements = [support.settled(str(uuid.uuid4()), receiver, giver, 1000) for _ in range(10)]

    await apply_split(consumers, settlements)

    alerts = await alert_subjects(sessions, "chip_dumping")
    assert alerts.count(tuple(sorted((giver, receiver)))) == 1


async def test_a_large_component_locked_holds_up_only_its_own_accounts(
    replicas: tuple[Sessions, list[EventConsumer]],
) -> None:
    sessions, consumers = replicas
    component = [str(uuid.uuid4()) for _ in range(1000)]
    stranger = str(uuid.uuid4())
    net = support.fresh_network()
    async with sessions() as session, session.begin():
        # What a detection of the component holds until its transaction ends.
        await AccountLocks(session).take(component)

        unrelated = consumers[0].apply(received(support.logged_in(stranger, "dev-x", f"{net}.9")))
        assert await asyncio.wait_for(unrelated, timeout=30)

        member = asyncio.ensure_future(
            consumers[1].apply(received(support.logged_in(component[0], "dev-y", f"{net}.8")))
        )
        done, _ = await asyncio.wait([member], timeout=2)
        assert not done  # the component's own account waits for the detection
    assert await asyncio.wait_for(member, timeout=30)
    async with sessions() as session:
        seen = await session.scalar(
            select(func.count()).where(t.sightings.c.account_id.in_([stranger, component[0]]))
        )
    assert seen == 6  # each login: its device, its address and the address's /24
