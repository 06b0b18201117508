"""Cases and sanctions, pure: what a resolution may impose, sanction ids, the automatic policy.

Expected values are written out by hand."""

from __future__ import annotations

import pytest

from services.antiabuse.cases.domain import (
    CaseStatus,
    SanctionKind,
    SanctionOrder,
    check_alert_ids,
    check_note,
    check_open,
    check_sanctions,
)
from services.antiabuse.cases.policy import AutoPolicy
from services.kit.config import ConfigError
from services.kit.errors import FailedPrecondition, InvalidArgument
from tavla.antiabuse.v1 import events_pb2

SUBJECTS = ["a", "b"]
TERMINATE = SanctionKind.TERMINATE_ACCOUNT
PAIR = SanctionKind.FORBID_PAIR


def test_a_sanctioned_case_needs_a_sanction_and_a_cleared_one_none() -> None:
    with pytest.raises(InvalidArgument, match="at least one"):
        check_sanctions(CaseStatus.SANCTIONED, [], SUBJECTS)
    with pytest.raises(InvalidArgument, match="no sanction"):
        check_sanctions(CaseStatus.CLEARED, [SanctionOrder(TERMINATE, "a")], SUBJECTS)
    with pytest.raises(InvalidArgument, match="outcome"):
        check_sanctions(CaseStatus.OPEN, [], SUBJECTS)
    assert check_sanctions(CaseStatus.CLEARED, [], SUBJECTS) == []


def test_sanctions_name_only_the_case_subjects_and_pairs_need_two() -> None:
    with pytest.raises(InvalidArgument, match="not a subject"):
        check_sanctions(CaseStatus.SANCTIONED, [SanctionOrder(TERMINATE, "x")], SUBJECTS)
    with pytest.raises(InvalidArgument, match="not a subject"):
        check_sanctions(CaseStatus.SANCTIONED, [SanctionOrder(PAIR, "a", "x")], SUBJECTS)
    with pytest.raises(InvalidArgument, match="two different"):
        check_sanctions(CaseStatus.SANCTIONED, [SanctionOrder(PAIR, "a", "a")], SUBJECTS)
    with pytest.raises(InvalidArgument, match="one account"):
        check_sanctions(CaseStatus.SANCTIONED, [SanctionOrder(TERMINATE, "a", "b")], SUBJECTS)


def test_repeats_collapse_and_a_pair_is_the_same_either_way_round() -> None:
    orders = [SanctionOrder(PAIR, "b", "a"), SanctionOrder(PAIR, "a", "b"),
              SanctionOrder(TERMINATE, "a"), SanctionOrder(TERMINATE, "a")]
    assert check_sanctions(CaseStatus.SANCTIONED, orders, SUBJECTS) == [
        SanctionOrder(PAIR, "a", "b"), SanctionOrder(TERMINATE, "a"),
    ]
    assert SanctionOrder(PAIR, "b", "a").sanction_id("c1") == (
        SanctionOrder(PAIR, "a", "b").sanction_id("c1")
    )


def test_a_sanction_id_depends_on_case_kind_and_account() -> None:
    one = SanctionOrder(TERMINATE, "a").sanction_id("c1")
    assert one == SanctionOrder(TERMINATE, "a").sanction_id("c1")
    others = {
        SanctionOrder(TERMINATE, "a").sanction_id("c2"),
        SanctionOrder(TERMINATE, "b").sanction_id("c1"),
        SanctionOrder(SanctionKind.FREEZE_WALLET, "a").sanction_id("c1"),
    }
    assert one not in others and len(others) == 3


def test_alert_ids_notes_and_closed_cases() -> None:
    assert check_alert_ids(["b", "a", "b", ""]) == ["a", "b"]
    with pytest.raises(InvalidArgument):
        check_alert_ids([""])
    with pytest.raises(InvalidArgument):
        check_note("  ", required=True)
    with pytest.raises(InvalidArgument):
        check_note("x" * 2001)
    check_open(CaseStatus.OPEN, "c1")
    with pytest.raises(FailedPrecondition, match="c1 is cleared"):
        check_open(CaseStatus.CLEARED, "c1")


def _alert(detector: str, severity: int, **extra: object) -> events_pb2.ComplianceAlert:
    return events_pb2.ComplianceAlert(
        alert_id="x", detector=detector, severity=severity,  # type: ignore[arg-type]
        status=events_pb2.ALERT_STATUS_OPEN, **extra,  # type: ignore[arg-type]
    )


def test_the_default_policy_freezes_on_critical_chip_dumping_only() -> None:
    policy = AutoPolicy.parse("chip_dumping:CRITICAL")
    assert policy.freezes(_alert("chip_dumping", events_pb2.SEVERITY_CRITICAL))
    assert not policy.freezes(_alert("chip_dumping", events_pb2.SEVERITY_HIGH))
    assert not policy.freezes(_alert("multi_accounting", events_pb2.SEVERITY_CRITICAL))
    resolved = _alert("chip_dumping", events_pb2.SEVERITY_CRITICAL)
    resolved.status = events_pb2.ALERT_STATUS_DISMISSED
    assert not policy.freezes(resolved)


def test_policy_rules_are_parsed_or_refused() -> None:
    assert AutoPolicy.parse("none") == AutoPolicy()
    assert AutoPolicy.parse("") == AutoPolicy()
    both = AutoPolicy.parse("chip_dumping:critical, multi_accounting:HIGH")
    assert both.freeze_on == {("chip_dumping", 4), ("multi_accounting", 3)}
    assert both.freezes(_alert("multi_accounting", events_pb2.SEVERITY_CRITICAL))
    for wrong in ("chip_dumping", "chip_dumping:SEVERE", ":HIGH"):
        with pytest.raises(ConfigError):
            AutoPolicy.parse(wrong)
