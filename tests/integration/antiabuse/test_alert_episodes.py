"""Alerts that escalate and re-arm, through the real facts consumer and policy consumer
(real PostgreSQL and broker; the wallet's and game's events built with their protos).

- new evidence on an open alert updates it (one alert, its history one step longer per
  settlement, the severity raised when the evidence is stronger: the pair turns out to
  share a device); the same events
  delivered again, under their ids or new ones, change nothing;
- a dismissed chip-dumping alert fires again when dumping continues: nothing while the
  re-arm window (24 h by default) runs, a new alert after it, and the operator's policy
  freezes the wallets again.

The service's clock runs a settable offset ahead of real time, so "a day later" needs
no waiting. The expected histories are written out from the scenario: games 1 to 10
make the flow (10 straight losses, 60.00 net: 1/1024 by fair play, MEDIUM), games 11
and 12 add to it, and game 13, once the pair is seen on one device (one person), makes
it CRITICAL.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from services.antiabuse.main import wiring
from services.kit.events.envelope import Envelope
from tavla.antiabuse.v1 import antiabuse_pb2, antiabuse_pb2_grpc
from tavla.antiabuse.v1 import events_pb2 as antiabuse_events
from tests.support import antiabuse as support
from tests.support.kafka import publish
from tests.support.services import (
    RunningService,
    fast_settings,
    new_database,
    start_service,
    stop_service,
)

STAKE = 600  # minor units a game: 10 straight losses are 60.00 net (MEDIUM by chance alone)
MEDIUM = antiabuse_events.SEVERITY_MEDIUM
CRITICAL = antiabuse_events.SEVERITY_CRITICAL
FREEZE = antiabuse_events.SANCTION_KIND_FREEZE_WALLET


class ShiftedClock:
    """Real time plus an offset a test moves forward."""

    def __init__(self) -> None:
        self.offset = timedelta(0)

    def now(self) -> datetime:
        return datetime.now(UTC) + self.offset


@pytest.fixture(scope="module")
def clock() -> ShiftedClock:
    return ShiftedClock()


@pytest.fixture(scope="module")
async def antiabuse(
    postgres_server: Any, kafka_broker: Any, clock: ShiftedClock
) -> AsyncIterator[RunningService]:
    database = new_database(postgres_server, "antiabuse")
    service = await start_service(
        fast_settings("antiabuse", postgres_server.url(database), kafka_broker.bootstrap),
        wiring, clock,
    )
    yield service
    await stop_service(service)


def dumped(giver: str, receiver: str, games: int) -> list[Envelope]:
    """``games`` money games the giver loses to the receiver, as game and wallet publish them."""
    events: list[Envelope] = []
    for _ in range(games):
        events += support.played(str(uuid.uuid4()), receiver, giver, STAKE)
    return events


async def dumping_alerts(
    stub: antiabuse_pb2_grpc.AntiAbuseServiceStub, giver: str
) -> list[antiabuse_events.ComplianceAlert]:
    return [a for a in await support.alerts_about(stub, giver) if a.detector == "chip_dumping"]


async def until(check: Any, timeout: float = 90) -> Any:
    """Poll ``check`` (an async callable) until it answers something true; that answer."""
    async with asyncio.timeout(timeout):
        while not (found := await check()):
            await asyncio.sleep(0.3)
    return found


async def get(stub: antiabuse_pb2_grpc.AntiAbuseServiceStub,
              alert_id: str) -> antiabuse_events.ComplianceAlert:
    return await stub.GetAlert(antiabuse_pb2.GetAlertRequest(alert_id=alert_id),
                               metadata=support.officer())


async def test_new_evidence_updates_the_open_alert_and_replays_change_nothing(
    stub: antiabuse_pb2_grpc.AntiAbuseServiceStub, kafka_broker: Any
) -> None:
    bootstrap = kafka_broker.bootstrap
    giver, receiver = str(uuid.uuid4()), str(uuid.uuid4())
    first = dumped(giver, receiver, 10)
    await publish(bootstrap, first)
    alert = (await until(lambda: dumping_alerts(stub, giver)))[0]
    assert alert.severity == MEDIUM

    later = dumped(giver, receiver, 2)
    await publish(bootstrap, later)
    await support.all_consumed(bootstrap)
    # The pair logs in from one device, made there together (one person), then dumps once
    # more.
    device, net = f"dev-{uuid.uuid4().hex[:8]}", support.fresh_network()
    await publish(bootstrap, [support.registered(giver, f"{giver}@example.com", "gia"),
                              support.registered(receiver, f"{receiver}@example.com", "rex"),
                              support.logged_in(giver, device, f"{net}.1"),
                              support.logged_in(receiver, device, f"{net}.2")])
    await support.all_consumed(bootstrap, ["tavla.accounts.v1"])
    last = dumped(giver, receiver, 1)
    await publish(bootstrap, last)

    async def escalated() -> antiabuse_events.ComplianceAlert | None:
        current = await get(stub, alert.alert_id)
        # CRITICAL, and the policy's freeze published (so nothing changes it afterwards).
        return current if current.severity == CRITICAL and current.accounts_frozen else None

    updated = await until(escalated)
    assert [a.alert_id for a in await dumping_alerts(stub, giver)] == [alert.alert_id]
    assert updated.status == antiabuse_events.ALERT_STATUS_OPEN
    assert updated.raised_at == alert.raised_at
    assert updated.updated_at.ToDatetime() > alert.updated_at.ToDatetime()
    steps = [(h.sequence, h.action, h.severity) for h in updated.history]
    assert steps == [(1, "raised", MEDIUM), (2, "updated", MEDIUM), (3, "updated", MEDIUM),
                     (4, "escalated", CRITICAL)]
    games = [h.evidence[0].details["games"] for h in updated.history]
    assert games == ["10", "11", "12", "13"]
    assert [e.details["net_minor"] for e in updated.evidence] == [str(13 * STAKE)]
    assert not (await support.alerts_about(stub, giver))[0].history  # GetAlert's only

    # The same events again, under their own ids (the inbox) and under new ones (the facts).
    again = [replace(e, event_id=(new := str(uuid.uuid4())), headers={**e.headers, "ce_id": new})
             for e in first + later + last]
    await publish(bootstrap, first + later + last + again)
    await support.all_consumed(bootstrap)
    assert await get(stub, alert.alert_id) == updated
    assert [a.alert_id for a in await dumping_alerts(stub, giver)] == [alert.alert_id]


async def test_a_dismissed_dumping_alert_fires_again_when_dumping_continues(
    stub: antiabuse_pb2_grpc.AntiAbuseServiceStub, kafka_broker: Any, clock: ShiftedClock
) -> None:
    """A pair linked as one person (one device) dumping: CRITICAL, frozen by the policy;
    an officer clears it; the dumping goes on; a day later it is alerted and frozen again."""
    bootstrap = kafka_broker.bootstrap
    giver, receiver = sorted(str(uuid.uuid4()) for _ in range(2))
    device, net = f"dev-{uuid.uuid4().hex[:8]}", support.fresh_network()
    await publish(bootstrap, [support.registered(giver, f"{giver}@example.com", "gia"),
                              support.registered(receiver, f"{receiver}@example.com", "rex"),
                              support.logged_in(giver, device, f"{net}.1"),
                              support.logged_in(receiver, device, f"{net}.2")])
    # The link first, as logins come before games (topics are read concurrently).
    await support.all_consumed(bootstrap, ["tavla.accounts.v1"])
    await publish(bootstrap, dumped(giver, receiver, 4))
    first = (await until(lambda: dumping_alerts(stub, giver)))[0]
    assert first.severity == CRITICAL

    async def policy_case(alert_id: str) -> antiabuse_pb2.Case | None:
        cases = await stub.ListCases(antiabuse_pb2.ListCasesRequest(alert_id=alert_id),
                                     metadata=support.officer())
        return next((c for c in cases.cases if len(c.sanctions) == 2), None)

    case = await until(lambda: policy_case(first.alert_id))
    assert case.opened_by == "policy"
    assert sorted((s.kind, s.account_id) for s in case.sanctions) == [
        (FREEZE, giver), (FREEZE, receiver)]
    await stub.ResolveCase(antiabuse_pb2.ResolveCaseRequest(
        case_id=case.case_id, outcome=antiabuse_pb2.CASE_STATUS_CLEARED,
        note="friends settling a bet"), metadata=support.officer("officer-ann"))
    dismissed = await get(stub, first.alert_id)
    assert dismissed.status == antiabuse_events.ALERT_STATUS_DISMISSED

    # Within the re-arm window: what the officer just read, nothing new.
    await publish(bootstrap, dumped(giver, receiver, 1))
    await support.all_consumed(bootstrap)
    assert [a.alert_id for a in await dumping_alerts(stub, giver)] == [first.alert_id]
    assert await get(stub, first.alert_id) == dismissed

    clock.offset += timedelta(hours=25)
    await publish(bootstrap, dumped(giver, receiver, 1))

    async def rearmed() -> antiabuse_events.ComplianceAlert | None:
        found = [a for a in await dumping_alerts(stub, giver) if a.alert_id != first.alert_id]
        return found[0] if found else None

    second = await until(rearmed)
    assert second.severity == CRITICAL and second.previous_alert_id == first.alert_id
    assert [e.details["games"] for e in second.evidence if e.kind == "one_directional_flow"] == [
        "6"]
    history = (await get(stub, second.alert_id)).history
    assert [h.action for h in history] == ["raised"]
    assert history[0].detail.startswith(f"re-armed: the behaviour went on after alert "
                                        f"{first.alert_id} was dismissed")
    again = await until(lambda: policy_case(second.alert_id))
    assert again.case_id != case.case_id and again.opened_by == "policy"
    assert again.status == antiabuse_pb2.CASE_STATUS_OPEN
    assert (await get(stub, first.alert_id)).status == antiabuse_events.ALERT_STATUS_DISMISSED

