"""An anti-abuse process killed at the facts consumer's worst moment raises each alert and
each pair verdict once.

Real ``tavla serve antiabuse`` processes on the real PostgreSQL and broker. The
fail point ``antiabuse.facts.after_db_commit`` SIGKILLs the process right after
a batch of facts is committed (inbox rows, sightings, alerts and verdicts in the
outbox) and before the batch's Kafka offsets are: the next process gets the batch
again and must not raise or publish anything twice.
"""

from __future__ import annotations

import uuid
from typing import Any

from tavla.antiabuse.v1 import events_pb2
from tests.support import antiabuse as support
from tests.support.kafka import committed_offsets, publish
from tests.support.processes import ServeProcesses, service_environment
from tests.support.ratings import query
from tests.support.services import new_database

KILL_AFTER_FACTS_COMMIT = "antiabuse.facts.after_db_commit=kill"
ALERT = events_pb2.ComplianceAlert.DESCRIPTOR.full_name
VERDICT = events_pb2.PairRestricted.DESCRIPTOR.full_name
ACCOUNTS = "tavla.accounts.v1"


async def test_killed_between_facts_commit_and_offset_commit_alerts_once(
    postgres_server: Any, kafka_broker: Any, serve: ServeProcesses, accounts_service: Any
) -> None:
    url = postgres_server.url(new_database(postgres_server, "antiabuse_crash"))
    bootstrap = kafka_broker.bootstrap
    environment = service_environment(
        "antiabuse", url, bootstrap, accounts_address=accounts_service.address
    )
    # Whatever earlier tests left on the streams is consumed first: the next batch is ours.
    first = await serve.start("antiabuse", environment)
    await support.all_consumed(bootstrap)
    await first.kill()

    a, b, c = sorted(str(uuid.uuid4()) for _ in range(3))
    device, net = f"dev-{uuid.uuid4().hex[:8]}", support.fresh_network()
    ring = [  # one person's three accounts, made at one computer together
        *(support.registered(x, f"{x}@example.com", "ring") for x in (a, b, c)),
        support.logged_in(a, device, f"{net}.1"),
        support.logged_in(b, device, f"{net}.2"),
        support.logged_in(c, device, f"{net}.3"),
    ]
    placed = await publish(bootstrap, ring)
    armed = serve.launch("antiabuse", {**environment, "TAVLA_FAILPOINTS": KILL_AFTER_FACTS_COMMIT})
    await armed.wait_killed(timeout=120)

    # Killed at the worst moment: some login is applied, its offset is not committed.
    committed = await committed_offsets(bootstrap, support.FACTS_GROUP, ACCOUNTS)
    seen = {row["account_id"] for row in await query(url, "SELECT account_id FROM sightings")}
    applied = [where for event, where in zip(ring, placed, strict=True) if event.key in seen]
    assert applied, "the kill came before any login was committed"
    for partition, offset in applied:
        assert committed.get(partition, -1) <= offset, "the batch's offsets were committed"

    # The next process gets the batch again: each alert and each verdict exists once.
    await serve.start("antiabuse", environment)
    await support.all_consumed(bootstrap, [ACCOUNTS])
    alerts = await query(url, "SELECT alert_id FROM alerts")
    published = await query(url, "SELECT key FROM outbox WHERE ce_type = $1", ALERT)
    assert sorted(row["key"] for row in published) == sorted(row["alert_id"] for row in alerts)
    ring_alerts = await query(
        url,
        "SELECT alert_id FROM alert_subjects GROUP BY alert_id "
        "HAVING array_agg(account_id::text ORDER BY account_id) = $1::text[]",
        [a, b, c],
    )
    assert len(ring_alerts) == 1  # one alert names the whole ring
    verdicts = await query(url, "SELECT key FROM outbox WHERE ce_type = $1", VERDICT)
    assert sorted(row["key"] for row in verdicts) == [f"{a}:{b}", f"{a}:{c}", f"{b}:{c}"]
