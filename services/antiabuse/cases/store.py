"""The cases' repository, and the two transactions cases are worked in: a compliance
call's unit of work, and the policy consumer's inbox transaction (``CaseWork``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from google.protobuf.message import Message
from sqlalchemy import func, select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from services.antiabuse.cases.domain import CaseStatus, SanctionKind
from services.antiabuse.cases.tables import case_alerts, case_log, case_sanctions, cases
from services.antiabuse.service import AntiAbuseUnitOfWork
from services.antiabuse.store import AlertStore
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


class CaseStore:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

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
        if row is None:
            return None
        return CaseRow(row.case_id, CaseStatus(row.status),
                       [s for s in row.subjects.split(",") if s], row.assignee, row.opened_by,
                       row.opened_at, row.resolved_at)

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
            imposed_by=by, automatic=automatic, imposed_at=at,
        ).on_conflict_do_nothing())

    async def sanctions_of(self, case_id: str) -> list[SanctionRow]:
        rows = await self._session.execute(
            select(case_sanctions).where(case_sanctions.c.case_id == case_id)
            .order_by(case_sanctions.c.kind, case_sanctions.c.account_id)
        )
        return [SanctionRow(r.sanction_id, SanctionKind(r.kind), r.account_id,
                            r.other_account_id) for r in rows]


class CaseWork(Protocol):
    """What the case use cases need from their transaction."""

    cases: CaseStore
    alerts: AlertStore
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
