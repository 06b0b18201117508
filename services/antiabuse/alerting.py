"""The common alert path every detector uses, and the work a detector does in one transaction.

``Work`` is the consumer's transaction seen by detectors: the facts, the alert
store, the accounts it holds locks on (``locks``: a detector locks every account
whose facts it reads or writes before reading them), the operator's alert windows,
and ``publish`` (the event goes to the outbox
in the same transaction, so an alert is stored and published, or neither).
``raise_alert`` turns a finding into a ComplianceAlert on
``tavla.compliance.alerts.v1`` (keyed by alert_id): a new alert, new evidence on
the open one (published again, its history one step longer), or nothing, as
:func:`services.antiabuse.domain.alert_lifecycle.decide` says; it returns the id
of the alert that holds the finding.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta

from google.protobuf.message import Message
from sqlalchemy.ext.asyncio import AsyncSession

from services.antiabuse.domain.alert_lifecycle import (
    DEFAULT_WINDOWS,
    REARM_HOURS,
    UPDATE_WINDOW_HOURS,
    AlertWindows,
    Decision,
    LatestAlert,
    Step,
    decide,
    evidence_digest,
)
from services.antiabuse.domain.findings import Detector, Finding, Severity
from services.antiabuse.store import AccountLocks, AlertStore, Facts, StoredAlert
from services.kit.clock import Clock
from services.kit.env import Env
from services.kit.events.envelope import Envelope
from services.kit.events.tables import outbox_row
from services.kit.logging import get_logger
from tavla.antiabuse.v1 import events_pb2

log = get_logger(__name__)

ALERTS_TOPIC = "tavla.compliance.alerts.v1"
UPDATE_VARIABLE = "TAVLA_ANTIABUSE_ALERT_UPDATE_HOURS"
REARM_VARIABLE = "TAVLA_ANTIABUSE_ALERT_REARM_HOURS"
VERDICTS_TOPIC = "tavla.antiabuse.v1"

KINDS = {
    Detector.MULTI_ACCOUNTING: events_pb2.ALERT_KIND_MULTI_ACCOUNTING,
    Detector.CHIP_DUMPING: events_pb2.ALERT_KIND_CHIP_DUMPING,
    Detector.CHAT_ABUSE: events_pb2.ALERT_KIND_CHAT_ABUSE,
    # Consulting is players sharing information: the contract's collusion kind.
    Detector.CONSULTING: events_pb2.ALERT_KIND_COLLUSION,
    # Assistance is play too close to an engine, by software or a bot.
    Detector.ASSISTANCE: events_pb2.ALERT_KIND_BOT_SUSPECTED,
    Detector.RATING_MANIPULATION: events_pb2.ALERT_KIND_RATING_MANIPULATION,
    Detector.DELIBERATE_DISCONNECT: events_pb2.ALERT_KIND_DELIBERATE_DISCONNECT,
}


def windows_from_env(env: Env | None = None) -> AlertWindows:
    """The operator's alert windows (README, "Alerts": the defaults and why)."""
    env = env or Env()
    update = env.number(UPDATE_VARIABLE, DEFAULT_WINDOWS.update.total_seconds() / 3600,
                        low=UPDATE_WINDOW_HOURS[0], high=UPDATE_WINDOW_HOURS[1])
    rearm = env.number(REARM_VARIABLE, DEFAULT_WINDOWS.rearm.total_seconds() / 3600,
                       low=REARM_HOURS[0], high=REARM_HOURS[1])
    return AlertWindows(update=timedelta(hours=update), rearm=timedelta(hours=rearm))


class Work:
    def __init__(
        self, session: AsyncSession, clock: Clock, source: str,
        windows: AlertWindows = DEFAULT_WINDOWS,
    ) -> None:
        self.session = session
        self.clock = clock
        self.source = source
        self.windows = windows
        self.facts = Facts(session)
        self.alerts = AlertStore(session)
        self.locks = AccountLocks(session)

    async def publish(self, topic: str, key: str, message: Message) -> None:
        await self.publish_all(topic, [(key, message)])

    async def publish_all(self, topic: str, keyed: Sequence[tuple[str, Message]]) -> None:
        """Put events in the outbox, in this order, in this transaction."""
        now = self.clock.now()
        envelopes = [
            Envelope.wrap(topic=topic, key=key, message=message, source=self.source, now=now)
            for key, message in keyed
        ]
        if envelopes:
            await self.session.execute(
                outbox_row.insert(), [envelope.as_outbox_values() for envelope in envelopes]
            )


def subject_key(finding: Finding) -> str:
    """Detector and subjects (not severity): one behaviour's alerts over time."""
    text = f"{finding.detector}|{','.join(finding.subjects)}"
    return hashlib.sha256(text.encode()).hexdigest()


def _add_evidence(target: events_pb2.ComplianceAlert | events_pb2.AlertRevision,
                  finding: Finding) -> None:
    for evidence in finding.evidence:
        target.evidence.add(
            kind=evidence.kind,
            description=evidence.description,
            game_ids=evidence.game_ids,
            details=dict(evidence.details),
        )


def alert_message(finding: Finding, alert_id: str, at: datetime) -> events_pb2.ComplianceAlert:
    alert = events_pb2.ComplianceAlert(
        alert_id=alert_id,
        kind=KINDS[finding.detector],
        subject_account_ids=finding.subjects,
        severity=int(finding.severity),  # type: ignore[arg-type]
        status=events_pb2.ALERT_STATUS_OPEN,
        detector=finding.detector.value,
        score=finding.score,
        score_meaning=finding.score_meaning,
    )
    _add_evidence(alert, finding)
    alert.occurred_at.FromDatetime(at)
    alert.raised_at.FromDatetime(at)
    alert.updated_at.FromDatetime(at)
    return alert


def revision(finding: Finding, at: datetime, action: str,
             detail: str = "") -> events_pb2.AlertRevision:
    step = events_pb2.AlertRevision(
        action=action, severity=int(finding.severity),  # type: ignore[arg-type]
        score=finding.score, detail=detail,
    )
    step.at.FromDatetime(at)
    _add_evidence(step, finding)
    return step


_RESOLUTIONS = {
    events_pb2.ALERT_STATUS_DISMISSED: "dismissed",
    events_pb2.ALERT_STATUS_CONFIRMED: "confirmed",
}


def _latest(stored: StoredAlert) -> LatestAlert:
    alert = events_pb2.ComplianceAlert.FromString(stored.message)
    resolved = alert.resolved_at.ToDatetime(tzinfo=UTC) if alert.HasField("resolved_at") else None
    return LatestAlert(
        alert_id=stored.alert_id,
        open=alert.status == events_pb2.ALERT_STATUS_OPEN,
        severity=Severity(alert.severity),
        evidence_digest=stored.evidence_digest,
        updated_at=stored.updated_at,
        resolved_at=resolved,
        resolution=_RESOLUTIONS.get(alert.status, "resolved"),
    )


async def raise_alert(work: Work, finding: Finding) -> tuple[str, bool]:
    """Store and publish ``finding``: (the id of the alert that holds it, whether it is new).

    Its subjects are locked first: two transactions raising one behaviour's alert wait
    for each other, so the second finds the first's alert (never two new ones)."""
    await work.locks.take(finding.subjects)
    now = work.clock.now()
    stored = await work.alerts.latest(subject_key(finding))
    decision = decide(_latest(stored) if stored else None, finding, now, work.windows)
    if stored is not None and decision.step is Step.NOTHING:
        return stored.alert_id, False
    if stored is not None and decision.step is Step.UPDATE:
        await _update(work, stored, finding, now)
        return stored.alert_id, False
    return await _raise(work, finding, now, decision), True


async def _raise(work: Work, finding: Finding, now: datetime, decision: Decision) -> str:
    alert = alert_message(finding, str(uuid.uuid4()), now)
    alert.previous_alert_id = decision.previous_alert_id
    await work.alerts.add(
        alert_id=alert.alert_id,
        fingerprint=finding.fingerprint,
        subject_key=subject_key(finding),
        evidence_digest=evidence_digest(finding),
        detector=finding.detector.value,
        kind=alert.kind,
        severity=alert.severity,
        status=alert.status,
        raised_at=now,
        message=alert.SerializeToString(),
        subjects=finding.subjects,
    )
    await work.alerts.record(alert.alert_id, now,
                             revision(finding, now, "raised", decision.reason))
    await work.publish(ALERTS_TOPIC, alert.alert_id, alert)
    log.info(
        "alert_raised",
        alert_id=alert.alert_id,
        detector=finding.detector.value,
        severity=int(finding.severity),
        subjects=len(finding.subjects),
        previous_alert_id=decision.previous_alert_id,
    )
    return alert.alert_id


async def _update(work: Work, stored: StoredAlert, finding: Finding, now: datetime) -> None:
    """New evidence on the open alert: its evidence now, the higher severity, published again."""
    alert = events_pb2.ComplianceAlert.FromString(stored.message)
    escalated = finding.severity > alert.severity
    alert.severity = max(alert.severity, int(finding.severity))  # type: ignore[assignment]
    alert.score = finding.score
    alert.score_meaning = finding.score_meaning
    del alert.evidence[:]
    _add_evidence(alert, finding)
    alert.updated_at.FromDatetime(now)
    alert.occurred_at.FromDatetime(now)
    await work.alerts.update(stored.alert_id, severity=alert.severity,
                             message=alert.SerializeToString(),
                             evidence_digest=evidence_digest(finding), at=now)
    await work.alerts.record(stored.alert_id, now, revision(
        finding, now, "escalated" if escalated else "updated"))
    await work.publish(ALERTS_TOPIC, stored.alert_id, alert)
    log.info("alert_updated", alert_id=stored.alert_id, detector=finding.detector.value,
             severity=int(alert.severity), escalated=escalated)


async def lifted_on_alert(work: Work, alert_id: str, detail: str,
                          joined: Callable[[str, str], bool]) -> None:
    """A restriction the alert led to was lifted: a step of its history ("downgraded" to
    MEDIUM when no two of its subjects are ``joined`` any more, else "lifted"), the alert
    published again, and a line in the log of the case that holds it, if any. An alert an
    officer has resolved keeps its status: the history says what changed after."""
    case_id = await work.alerts.locked_case_of(alert_id)  # the case's lock first
    stored = await work.alerts.get(alert_id, lock=True)
    if stored is None:
        return
    alert = events_pb2.ComplianceAlert.FromString(stored)
    now = work.clock.now()
    subjects = sorted(alert.subject_account_ids)
    still = any(joined(a, b) for i, a in enumerate(subjects) for b in subjects[i + 1:])
    action = "lifted" if still else "downgraded"
    if not still:
        alert.severity = min(alert.severity, events_pb2.SEVERITY_MEDIUM)
    alert.updated_at.FromDatetime(now)
    await work.alerts.set_severity(alert_id, int(alert.severity), alert.SerializeToString(), now)
    step = events_pb2.AlertRevision(action=action, severity=alert.severity, score=alert.score,
                                    detail=detail)
    step.at.FromDatetime(now)
    step.evidence.extend(alert.evidence)
    await work.alerts.record(alert_id, now, step)
    if case_id is not None:
        await work.alerts.note_in_case(case_id, now, alert.detector, action, detail)
    await work.publish(ALERTS_TOPIC, alert_id, alert)
    log.info("alert_restriction_lifted", alert_id=alert_id, action=action)
