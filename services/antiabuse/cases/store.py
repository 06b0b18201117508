"""The cases' repository, and the two transactions cases are worked in: a compliance
call's unit of work, and the policy consumer's inbox transaction (``CaseWork``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from google.protobuf.message import Message
from sqlalchemy import and_, delete, func, or_, select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from services.antiabuse.cases.domain import CaseStatus, SanctionKind, SanctionState
from services.antiabuse.cases.tables import case_alerts, case_log, case_sanctions, cases
from services.antiabuse.service import AntiAbuseUnitOfWork
from services.antiabuse.store import AlertStore, Facts
from services.antiabuse.tables import alert_subjects
from services.kit.clock import Clock
from services.kit.events.envelope import Envelope
from services.kit.events.tables import outbox_row


@dataclass(frozen=True)
class CaseRow:
    case_id: str
    status: CaseStatus
    subjects: list[str]
    assignee: str
    opened_by: str
    opened_at: datetime
    resolved_at: datetime | None
    proposal_note: str = ""


@dataclass(frozen=True)
class LogRow:
    sequence: int
    at: datetime
    actor: str
    action: str
    detail: str


@dataclass(frozen=True)
class SanctionRow:
    sanction_id: str
    kind: SanctionKind
    account_id: str
    other_account_id: str
    state: SanctionState = SanctionState.IMPOSED
    proposed_by: str = ""
    approved_by: str = ""

    @property
    def pending(self) -> bool:
        return self.state is SanctionState.PROPOSED


def _sanction_row(r: Any) -> SanctionRow:
    return SanctionRow(r.sanction_id, SanctionKind(r.kind), r.account_id, r.other_account_id,
                       SanctionState(r.state), r.proposed_by, r.approved_by)


@dataclass(frozen=True)
class CaseQuery:
    """ListCases' filters (empty: any) and the page it asks for."""

    status: CaseStatus | None = None
    account_id: str = ""
    alert_id: str = ""
    assignee: str = ""
    limit: int = 50
    after: tuple[datetime, str] | None = None


def _case_row(row: Any) -> CaseRow:
    return CaseRow(row.case_id, CaseStatus(row.status),
                   [s for s in row.subjects.split(",") if s], row.assignee, row.opened_by,
                   row.opened_at, row.resolved_at, row.proposal_note)


class CaseStore:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def page(self, query: CaseQuery) -> list[CaseRow]:
        """Cases newest first (opened_at, then case_id), filtered, after a page's last."""
        conditions: list[Any] = []
        if query.status is not None:
            conditions.append(cases.c.status == query.status.value)
        if query.assignee:
            conditions.append(cases.c.assignee == query.assignee)
        if query.alert_id:
            conditions.append(cases.c.case_id.in_(
                select(case_alerts.c.case_id).where(case_alerts.c.alert_id == query.alert_id)
            ))
        if query.account_id:
            # A case's subjects are the accounts its alerts name (``open_case``).
            conditions.append(cases.c.case_id.in_(
                select(case_alerts.c.case_id)
                .join(alert_subjects, alert_subjects.c.alert_id == case_alerts.c.alert_id)
                .where(alert_subjects.c.account_id == query.account_id)
            ))
        if query.after is not None:
            at, case_id = query.after
            conditions.append(or_(cases.c.opened_at < at,
                                  and_(cases.c.opened_at == at, cases.c.case_id < case_id)))
        rows = await self._session.execute(
            select(cases).where(*conditions)
            .order_by(cases.c.opened_at.desc(), cases.c.case_id.desc()).limit(query.limit)
        )
        return [_case_row(row) for row in rows]

    async def alerts_of_cases(self, case_ids: Sequence[str]) -> dict[str, list[str]]:
        rows = await self._session.execute(
            select(case_alerts).where(case_alerts.c.case_id.in_(case_ids))
            .order_by(case_alerts.c.alert_id)
        )
        found: dict[str, list[str]] = {case_id: [] for case_id in case_ids}
        for row in rows:
            found[row.case_id].append(row.alert_id)
        return found

    async def sanctions_of_cases(self, case_ids: Sequence[str]) -> dict[str, list[SanctionRow]]:
        rows = await self._session.execute(
            select(case_sanctions).where(case_sanctions.c.case_id.in_(case_ids))
            .order_by(case_sanctions.c.kind, case_sanctions.c.account_id)
        )
        found: dict[str, list[SanctionRow]] = {case_id: [] for case_id in case_ids}
        for r in rows:
            found[r.case_id].append(_sanction_row(r))
        return found

    async def add(self, case_id: str, subjects: Sequence[str], by: str, at: datetime) -> None:
        await self._session.execute(cases.insert().values(
            case_id=case_id, status=CaseStatus.OPEN.value, subjects=",".join(sorted(subjects)),
            assignee="", opened_by=by, opened_at=at,
        ))

    async def claim_alerts(self, case_id: str, alert_ids: Sequence[str]) -> dict[str, str]:
        """Put the alerts in the case; those already in a case: {alert_id: that case}."""
        taken = await self._session.execute(
            insert(case_alerts)
            .values([{"alert_id": a, "case_id": case_id} for a in alert_ids])
            .on_conflict_do_nothing()
            .returning(case_alerts.c.alert_id)
        )
        claimed = {row.alert_id for row in taken}
        missing = [a for a in alert_ids if a not in claimed]
        if not missing:
            return {}
        rows = await self._session.execute(
            select(case_alerts).where(case_alerts.c.alert_id.in_(missing))
        )
        return {row.alert_id: row.case_id for row in rows}

    async def case_of(self, alert_id: str) -> str | None:
        found: str | None = await self._session.scalar(
            select(case_alerts.c.case_id).where(case_alerts.c.alert_id == alert_id)
        )
        return found

    async def get(self, case_id: str, *, lock: bool = False) -> CaseRow | None:
        query = select(cases).where(cases.c.case_id == case_id)
        if lock:
            query = query.with_for_update()
        row = (await self._session.execute(query)).first()
        return None if row is None else _case_row(row)

    async def alerts_of(self, case_id: str) -> list[str]:
        rows = await self._session.execute(
            select(case_alerts.c.alert_id).where(case_alerts.c.case_id == case_id)
            .order_by(case_alerts.c.alert_id)
        )
        return [row.alert_id for row in rows]

    async def append(
        self, case_id: str, *, at: datetime, actor: str, action: str, detail: str
    ) -> None:
        """One more line of the case's log (the caller holds the case's row lock)."""
        last = await self._session.scalar(
            select(func.coalesce(func.max(case_log.c.sequence), 0))
            .where(case_log.c.case_id == case_id)
        )
        await self._session.execute(case_log.insert().values(
            case_id=case_id, sequence=int(last or 0) + 1, at=at, actor=actor, action=action,
            detail=detail,
        ))

    async def log_of(self, case_id: str) -> list[LogRow]:
        rows = await self._session.execute(
            select(case_log).where(case_log.c.case_id == case_id).order_by(case_log.c.sequence)
        )
        return [LogRow(r.sequence, r.at, r.actor, r.action, r.detail) for r in rows]

    async def assign(self, case_id: str, assignee: str) -> None:
        await self._session.execute(
            update(cases).where(cases.c.case_id == case_id).values(assignee=assignee)
        )

    async def resolve(self, case_id: str, status: CaseStatus, at: datetime) -> None:
        await self._session.execute(
            update(cases).where(cases.c.case_id == case_id)
            .values(status=status.value, resolved_at=at)
        )

    async def add_sanction(
        self, case_id: str, sanction: SanctionRow, *, by: str, automatic: bool, at: datetime
    ) -> None:
        await self._session.execute(insert(case_sanctions).values(
            sanction_id=sanction.sanction_id, case_id=case_id, kind=sanction.kind.value,
            account_id=sanction.account_id, other_account_id=sanction.other_account_id,
            imposed_by=by, automatic=automatic, imposed_at=at, state=sanction.state.value,
            proposed_by=sanction.proposed_by,
        ).on_conflict_do_nothing())

    async def sanctions_of(self, case_id: str) -> list[SanctionRow]:
        rows = await self._session.execute(
            select(case_sanctions).where(case_sanctions.c.case_id == case_id)
            .order_by(case_sanctions.c.kind, case_sanctions.c.account_id)
        )
        return [_sanction_row(r) for r in rows]

    async def propose(self, case_id: str, note: str) -> None:
        await self._session.execute(
            update(cases).where(cases.c.case_id == case_id).values(proposal_note=note)
        )

    async def approve(self, case_id: str, approver: str, at: datetime) -> None:
        """The case's proposed sanctions take effect (the caller publishes them)."""
        await self._session.execute(
            update(case_sanctions)
            .where(case_sanctions.c.case_id == case_id,
                   case_sanctions.c.state == SanctionState.PROPOSED.value)
            .values(state=SanctionState.IMPOSED.value, approved_by=approver, imposed_by=approver,
                    imposed_at=at)
        )

    async def withdraw(self, case_id: str) -> None:
        """The case's proposed sanctions are turned down: none of them ever took effect."""
        await self._session.execute(
            delete(case_sanctions).where(case_sanctions.c.case_id == case_id,
                                         case_sanctions.c.state == SanctionState.PROPOSED.value)
        )
        await self.propose(case_id, "")


class CaseWork(Protocol):
    """What the case use cases need from their transaction."""

    cases: CaseStore
    alerts: AlertStore
    facts: Facts
    clock: Clock

    def publish(self, topic: str, key: str, message: Message) -> object: ...


class CasesUnitOfWork(AntiAbuseUnitOfWork):
    """A compliance call's transaction."""

    cases: CaseStore

    def _start(self) -> None:
        super()._start()
        self.cases = CaseStore(self.session)


class InboxCaseWork:
    """A consumer's inbox transaction seen as a CaseWork (the consumer commits it)."""

    def __init__(self, session: AsyncSession, clock: Clock, source: str) -> None:
        self.session = session
        self.clock = clock
        self.cases = CaseStore(session)
        self.alerts = AlertStore(session)
        self.facts = Facts(session)
        self._source = source
        self._pending: list[Envelope] = []

    def publish(self, topic: str, key: str, message: Message) -> object:
        envelope = Envelope.wrap(topic=topic, key=key, message=message, source=self._source,
                                 now=self.clock.now())
        self._pending.append(envelope)
        return envelope

    async def flush(self) -> None:
        if self._pending:
            await self.session.execute(
                outbox_row.insert(), [e.as_outbox_values() for e in self._pending]
            )
        self._pending = []
