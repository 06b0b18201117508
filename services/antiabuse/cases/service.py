"""The cases' use cases: open from alerts, assign, note, impose sanctions, resolve.

Every step appends to the case's log (who, what, when) in the same transaction
as its change. Sanctions are events in the outbox of that transaction, on
``tavla.antiabuse.v1``: ``AccountSanctioned`` (keyed by the account) for the
wallet (freeze) and accounts (suspend, terminate), ``PairRestricted`` (reason
CONFIRMED_ABUSE, restriction id = sanction id, keyed by the pair) for
matchmaking. A sanction's id derives from the case, kind and accounts, and
``case_sanctions`` holds each id once: the same sanction is never published twice.
Resolving a case resolves its open alerts the same way (SANCTIONED: CONFIRMED,
CLEARED: DISMISSED), published again as ResolveAlert does.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence

from google.protobuf.timestamp_pb2 import Timestamp

from services.antiabuse.alerting import ALERTS_TOPIC, VERDICTS_TOPIC
from services.antiabuse.cases.domain import (
    CaseStatus,
    SanctionKind,
    SanctionOrder,
    check_alert_ids,
    check_note,
    check_open,
    check_sanctions,
)
from services.antiabuse.cases.store import CaseRow, CasesUnitOfWork, CaseWork, SanctionRow
from services.kit.errors import FailedPrecondition, InvalidArgument, NotFound
from tavla.antiabuse.v1 import antiabuse_pb2, events_pb2

SANCTION_KINDS = {
    SanctionKind.FREEZE_WALLET: events_pb2.SANCTION_KIND_FREEZE_WALLET,
    SanctionKind.SUSPEND_ACCOUNT: events_pb2.SANCTION_KIND_SUSPEND_ACCOUNT,
    SanctionKind.FORBID_PAIR: events_pb2.SANCTION_KIND_FORBID_PAIR,
    SanctionKind.TERMINATE_ACCOUNT: events_pb2.SANCTION_KIND_TERMINATE_ACCOUNT,
}
CASE_STATUSES = {
    CaseStatus.OPEN: antiabuse_pb2.CASE_STATUS_OPEN,
    CaseStatus.CLEARED: antiabuse_pb2.CASE_STATUS_CLEARED,
    CaseStatus.SANCTIONED: antiabuse_pb2.CASE_STATUS_SANCTIONED,
}
_ALERT_OUTCOME = {
    CaseStatus.SANCTIONED: events_pb2.ALERT_STATUS_CONFIRMED,
    CaseStatus.CLEARED: events_pb2.ALERT_STATUS_DISMISSED,
}


def _stamp(work: CaseWork) -> Timestamp:
    stamp = Timestamp()
    stamp.FromDatetime(work.clock.now())
    return stamp


async def open_case(work: CaseWork, alert_ids: Sequence[str], note: str, actor: str) -> str:
    """A new case over the alerts (each in no other case); its id."""
    wanted = check_alert_ids(alert_ids)
    text = check_note(note)
    subjects: set[str] = set()
    for alert_id in wanted:
        stored = await work.alerts.get(alert_id)
        if stored is None:
            raise NotFound(f"no alert {alert_id!r}")
        subjects.update(events_pb2.ComplianceAlert.FromString(stored).subject_account_ids)
    case_id = str(uuid.uuid4())
    now = work.clock.now()
    await work.cases.add(case_id, sorted(subjects), actor, now)
    taken = await work.cases.claim_alerts(case_id, wanted)
    if taken:
        named = ", ".join(f"{alert} (case {case})" for alert, case in sorted(taken.items()))
        raise FailedPrecondition(f"alerts already in a case: {named}")
    await work.cases.append(case_id, at=now, actor=actor, action="opened",
                            detail=f"alerts {', '.join(wanted)}" + (f": {text}" if text else ""))
    return case_id


async def _open_case_row(work: CaseWork, case_id: str) -> CaseRow:
    row = await work.cases.get(case_id, lock=True) if case_id else None
    if row is None:
        raise NotFound(f"no case {case_id!r}")
    return row


async def assign_case(work: CaseWork, case_id: str, assignee: str, actor: str) -> None:
    row = await _open_case_row(work, case_id)
    check_open(row.status, case_id)
    if len(assignee) > 64:
        raise InvalidArgument("assignee_account_id is not an account id")
    if row.assignee == assignee:
        return  # already so
    await work.cases.assign(case_id, assignee)
    await work.cases.append(case_id, at=work.clock.now(), actor=actor, action="assigned",
                            detail=assignee or "unassigned")


async def note_case(work: CaseWork, case_id: str, note: str, actor: str) -> None:
    """A note; allowed on a resolved case too (the record may grow, never change)."""
    text = check_note(note, required=True)
    await _open_case_row(work, case_id)
    await work.cases.append(case_id, at=work.clock.now(), actor=actor, action="note",
                            detail=text)


async def impose(
    work: CaseWork, row: CaseRow, orders: Sequence[SanctionOrder], reason: str, actor: str,
    *, automatic: bool,
) -> list[SanctionRow]:
    """Record and publish each sanction not yet imposed in this case; those it imposed."""
    existing = {s.sanction_id for s in await work.cases.sanctions_of(row.case_id)}
    now = work.clock.now()
    imposed: list[SanctionRow] = []
    for order in orders:
        sanction = SanctionRow(order.sanction_id(row.case_id), order.kind, order.account_id,
                               order.other_account_id)
        if sanction.sanction_id in existing:
            continue
        await work.cases.add_sanction(row.case_id, sanction, by=actor, automatic=automatic,
                                      at=now)
        _publish_sanction(work, row.case_id, sanction, reason, actor, automatic)
        await work.cases.append(row.case_id, at=now, actor=actor, action="sanction",
                                detail=_describe(sanction))
        imposed.append(sanction)
    return imposed


def _publish_sanction(
    work: CaseWork, case_id: str, sanction: SanctionRow, reason: str, actor: str,
    automatic: bool,
) -> None:
    if sanction.kind is SanctionKind.FORBID_PAIR:
        verdict = events_pb2.PairRestricted(
            restriction_id=sanction.sanction_id, account_id=sanction.account_id,
            other_account_id=sanction.other_account_id,
            reason=events_pb2.PAIR_RESTRICTION_REASON_CONFIRMED_ABUSE,
            detail=f"case {case_id}: {reason}"[:500], occurred_at=_stamp(work),
        )
        work.publish(VERDICTS_TOPIC, f"{sanction.account_id}:{sanction.other_account_id}",
                     verdict)
        return
    work.publish(VERDICTS_TOPIC, sanction.account_id, events_pb2.AccountSanctioned(
        sanction_id=sanction.sanction_id, case_id=case_id, kind=SANCTION_KINDS[sanction.kind],
        account_id=sanction.account_id, reason=reason[:500],
        imposed_by_account_id="" if automatic else actor, automatic=automatic,
        occurred_at=_stamp(work),
    ))


def _describe(sanction: SanctionRow) -> str:
    pair = f" with {sanction.other_account_id}" if sanction.other_account_id else ""
    return f"{sanction.kind.value} {sanction.account_id}{pair} ({sanction.sanction_id})"


async def resolve_case(
    work: CaseWork, case_id: str, outcome: CaseStatus, orders: Sequence[SanctionOrder],
    note: str, actor: str,
) -> None:
    row = await _open_case_row(work, case_id)
    checked = check_sanctions(outcome, orders, row.subjects)
    text = check_note(note, required=True)
    if row.status is not CaseStatus.OPEN:
        existing = {s.sanction_id for s in await work.cases.sanctions_of(case_id)}
        if row.status is outcome and {o.sanction_id(case_id) for o in checked} <= existing:
            return  # the same resolution again: done already
        check_open(row.status, case_id)
    now = work.clock.now()
    await impose(work, row, checked, text, actor, automatic=False)
    await work.cases.resolve(case_id, outcome, now)
    await work.cases.append(case_id, at=now, actor=actor, action="resolved",
                            detail=f"{outcome.value}: {text}")
    await _resolve_alerts(work, case_id, _ALERT_OUTCOME[outcome], text, actor)


async def _resolve_alerts(
    work: CaseWork, case_id: str, status: int, note: str, actor: str
) -> None:
    for alert_id in await work.cases.alerts_of(case_id):
        stored = await work.alerts.get(alert_id, lock=True)
        if stored is None:
            continue
        alert = events_pb2.ComplianceAlert.FromString(stored)
        if alert.status != events_pb2.ALERT_STATUS_OPEN:
            continue  # resolved on its own before: kept as it was
        alert.status = status  # type: ignore[assignment]
        alert.resolved_by_account_id = actor
        alert.resolution_note = f"case {case_id}: {note}"[:2000]
        alert.resolved_at.CopyFrom(_stamp(work))
        alert.occurred_at.CopyFrom(_stamp(work))
        await work.alerts.set_status(alert_id, status, alert.SerializeToString())
        work.publish(ALERTS_TOPIC, alert_id, alert)


async def case_message(work: CaseWork, case_id: str) -> antiabuse_pb2.Case:
    row = await work.cases.get(case_id) if case_id else None
    if row is None:
        raise NotFound(f"no case {case_id!r}")
    message = antiabuse_pb2.Case(
        case_id=row.case_id, status=CASE_STATUSES[row.status],
        alert_ids=await work.cases.alerts_of(case_id), subject_account_ids=row.subjects,
        assignee_account_id=row.assignee, opened_by=row.opened_by,
    )
    message.opened_at.FromDatetime(row.opened_at)
    if row.resolved_at is not None:
        message.resolved_at.FromDatetime(row.resolved_at)
    for s in await work.cases.sanctions_of(case_id):
        message.sanctions.add(kind=SANCTION_KINDS[s.kind], account_id=s.account_id,
                              other_account_id=s.other_account_id, sanction_id=s.sanction_id)
    for entry in await work.cases.log_of(case_id):
        line = message.log.add(sequence=entry.sequence, actor=entry.actor, action=entry.action,
                               detail=entry.detail)
        line.at.FromDatetime(entry.at)
    return message


class CaseService:
    """Each compliance call in one unit of work, answering with the case as it now is."""

    def __init__(self, unit_of_work: Callable[[], CasesUnitOfWork]) -> None:
        self._unit_of_work = unit_of_work

    async def open(self, alert_ids: Sequence[str], note: str, actor: str) -> antiabuse_pb2.Case:
        async with self._unit_of_work() as work:
            case_id = await open_case(work, alert_ids, note, actor)
            await work.commit()
        return await self.get(case_id)

    async def get(self, case_id: str) -> antiabuse_pb2.Case:
        async with self._unit_of_work() as work:
            return await case_message(work, case_id)

    async def assign(self, case_id: str, assignee: str, actor: str) -> antiabuse_pb2.Case:
        async with self._unit_of_work() as work:
            await assign_case(work, case_id, assignee, actor)
            await work.commit()
        return await self.get(case_id)

    async def note(self, case_id: str, note: str, actor: str) -> antiabuse_pb2.Case:
        async with self._unit_of_work() as work:
            await note_case(work, case_id, note, actor)
            await work.commit()
        return await self.get(case_id)

    async def resolve(
        self, case_id: str, outcome: CaseStatus, orders: Sequence[SanctionOrder], note: str,
        actor: str,
    ) -> antiabuse_pb2.Case:
        async with self._unit_of_work() as work:
            await resolve_case(work, case_id, outcome, orders, note, actor)
            await work.commit()
        return await self.get(case_id)
