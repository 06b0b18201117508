"""What every detector produces: a finding (kind, severity, score, subjects, evidence).

The common alert path (:mod:`services.antiabuse.alerting`) stores a finding as an
alert and publishes it: the latest alert of the same detector and subjects takes it
as nothing new, as new evidence, or gives way to a new alert
(:mod:`services.antiabuse.domain.alert_lifecycle`); more accounts are a new alert.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import IntEnum, StrEnum


class Severity(IntEnum):
    """Same numbers as ``tavla.antiabuse.v1.Severity``."""

    LOW = 1
    MEDIUM = 2
    HIGH = 3
    CRITICAL = 4


class Detector(StrEnum):
    """Detector names (the names ``tavla abuse eval`` scores them under)."""

    MULTI_ACCOUNTING = "multi_accounting"
    CHIP_DUMPING = "chip_dumping"
    CHAT_ABUSE = "chat_abuse"
    CONSULTING = "consulting"
    ASSISTANCE = "assistance"
    RATING_MANIPULATION = "rating_manipulation"
    DELIBERATE_DISCONNECT = "deliberate_disconnect"


@dataclass(frozen=True)
class Evidence:
    kind: str
    description: str
    game_ids: tuple[str, ...] = ()
    details: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Finding:
    detector: Detector
    subjects: tuple[str, ...]
    severity: Severity
    score: float
    score_meaning: str
    evidence: tuple[Evidence, ...]

    def __post_init__(self) -> None:
        if list(self.subjects) != sorted(set(self.subjects)):
            raise ValueError("a finding's subjects are distinct account ids, sorted")

    @property
    def fingerprint(self) -> str:
        """Detector, accounts and severity, stored with the alert raised from it."""
        text = f"{self.detector}|{int(self.severity)}|{','.join(self.subjects)}"
        return hashlib.sha256(text.encode()).hexdigest()


def pair(first: str, second: str) -> tuple[str, str]:
    """A pair of accounts in its one spelling (sorted)."""
    return (first, second) if first <= second else (second, first)
