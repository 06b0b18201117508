"""The anti-abuse service on the real PostgreSQL and broker, fed events as the other
services publish them (built with their protos, keyed and headed as their outboxes do).

- three accounts (two share a device, all three a /24): one multi-accounting alert
  on `tavla.compliance.alerts.v1` naming the two the device joins, with its evidence,
  and a PairRestricted for them on `tavla.antiabuse.v1`; the third, joined by the /24
  only, is no subject (a network is context), and playing one of them changes
  nothing; once the two the device joins play each other, the alert turns critical
  and names the game;
- a pair whose money flows one way over ten games (1/1024 by chance) is a
  chip-dumping alert;
- honest players sharing nothing, with alternating results, raise nothing;
- the same events replayed (same ids, and again with new ids) change nothing;
- only a compliance officer may list alerts.

The expected figures are written out by hand from the scenario.
"""

from __future__ import annotations

import uuid
from typing import Any

import grpc
import pytest
from google.protobuf.message import Message

from services.kit.events.envelope import Envelope
from tavla.accounts.v1 import events_pb2 as accounts_events
from tavla.antiabuse.v1 import antiabuse_pb2, antiabuse_pb2_grpc
from tavla.antiabuse.v1 import events_pb2 as antiabuse_events
from tests.support import antiabuse as support
from tests.support.antiabuse import alerts_about, wait_for_alert
from tests.support.identity import as_player, bare_channel
from tests.support.kafka import publish
from tests.support.services import (
    RunningService,
)

ALERTS = "tavla.compliance.alerts.v1"
VERDICTS = "tavla.antiabuse.v1"
MULTI = antiabuse_events.ALERT_KIND_MULTI_ACCOUNTING
DUMPING = antiabuse_events.ALERT_KIND_CHIP_DUMPING


def ids(n: int) -> list[str]:
    return [str(uuid.uuid4()) for _ in range(n)]


def alert_decoder(alert_id: str) -> Any:
    def decode(ce_type: str, payload: bytes) -> Message | None:
        if ce_type != antiabuse_events.ComplianceAlert.DESCRIPTOR.full_name:
            return None
        alert = antiabuse_events.ComplianceAlert.FromString(payload)
        return alert if alert.alert_id == alert_id else None

    return decode


def verdicts_for(accounts: set[str]) -> Any:
    def decode(ce_type: str, payload: bytes) -> Message | None:
        if ce_type != antiabuse_events.PairRestricted.DESCRIPTOR.full_name:
            return None
        verdict = antiabuse_events.PairRestricted.FromString(payload)
        return verdict if {verdict.account_id, verdict.other_account_id} <= accounts else None

    return decode


async def verdict_pairs(bootstrap: str, ring: set[str], expected: int) -> list[tuple[str, str]]:
    found = await support.read_topic(
        bootstrap, VERDICTS, verdicts_for(ring), lambda got: len(got) >= expected
    )
    return sorted((v.account_id, v.other_account_id) for v in found)  # type: ignore[attr-defined]


async def test_a_ring_is_flagged_with_its_evidence_and_its_pairs_restricted(
    antiabuse: RunningService, stub: antiabuse_pb2_grpc.AntiAbuseServiceStub, kafka_broker: Any
) -> None:
    bootstrap = kafka_broker.bootstrap
    a, b, c = sorted(ids(3))
    net = support.fresh_network()
    device = f"dev-{uuid.uuid4().hex[:8]}"
    ring_events = [
        support.registered(a, f"{a}@example.com", "ann"),
        support.registered(b, f"{b}@example.com", "bob"),
        support.registered(c, f"{c}@example.com", "cem"),
        support.logged_in(a, device, f"{net}.10"),
        support.logged_in(b, device, f"{net}.20"),  # a's device: a strong link
        support.logged_in(c, f"dev-{uuid.uuid4().hex[:8]}", f"{net}.30"),  # only the /24
    ]
    # a and b first (their alert), then c, whom only the /24 joins to them.
    await publish(bootstrap, ring_events[:5])
    await wait_for_alert(stub, a, [a, b], antiabuse_events.SEVERITY_HIGH)
    await publish(bootstrap, ring_events[5:])
    await support.all_consumed(bootstrap, ["tavla.accounts.v1"])
    assert await alerts_about(stub, c) == []

    alert = await wait_for_alert(stub, a, [a, b], antiabuse_events.SEVERITY_HIGH)
    assert alert.kind == MULTI and alert.detector == "multi_accounting"
    assert alert.status == antiabuse_events.ALERT_STATUS_OPEN
    evidence = {e.kind: e for e in alert.evidence}
    assert evidence["shared_device"].details["value"] == device
    assert evidence["shared_device"].details["accounts"] == f"{a},{b}"
    assert evidence["shared_network"].details["value"] == f"{net}.0/24"
    assert evidence["shared_network"].details["accounts"] == f"{a},{b}"
    assert alert.score == 2.0  # one device and one network link the two

    published = await support.read_topic(
        bootstrap, ALERTS, alert_decoder(alert.alert_id), lambda got: len(got) >= 1
    )
    assert published[0] == alert
    # The pair the device joins is forbidden to sit together, once; c, joined to them by
    # the /24 alone (carrier NAT, a campus), is left to a person reading the alert.
    assert await verdict_pairs(bootstrap, {a, b, c}, 1) == [(a, b)]

    # a and c, joined by the /24 alone, play each other: a weak link is never CRITICAL.
    weak_game = str(uuid.uuid4())
    await publish(bootstrap, [support.game_ended(weak_game, a, c, 500)])
    await support.all_consumed(bootstrap, ["tavla.game.v1"])
    severities = {x.severity for x in await alerts_about(stub, a)}
    assert antiabuse_events.SEVERITY_CRITICAL not in severities
    # a and b (one device) play each other: the ring's alert turns critical, naming the
    # games. (Money between them would make it critical too; the unit tests show that.)
    game_id = str(uuid.uuid4())
    await publish(bootstrap, [support.game_ended(game_id, a, b, 500)])
    critical = await wait_for_alert(stub, a, [a, b], antiabuse_events.SEVERITY_CRITICAL)
    kinds = {e.kind: e for e in critical.evidence}
    assert list(kinds["linked_accounts_played"].game_ids) == [game_id]  # not a and c's
    assert "money_between_linked_accounts" not in kinds

    await publish(bootstrap, [support.disconnected(game_id, b), support.disconnected(game_id, c)])
    await support.all_consumed(bootstrap, ["tavla.game.v1"])
    profile = await stub.GetRiskProfile(
        antiabuse_pb2.GetRiskProfileRequest(account_id=b), metadata=support.officer()
    )
    assert list(profile.linked_account_ids) == [a, c]
    assert profile.risk_score == 100  # the CRITICAL open alert
    assert profile.recent_disconnects == 1

    # Pages of one walk the same alerts, newest first, as one page of all.
    everything = await alerts_about(stub, a)
    assert len(everything) >= 1  # a and b's alert, escalated to critical
    raised = [x.raised_at.ToDatetime() for x in everything]
    assert raised == sorted(raised, reverse=True)
    walked, token = [], ""
    while True:
        page = await stub.ListAlerts(
            antiabuse_pb2.ListAlertsRequest(account_id=a, page_size=1, page_token=token),
            metadata=support.officer(),
        )
        walked += list(page.alerts)
        token = page.next_page_token
        if not token:
            break
    assert [x.alert_id for x in walked] == [x.alert_id for x in everything]

    # Replays: the same events (same ids), then the same facts under new event ids.
    before = await alerts_about(stub, a)
    again = [
        Envelope.wrap(
            topic=e.topic, key=e.key, message=_decode(e), source="accounts", now=e.created_at
        )
        for e in ring_events
    ]
    await publish(bootstrap, ring_events + again)
    await support.all_consumed(bootstrap, ["tavla.accounts.v1"])
    assert sorted(x.alert_id for x in await alerts_about(stub, a)) == sorted(
        x.alert_id for x in before
    )
    assert await verdict_pairs(bootstrap, {a, b, c}, 1) == [(a, b)]


def _decode(envelope: Envelope) -> Message:
    return (
        accounts_events.AccountRegistered.FromString(envelope.payload)
        if (envelope.ce_type.endswith("AccountRegistered"))
        else accounts_events.LoggedIn.FromString(envelope.payload)
    )


async def test_a_one_way_money_flow_is_chip_dumping_and_honest_players_raise_nothing(
    antiabuse: RunningService, stub: antiabuse_pb2_grpc.AntiAbuseServiceStub, kafka_broker: Any
) -> None:
    bootstrap = kafka_broker.bootstrap
    giver, receiver, honest, other = ids(4)
    dumping = [
        e for _ in range(10) for e in support.played(str(uuid.uuid4()), receiver, giver, 1500)
    ]
    honest_games = [
        e
        for n in range(6)
        for e in support.played(
            str(uuid.uuid4()), *((honest, other) if n % 2 else (other, honest)), 1500
        )
    ]
    logins = [
        support.registered(honest, f"{honest}@example.com", "hana"),
        support.registered(other, f"{other}@example.com", "omar"),
        support.logged_in(honest, "hana-laptop", f"{support.fresh_network()}.5"),
        support.logged_in(other, "omar-phone", f"{support.fresh_network()}.5"),
    ]
    await publish(bootstrap, logins + honest_games + dumping)

    alert = await wait_for_alert(
        stub, giver, sorted([giver, receiver]), antiabuse_events.SEVERITY_MEDIUM
    )
    assert alert.kind == DUMPING and alert.detector == "chip_dumping"
    flow = alert.evidence[0]
    assert flow.kind == "one_directional_flow"
    assert (flow.details["giver"], flow.details["receiver"]) == (giver, receiver)
    # Ten losses of 15.00 USD, nothing back: 1/1024 by fair play between equals.
    assert flow.details["net_minor"] == "15000"
    assert flow.details["games"] == "10"
    assert len(flow.game_ids) == 10
    assert float(flow.details["chance_under_fair_play"]) == pytest.approx(1 / 1024, rel=1e-5)
    assert alert.score == 1.0

    await support.all_consumed(bootstrap, ["tavla.accounts.v1", "tavla.wallet.v1", "tavla.game.v1"])
    assert await alerts_about(stub, honest) == []
    assert await alerts_about(stub, other) == []
    # Replayed settlements (same event ids) add no money and no alert.
    await publish(bootstrap, dumping)
    await support.all_consumed(bootstrap, ["tavla.wallet.v1", "tavla.game.v1"])
    assert [x.alert_id for x in await alerts_about(stub, giver)] == [alert.alert_id]

    # A compliance officer confirms it: stored, and published again with who, why and when.
    resolve = antiabuse_pb2.ResolveAlertRequest(
        alert_id=alert.alert_id, status=antiabuse_events.ALERT_STATUS_CONFIRMED, note="ring"
    )
    resolved = await stub.ResolveAlert(resolve, metadata=support.officer("officer-9"))
    assert resolved.status == antiabuse_events.ALERT_STATUS_CONFIRMED
    assert (resolved.resolved_by_account_id, resolved.resolution_note) == ("officer-9", "ring")
    assert resolved.raised_at == alert.raised_at and resolved.HasField("resolved_at")
    again = await stub.ResolveAlert(resolve, metadata=support.officer("officer-2"))
    assert again == resolved  # the same resolution twice: nothing changes
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await stub.ResolveAlert(
            antiabuse_pb2.ResolveAlertRequest(
                alert_id=alert.alert_id, status=antiabuse_events.ALERT_STATUS_DISMISSED
            ),
            metadata=support.officer(),
        )
    assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "officer-9" in (refused.value.details() or "")
    open_only = antiabuse_pb2.ListAlertsRequest(
        account_id=giver, status=antiabuse_events.ALERT_STATUS_OPEN
    )
    assert not (await stub.ListAlerts(open_only, metadata=support.officer())).alerts
    history = await support.read_topic(
        bootstrap, ALERTS, alert_decoder(alert.alert_id), lambda got: len(got) >= 2
    )
    assert [m.status for m in history] == [  # type: ignore[attr-defined]
        antiabuse_events.ALERT_STATUS_OPEN,
        antiabuse_events.ALERT_STATUS_CONFIRMED,
    ]


async def test_only_compliance_officers_list_alerts(antiabuse: RunningService) -> None:
    request = antiabuse_pb2.ListAlertsRequest()
    async with bare_channel(antiabuse.address) as channel:
        stub = antiabuse_pb2_grpc.AntiAbuseServiceStub(channel)
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.ListAlerts(request, metadata=as_player("a-player"))
        assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
        assert "compliance" in (refused.value.details() or "")
        with pytest.raises(grpc.aio.AioRpcError) as anonymous:
            await stub.ListAlerts(request)
        assert anonymous.value.code() == grpc.StatusCode.UNAUTHENTICATED
        assert (await stub.ListAlerts(request, metadata=support.officer())) is not None
