"""Four-eyes on the compliance methods, on the real PostgreSQL and broker, with alerts raised
by the real detectors from the other services' events:

- an officer named in an alert cannot resolve it, nor open a case over it, nor act on
  such a case (note, assign, resolve), nor be given it; another officer can;
- an officer whose account shares a device with a subject (a link the multi-accounting
  detector keeps) cannot act on it either, though the alert does not name them;
- a termination is a proposal until a second, different officer approves it: the
  proposer cannot approve their own proposal, the case stays open meanwhile and
  cannot be resolved otherwise; the approval publishes it; both are in the case log
  with the officers' ids. A proposal turned down takes no effect.

Refusals are PERMISSION_DENIED (who may not act) or FAILED_PRECONDITION (what must
happen first), each with a message naming what to do, and change nothing.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import grpc
import pytest
from google.protobuf.message import Message

from tavla.antiabuse.v1 import antiabuse_pb2, antiabuse_pb2_grpc
from tavla.antiabuse.v1 import events_pb2 as antiabuse_events
from tests.support import antiabuse as support
from tests.support.kafka import publish

Stub = antiabuse_pb2_grpc.AntiAbuseServiceStub
SANCTIONED = antiabuse_pb2.CASE_STATUS_SANCTIONED
OPEN = antiabuse_pb2.CASE_STATUS_OPEN
FREEZE = antiabuse_events.SANCTION_KIND_FREEZE_WALLET
TERMINATE = antiabuse_events.SANCTION_KIND_TERMINATE_ACCOUNT
DISMISSED = antiabuse_events.ALERT_STATUS_DISMISSED


async def alert_of(stub: Stub, account: str, detector: str,
                   subjects: list[str]) -> antiabuse_events.ComplianceAlert:
    async with asyncio.timeout(90):
        while True:
            for alert in await support.alerts_about(stub, account):
                if alert.detector == detector and list(alert.subject_account_ids) == subjects:
                    return alert
            await asyncio.sleep(0.3)


def made(*accounts: str) -> list[Any]:
    """The accounts' sign-ups (made at one computer together with their logins there)."""
    return [support.registered(a, f"{a}@example.com", "twin") for a in accounts]


async def ring(stub: Stub, bootstrap: str) -> tuple[str, str, antiabuse_events.ComplianceAlert]:
    """Two fresh accounts made together on one device: their multi-accounting alert."""
    first, second = sorted(str(uuid.uuid4()) for _ in range(2))
    device, net = f"dev-{uuid.uuid4().hex[:8]}", support.fresh_network()
    await publish(bootstrap, [*made(first, second),
                              support.logged_in(first, device, f"{net}.10"),
                              support.logged_in(second, device, f"{net}.20")])
    return first, second, await alert_of(stub, first, "multi_accounting", [first, second])


async def refusal(call: Any, request: Message, metadata: Any) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.aio.AioRpcError) as error:
        await call(request, metadata=metadata)
    return error.value.code(), error.value.details() or ""


async def test_an_officer_named_in_an_alert_cannot_resolve_it(
    stub: Stub, kafka_broker: Any
) -> None:
    first, second, alert = await ring(stub, kafka_broker.bootstrap)
    named = support.officer(first)  # an officer who is also a player of the ring
    dismiss = antiabuse_pb2.ResolveAlertRequest(alert_id=alert.alert_id, status=DISMISSED,
                                                note="nothing here")
    code, message = await refusal(stub.ResolveAlert, dismiss, named)
    assert code == grpc.StatusCode.PERMISSION_DENIED
    assert message == (f"alert {alert.alert_id} names your own account ({first}): another "
                       "compliance officer must act on it")
    code, _ = await refusal(stub.OpenCase, antiabuse_pb2.OpenCaseRequest(
        alert_ids=[alert.alert_id]), named)
    assert code == grpc.StatusCode.PERMISSION_DENIED
    assert (await stub.GetAlert(antiabuse_pb2.GetAlertRequest(alert_id=alert.alert_id),
                                metadata=support.officer())).status == (
        antiabuse_events.ALERT_STATUS_OPEN)  # unchanged

    case = await stub.OpenCase(antiabuse_pb2.OpenCaseRequest(alert_ids=[alert.alert_id]),
                               metadata=support.officer("officer-ann"))
    for call, request in [
        (stub.AddCaseNote, antiabuse_pb2.AddCaseNoteRequest(case_id=case.case_id, note="mine")),
        (stub.AssignCase, antiabuse_pb2.AssignCaseRequest(case_id=case.case_id,
                                                          assignee_account_id=first)),
        (stub.ResolveCase, antiabuse_pb2.ResolveCaseRequest(
            case_id=case.case_id, outcome=antiabuse_pb2.CASE_STATUS_CLEARED, note="fine")),
    ]:
        code, _ = await refusal(call, request, named)
        assert code == grpc.StatusCode.PERMISSION_DENIED, type(request).__name__
    code, message = await refusal(stub.AssignCase, antiabuse_pb2.AssignCaseRequest(
        case_id=case.case_id, assignee_account_id=second), support.officer("officer-ann"))
    assert code == grpc.StatusCode.PERMISSION_DENIED
    assert message == (f"case {case.case_id} names the assignee's own account ({second}): "
                       "assign it to an officer it does not concern")
    logged = await stub.GetCase(antiabuse_pb2.GetCaseRequest(case_id=case.case_id),
                                metadata=support.officer("officer-ann"))
    assert [(e.action, e.actor) for e in logged.log] == [("opened", "officer-ann")]

    resolved = await stub.ResolveAlert(dismiss, metadata=support.officer("officer-ann"))
    assert resolved.status == DISMISSED and resolved.resolved_by_account_id == "officer-ann"


async def test_an_officer_linked_to_a_subject_cannot_act(stub: Stub, kafka_broker: Any) -> None:
    """The officer's own account shares a device with the giver of a dumping pair: the
    dumping alert names the giver and the receiver, not the officer, and is still refused."""
    bootstrap = kafka_broker.bootstrap
    giver, receiver = sorted(str(uuid.uuid4()) for _ in range(2))
    officer_id = f"officer-{uuid.uuid4().hex[:8]}"
    device, net = f"dev-{uuid.uuid4().hex[:8]}", support.fresh_network()
    games: list[Any] = [*made(officer_id, giver),
                        support.logged_in(officer_id, device, f"{net}.1"),
                        support.logged_in(giver, device, f"{net}.2")]
    for _ in range(10):  # 10 straight losses: 1/1024 by fair play, a flow alone alerts
        games += support.played(str(uuid.uuid4()), receiver, giver, 600)
    await publish(bootstrap, games)
    dumping = await alert_of(stub, giver, "chip_dumping", sorted([giver, receiver]))
    assert officer_id not in dumping.subject_account_ids
    # The logins are in (topics are read concurrently): the officer and the giver one person.
    await alert_of(stub, giver, "multi_accounting", sorted([giver, officer_id]))

    linked = support.officer(officer_id)
    code, message = await refusal(stub.ResolveAlert, antiabuse_pb2.ResolveAlertRequest(
        alert_id=dumping.alert_id, status=DISMISSED, note="a friend"), linked)
    assert code == grpc.StatusCode.PERMISSION_DENIED
    assert message.startswith(f"alert {dumping.alert_id} names {giver}, linked to your account "
                              f"({officer_id}) by a shared device")
    code, _ = await refusal(stub.OpenCase, antiabuse_pb2.OpenCaseRequest(
        alert_ids=[dumping.alert_id]), linked)
    assert code == grpc.StatusCode.PERMISSION_DENIED
    case = await stub.OpenCase(antiabuse_pb2.OpenCaseRequest(alert_ids=[dumping.alert_id]),
                               metadata=support.officer("officer-ann"))
    code, _ = await refusal(stub.ResolveCase, antiabuse_pb2.ResolveCaseRequest(
        case_id=case.case_id, outcome=SANCTIONED, note="dumping",
        sanctions=[antiabuse_pb2.Sanction(kind=FREEZE, account_id=receiver)]), linked)
    assert code == grpc.StatusCode.PERMISSION_DENIED
    assert not (await stub.GetCase(antiabuse_pb2.GetCaseRequest(case_id=case.case_id),
                                   metadata=support.officer("officer-ann"))).sanctions


def _sanctions(bootstrap: str, case_id: str, wanted: int) -> Any:
    def decode(ce_type: str, payload: bytes) -> Message | None:
        if ce_type != antiabuse_events.AccountSanctioned.DESCRIPTOR.full_name:
            return None
        event = antiabuse_events.AccountSanctioned.FromString(payload)
        return event if event.case_id == case_id else None

    return support.read_topic(bootstrap, "tavla.antiabuse.v1", decode,
                              lambda found: len(found) >= wanted)


async def test_a_termination_takes_effect_only_once_a_second_officer_approves(
    stub: Stub, kafka_broker: Any
) -> None:
    bootstrap = kafka_broker.bootstrap
    first, second, alert = await ring(stub, bootstrap)
    ann, bea = support.officer("officer-ann"), support.officer("officer-bea")
    case = await stub.OpenCase(antiabuse_pb2.OpenCaseRequest(alert_ids=[alert.alert_id]),
                               metadata=ann)
    resolution = antiabuse_pb2.ResolveCaseRequest(
        case_id=case.case_id, outcome=SANCTIONED, note="one person, two accounts",
        sanctions=[antiabuse_pb2.Sanction(kind=TERMINATE, account_id=second),
                   antiabuse_pb2.Sanction(kind=FREEZE, account_id=first)])
    proposed = await stub.ResolveCase(resolution, metadata=ann)
    assert proposed.status == OPEN and not proposed.HasField("resolved_at")
    assert sorted((s.kind, s.account_id, s.awaiting_approval, s.proposed_by_account_id)
                  for s in proposed.sanctions) == [
        (FREEZE, first, False, ""), (TERMINATE, second, True, "officer-ann")]
    # The freeze is published at once; the termination, in the same transaction, is not.
    published = await _sanctions(bootstrap, case.case_id, 1)
    assert [(e.kind, e.account_id) for e in published] == [(FREEZE, first)]
    assert await stub.ResolveCase(resolution, metadata=ann) == proposed  # the same again

    code, message = await refusal(stub.ApproveSanctions, antiabuse_pb2.ApproveSanctionsRequest(
        case_id=case.case_id), ann)
    assert code == grpc.StatusCode.PERMISSION_DENIED
    assert message == (f"you proposed the sanctions of case {case.case_id}: a second, "
                       "different compliance officer must approve them")
    code, message = await refusal(stub.ResolveCase, antiabuse_pb2.ResolveCaseRequest(
        case_id=case.case_id, outcome=antiabuse_pb2.CASE_STATUS_CLEARED, note="changed my mind"),
        bea)
    assert code == grpc.StatusCode.FAILED_PRECONDITION
    assert "awaiting a second officer's approval (proposed by officer-ann)" in message
    code, _ = await refusal(stub.ApproveSanctions, antiabuse_pb2.ApproveSanctionsRequest(
        case_id=case.case_id), support.officer(second))  # the subject, as an officer
    assert code == grpc.StatusCode.PERMISSION_DENIED

    approved = await stub.ApproveSanctions(antiabuse_pb2.ApproveSanctionsRequest(
        case_id=case.case_id, note="agreed"), metadata=bea)
    assert approved.status == SANCTIONED
    assert sorted((s.kind, s.account_id, s.awaiting_approval, s.approved_by_account_id)
                  for s in approved.sanctions) == [
        (FREEZE, first, False, ""), (TERMINATE, second, False, "officer-bea")]
    assert [(e.action, e.actor) for e in approved.log] == [
        ("opened", "officer-ann"), ("sanction", "officer-ann"), ("proposed", "officer-ann"),
        ("approved", "officer-bea"), ("sanction", "officer-bea"), ("resolved", "officer-bea")]
    assert "terminate_account " + second in approved.log[2].detail
    assert "proposed by officer-ann" in approved.log[3].detail
    published = await _sanctions(bootstrap, case.case_id, 2)  # two keys: in no set order
    assert sorted((e.kind, e.account_id, e.imposed_by_account_id) for e in published) == [
        (FREEZE, first, "officer-ann"), (TERMINATE, second, "officer-bea")]
    confirmed = await stub.GetAlert(antiabuse_pb2.GetAlertRequest(alert_id=alert.alert_id),
                                    metadata=ann)
    assert confirmed.status == antiabuse_events.ALERT_STATUS_CONFIRMED
    # Approving again is the same call repeated; nothing is published twice.
    assert await stub.ApproveSanctions(antiabuse_pb2.ApproveSanctionsRequest(
        case_id=case.case_id, note="agreed"), metadata=bea) == approved


async def test_a_rejected_termination_never_takes_effect(stub: Stub, kafka_broker: Any) -> None:
    first, _, alert = await ring(stub, kafka_broker.bootstrap)
    ann, bea = support.officer("officer-ann"), support.officer("officer-bea")
    case = await stub.OpenCase(antiabuse_pb2.OpenCaseRequest(alert_ids=[alert.alert_id]),
                               metadata=ann)
    await stub.ResolveCase(antiabuse_pb2.ResolveCaseRequest(
        case_id=case.case_id, outcome=SANCTIONED, note="close it",
        sanctions=[antiabuse_pb2.Sanction(kind=TERMINATE, account_id=first)]), metadata=ann)
    code, _ = await refusal(stub.RejectSanctions, antiabuse_pb2.RejectSanctionsRequest(
        case_id=case.case_id), bea)
    assert code == grpc.StatusCode.INVALID_ARGUMENT  # a rejection says why

    rejected = await stub.RejectSanctions(antiabuse_pb2.RejectSanctionsRequest(
        case_id=case.case_id, note="a household, not one person"), metadata=bea)
    assert rejected.status == OPEN and not rejected.sanctions
    assert [(e.action, e.actor) for e in rejected.log][-1] == ("rejected", "officer-bea")
    code, _ = await refusal(stub.ApproveSanctions, antiabuse_pb2.ApproveSanctionsRequest(
        case_id=case.case_id), bea)
    assert code == grpc.StatusCode.FAILED_PRECONDITION
    cleared = await stub.ResolveCase(antiabuse_pb2.ResolveCaseRequest(
        case_id=case.case_id, outcome=antiabuse_pb2.CASE_STATUS_CLEARED, note="household"),
        metadata=bea)
    assert cleared.status == antiabuse_pb2.CASE_STATUS_CLEARED and not cleared.sanctions


async def test_an_officer_linked_to_the_proposer_cannot_approve(
    stub: Stub, kafka_broker: Any
) -> None:
    """Two officer accounts on one device are one person: no second pair of eyes."""
    bootstrap = kafka_broker.bootstrap
    _, second, alert = await ring(stub, bootstrap)
    tag = uuid.uuid4().hex[:8]
    proposer, twin = f"officer-p-{tag}", f"officer-t-{tag}"
    device, net = f"dev-{tag}", support.fresh_network()
    await publish(bootstrap, [*made(proposer, twin),
                              support.logged_in(proposer, device, f"{net}.1"),
                              support.logged_in(twin, device, f"{net}.2")])
    await alert_of(stub, proposer, "multi_accounting", sorted([proposer, twin]))
    case = await stub.OpenCase(antiabuse_pb2.OpenCaseRequest(alert_ids=[alert.alert_id]),
                               metadata=support.officer(proposer))
    await stub.ResolveCase(antiabuse_pb2.ResolveCaseRequest(
        case_id=case.case_id, outcome=SANCTIONED, note="close it",
        sanctions=[antiabuse_pb2.Sanction(kind=TERMINATE, account_id=second)]),
        metadata=support.officer(proposer))
    code, message = await refusal(stub.ApproveSanctions, antiabuse_pb2.ApproveSanctionsRequest(
        case_id=case.case_id), support.officer(twin))
    assert code == grpc.StatusCode.PERMISSION_DENIED
    assert message.startswith(f"your account ({twin}) is linked to the proposer's ({proposer})")
    still = await stub.GetCase(antiabuse_pb2.GetCaseRequest(case_id=case.case_id),
                               metadata=support.officer("officer-ann"))
    assert still.status == OPEN and [s.awaiting_approval for s in still.sanctions] == [True]
