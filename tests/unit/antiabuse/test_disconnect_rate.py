"""Deliberate disconnects' second route: losing stops against the sessions played, at the
player's own rate of stopping (floor 4.5 % of sessions; a stop is losing with 0.35).

Figures by hand beside each assertion: q = 0.045 x 0.35 = 0.01575 a session (q^2 =
0.00024806), and P(X >= 2 | Bin(S, q)) = 1 - (1 - q)^S - S q (1 - q)^(S - 1). The depths'
test: a losing stop's relative depth d(share) / 0.35, d = 0.8 x share below 0.25 (at least
0.05), 0.2 + (share - 0.25) from 0.25 to 0.4; V their product; p = C(S, k) q^k H_k(V), H_2(V)
= V (1 - ln V).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from services.antiabuse.domain import deliberate_disconnect
from services.antiabuse.domain.deliberate_disconnect import (
    TIMEOUT,
    Stop,
    depth,
    outages,
    product_tail,
    rate_test,
    returned_rate,
)
from services.antiabuse.domain.findings import Severity

T0 = datetime(2026, 11, 2, 20, 0, tzinfo=UTC)


def stop(game: str, share: float, hours: float, how: str = "disconnection") -> Stop:
    return Stop(game, "p", share, T0 + timedelta(hours=hours), how)


WALKS = [stop("w1", 0.20, 0), stop("w2", 0.30, 50, TIMEOUT)]  # two losing stops, two days apart


def test_two_walks_in_six_sessions_are_a_disconnecter() -> None:
    # S = 6: 1 - 0.98425^6 - 6 x 0.01575 x 0.98425^5 = 1 - 0.909144 - 0.087289 = 0.003567,
    # <= 0.005: MEDIUM. The first route alone (2 of 2 at 0.35: 0.1225, under 4 losing
    # stops) says nothing. Their depths: 0.16 / 0.35 = 0.457143 and 0.25 / 0.35 = 0.714286,
    # V = 0.326531, H_2 = 0.326531 x 2.119232 = 0.691994, 15 x 0.00024806 x 0.691994 =
    # 0.002575: the score is the smaller.
    assert deliberate_disconnect.assess("p", WALKS) is None
    found = rate_test(WALKS, 6)
    assert found.p == pytest.approx(0.003567, abs=1e-6)
    assert found.behind == pytest.approx(0.326531, abs=1e-6)
    assert found.p_behind == pytest.approx(0.002575, abs=1e-6)
    finding = deliberate_disconnect.assess("p", WALKS, sessions=6)
    assert finding is not None and finding.severity is Severity.MEDIUM
    assert finding.score == 0.00257  # the p-value to 3 significant figures
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
    # days apart. The first non-losing one is within the floor; the 2 beyond it give the
    # rate 2 / (9 x 0.65) = 0.341880, q = 0.119658:
    # 1 - 0.880342^9 - 9 x 0.119658 x 0.880342^8 = 1 - 0.317587 - 0.388504 = 0.293909.
    flaky = [*WALKS, stop("f1", 0.55, 100), stop("f2", 0.70, 150), stop("f3", 0.90, 200)]
    found = rate_test(flaky, 9)
    assert (found.losing, found.not_losing) == (2, 3)
    assert found.rate == pytest.approx(0.341880, abs=1e-6)
    assert found.p == pytest.approx(0.293909, abs=1e-6)
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
    # nothing. In 5: 1 - 0.923692 - 0.073905 = 0.002403, and by depth 10 x 0.00024806 x
    # 0.691994 = 0.001717: MEDIUM at the smaller.
    assert rate_test(WALKS, 4).p == pytest.approx(0.001457, abs=1e-6)
    assert deliberate_disconnect.assess("p", WALKS, sessions=4) is None
    found = deliberate_disconnect.assess("p", WALKS, sessions=5)
    assert found is not None and found.severity is Severity.MEDIUM and found.score == 0.00172


DEEP = [stop("d1", 0.20, 0), stop("d2", 0.10, 50, TIMEOUT)]  # far behind: share <= 0.25


def test_two_walks_far_behind_in_nine_sessions_are_a_disconnecter() -> None:
    # Depths 0.16 / 0.35 = 0.457143 and 0.08 / 0.35 = 0.228571: V = 0.104490, -ln V =
    # 2.258617, H_2 = 0.104490 x 3.258617 = 0.340497; S = 9: 36 x 0.00024806 x 0.340497 =
    # 0.003041 <= 0.005: MEDIUM, where as losing stops they are 0.008297 (WALKS): nothing.
    found = rate_test(DEEP, 9)
    assert found.losing == 2
    assert found.p == pytest.approx(0.008297, abs=1e-6)
    assert found.behind == pytest.approx(0.104490, abs=1e-6)
    assert found.p_behind == pytest.approx(0.003041, abs=2e-6)
    finding = deliberate_disconnect.assess("p", DEEP, sessions=9)
    assert finding is not None and finding.severity is Severity.MEDIUM
    assert finding.score == 0.00304
    assert finding.evidence[0].details["behind"] == "0.104"
    # S = 14: 91 x 0.00024806 x 0.340497 = 0.007686: nothing.
    assert rate_test(DEEP, 14).p_behind == pytest.approx(0.007686, abs=2e-6)
    assert deliberate_disconnect.assess("p", DEEP, sessions=14) is None
    # WALKS (0.20 and 0.30) in 9: 36 x 0.00024806 x 0.691994 = 0.006180: nothing.
    assert rate_test(WALKS, 9).p_behind == pytest.approx(0.006180, abs=2e-6)
    assert deliberate_disconnect.assess("p", WALKS, sessions=9) is None


def test_the_depth_of_a_stop() -> None:
    # 0.35 at the losing line, 0.2 at 0.25, a straight line between; 0.8 x share below
    # 0.25; never under 0.05 (a share of 1/16).
    assert depth(0.4) == pytest.approx(0.35)
    assert depth(0.31) == pytest.approx(0.26)
    assert depth(0.25) == pytest.approx(0.2)
    assert depth(0.1) == pytest.approx(0.08)
    assert depth(0.0625) == pytest.approx(0.05)
    assert depth(0.02) == 0.05
    # Products of uniforms: P(U1 U2 <= 0.25) = 0.25 (1 + ln 4) = 0.596574; three: 0.25 (1 +
    # 1.386294 + 0.960906) = 0.836800; one: the value itself; at 1, certain.
    assert product_tail(2, 0.25) == pytest.approx(0.596574, abs=1e-6)
    assert product_tail(3, 0.25) == pytest.approx(0.836800, abs=1e-6)
    assert product_tail(1, 0.25) == 0.25
    assert product_tail(2, 1.0) == 1.0


def test_a_walk_lost_by_a_gammon_weighs_more_than_two_drops_far_behind() -> None:
    # Unseen held-out seed 1100022. A disconnecter: a timeout at 0.07 and a walk at 0.31,
    # 15 days apart, in 8 sessions: the losing count 1 - 0.98425^8 - 8 x 0.01575 x
    # 0.98425^7 = 0.006521 (nothing); depths 0.056 / 0.35 = 0.16 and 0.26 / 0.35 = 0.742857,
    # V = 0.118857, -ln V = 2.129830, H_2 = 0.118857 x 3.129830 = 0.372003, 28 x 0.00024806
    # x 0.372003 = 0.002584: MEDIUM.
    walker = [stop("t", 0.07, 0, TIMEOUT), stop("d", 0.31, 15 * 24)]
    found = rate_test(walker, 8)
    assert found.p == pytest.approx(0.006521, abs=1e-6)
    assert found.behind == pytest.approx(0.118857, abs=1e-6)
    assert found.p_behind == pytest.approx(0.002584, abs=2e-6)
    finding = deliberate_disconnect.assess("p", walker, sessions=8)
    assert finding is not None and finding.score == 0.00258
    # An honest player of the same seed: two drops at 0.18 and 0.24, two days apart, in 11
    # sessions. Depths 0.144 / 0.35 = 0.411429 and 0.192 / 0.35 = 0.548571, V = 0.225698,
    # H_2 = 0.225698 x 2.488450 = 0.561638, 55 x 0.00024806 x 0.561638 = 0.007663: nothing
    # (the count of stops far behind it replaced said 1 - 0.991^11 - 11 x 0.009 x 0.991^10
    # = 0.004221, a false alarm).
    honest = [stop("a", 0.18, 0), stop("b", 0.24, 48)]
    assert rate_test(honest, 11).p_behind == pytest.approx(0.007663, abs=2e-6)
    assert deliberate_disconnect.assess("p", honest, sessions=11) is None


def test_one_drop_lost_by_a_backgammon_weighs_no_more_than_the_floor() -> None:
    # A drop at 0.01 weighs as one at 0.0625 (depth 0.05): with one at 0.39 (0.34 / 0.35 =
    # 0.971429) in 8 sessions, V = 0.142857 x 0.971429 = 0.138776, H_2 = 0.138776 x
    # 2.974844 = 0.412837, 28 x 0.00024806 x 0.412837 = 0.002867; in 12 sessions 66 x
    # 0.00024806 x 0.412837 = 0.006759: nothing.
    two = [stop("a", 0.01, 0), stop("b", 0.39, 72)]
    assert rate_test(two, 8).behind == pytest.approx(0.138776, abs=1e-6)
    assert rate_test(two, 8).p_behind == pytest.approx(0.002867, abs=2e-6)
    assert rate_test(two, 12).p_behind == pytest.approx(0.006759, abs=2e-6)
    assert deliberate_disconnect.assess("p", two, sessions=12) is None


def test_one_drop_in_a_winning_position_is_within_the_floor() -> None:
    # A disconnecter (fresh held-out seed 990003) over 19 sessions: losing stops at 0.27 and,
    # 50 minutes later, 0.08 (one outage), a drop at 0.98 (winning), then 0.19 and 0.37 on
    # other days: 3 losing outages and 1 other. The floor's player has 0.045 x 0.65 =
    # 0.02925 non-losing outages a session, one or more in 19 sessions with chance
    # 1 - 0.97075^19 = 0.43, so the one drop leaves the rate at the floor, q = 0.01575:
    # P(X >= 3 | Bin(19, q)) = 1 - (0.739610 + 0.224870 + 0.032385) = 0.003134 <= 0.005:
    # MEDIUM. Read as a flaky connection (rate 1 / (19 x 0.65) = 0.080972, q = 0.028340)
    # it was 0.0157: nothing. The first route: 3 losing of 4 outages' stops is under its 4.
    # By depth: 0.22, 0.152 and 0.32 over 0.35, V = 0.628571 x 0.434286 x 0.914286 =
    # 0.249581, -ln V = 1.387970, H_3 = V (1 + 1.387970 + 0.963230) = 0.836397, C(19, 3) x
    # 0.01575^3 x 0.836397 = 969 x 0.0000039069 x 0.836397 = 0.003166: the count's is smaller.
    walker = [
        stop("a", 0.27, 0), stop("b", 0.08, 50 / 60), stop("c", 0.98, 24),
        stop("d", 0.19, 9 * 24, TIMEOUT), stop("e", 0.37, 11 * 24, TIMEOUT),
    ]  # fmt: skip
    found = rate_test(walker, 19)
    assert (found.losing, found.not_losing) == (3, 1)
    assert found.rate == 0.045
    assert found.p == pytest.approx(0.003134, abs=1e-6)
    assert found.p_behind == pytest.approx(0.003166, abs=2e-6)
    finding = deliberate_disconnect.assess("p", walker, sessions=19)
    assert finding is not None and finding.severity is Severity.MEDIUM
    assert finding.score == 0.00313
    assert finding.evidence[0].details["other_outages"] == "1"


def test_a_second_drop_in_a_winning_position_raises_the_rate() -> None:
    # WALKS and two drops at 0.6 and 0.9 on other days in 9 sessions: two non-losing
    # outages, one more than the floor allows, and only that one is evidence of a higher
    # rate: 1 / (9 x 0.65) = 0.170940, q = 0.059829: 1 - 0.940171^9 - 9 x 0.059829 x
    # 0.940171^8 = 1 - 0.573933 - 0.328707 = 0.097359: nothing. With one of them (rate at
    # the floor): 0.008297, as WALKS alone.
    two = [*WALKS, stop("f1", 0.6, 100), stop("f2", 0.9, 150)]
    assert rate_test(two, 9).rate == pytest.approx(0.170940, abs=1e-6)
    assert rate_test(two, 9).p == pytest.approx(0.097359, abs=1e-6)
    assert deliberate_disconnect.assess("p", two, sessions=9) is None
    assert rate_test(two[:3], 9).rate == 0.045
    assert rate_test(two[:3], 9).p == pytest.approx(0.008297, abs=1e-6)


def test_drops_that_came_back_raise_the_rate_of_a_drop_not_of_a_clock() -> None:
    # WALKS (a losing disconnection at 0.2 and a losing timeout at 0.3) in 6 sessions:
    # 0.002575 by depth with no drop of theirs that came back, and with one (within the
    # floor's: a player at 0.03 drops a session not come back has 0.045 that do).
    for returned in (None, 0, 1):
        found = rate_test(WALKS, 6, returned=returned)
        assert (found.rate, found.returned_rate) == (0.045, 0.0)
        assert found.p_behind == pytest.approx(0.002575, abs=1e-6)
    assert deliberate_disconnect.assess("p", WALKS, sessions=6, returned=1) is not None
    # Two: the one beyond the first stands for 1 / 1.5 drops that did not come back (odds
    # 0.6 / 0.4), 1 / (1.5 x 6) = 0.111111 a session, plus the floor's timeout part 0.015:
    # 0.126111, q = 0.044139: by depth 15 x 0.044139^2 x 0.691994 = 0.020223, the count
    # 1 - 0.955861^6 - 6 x 0.044139 x 0.955861^5 = 0.025951: nothing (1610003's honest
    # player, two returns in 5 sessions, was flagged so at 0.0023).
    assert returned_rate(2, 6) == pytest.approx(0.126111, abs=1e-6)
    found = rate_test(WALKS, 6, returned=2)
    assert found.rate == pytest.approx(0.126111, abs=1e-6)
    assert found.returned_rate == found.rate
    assert found.p_behind == pytest.approx(0.020223, abs=1e-6)
    assert found.p == pytest.approx(0.025951, abs=1e-6)
    assert deliberate_disconnect.assess("p", WALKS, sessions=6, returned=2) is None
    # The same two stops both lost on time: a drop that came back says nothing of a clock,
    # so the rate stays at the floor (which bounds a clock's 0.015 three times over): MEDIUM.
    clock = [stop("t1", 0.20, 0, TIMEOUT), stop("t2", 0.30, 50, TIMEOUT)]
    timed = rate_test(clock, 6, returned=3)
    assert (timed.rate, timed.returned_rate) == (0.045, 0.0)
    finding = deliberate_disconnect.assess("p", clock, sessions=6, returned=3)
    assert finding is not None and finding.score == 0.00257
    assert finding.evidence[0].details["returned_rate"] == "0.0000"
    # A flaky connection's winning drops give the higher rate: 2 losing, 3 others in 9
    # sessions and 3 returns: 2 / (9 x 0.65) = 0.341880 against 2 / 13.5 + 0.015 = 0.163148.
    flaky = [*WALKS, stop("f1", 0.55, 100), stop("f2", 0.70, 150), stop("f3", 0.90, 200)]
    assert rate_test(flaky, 9, returned=3).rate == pytest.approx(0.341880, abs=1e-6)
    assert returned_rate(3, 9) == pytest.approx(0.163148, abs=1e-6)
