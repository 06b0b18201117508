"""The common alert path every detector uses, and the work a detector does in one transaction.

``Work`` is the consumer's transaction seen by detectors: the facts, the alert
store, and ``publish`` (the event goes to the outbox in the same transaction,
so an alert is stored and published, or neither). ``raise_alert`` turns a
finding into a ComplianceAlert on ``tavla.compliance.alerts.v1`` (keyed by
alert_id), once per fingerprint, and returns the alert's id either way.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime

from google.protobuf.message import Message
from sqlalchemy.ext.asyncio import AsyncSession

from services.antiabuse.domain.findings import Detector, Finding
from services.antiabuse.store import AlertStore, Facts
from services.kit.clock import Clock
from services.kit.events.envelope import Envelope
from services.kit.events.tables import outbox_row
from services.kit.logging import get_logger
from tavla.antiabuse.v1 import events_pb2

log = get_logger(__name__)

ALERTS_TOPIC = "tavla.compliance.alerts.v1"
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


class Work:
    def __init__(self, session: AsyncSession, clock: Clock, source: str) -> None:
        self.session = session
        self.clock = clock
        self.source = source
        self.facts = Facts(session)
        self.alerts = AlertStore(session)

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
    for evidence in finding.evidence:
        alert.evidence.add(
            kind=evidence.kind,
            description=evidence.description,
            game_ids=evidence.game_ids,
            details=dict(evidence.details),
        )
    alert.occurred_at.FromDatetime(at)
    alert.raised_at.FromDatetime(at)
    return alert


async def raise_alert(work: Work, finding: Finding) -> tuple[str, bool]:
    """Store and publish ``finding`` as an alert: (its id, whether it is new)."""
    existing = await work.alerts.by_fingerprint(finding.fingerprint)
    if existing is not None:
        return existing, False
    now = work.clock.now()
    alert = alert_message(finding, str(uuid.uuid4()), now)
    stored = await work.alerts.add(
        alert_id=alert.alert_id,
        fingerprint=finding.fingerprint,
        detector=finding.detector.value,
        kind=alert.kind,
        severity=alert.severity,
        status=alert.status,
        raised_at=now,
        message=alert.SerializeToString(),
        subjects=finding.subjects,
    )
    if stored is None:  # cannot happen under the detection lock; kept safe anyway
        return await work.alerts.by_fingerprint(finding.fingerprint) or "", False
    await work.publish(ALERTS_TOPIC, alert.alert_id, alert)
    log.info(
        "alert_raised",
        alert_id=alert.alert_id,
        detector=finding.detector.value,
        severity=int(finding.severity),
        subjects=len(finding.subjects),
    )
    return alert.alert_id, True
