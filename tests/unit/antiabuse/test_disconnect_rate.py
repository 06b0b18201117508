"""Deliberate disconnects' second route: losing stops against the sessions played, at the
player's own rate of stopping (floor 4.5 % of sessions; a stop is losing with 0.35).

Figures by hand beside each assertion: q = 0.045 x 0.35 = 0.01575 a session, and
P(X >= 2 | Bin(S, q)) = 1 - (1 - q)^S - S q (1 - q)^(S - 1).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from services.antiabuse.domain import deliberate_disconnect
from services.antiabuse.domain.deliberate_disconnect import TIMEOUT, Stop, outages, rate_test
from services.antiabuse.domain.findings import Severity

T0 = datetime(2026, 11, 2, 20, 0, tzinfo=UTC)


def stop(game: str, share: float, hours: float, how: str = "disconnection") -> Stop:
    return Stop(game, "p", share, T0 + timedelta(hours=hours), how)


WALKS = [stop("w1", 0.20, 0), stop("w2", 0.30, 50, TIMEOUT)]  # two losing stops, two days apart


def test_two_walks_in_six_sessions_are_a_disconnecter() -> None:
    # S = 6: 1 - 0.98425^6 - 6 x 0.01575 x 0.98425^5 = 1 - 0.909144 - 0.087289 = 0.003567,
    # <= 0.005: MEDIUM. The first route alone (2 of 2 at 0.35: 0.1225, under 4 losing
    # stops) says nothing.
    assert deliberate_disconnect.assess("p", WALKS) is None
    finding = deliberate_disconnect.assess("p", WALKS, sessions=6)
    assert finding is not None and finding.severity is Severity.MEDIUM
    assert finding.score == 0.00357  # the p-value to 3 significant figures
    (evidence,) = finding.evidence
    assert evidence.game_ids == ("w1", "w2")
    assert evidence.details["sessions"] == "6"
    assert evidence.details["losing_outages"] == "2"
    assert evidence.details["stop_rate"] == "0.0450"
    assert evidence.details["losing_timeouts"] == "1"


def test_the_same_two_walks_among_more_sessions_are_chance() -> None:
    # S = 9: 1 - 0.866860 - 0.124844 = 0.008297 > 0.005; S = 30: 0.0807.
    assert rate_test(WALKS, 9).p == pytest.approx(0.008297, abs=1e-6)
    assert deliberate_disconnect.assess("p", WALKS, sessions=9) is None
    assert rate_test(WALKS, 30).p == pytest.approx(0.08073, abs=1e-5)
    assert deliberate_disconnect.assess("p", WALKS, sessions=30) is None


def test_two_drops_minutes_apart_are_one_outage() -> None:
    # A newcomer's bad evening: both losing, seven minutes apart, in their first two
    # sessions. As two draws it would be 0.01575^2 = 0.000248; as one outage it is k = 1.
    evening = [stop("d1", 0.20, 0), stop("d2", 0.05, 7 / 60)]
    assert outages(evening) == [evening[0]]
    assert rate_test(evening, 2).losing == 1
    assert deliberate_disconnect.assess("p", evening, sessions=2) is None


def test_a_flaky_player_is_judged_at_their_own_rate() -> None:
    # Drops in winning positions too: 2 losing and 3 not (0.55, 0.7, 0.9) in 9 sessions,
    # days apart. Rate 3 / (9 x 0.65) = 0.51282, q = 0.17949:
    # 1 - 0.82051^9 - 9 x 0.17949 x 0.82051^8 = 0.49957: nothing.
    flaky = [*WALKS, stop("f1", 0.55, 100), stop("f2", 0.70, 150), stop("f3", 0.90, 200)]
    found = rate_test(flaky, 9)
    assert (found.losing, found.not_losing) == (2, 3)
    assert found.rate == pytest.approx(0.51282, abs=1e-5)
    assert found.p == pytest.approx(0.49957, abs=1e-5)
    assert deliberate_disconnect.assess("p", flaky, sessions=9) is None


def test_many_walks_are_high_and_one_walk_never_alerts() -> None:
    # 4 losing outages in 30 sessions: P(X >= 4 | Bin(30, 0.01575)) = 1 - (0.621102 +
    # 0.298167 + 0.069183 + 0.010333) = 0.001215: MEDIUM (4 of 4 stops alone: 0.35^4 =
    # 0.015, not enough); in 8 sessions: 1 - (0.880731 + 0.112748 + 0.006315 + 0.000202)
    # = 0.0000041 <= 0.0001: HIGH.
    four = [stop(f"w{i}", 0.2, 30 * i) for i in range(4)]
    assert rate_test(four, 30).p == pytest.approx(0.001215, abs=2e-6)
    assert deliberate_disconnect.assess("p", four, sessions=30).severity is Severity.MEDIUM  # type: ignore[union-attr]
    assert rate_test(four, 8).p == pytest.approx(0.0000041, abs=1e-7)
    assert deliberate_disconnect.assess("p", four, sessions=8).severity is Severity.HIGH  # type: ignore[union-attr]
    # One losing stop in its only session: 0.01575 alone, and the route needs two.
    assert deliberate_disconnect.assess("p", WALKS[:1], sessions=1) is None


def test_a_rate_needs_five_sessions_before_it_is_judged() -> None:
    # Two losing walks in 4 sessions: 1 - 0.98425^4 - 4 x 0.01575 x 0.98425^3 = 1 -
    # 0.938473 - 0.060070 = 0.001457, under 0.005, but 4 sessions say nothing of the
    # player's own rate (a flaky connection has had no time to drop in a winning position):
    # nothing. In 5: 1 - 0.923692 - 0.073905 = 0.002403: MEDIUM.
    assert rate_test(WALKS, 4).p == pytest.approx(0.001457, abs=1e-6)
    assert deliberate_disconnect.assess("p", WALKS, sessions=4) is None
    found = deliberate_disconnect.assess("p", WALKS, sessions=5)
    assert found is not None and found.severity is Severity.MEDIUM and found.score == 0.0024


DEEP = [stop("d1", 0.20, 0), stop("d2", 0.10, 50, TIMEOUT)]  # far behind: share <= 0.25


def test_two_walks_far_behind_in_nine_sessions_are_a_disconnecter() -> None:
    # Both at a share of 0.25 or less (money E <= -1.5 a cube): q = 0.045 x 0.2 = 0.009;
    # S = 9: 1 - 0.991^9 - 9 x 0.009 x 0.991^8 = 1 - 0.921856 - 0.075348 = 0.002796 <=
    # 0.005: MEDIUM, where as losing stops they are 0.008297 (WALKS above): nothing.
    found = rate_test(DEEP, 9)
    assert (found.losing, found.deep) == (2, 2)
    assert found.p == pytest.approx(0.008297, abs=1e-6)
    assert found.p_deep == pytest.approx(0.002796, abs=2e-6)
    finding = deliberate_disconnect.assess("p", DEEP, sessions=9)
    assert finding is not None and finding.severity is Severity.MEDIUM
    assert finding.score == 0.0028
    assert finding.evidence[0].details["deep_outages"] == "2"
    # S = 14: 1 - 0.881113 - 0.112028 = 0.00686: nothing.
    assert rate_test(DEEP, 14).p_deep == pytest.approx(0.00686, abs=1e-5)
    assert deliberate_disconnect.assess("p", DEEP, sessions=14) is None
    # WALKS (0.20 and 0.30): one far behind, so only the losing count: nothing in 9.
    assert rate_test(WALKS, 9).deep == 1
    # The line is 0.25 inclusive: 0.25 counts, 0.2501 does not.
    edge = [stop("e1", 0.25, 0), stop("e2", 0.2501, 50)]
    assert rate_test(edge, 9).deep == 1


def test_one_drop_in_a_winning_position_is_within_the_floor() -> None:
    # A disconnecter (fresh held-out seed 990003) over 19 sessions: losing stops at 0.27 and,
    # 50 minutes later, 0.08 (one outage), a drop at 0.98 (winning), then 0.19 and 0.37 on
    # other days: 3 losing outages and 1 other. The floor's player has 0.045 x 0.65 =
    # 0.02925 non-losing outages a session, one or more in 19 sessions with chance
    # 1 - 0.97075^19 = 0.43, so the one drop leaves the rate at the floor, q = 0.01575:
    # P(X >= 3 | Bin(19, q)) = 1 - (0.739610 + 0.224870 + 0.032385) = 0.003134 <= 0.005:
    # MEDIUM. Read as a flaky connection (rate 1 / (19 x 0.65) = 0.080972, q = 0.028340)
    # it was 0.0157: nothing. The first route: 3 losing of 4 outages' stops is under its 4.
    walker = [
        stop("a", 0.27, 0), stop("b", 0.08, 50 / 60), stop("c", 0.98, 24),
        stop("d", 0.19, 9 * 24, TIMEOUT), stop("e", 0.37, 11 * 24, TIMEOUT),
    ]  # fmt: skip
    found = rate_test(walker, 19)
    assert (found.losing, found.not_losing, found.deep) == (3, 1, 1)
    assert found.rate == 0.045
    assert found.p == pytest.approx(0.003134, abs=1e-6)
    finding = deliberate_disconnect.assess("p", walker, sessions=19)
    assert finding is not None and finding.severity is Severity.MEDIUM
    assert finding.score == 0.00313
    assert finding.evidence[0].details["other_outages"] == "1"


def test_a_second_drop_in_a_winning_position_raises_the_rate() -> None:
    # WALKS and two drops at 0.6 and 0.9 on other days in 9 sessions: two non-losing
    # outages, more than the floor allows: rate 2 / (9 x 0.65) = 0.341880, q = 0.119658:
    # 1 - 0.880342^9 - 9 x 0.119658 x 0.880342^8 = 1 - 0.317587 - 0.388504 = 0.293909:
    # nothing. With one of them (rate at the floor): 0.008297, as WALKS alone.
    two = [*WALKS, stop("f1", 0.6, 100), stop("f2", 0.9, 150)]
    assert rate_test(two, 9).rate == pytest.approx(0.341880, abs=1e-6)
    assert rate_test(two, 9).p == pytest.approx(0.293909, abs=1e-6)
    assert deliberate_disconnect.assess("p", two, sessions=9) is None
    assert rate_test(two[:3], 9).rate == 0.045
    assert rate_test(two[:3], 9).p == pytest.approx(0.008297, abs=1e-6)
