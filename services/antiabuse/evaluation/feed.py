"""The held-out population's facts applied to the real anti-abuse consumer, batched.

``heldout.py`` builds the events the services would publish; here they go, in time
order, through the handlers of the anti-abuse facts consumer
(:class:`services.antiabuse.consumers.FactHandlers`, the detection lock and the alert
path included) on a real PostgreSQL with the service's migrations, a few hundred
events to a transaction, the consumer's clock set to each event's time (a month runs
in minutes). What is left out against the deployed service: the broker, the inbox and
the outbox relay (their exactly-once is tested elsewhere, and a replayed event is a
no-op). The alerts are read from the outbox (every ComplianceAlert the service would
have published, each update included), the pair restrictions from their table, and the
automatic freezes are the operator's default policy (``cases/policy.py``'s
``AutoPolicy``) applied to each published alert, as its consumer does.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine

from services.antiabuse.alerting import ALERTS_TOPIC
from services.antiabuse.cases.policy import DEFAULT_RULES, AutoPolicy
from services.antiabuse.consumers import FactHandlers
from services.antiabuse.evaluation.heldout import START, World
from services.antiabuse.tables import pair_restrictions
from services.kit.clock import ManualClock
from services.kit.events.envelope import Envelope, ReceivedEvent
from services.kit.events.tables import outbox_row
from services.kit.migrate import upgrade_async
from tavla.antiabuse.v1 import events_pb2

BATCH = 200
Progress = Callable[[str], None]


@dataclass(frozen=True)
class Outcome:
    alerts: list[events_pb2.ComplianceAlert]
    frozen: set[str]  # accounts the default policy freezes automatically
    restricted: set[str]  # accounts in a pair restriction
    seconds: float


async def run(world: World, database_url: str, progress: Progress) -> Outcome:
    """Apply every fact of ``world`` on the anti-abuse database at ``database_url``
    (migrated here; a fresh database, since alerts are read back from its outbox)."""
    await upgrade_async("antiabuse", database_url)
    engine = create_async_engine(database_url)
    sessions = async_sessionmaker(engine, expire_on_commit=False)
    clock = ManualClock(START)
    handlers = FactHandlers(clock, "antiabuse").table()
    started = time.monotonic()
    facts = world.facts
    try:
        for first in range(0, len(facts), BATCH):
            async with sessions.begin() as session:
                for fact in facts[first:first + BATCH]:
                    if fact.at > clock.now():
                        clock.set(fact.at)
                    envelope = Envelope.wrap(topic=fact.topic, key=fact.key,
                                             message=fact.message, source="heldout",
                                             now=fact.at)
                    handler = handlers.get(envelope.ce_type)
                    if handler is not None:
                        await handler(session, ReceivedEvent(
                            event_id=envelope.event_id, ce_type=envelope.ce_type,
                            source="heldout", topic=fact.topic, key=fact.key,
                            payload=envelope.payload, headers=envelope.headers))
            done = min(len(facts), first + BATCH)
            if done % (BATCH * 25) == 0 or done == len(facts):
                progress(f"{done}/{len(facts)} facts applied "
                         f"({time.monotonic() - started:.0f}s, up to {clock.now():%d %b})")
        async with sessions() as session:
            payloads = (await session.execute(
                select(outbox_row.c.payload).where(outbox_row.c.topic == ALERTS_TOPIC)
                .order_by(outbox_row.c.seq))).scalars().all()
            pairs = (await session.execute(select(
                pair_restrictions.c.low_account_id, pair_restrictions.c.high_account_id))).all()
    finally:
        await engine.dispose()
    alerts = [events_pb2.ComplianceAlert.FromString(p) for p in payloads]
    policy = AutoPolicy.parse(DEFAULT_RULES)
    frozen = {a for alert in alerts if policy.freezes(alert) for a in alert.subject_account_ids}
    restricted = {a for pair in pairs for a in pair}
    return Outcome(alerts, frozen, restricted, time.monotonic() - started)
