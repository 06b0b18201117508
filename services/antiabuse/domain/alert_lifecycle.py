"""What a detector's finding does to the alerts already raised on the same detector and
subjects: pure (no I/O; times are arguments).

An alert is an episode of one behaviour (one detector, one set of accounts). A
finding is compared with the latest alert of its detector and subjects:

- none yet: a new alert;
- open: the same evidence at no higher severity is the alert again (a replayed event,
  a detector run on an unrelated fact): nothing. New evidence within ``update`` of
  the alert's last evidence updates it (its severity becomes the higher of the two);
  new evidence after a longer quiet spell is a new episode: a new alert;
- dismissed or confirmed: a higher severity than the officer judged is a new alert at
  once; new evidence arriving ``rearm`` or more after the resolution (the behaviour
  went on) is a new alert; anything else is what the officer already read: nothing.

Evidence is compared by digest (:func:`evidence_digest`), so the same facts give
the same digest however often a detector runs over them.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from services.antiabuse.domain.findings import Finding, Severity

# Bounds of the operator's settings (hours); README, "Alerts" says why the defaults.
UPDATE_WINDOW_HOURS = (1, 24 * 90)
REARM_HOURS = (0, 24 * 30)


@dataclass(frozen=True)
class AlertWindows:
    """``update``: how long after an open alert's last evidence new evidence still
    belongs to it. ``rearm``: how long after a resolution new evidence is taken as what
    the officer already saw (facts in flight, the resolved episode's stragglers)."""

    update: timedelta = timedelta(days=30)
    rearm: timedelta = timedelta(hours=24)

    def __post_init__(self) -> None:
        low, high = UPDATE_WINDOW_HOURS
        if not timedelta(hours=low) <= self.update <= timedelta(hours=high):
            raise ValueError(f"the update window must be {low} to {high} hours")
        low, high = REARM_HOURS
        if not timedelta(hours=low) <= self.rearm <= timedelta(hours=high):
            raise ValueError(f"the re-arm window must be {low} to {high} hours")


DEFAULT_WINDOWS = AlertWindows()


@dataclass(frozen=True)
class LatestAlert:
    """The latest alert of a detector and subjects, as far as this decision needs it."""

    alert_id: str
    open: bool
    severity: Severity
    evidence_digest: str
    updated_at: datetime
    resolved_at: datetime | None = None
    resolution: str = "resolved"  # "dismissed" or "confirmed": for the new alert's reason


class Step(StrEnum):
    NOTHING = "nothing"
    RAISE = "raise"
    UPDATE = "update"


@dataclass(frozen=True)
class Decision:
    step: Step
    # RAISE after an earlier alert: the alert it follows, and why (for its history).
    previous_alert_id: str = ""
    reason: str = ""


NOTHING = Decision(Step.NOTHING)


def evidence_digest(finding: Finding) -> str:
    """The same evidence, the same digest (order of details does not matter)."""
    items = [
        [e.kind, e.description, list(e.game_ids), sorted(e.details.items())]
        for e in finding.evidence
    ]
    return hashlib.sha256(json.dumps(items).encode()).hexdigest()


def decide(
    latest: LatestAlert | None, finding: Finding, now: datetime,
    windows: AlertWindows = DEFAULT_WINDOWS,
) -> Decision:
    if latest is None:
        return Decision(Step.RAISE)
    new_evidence = evidence_digest(finding) != latest.evidence_digest
    stronger = finding.severity > latest.severity
    if latest.open:
        if not new_evidence and not stronger:
            return NOTHING
        if now - latest.updated_at <= windows.update:
            return Decision(Step.UPDATE)
        return Decision(Step.RAISE, latest.alert_id,
                        f"new evidence after alert {latest.alert_id} was quiet for longer "
                        f"than the update window ({_hours(windows.update)})")
    if stronger:
        return Decision(Step.RAISE, latest.alert_id,
                        f"escalated: {finding.severity.name} after alert {latest.alert_id} "
                        f"was {latest.resolution} at {latest.severity.name}")
    resolved_at = latest.resolved_at or latest.updated_at
    if new_evidence and now - resolved_at >= windows.rearm:
        return Decision(Step.RAISE, latest.alert_id,
                        f"re-armed: the behaviour went on after alert {latest.alert_id} was "
                        f"{latest.resolution} at {resolved_at.isoformat(timespec='seconds')}")
    return NOTHING


def _hours(window: timedelta) -> str:
    return f"{window.total_seconds() / 3600:g} h"
