"""The pure consulting-during-play detector: overlapping games, improvement, an idle helper.

Expected values are worked out by hand in the comments.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from services.antiabuse.domain import consulting_play
from services.antiabuse.domain.consulting_play import Played, Window, idle, improvement
from services.antiabuse.domain.findings import Detector, Finding, Severity

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def window(game: str, start_min: int, end_min: int, number: int = 1) -> Window:
    return Window(game, number, T0 + timedelta(minutes=start_min), T0 + timedelta(minutes=end_min))


def test_games_overlap_only_in_time_and_at_another_table() -> None:
    mine = [window("a1", 0, 10), window("a2", 20, 30), window("a3", 40, 50), window("s", 60, 70)]
    theirs = [window("b1", 5, 15), window("b2", 30, 35), window("s", 60, 70, number=2)]
    # a1 [0,10) meets b1 [5,15); a2 ends at 30 when b2 starts (touching is not overlapping);
    # a3 meets nothing; s is the same session (the two played each other), not another table.
    assert consulting_play.overlapping(mine, theirs) == {("a1", 1)}


def plays(game: str, errors: list[float], seconds: float | None = None) -> list[Played]:
    return [Played(game, 1, True, e, seconds) for e in errors]


def test_improvement_while_overlapping_against_the_baseline() -> None:
    # Baseline: 60 decisions alternating 0.0 and 0.04: mean 0.02, sd sqrt(60 x 0.0004 / 59)
    # = sqrt(0.000406780) = 0.0201688. Overlapping: 30 zeros.
    # z = 0.02 / (0.0201688 x sqrt(1/60 + 1/30)) = 0.02 / (0.0201688 x 0.2236068)
    #   = 0.02 / 0.00450988 = 4.4347.
    played = plays("base", [0.0, 0.04] * 30) + plays("over", [0.0] * 30)
    found = improvement(played, {("over", 1)})
    assert found is not None
    assert (found.overlap, found.base) == (30, 60)
    assert found.z == pytest.approx(4.4347, abs=1e-3)
    # One decision short on either side: no test.
    assert (
        improvement(plays("base", [0.0, 0.04] * 30) + plays("over", [0.0] * 29), {("over", 1)})
        is None
    )
    assert (
        improvement(
            plays("base", [0.0, 0.04] * 29 + [0.0]) + plays("over", [0.0] * 30), {("over", 1)}
        )
        is None
    )


def test_idle_ratio_is_the_helpers_median_think_time_then_against_usual() -> None:
    helper = plays("busy", [0.0] * 5, seconds=12.0) + plays("usual", [0.0] * 5, seconds=4.0)
    seen = idle(helper, {("busy", 1)})
    assert seen is not None and seen.ratio == pytest.approx(3.0) and seen.own_pace
    # 5 think times a side: too few for the rank-sum's normal approximation (10).
    assert seen.z is None
    assert idle(helper, set()) is None  # nothing during: no ratio
    # No games of its own outside: the usual pace given (the other account's), 6 s.
    alone = idle(plays("busy", [0.0] * 5, seconds=12.0), {("busy", 1)}, [6.0] * 5)
    assert alone is not None and alone.ratio == pytest.approx(2.0) and not alone.own_pace


def scenario(helper_seconds_busy: float) -> Finding | None:
    helped_windows = [window("base", 0, 60), window("over", 100, 160)]
    helper_windows = [window("h-usual", 200, 260), window("h-busy", 110, 150)]
    helped_play = plays("base", [0.0, 0.04] * 30) + plays("over", [0.0] * 30)
    helper_play = plays("h-usual", [0.01] * 40, seconds=4.0) + plays(
        "h-busy", [0.01] * 40, seconds=helper_seconds_busy
    )
    return consulting_play.assess(
        "helped", "helper", helped_windows, helped_play, helper_windows, helper_play
    )


def test_a_pair_is_medium_and_high_when_the_helper_idles() -> None:
    # z = 4.4347 (above): MEDIUM (3 <= z < 4.75) with a helper at its usual pace (ratio 1.0);
    # HIGH when the helper took 6 s a decision against its usual 4 s (ratio 1.5).
    finding = scenario(4.0)
    assert finding is not None
    assert finding.detector is Detector.CONSULTING
    assert finding.subjects == ("helped", "helper")
    assert finding.severity is Severity.MEDIUM
    assert finding.score == pytest.approx(4.43, abs=0.01)
    assert finding.evidence[0].game_ids == ("over",)
    assert finding.evidence[1].details["think_time_ratio"] == "1.00"
    idle = scenario(6.0)
    assert idle is not None and idle.severity is Severity.HIGH
    assert idle.evidence[1].game_ids == ("h-busy",)


def test_no_improvement_no_finding() -> None:
    helped_windows = [window("base", 0, 60), window("over", 100, 160)]
    helper_windows = [window("h-busy", 110, 150)]
    same = plays("base", [0.0, 0.04] * 30) + plays("over", [0.0, 0.04] * 15)
    assert (
        consulting_play.assess("helped", "helper", helped_windows, same, helper_windows, []) is None
    )
