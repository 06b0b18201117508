"""Timeouts as stops (deliberate disconnects) and resignations in good positions (the
play half of chip dumping), the pure parts; every figure by hand beside it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from services.antiabuse.domain import deliberate_disconnect, dumping_play
from services.antiabuse.domain.deliberate_disconnect import TIMEOUT, Stop
from services.antiabuse.domain.dumping_play import Resignation
from services.antiabuse.domain.findings import Severity
from services.antiabuse.domain.play import PlayedGame

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def at(hours: float) -> datetime:
    return T0 + timedelta(hours=hours)


def test_timeouts_in_losing_positions_join_the_disconnections() -> None:
    dropped = [Stop(f"d{n}", "p", share, at(n)) for n, share in enumerate((0.2, 0.3, 0.1))]
    # Three losing disconnections alone: fewer than 4 losing stops, never enough.
    assert deliberate_disconnect.assess("p", dropped) is None
    timed_out = [Stop(f"t{n}", "p", 0.35, at(10 + n), TIMEOUT) for n in range(2)]
    finding = deliberate_disconnect.assess("p", dropped + timed_out)
    assert finding is not None and finding.severity is Severity.MEDIUM
    # Five of five losing at base rate 0.35: 0.35^5 = 0.0052521875 <= 0.01.
    assert finding.score == pytest.approx(0.00525)
    (evidence,) = finding.evidence
    assert evidence.details["losing_timeouts"] == "2" and evidence.details["losing"] == "5"
    assert "lost on time" in evidence.description


def test_a_timeout_while_ahead_counts_against_the_stops() -> None:
    stops = [Stop(f"t{n}", "p", 0.3, at(n), TIMEOUT) for n in range(5)]
    stops.append(Stop("t5", "p", 0.41, at(5), TIMEOUT))  # just past losing (0.4)
    # 5 of 6 losing: P(X >= 5 | 6, 0.35) = 6 x 0.35^5 x 0.65 + 0.35^6
    #   = 0.0204834 + 0.0018383 = 0.0223217 > 0.01: not enough.
    assert deliberate_disconnect.p_value(stops) == pytest.approx(0.0223217, abs=1e-6)
    assert deliberate_disconnect.assess("p", stops) is None


def resigned(n: int, share: float, who: str = "giver", to: str = "receiver") -> Resignation:
    return Resignation(f"r{n}", who, to, share, at(n))


def test_resignations_in_good_positions_corroborate_a_flow() -> None:
    # 0.55 is good (money E = 3 (2 x 0.55 - 1) = +0.3); 0.5499 is not.
    one_good = [resigned(1, 0.55), resigned(2, 0.5499), resigned(3, 0.2)]
    # One sign in one game: below the two games needed.
    assert dumping_play.corroboration("giver", "receiver", [], resignations=one_good) == []
    two_good = [*one_good, resigned(4, 0.9)]
    (evidence,) = dumping_play.corroboration("giver", "receiver", [], resignations=two_good)
    assert evidence.kind == "resigned_in_good_position"
    assert evidence.game_ids == ("r1", "r4")
    assert evidence.details["shares"] == "0.5500,0.9000"


def test_only_the_givers_resignations_to_the_receiver_count() -> None:
    others = [
        resigned(1, 0.8, to="someone else"),
        resigned(2, 0.8, who="receiver", to="giver"),
        resigned(3, 0.8),
    ]
    assert dumping_play.corroboration("giver", "receiver", [], resignations=others) == []


def test_a_resignation_and_a_thrown_game_are_two_signs_together() -> None:
    # The giver's level: wins at 0.02 (median of three); a loss at 0.10 is far below it
    # (>= 2.5 x 0.02 = 0.05 and >= 0.02 + 0.04 = 0.06), over 30 decisions.
    wins = [PlayedGame(f"w{n}", "giver", "x", True, 0.02, 30, 0.0, 0.0, at(n)) for n in range(3)]
    thrown = PlayedGame("l1", "giver", "receiver", False, 0.10, 30, 0.0, 0.0, at(5))
    found = dumping_play.corroboration(
        "giver", "receiver", [*wins, thrown], resignations=[resigned(6, 0.6)]
    )
    assert [e.kind for e in found] == ["played_below_own_level", "resigned_in_good_position"]
