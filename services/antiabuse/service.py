"""The compliance team's use cases: list alerts, an alert with its history, an account's
risk profile, resolve an alert (never one that names the officer or an account linked to
them: :mod:`services.antiabuse.cases.four_eyes`).

Each runs in one unit of work. An alert is stored as the ComplianceAlert it was
published as; resolving it stores the new status with who resolved it, when and
why, and publishes the alert again (keyed by alert_id, so the stream keeps each
alert's history in order).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from services.antiabuse.alerting import ALERTS_TOPIC
from services.antiabuse.cases.four_eyes import check_disinterested
from services.antiabuse.detectors.multi_accounting import MultiAccounting
from services.antiabuse.domain.deliberate_disconnect import losing
from services.antiabuse.results_store import ResultFacts
from services.antiabuse.store import AlertStore, Facts
from services.kit.db import UnitOfWork
from services.kit.errors import FailedPrecondition, InvalidArgument, NotFound
from tavla.antiabuse.v1 import events_pb2

DISCONNECT_WINDOW = timedelta(days=30)
MAX_PAGE = 200
DEFAULT_PAGE = 50
MAX_NOTE = 2000
RESOLUTIONS = (events_pb2.ALERT_STATUS_DISMISSED, events_pb2.ALERT_STATUS_CONFIRMED)
# How much each open alert adds to an account's 0..100 risk score, by severity.
RISK_WEIGHT = {1: 10, 2: 25, 3: 50, 4: 100}


class AntiAbuseUnitOfWork(UnitOfWork):
    facts: Facts
    alerts: AlertStore

    def _start(self) -> None:
        self.facts = Facts(self.session)
        self.alerts = AlertStore(self.session)


@dataclass(frozen=True)
class AlertFilter:
    account_id: str = ""
    kind: int = 0
    min_severity: int = 0
    status: int = 0
    page_size: int = 0
    page_token: str = ""


@dataclass(frozen=True)
class RiskProfile:
    account_id: str
    risk_score: int
    linked_account_ids: list[str]
    open_alerts: list[events_pb2.ComplianceAlert]
    recent_disconnects: int
    updated_at: datetime
    # Sessions abandoned (settled by analysis) with the account's share <= 0.4.
    recent_losing_disconnects: int = 0


def checked_id(name: str, value: str) -> str:
    """An id from a request as PostgreSQL can compare it: at most 64 printable characters
    (a NUL byte would be a database error, not an answer)."""
    if len(value) > 64 or not value.isprintable():
        raise InvalidArgument(f"{name} is not an id (at most 64 printable characters)")
    return value


def decode_page_token(token: str) -> tuple[datetime, str] | None:
    """The (time, id) a page ends at, from a token ``encode_page_token`` made (alerts, cases)."""
    if not token:
        return None
    try:
        at, _, alert_id = base64.urlsafe_b64decode(token.encode()).decode().partition("|")
        return datetime.fromisoformat(at).astimezone(UTC), alert_id
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise InvalidArgument("page_token is not one this service returned") from None


def encode_page_token(at: datetime, row_id: str) -> str:
    return base64.urlsafe_b64encode(f"{at.isoformat()}|{row_id}".encode()).decode()


class AntiAbuseService:
    def __init__(self, unit_of_work: Callable[[], AntiAbuseUnitOfWork]) -> None:
        self._unit_of_work = unit_of_work
        self._linking = MultiAccounting()

    async def list_alerts(self, query: AlertFilter) -> tuple[list[events_pb2.ComplianceAlert], str]:
        if not 0 <= query.page_size <= MAX_PAGE:
            raise InvalidArgument(f"page_size must be between 1 and {MAX_PAGE} (0: {DEFAULT_PAGE})")
        limit = query.page_size or DEFAULT_PAGE
        after = decode_page_token(query.page_token)
        async with self._unit_of_work() as work:
            rows = await work.alerts.page(
                account_id=checked_id("account_id", query.account_id),
                kind=query.kind,
                min_severity=query.min_severity,
                status=query.status,
                limit=limit + 1,
                after=after,
            )
        alerts = [events_pb2.ComplianceAlert.FromString(message) for _, _, message in rows[:limit]]
        more = len(rows) > limit
        token = encode_page_token(rows[limit - 1][0], rows[limit - 1][1]) if more else ""
        return alerts, token

    async def get_alert(self, alert_id: str) -> events_pb2.ComplianceAlert:
        async with self._unit_of_work() as work:
            stored = await work.alerts.get(checked_id("alert_id", alert_id)) if alert_id else None
            if stored is None:
                raise NotFound(f"no alert {alert_id!r}")
            history = await work.alerts.history(alert_id)
        alert = events_pb2.ComplianceAlert.FromString(stored)
        alert.history.extend(history)
        return alert

    async def risk_profile(self, account_id: str) -> RiskProfile:
        if not account_id:
            raise InvalidArgument("account_id is required")
        checked_id("account_id", account_id)
        async with self._unit_of_work() as work:
            now = work.clock.now()
            rows = await work.alerts.page(
                account_id=account_id,
                kind=0,
                min_severity=0,
                status=events_pb2.ALERT_STATUS_OPEN,
                limit=MAX_PAGE,
                after=None,
            )
            linked = await self._linking.linked(work.facts, account_id)
            disconnects = await work.facts.recent_disconnects(account_id, now - DISCONNECT_WINDOW)
            stops = await ResultFacts(work.session).stops(account_id, now - DISCONNECT_WINDOW)
        alerts = [events_pb2.ComplianceAlert.FromString(message) for _, _, message in rows]
        score = min(100, sum(RISK_WEIGHT.get(int(a.severity), 0) for a in alerts))
        return RiskProfile(
            account_id=account_id,
            risk_score=score,
            linked_account_ids=sorted(linked - {account_id}),
            open_alerts=alerts,
            recent_disconnects=disconnects,
            updated_at=now,
            recent_losing_disconnects=sum(1 for s in stops if losing(s)),
        )

    async def resolve(
        self, *, alert_id: str, status: int, note: str, officer: str
    ) -> events_pb2.ComplianceAlert:
        if status not in RESOLUTIONS:
            raise InvalidArgument("status must be ALERT_STATUS_DISMISSED or ALERT_STATUS_CONFIRMED")
        if len(note) > MAX_NOTE:
            raise InvalidArgument(f"note is longer than {MAX_NOTE} characters")
        if "\x00" in note:  # PostgreSQL's text cannot hold it
            raise InvalidArgument("note holds a NUL character")
        async with self._unit_of_work() as work:
            stored = (await work.alerts.get(checked_id("alert_id", alert_id), lock=True)
                      if alert_id else None)
            if stored is None:
                raise NotFound(f"no alert {alert_id!r}")
            alert = events_pb2.ComplianceAlert.FromString(stored)
            await check_disinterested(work.facts, officer, alert.subject_account_ids,
                                      f"alert {alert_id}")
            if alert.status == status:
                return alert  # the same resolution again: already done
            if alert.status != events_pb2.ALERT_STATUS_OPEN:
                raise FailedPrecondition(
                    f"alert {alert_id} was already resolved "
                    f"({events_pb2.AlertStatus.Name(alert.status)}) by "
                    f"{alert.resolved_by_account_id}"
                )
            now = work.clock.now()
            alert.status = status  # type: ignore[assignment]
            alert.resolved_by_account_id = officer
            alert.resolution_note = note
            alert.resolved_at.FromDatetime(now)
            alert.occurred_at.FromDatetime(now)
            await work.alerts.set_status(alert_id, status, alert.SerializeToString())
            work.publish(ALERTS_TOPIC, alert_id, alert)
            await work.commit()
        return alert
