"""Deliberate disconnects judged at the player's strength deficit: a weaker player is
behind at a random moment more often than an equal one, a stronger one less.

Figures by hand beside each assertion. The deficit: 0.01 of a share per PR point (500 x
error per decision) of the player's median level over the mean of their sessions'
opponents' median levels, times n / (n + 2) for the player's n analysed sessions, within
[-0.1, 0.15]. The equal players' depth curve is read at share + deficit; above the
losing line (0.4) it rises from 0.35 by 1.5 a share.
"""

from __future__ import annotations

import pytest

from services.antiabuse.domain import deliberate_disconnect
from services.antiabuse.domain.deliberate_disconnect import (
    TIMEOUT,
    base_rate,
    depth,
    rate_test,
    strength_deficit,
)
from tests.unit.antiabuse.test_disconnect_rate import stop


def test_the_deficit_from_the_levels() -> None:
    # PR 20 (error 0.04) in 3 sessions against opponents at PR 10 (0.02) and PR 12
    # (median of 0.02, 0.028, 0.03 = 0.028, PR 14) and PR 10 again: the opponents' mean
    # (10 + 14 + 10) / 3 = 11.333, the gap 8.667 PR, 0.08667 x 3 / 5 = 0.052.
    opponents = [[0.02], [0.03, 0.02, 0.028], [0.02]]
    assert strength_deficit([0.04, 0.05, 0.03], opponents) == pytest.approx(0.052, abs=1e-9)
    # Stronger than them: negative; far apart: within [-0.1, 0.15].
    assert strength_deficit([0.02], [[0.03]]) == pytest.approx(-0.05 / 3, abs=1e-9)
    assert strength_deficit([0.1] * 8, [[0.01]] * 8) == 0.15
    assert strength_deficit([0.004] * 8, [[0.06]] * 8) == -0.1
    # No levels, no deficit: the equal players' null.
    assert strength_deficit([], [[0.02]]) == 0.0
    assert strength_deficit([0.02], [[]]) == 0.0


def test_the_base_rate_and_depths_at_a_deficit() -> None:
    assert base_rate() == 0.35
    # 0.06 behind: the line read at 0.46, 0.35 + 0.06 x 1.5 = 0.44; a stop at 0.2 read at
    # 0.26, 0.2 + 0.01 = 0.21.
    assert base_rate(deficit=0.06) == pytest.approx(0.44)
    assert depth(0.2, deficit=0.06) == pytest.approx(0.21)
    # 0.05 ahead: the line read at 0.35, 0.3; a stop at 0.3 read at 0.25, 0.2.
    assert base_rate(deficit=-0.05) == pytest.approx(0.30)
    assert depth(0.3, deficit=-0.05) == pytest.approx(0.20)
    # Never over 0.95, never under the floor.
    assert depth(0.9, deficit=0.15) == 0.95
    assert depth(0.01, deficit=-0.1) == 0.05


def test_a_weak_players_two_drops_near_the_line_are_chance() -> None:
    # Drops at 0.37 and 0.39 in 5 sessions. Equal players: q = 0.01575, 1 - 0.98425^5 -
    # 5 x 0.01575 x 0.98425^4 = 0.002403: MEDIUM. At 0.15 behind (PR 20 against PR 5
    # opponents, well measured): the line 0.575, q = 0.045 x 0.575 = 0.025875, 1 -
    # 0.877149 - 0.116495 = 0.006355; depths (0.35 + 0.12 x 1.5) / 0.575 = 0.921739 and
    # (0.35 + 0.14 x 1.5) / 0.575 = 0.973913, V = 0.897694, H_2 = V (1 - ln V) = 0.994579,
    # 10 x 0.025875^2 x 0.994579 = 0.006659: nothing.
    drops = [stop("a", 0.37, 0), stop("b", 0.39, 50, TIMEOUT)]
    assert deliberate_disconnect.assess("p", drops, sessions=5) is not None
    weak = rate_test(drops, 5, deficit=0.15)
    assert weak.p == pytest.approx(0.006355, abs=1e-6)
    assert weak.p_behind == pytest.approx(0.006659, abs=2e-6)
    assert deliberate_disconnect.assess("p", drops, sessions=5, deficit=0.15) is None


def test_a_strong_players_two_walks_are_beyond_chance() -> None:
    # Walks at 0.2 and 0.3 in 9 sessions. Equal players: 0.008297 by the count, 0.006180 by
    # depth: nothing. At 0.1 ahead (stronger than their opponents): the line 0.25, q =
    # 0.01125, 1 - 0.903189 - 0.092488 = 0.004323; depths read at 0.1 and 0.2: 0.08 / 0.25
    # = 0.32 and 0.16 / 0.25 = 0.64, V = 0.2048, H_2 = 0.2048 x 2.585721 = 0.529556, 36 x
    # 0.00012656 x 0.529556 = 0.002413: MEDIUM at the smaller.
    walks = [stop("w1", 0.20, 0), stop("w2", 0.30, 50, TIMEOUT)]
    assert deliberate_disconnect.assess("p", walks, sessions=9) is None
    strong = rate_test(walks, 9, deficit=-0.1)
    assert strong.p == pytest.approx(0.004323, abs=1e-6)
    assert strong.behind == pytest.approx(0.2048, abs=1e-6)
    assert strong.p_behind == pytest.approx(0.002413, abs=2e-6)
    finding = deliberate_disconnect.assess("p", walks, sessions=9, deficit=-0.1)
    assert finding is not None and finding.score == 0.00241
    details = finding.evidence[0].details
    assert (details["deficit"], details["base_rate"]) == ("-0.1", "0.25")
