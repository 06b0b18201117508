"""Automatic actions: only where the operator's policy allows, only a freeze, never more.

``TAVLA_ANTIABUSE_AUTO_FREEZE`` lists the alerts overwhelming enough to freeze
their subjects' wallets at once, as ``detector:SEVERITY`` rules separated by
commas; the default is ``chip_dumping:CRITICAL`` (money flowing one way
between accounts that are also linked as one person); ``none`` turns automatic
action off. For a matching open alert (new, or an open one new evidence raised to
the rule's severity) the policy consumer (group ``antiabuse.policy``, on the
service's own ``tavla.compliance.alerts.v1``) opens a case as ``policy`` (or uses
the open case that already holds the alert) and imposes FREEZE_WALLET on each
subject (published as AccountSanctioned, ``automatic`` set), then publishes the
alert again with ``accounts_frozen`` set. The case stays open: a person reviews it,
and only people suspend, forbid a pair or terminate (this module cannot express any
other sanction). A re-armed alert (the behaviour went on after a dismissal) is a new
alert, so the policy fires again for it. Exactly once: the inbox, an alert is in
one case at most, and a sanction's id is derived from its case.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from services.antiabuse.alerting import ALERTS_TOPIC
from services.antiabuse.cases.domain import (
    POLICY_ACTOR,
    CaseStatus,
    SanctionKind,
    SanctionOrder,
)
from services.antiabuse.cases.service import impose, open_case
from services.antiabuse.cases.store import InboxCaseWork
from services.kit.clock import Clock
from services.kit.config import ConfigError, Env
from services.kit.events.consumer import ConsumerFactory, EventConsumer
from services.kit.events.envelope import ReceivedEvent
from services.kit.logging import get_logger
from tavla.antiabuse.v1 import events_pb2

log = get_logger(__name__)

POLICY_GROUP = "antiabuse.policy"
POLICY_VARIABLE = "TAVLA_ANTIABUSE_AUTO_FREEZE"
DEFAULT_RULES = "chip_dumping:CRITICAL"
COMPLIANCE_ALERT = events_pb2.ComplianceAlert.DESCRIPTOR.full_name


@dataclass(frozen=True)
class AutoPolicy:
    """(detector, minimum severity) pairs whose alerts freeze their subjects at once."""

    freeze_on: frozenset[tuple[str, int]] = frozenset()

    @classmethod
    def parse(cls, text: str) -> AutoPolicy:
        if text.strip().lower() in ("", "none"):
            return cls()
        rules = set()
        for rule in text.split(","):
            detector, _, severity = rule.strip().partition(":")
            name = f"SEVERITY_{severity.strip().upper()}"
            known = name in events_pb2.Severity.keys()  # noqa: SIM118 (an enum wrapper, no __contains__)
            number = events_pb2.Severity.Value(name) if known else 0
            if not detector.strip() or number == 0:
                raise ConfigError(
                    f"{POLICY_VARIABLE}: {rule.strip()!r} is not detector:SEVERITY "
                    "(e.g. chip_dumping:CRITICAL; severities LOW, MEDIUM, HIGH, CRITICAL)"
                )
            rules.add((detector.strip(), number))
        return cls(frozenset(rules))

    @classmethod
    def from_env(cls) -> AutoPolicy:
        return cls.parse(Env().optional_text(POLICY_VARIABLE) or DEFAULT_RULES)

    def freezes(self, alert: events_pb2.ComplianceAlert) -> bool:
        return alert.status == events_pb2.ALERT_STATUS_OPEN and any(
            alert.detector == detector and alert.severity >= severity
            for detector, severity in self.freeze_on
        )


class PolicyHandlers:
    def __init__(self, policy: AutoPolicy, clock: Clock, source: str) -> None:
        self._policy = policy
        self._clock = clock
        self._source = source

    async def alert(self, session: AsyncSession, event: ReceivedEvent) -> None:
        alert = events_pb2.ComplianceAlert.FromString(event.payload)
        if not self._policy.freezes(alert) or alert.accounts_frozen:
            return
        work = InboxCaseWork(session, self._clock, self._source)
        stored = await work.alerts.get(alert.alert_id)
        if stored is None or not self._policy.freezes(
            events_pb2.ComplianceAlert.FromString(stored)
        ):
            return  # resolved by an officer since this was published
        case_id = await work.cases.case_of(alert.alert_id)
        if case_id is None:
            case_id = await open_case(work, [alert.alert_id], "automatic: operator policy",
                                      POLICY_ACTOR)
        row = await work.cases.get(case_id, lock=True)
        if row is None or row.status is not CaseStatus.OPEN:
            return  # a person closed the case: their decision stands
        orders = [SanctionOrder(SanctionKind.FREEZE_WALLET, a) for a in alert.subject_account_ids]
        severity = events_pb2.Severity.Name(alert.severity)
        reason = f"automatic freeze: {alert.detector} alert {alert.alert_id} is {severity}"
        if not await impose(work, row, orders, reason, POLICY_ACTOR, automatic=True):
            return  # frozen in this case already (a replay)
        await self._mark_frozen(work, alert.alert_id)
        await work.flush()
        log.info("automatic_freeze", alert_id=alert.alert_id, case_id=case_id)

    @staticmethod
    async def _mark_frozen(work: InboxCaseWork, alert_id: str) -> None:
        stored = await work.alerts.get(alert_id, lock=True)
        if stored is None:
            return
        current = events_pb2.ComplianceAlert.FromString(stored)
        current.accounts_frozen = True
        await work.alerts.set_status(alert_id, current.status, current.SerializeToString())
        work.publish(ALERTS_TOPIC, alert_id, current)


def policy_consumer(
    *,
    sessions: async_sessionmaker[AsyncSession],
    consumer_factory: ConsumerFactory,
    policy: AutoPolicy,
    clock: Clock,
    service: str = "antiabuse",
) -> EventConsumer:
    handlers = PolicyHandlers(policy, clock, service)
    return EventConsumer(
        service=service,
        name="policy",
        sessions=sessions,
        consumer_factory=consumer_factory,
        handlers={COMPLIANCE_ALERT: handlers.alert},
        clock=clock,
    )
