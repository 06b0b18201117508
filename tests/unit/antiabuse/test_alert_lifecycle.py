"""What a finding does to the latest alert of its detector and subjects
(services/antiabuse/domain/alert_lifecycle.py), at and just past each window, by hand."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from services.antiabuse.alerting import windows_from_env
from services.antiabuse.domain.alert_lifecycle import (
    AlertWindows,
    LatestAlert,
    Step,
    decide,
    evidence_digest,
)
from services.antiabuse.domain.findings import Detector, Evidence, Finding, Severity
from services.kit.env import ConfigError, Env

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
WINDOWS = AlertWindows(update=timedelta(days=30), rearm=timedelta(hours=24))


def flow(games: int, severity: Severity = Severity.MEDIUM) -> Finding:
    return Finding(
        detector=Detector.CHIP_DUMPING, subjects=("a", "b"), severity=severity, score=1.0,
        score_meaning="share",
        evidence=(Evidence("one_directional_flow", f"{games} games",
                           tuple(f"g{n}" for n in range(games)),
                           {"games": str(games), "giver": "a"}),),
    )


def latest(finding: Finding, *, open: bool = True, resolved_at: datetime | None = None,
           updated_at: datetime = T0) -> LatestAlert:
    return LatestAlert("alert-1", open, finding.severity, evidence_digest(finding), updated_at,
                       resolved_at, "dismissed")


def test_the_digest_is_the_evidence_not_the_order_of_its_figures() -> None:
    one = flow(4)
    shuffled = replace(one, evidence=(replace(one.evidence[0], details={
        "giver": "a", "games": "4"}),))
    assert evidence_digest(one) == evidence_digest(shuffled)
    assert evidence_digest(one) != evidence_digest(flow(5))


def test_a_first_finding_raises() -> None:
    assert decide(None, flow(4), T0, WINDOWS).step is Step.RAISE


def test_an_open_alert_takes_new_evidence_within_the_update_window() -> None:
    known = latest(flow(4))
    assert decide(known, flow(4), T0 + timedelta(days=1), WINDOWS).step is Step.NOTHING
    assert decide(known, flow(5), T0 + timedelta(days=30), WINDOWS).step is Step.UPDATE
    assert decide(known, flow(4, Severity.HIGH), T0 + timedelta(hours=1),
                  WINDOWS).step is Step.UPDATE  # same evidence, stronger verdict
    later = decide(known, flow(5), T0 + timedelta(days=30, seconds=1), WINDOWS)
    assert later.step is Step.RAISE and later.previous_alert_id == "alert-1"
    assert "quiet for longer than the update window (720 h)" in later.reason


def test_a_weaker_finding_on_the_same_evidence_changes_nothing() -> None:
    known = latest(flow(4, Severity.HIGH))
    assert decide(known, flow(4, Severity.MEDIUM), T0, WINDOWS).step is Step.NOTHING


def test_a_dismissed_alert_rearms_when_the_behaviour_goes_on_past_the_window() -> None:
    dismissed = latest(flow(4), open=False, resolved_at=T0 + timedelta(hours=2))
    at = T0 + timedelta(hours=2)
    assert decide(dismissed, flow(4), at + timedelta(days=3), WINDOWS).step is Step.NOTHING
    assert decide(dismissed, flow(5), at + timedelta(hours=23, minutes=59),
                  WINDOWS).step is Step.NOTHING  # still what the officer read
    rearmed = decide(dismissed, flow(5), at + timedelta(hours=24), WINDOWS)
    assert rearmed.step is Step.RAISE and rearmed.previous_alert_id == "alert-1"
    assert rearmed.reason == ("re-armed: the behaviour went on after alert alert-1 was "
                              "dismissed at 2026-12-01T14:00:00+00:00")


def test_a_stronger_finding_after_a_resolution_is_a_new_alert_at_once() -> None:
    dismissed = latest(flow(4), open=False, resolved_at=T0)
    escalated = decide(dismissed, flow(4, Severity.CRITICAL), T0 + timedelta(minutes=1),
                       WINDOWS)
    assert escalated.step is Step.RAISE
    assert escalated.reason.startswith("escalated: CRITICAL after alert alert-1 was dismissed "
                                       "at MEDIUM")


def test_a_zero_rearm_window_rearms_on_any_new_evidence() -> None:
    dismissed = latest(flow(4), open=False, resolved_at=T0)
    windows = AlertWindows(rearm=timedelta(0))
    assert decide(dismissed, flow(5), T0, windows).step is Step.RAISE
    assert decide(dismissed, flow(4), T0, windows).step is Step.NOTHING


@pytest.mark.parametrize("update, rearm", [
    (timedelta(minutes=59), timedelta(hours=1)),
    (timedelta(days=91), timedelta(hours=1)),
    (timedelta(days=1), timedelta(days=31)),
    (timedelta(days=1), timedelta(hours=-1)),
])
def test_windows_outside_their_bounds_are_refused(update: timedelta, rearm: timedelta) -> None:
    with pytest.raises(ValueError):
        AlertWindows(update=update, rearm=rearm)


def test_the_windows_come_from_the_environment_and_a_bad_value_stops_the_service() -> None:
    assert windows_from_env(Env({})) == AlertWindows(timedelta(days=30), timedelta(hours=24))
    assert windows_from_env(Env({"TAVLA_ANTIABUSE_ALERT_UPDATE_HOURS": "48",
                                 "TAVLA_ANTIABUSE_ALERT_REARM_HOURS": "0.5"})) == AlertWindows(
        timedelta(hours=48), timedelta(minutes=30))
    for name, value in (("TAVLA_ANTIABUSE_ALERT_REARM_HOURS", "721"),
                        ("TAVLA_ANTIABUSE_ALERT_UPDATE_HOURS", "0.5"),
                        ("TAVLA_ANTIABUSE_ALERT_REARM_HOURS", "a day")):
        with pytest.raises(ConfigError, match=name):
            windows_from_env(Env({name: value}))
