"""Deliberate disconnects' third route: losing disconnections that never came back,
against the player's drops that did (``PlayerReconnected``).

Figures by hand beside each assertion. Null: each drop comes back with a chance of at
least 0.6 (odds 1.5); at a rate u of drops that do not come back, R' ~ Poisson(1.5 u S)
drops come back in S sessions, independently of the others. The bound: C(S, k) (0.35
u)^k H_k(V) P(R' <= R), largest over u up to the player's own rate (floor 0.03). Two
disconnections at 0.2 and 0.3: V = (0.16 / 0.35) x (0.25 / 0.35) = 0.326531, H_2 = V (1 -
ln V) = 0.691994.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from services.antiabuse.domain import deliberate_disconnect
from services.antiabuse.domain.deliberate_disconnect import (
    TIMEOUT,
    Stop,
    poisson_at_most,
    rate_test,
    walked_test,
)
from services.antiabuse.domain.findings import Severity

T0 = datetime(2026, 11, 2, 20, 0, tzinfo=UTC)


def stop(game: str, share: float, hours: float, how: str = "disconnection") -> Stop:
    return Stop(game, "p", share, T0 + timedelta(hours=hours), how)


WALKS = [stop("w1", 0.20, 0), stop("w2", 0.30, 50)]  # two losing disconnections


def test_two_walks_that_never_came_back_in_thirteen_sessions() -> None:
    # u = 0.03 (the floor; the bound would be largest at 2 / (1.5 x 13) = 0.1026, above it):
    # 78 x 0.0105^2 x 0.691994 x e^-0.585 = 0.0059508 x 0.557106 = 0.003315 <= 0.005, where
    # the rate route says 0.0172 (count) and 0.0134 (depths): nothing.
    found = walked_test(WALKS, 13, 0)
    assert (found.losing, found.returned, found.rate_cap) == (2, 0, 0.03)
    assert found.rate == pytest.approx(0.03)
    assert found.p == pytest.approx(0.003315, abs=1e-6)
    assert rate_test(WALKS, 13).p_behind == pytest.approx(0.0134, abs=1e-4)
    assert deliberate_disconnect.assess("p", WALKS, sessions=13) is None  # returns unknown
    finding = deliberate_disconnect.assess("p", WALKS, sessions=13, returned=0)
    assert finding is not None and finding.severity is Severity.MEDIUM
    assert finding.score == 0.00332
    details = finding.evidence[0].details
    assert (details["losing_walks"], details["came_back"]) == ("2", "0")
    assert details["p_value_walked"] == "0.00332"
    assert "never came back" in finding.score_meaning


def test_drops_that_came_back_weigh_for_the_player() -> None:
    # One drop that came back is within the floor (a player stopping at 0.03 a session and
    # coming back 60 % of the time has 0.585 of them in 13 sessions): P(R' <= 1) = e^-0.585
    # x 1.585 = 0.883013, 0.0059508 x 0.883013 = 0.005255 > 0.005: nothing.
    assert poisson_at_most(1, 0.585) == pytest.approx(0.883013, abs=1e-6)
    assert walked_test(WALKS, 13, 1).p == pytest.approx(0.005255, abs=1e-6)
    assert deliberate_disconnect.assess("p", WALKS, sessions=13, returned=1) is None
    # Three: the two beyond the first imply a rate of 2 / (1.5 x 13) = 0.102564, and the
    # bound is largest there: 78 x (0.35 x 0.102564)^2 x 0.691994 x P(Poisson(2) <= 3)
    # = 0.069813 x 0.857123 = 0.0598.
    flaky = walked_test(WALKS, 13, 3)
    assert flaky.rate_cap == pytest.approx(0.102564, abs=1e-6)
    assert flaky.p == pytest.approx(0.0598, abs=2e-4)


def test_timeouts_and_a_single_walk_are_not_this_routes() -> None:
    # A clock that ran out was connected: one disconnection and one timeout are one walk
    # here (the route needs two), though the rate route counts both.
    mixed = [stop("w1", 0.20, 0), stop("w2", 0.30, 50, TIMEOUT)]
    assert walked_test(mixed, 13, 0).losing == 1
    assert deliberate_disconnect.assess("p", mixed, sessions=13, returned=0) is None
    # Two walks in 4 sessions: 6 x 0.0105^2 x 0.691994 x e^-0.18 = 0.000382, but, as the
    # rate route, not judged before the 5th session.
    assert walked_test(WALKS, 4, 0).p == pytest.approx(0.000382, abs=1e-6)
    assert deliberate_disconnect.assess("p", WALKS, sessions=4, returned=0) is None


def test_among_many_sessions_the_bound_is_largest_below_the_floor() -> None:
    # S = 60: u^2 e^(-1.5 x 60 u) is largest at u = 2 / 90 = 0.022222, under the floor:
    # 1770 x (0.35 x 0.022222)^2 x 0.691994 x e^-2 = 0.010028: nothing.
    found = walked_test(WALKS, 60, 0)
    assert found.rate == pytest.approx(2 / 90, rel=1e-4)
    u = 2 / 90
    assert found.p == pytest.approx(1770 * (0.35 * u) ** 2 * 0.691994 * math.exp(-2), rel=1e-4)


def test_a_connection_that_goes_for_good_is_read_at_its_own_odds() -> None:
    # Three disconnections in winning positions that did not come back either, none that
    # did: the two beyond the floor's one give the rate 2 / (13 x 0.65) = 0.236686, and the
    # odds of coming back (0 + 1) x 0.65 / 2 = 0.325 (under 1.5): the bound is largest at
    # u = 2 / (0.325 x 13) = 0.473 > the cap, so at the cap: 78 x (0.35 x 0.236686)^2 x
    # 0.691994 x e^-(0.325 x 0.236686 x 13) = 0.370 x 0.367 = 0.136.
    flaky = [*WALKS, stop("f1", 0.7, 100), stop("f2", 0.8, 150), stop("f3", 0.9, 200)]
    found = walked_test(flaky, 13, 0)
    assert (found.losing, found.not_losing) == (2, 3)
    assert found.odds == pytest.approx(0.325)
    assert found.rate == pytest.approx(2 / (13 * 0.65), rel=1e-4)
    expected = 78 * (0.35 * 2 / 8.45) ** 2 * 0.691994 * math.exp(-0.325 * 2 / 8.45 * 13)
    assert found.p == pytest.approx(expected, rel=1e-4)
    assert deliberate_disconnect.assess("p", flaky, sessions=13, returned=0) is None
