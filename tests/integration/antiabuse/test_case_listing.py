"""What the compliance console reads besides alerts and one case: an alert by its id
(``GetAlert``) and the cases, filtered and paged (``ListCases``), on the real PostgreSQL
and broker, the alerts raised by the real multi-accounting detector from login events.

- ``GetAlert`` answers the alert as ``ListAlerts`` does, evidence included, and its
  history besides; an unknown
  id is NOT_FOUND; a player without the compliance role is refused;
- ``ListCases``: newest first; by alert (the one case that holds it), by subject account,
  by status and by assignee; each case with its alerts, subjects and sanctions and no
  log; pages of one walk the same cases as one page; a bad page size or token is
  INVALID_ARGUMENT;
- an id or a note with a NUL byte (or an id longer than 64) is INVALID_ARGUMENT on every
  method that reads one, not an INTERNAL database error, and changes nothing.

The expected cases are written out from the scenario (which officer opened which case
over which ring), not read back from the service.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import grpc
import pytest

from tavla.antiabuse.v1 import antiabuse_pb2, antiabuse_pb2_grpc
from tavla.antiabuse.v1 import events_pb2 as antiabuse_events
from tests.support import antiabuse as support
from tests.support.identity import as_player
from tests.support.kafka import publish
from tests.support.services import (
    RunningService,
)

OPEN = antiabuse_pb2.CASE_STATUS_OPEN
SANCTIONED = antiabuse_pb2.CASE_STATUS_SANCTIONED
FREEZE = antiabuse_events.SANCTION_KIND_FREEZE_WALLET


async def ring_alert(
    stub: antiabuse_pb2_grpc.AntiAbuseServiceStub, bootstrap: str
) -> antiabuse_events.ComplianceAlert:
    """Two fresh accounts log in from one device: the multi-accounting detector's alert."""
    first, second = sorted(str(uuid.uuid4()) for _ in range(2))
    device = f"dev-{uuid.uuid4().hex[:8]}"
    net = support.fresh_network()
    await publish(bootstrap, [
        support.registered(first, f"{first}@example.com", "ann"),
        support.registered(second, f"{second}@example.com", "bob"),
        support.logged_in(first, device, f"{net}.10"),
        support.logged_in(second, device, f"{net}.20"),
    ])
    async with asyncio.timeout(90):
        while True:
            listed = await stub.ListAlerts(
                antiabuse_pb2.ListAlertsRequest(account_id=first), metadata=support.officer()
            )
            for alert in listed.alerts:
                if list(alert.subject_account_ids) == [first, second]:
                    return alert
            await asyncio.sleep(0.3)


async def refused(call: Any, request: Any, metadata: Any) -> grpc.StatusCode:
    with pytest.raises(grpc.aio.AioRpcError) as error:
        await call(request, metadata=metadata)
    return error.value.code()  # type: ignore[no-any-return]


async def test_an_alert_by_its_id(antiabuse: RunningService, kafka_broker: Any) -> None:
    stub = antiabuse_pb2_grpc.AntiAbuseServiceStub(antiabuse.channel)
    listed = await ring_alert(stub, kafka_broker.bootstrap)

    fetched = await stub.GetAlert(antiabuse_pb2.GetAlertRequest(alert_id=listed.alert_id),
                                  metadata=support.officer())
    assert [(h.action, h.severity) for h in fetched.history] == [
        ("raised", antiabuse_events.SEVERITY_HIGH)]  # GetAlert's only
    fetched.ClearField("history")
    assert fetched == listed
    assert [e.kind for e in fetched.evidence if e.kind == "shared_device"] == ["shared_device"]

    assert await refused(stub.GetAlert, antiabuse_pb2.GetAlertRequest(alert_id="no-such-alert"),
                         support.officer()) == grpc.StatusCode.NOT_FOUND
    for junk in ("a\x00b", "x" * 65):  # a clear refusal, not a database error
        assert await refused(stub.GetAlert, antiabuse_pb2.GetAlertRequest(alert_id=junk),
                             support.officer()) == grpc.StatusCode.INVALID_ARGUMENT
    assert await refused(stub.GetAlert, antiabuse_pb2.GetAlertRequest(alert_id=listed.alert_id),
                         as_player("a-player")) == grpc.StatusCode.PERMISSION_DENIED


async def test_cases_listed_by_alert_account_status_and_assignee(
    antiabuse: RunningService, kafka_broker: Any
) -> None:
    stub = antiabuse_pb2_grpc.AntiAbuseServiceStub(antiabuse.channel)
    bootstrap = kafka_broker.bootstrap
    first, second = await ring_alert(stub, bootstrap), await ring_alert(stub, bootstrap)
    ann = support.officer("officer-ann")
    cem_id = f"officer-cem-{uuid.uuid4().hex[:6]}"

    older = await stub.OpenCase(antiabuse_pb2.OpenCaseRequest(
        alert_ids=[first.alert_id], note="one device"), metadata=ann)
    newer = await stub.OpenCase(antiabuse_pb2.OpenCaseRequest(
        alert_ids=[second.alert_id]), metadata=support.officer(cem_id))
    await stub.AssignCase(antiabuse_pb2.AssignCaseRequest(
        case_id=newer.case_id, assignee_account_id=cem_id), metadata=ann)
    frozen = first.subject_account_ids[0]
    await stub.ResolveCase(antiabuse_pb2.ResolveCaseRequest(
        case_id=older.case_id, outcome=SANCTIONED, note="one person",
        sanctions=[antiabuse_pb2.Sanction(kind=FREEZE, account_id=frozen)]), metadata=ann)

    async def listed(**filters: Any) -> list[antiabuse_pb2.Case]:
        answer = await stub.ListCases(antiabuse_pb2.ListCasesRequest(**filters),
                                      metadata=ann)
        return list(answer.cases)

    by_alert = await listed(alert_id=first.alert_id)
    assert [c.case_id for c in by_alert] == [older.case_id]
    case = by_alert[0]
    assert case.status == SANCTIONED and case.opened_by == "officer-ann"
    assert list(case.alert_ids) == [first.alert_id]
    assert list(case.subject_account_ids) == list(first.subject_account_ids)
    assert [(s.kind, s.account_id) for s in case.sanctions] == [(FREEZE, frozen)]
    assert case.resolved_at.seconds > 0 and not case.log  # the log: GetCase

    for account in second.subject_account_ids:
        assert [c.case_id for c in await listed(account_id=account)] == [newer.case_id]
    mine = await listed(assignee_account_id=cem_id)
    assert [(c.case_id, c.status, c.assignee_account_id) for c in mine] == [
        (newer.case_id, OPEN, cem_id)
    ]
    open_ids = [c.case_id for c in await listed(status=OPEN, page_size=200)]
    assert newer.case_id in open_ids and older.case_id not in open_ids
    assert await listed(alert_id="no-such-alert") == []

    everything = await listed(page_size=200)
    assert [c.case_id for c in everything][:2] == [newer.case_id, older.case_id]  # newest first
    walked, token = [], ""
    while True:
        page = await stub.ListCases(
            antiabuse_pb2.ListCasesRequest(page_size=1, page_token=token), metadata=ann)
        walked += [c.case_id for c in page.cases]
        token = page.next_page_token
        if not token:
            break
    assert walked == [c.case_id for c in everything]

    for bad in (antiabuse_pb2.ListCasesRequest(page_size=201),
                antiabuse_pb2.ListCasesRequest(page_token="not a token"),
                antiabuse_pb2.ListCasesRequest(status=99),  # type: ignore[arg-type]
                antiabuse_pb2.ListCasesRequest(account_id="a\x00b"),
                antiabuse_pb2.ListCasesRequest(alert_id="x" * 65)):
        assert await refused(stub.ListCases, bad, ann) == grpc.StatusCode.INVALID_ARGUMENT
    assert await refused(stub.ListCases, antiabuse_pb2.ListCasesRequest(),
                         as_player("a-player")) == grpc.StatusCode.PERMISSION_DENIED


async def test_ids_no_database_can_compare_are_refused_clearly(
    antiabuse: RunningService, kafka_broker: Any
) -> None:
    """A NUL byte (or an over-long id) in any id or note the console sends is
    INVALID_ARGUMENT, not a database error answered as INTERNAL."""
    stub = antiabuse_pb2_grpc.AntiAbuseServiceStub(antiabuse.channel)
    junk = "a\x00b"
    calls = [
        (stub.ListAlerts, antiabuse_pb2.ListAlertsRequest(account_id=junk)),
        (stub.GetRiskProfile, antiabuse_pb2.GetRiskProfileRequest(account_id=junk)),
        (stub.ResolveAlert, antiabuse_pb2.ResolveAlertRequest(
            alert_id=junk, status=antiabuse_events.ALERT_STATUS_DISMISSED)),
        (stub.GetCase, antiabuse_pb2.GetCaseRequest(case_id=junk)),
        (stub.AddCaseNote, antiabuse_pb2.AddCaseNoteRequest(case_id=junk, note="n")),
        (stub.OpenCase, antiabuse_pb2.OpenCaseRequest(alert_ids=[junk])),
    ]
    for call, request in calls:
        assert await refused(call, request, support.officer()) == (
            grpc.StatusCode.INVALID_ARGUMENT), type(request).__name__

    # In notes and assignees too, on a real case.
    alert = await ring_alert(stub, kafka_broker.bootstrap)
    case = await stub.OpenCase(antiabuse_pb2.OpenCaseRequest(alert_ids=[alert.alert_id]),
                               metadata=support.officer())
    for call, request in [
        (stub.AddCaseNote, antiabuse_pb2.AddCaseNoteRequest(case_id=case.case_id, note=junk)),
        (stub.AssignCase, antiabuse_pb2.AssignCaseRequest(case_id=case.case_id,
                                                          assignee_account_id=junk)),
        (stub.ResolveAlert, antiabuse_pb2.ResolveAlertRequest(
            alert_id=alert.alert_id, status=antiabuse_events.ALERT_STATUS_DISMISSED, note=junk)),
    ]:
        assert await refused(call, request, support.officer()) == (
            grpc.StatusCode.INVALID_ARGUMENT), type(request).__name__
    log = await stub.GetCase(antiabuse_pb2.GetCaseRequest(case_id=case.case_id),
                             metadata=support.officer())
    assert [e.action for e in log.log] == ["opened"]  # nothing half-written
