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

Four-eyes: no officer opens, assigns, notes, resolves or approves on a case that names
them or an account linked to them (:mod:`.four_eyes`), nor is given one; a suspension
or a termination is a proposal (``proposed``) until a second, different officer approves
it (``approved``, then each ``sanction``, then ``resolved``) or any officer rejects it
(``rejected``: nothing of it took effect, the case stays open).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import replace

from google.protobuf.timestamp_pb2 import Timestamp

from services.antiabuse.alerting import ALERTS_TOPIC, VERDICTS_TOPIC
from services.antiabuse.cases.domain import (
    NEEDS_APPROVAL,
    CaseStatus,
    SanctionKind,
    SanctionOrder,
    SanctionState,
    check_alert_ids,
    check_note,
    check_open,
    check_sanctions,
)
from services.antiabuse.cases.four_eyes import check_disinterested, strongly_linked
from services.antiabuse.cases.store import (
    CaseQuery,
    CaseRow,
    CasesUnitOfWork,
    CaseWork,
    SanctionRow,
)
from services.antiabuse.service import checked_id, encode_page_token
from services.kit.errors import FailedPrecondition, NotFound, PermissionDenied
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
        stored = await work.alerts.get(checked_id("alert_ids", alert_id))
        if stored is None:
            raise NotFound(f"no alert {alert_id!r}")
        subjects.update(events_pb2.ComplianceAlert.FromString(stored).subject_account_ids)
    await check_disinterested(work.facts, actor, subjects, f"alerts {', '.join(wanted)}")
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
    row = await work.cases.get(checked_id("case_id", case_id), lock=True) if case_id else None
    if row is None:
        raise NotFound(f"no case {case_id!r}")
    return row


async def _case_for(work: CaseWork, case_id: str, actor: str) -> CaseRow:
    """The case, locked, once it is clear the actor may act on it."""
    row = await _open_case_row(work, case_id)
    await check_disinterested(work.facts, actor, row.subjects, f"case {case_id}")
    return row


async def assign_case(work: CaseWork, case_id: str, assignee: str, actor: str) -> None:
    row = await _case_for(work, case_id, actor)
    check_open(row.status, case_id)
    checked_id("assignee_account_id", assignee)
    if assignee:
        await check_disinterested(work.facts, assignee, row.subjects, f"case {case_id}",
                                  assignee=True)
    if row.assignee == assignee:
        return  # already so
    await work.cases.assign(case_id, assignee)
    await work.cases.append(case_id, at=work.clock.now(), actor=actor, action="assigned",
                            detail=assignee or "unassigned")


async def note_case(work: CaseWork, case_id: str, note: str, actor: str) -> None:
    """A note; allowed on a resolved case too (the record may grow, never change)."""
    text = check_note(note, required=True)
    await _case_for(work, case_id, actor)
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
    """Resolve the case, or, when it suspends or terminates, propose that for a second
    officer (the freezes and forbidden pairs of the same call take effect at once)."""
    row = await _case_for(work, case_id, actor)
    checked = check_sanctions(outcome, orders, row.subjects)
    text = check_note(note, required=True)
    existing = await work.cases.sanctions_of(case_id)
    wanted = {o.sanction_id(case_id) for o in checked}
    if row.status is not CaseStatus.OPEN:
        if row.status is outcome and wanted <= {s.sanction_id for s in existing}:
            return  # the same resolution again: done already
        check_open(row.status, case_id)
    pending = [s for s in existing if s.pending]
    later = [o for o in checked if o.kind in NEEDS_APPROVAL]
    if pending:
        if {p.sanction_id for p in pending} == {o.sanction_id(case_id) for o in later} and (
            pending[0].proposed_by == actor
        ):
            return  # the same proposal again
        raise FailedPrecondition(
            f"case {case_id} has sanctions awaiting a second officer's approval (proposed by "
            f"{pending[0].proposed_by}): approve or reject them before resolving it otherwise"
        )
    await impose(work, row, [o for o in checked if o.kind not in NEEDS_APPROVAL], text, actor,
                 automatic=False)
    if later:
        await _propose(work, row, later, text, actor)
        return
    await _close(work, row, outcome, text, actor)


async def _propose(
    work: CaseWork, row: CaseRow, orders: Sequence[SanctionOrder], note: str, actor: str
) -> None:
    now = work.clock.now()
    proposed = [SanctionRow(o.sanction_id(row.case_id), o.kind, o.account_id,
                            o.other_account_id, SanctionState.PROPOSED, actor) for o in orders]
    for sanction in proposed:
        await work.cases.add_sanction(row.case_id, sanction, by=actor, automatic=False, at=now)
    await work.cases.propose(row.case_id, note)
    await work.cases.append(
        row.case_id, at=now, actor=actor, action="proposed",
        detail=f"{'; '.join(_describe(s) for s in proposed)}: {note} "
        "(takes effect when a second officer approves)",
    )


async def _close(
    work: CaseWork, row: CaseRow, outcome: CaseStatus, note: str, actor: str
) -> None:
    now = work.clock.now()
    await work.cases.resolve(row.case_id, outcome, now)
    await work.cases.append(row.case_id, at=now, actor=actor, action="resolved",
                            detail=f"{outcome.value}: {note}")
    await _resolve_alerts(work, row.case_id, _ALERT_OUTCOME[outcome], note, actor)


async def approve_sanctions(work: CaseWork, case_id: str, note: str, actor: str) -> None:
    """A second officer's approval: the proposed sanctions take effect, the case is
    resolved as proposed."""
    row = await _case_for(work, case_id, actor)
    text = check_note(note)
    sanctions = await work.cases.sanctions_of(case_id)
    pending = [s for s in sanctions if s.pending]
    if not pending:
        if any(s.approved_by == actor for s in sanctions):
            return  # approved already, by this officer: the same call again
        raise FailedPrecondition(f"case {case_id} has no sanctions awaiting approval")
    proposer = pending[0].proposed_by
    if proposer == actor:
        raise PermissionDenied(
            f"you proposed the sanctions of case {case_id}: a second, different compliance "
            "officer must approve them"
        )
    if proposer in await strongly_linked(work.facts, actor):
        raise PermissionDenied(
            f"your account ({actor}) is linked to the proposer's ({proposer}) by a shared "
            "device, mailbox, address or payment instrument: an officer who is not must "
            "approve them"
        )
    now = work.clock.now()
    await work.cases.approve(case_id, actor, now)
    await work.cases.append(
        case_id, at=now, actor=actor, action="approved",
        detail=f"{'; '.join(_describe(s) for s in pending)} proposed by {proposer}"
        + (f": {text}" if text else ""),
    )
    reason = f"{row.proposal_note} (proposed by {proposer}, approved by {actor})"
    for sanction in pending:
        _publish_sanction(work, case_id, sanction, reason, actor, automatic=False)
        await work.cases.append(case_id, at=now, actor=actor, action="sanction",
                                detail=_describe(sanction))
    await work.cases.propose(case_id, "")
    await _close(work, row, CaseStatus.SANCTIONED, reason, actor)


async def reject_sanctions(work: CaseWork, case_id: str, note: str, actor: str) -> None:
    """The proposal is turned down (by a second officer, or withdrawn by its proposer):
    none of it takes effect; the case stays open."""
    row = await _case_for(work, case_id, actor)
    text = check_note(note, required=True)
    pending = [s for s in await work.cases.sanctions_of(case_id) if s.pending]
    if not pending:
        raise FailedPrecondition(f"case {case_id} has no sanctions awaiting approval")
    await work.cases.withdraw(row.case_id)
    await work.cases.append(
        case_id, at=work.clock.now(), actor=actor, action="rejected",
        detail=f"{'; '.join(_describe(s) for s in pending)} proposed by "
        f"{pending[0].proposed_by}: {text}",
    )


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


def _summary(
    row: CaseRow, alert_ids: Sequence[str], sanctions: Sequence[SanctionRow]
) -> antiabuse_pb2.Case:
    """A case without its log (what ListCases answers)."""
    message = antiabuse_pb2.Case(
        case_id=row.case_id, status=CASE_STATUSES[row.status], alert_ids=alert_ids,
        subject_account_ids=row.subjects, assignee_account_id=row.assignee,
        opened_by=row.opened_by,
    )
    message.opened_at.FromDatetime(row.opened_at)
    if row.resolved_at is not None:
        message.resolved_at.FromDatetime(row.resolved_at)
    for s in sanctions:
        message.sanctions.add(kind=SANCTION_KINDS[s.kind], account_id=s.account_id,
                              other_account_id=s.other_account_id, sanction_id=s.sanction_id,
                              awaiting_approval=s.pending, proposed_by_account_id=s.proposed_by,
                              approved_by_account_id=s.approved_by)
    return message


async def case_message(work: CaseWork, case_id: str) -> antiabuse_pb2.Case:
    row = await work.cases.get(checked_id("case_id", case_id)) if case_id else None
    if row is None:
        raise NotFound(f"no case {case_id!r}")
    message = _summary(row, await work.cases.alerts_of(case_id),
                       await work.cases.sanctions_of(case_id))
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

    async def list(self, query: CaseQuery) -> tuple[list[antiabuse_pb2.Case], str]:
        """A page of cases (``query.limit`` of them at most) and the next page's token."""
        async with self._unit_of_work() as work:
            rows = await work.cases.page(replace(query, limit=query.limit + 1))
            shown = rows[:query.limit]
            ids = [row.case_id for row in shown]
            alerts = await work.cases.alerts_of_cases(ids)
            sanctions = await work.cases.sanctions_of_cases(ids)
        found = [_summary(row, alerts[row.case_id], sanctions[row.case_id]) for row in shown]
        last = shown[-1] if len(rows) > query.limit else None
        return found, encode_page_token(last.opened_at, last.case_id) if last else ""

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

    async def approve(self, case_id: str, note: str, actor: str) -> antiabuse_pb2.Case:
        async with self._unit_of_work() as work:
            await approve_sanctions(work, case_id, note, actor)
            await work.commit()
        return await self.get(case_id)

    async def reject(self, case_id: str, note: str, actor: str) -> antiabuse_pb2.Case:
        async with self._unit_of_work() as work:
            await reject_sanctions(work, case_id, note, actor)
            await work.commit()
        return await self.get(case_id)
