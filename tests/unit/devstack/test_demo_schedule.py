"""The demo's own commission arithmetic against the schedule's examples and figures by hand.

The wallet is not consulted: these expected values come from the reference text
(`../shared/reference/`, "Commisions when Playing for Real Money") and by hand.
"""

from __future__ import annotations

import pytest

from services.kit.devstack.demo import schedule
from services.kit.devstack.demo.play import choose


def test_the_schedules_own_example_joe_and_alex() -> None:
    # "$5 ... Alex won by gammon. $9.02 will be added to Alex's balance and Joe's balance
    # will be deducted by $10. (commission is $0.49)."
    figures = schedule.money_game(500, 1, "RESULT_TYPE_GAMMON", (1500.0, 1500.0))
    assert (figures.win_sum, figures.commission_per_player) == (1000, 49)
    assert (figures.winner_credit, figures.loser_debit) == (902, 1000)


@pytest.mark.parametrize(
    ("stake", "cube", "result", "ratings", "each"),
    [
        # $5 single: 500 x 4.9 % = 24.5 -> 25 (half up).
        (500, 1, "RESULT_TYPE_SINGLE", (1500.0, 1500.0), 25),
        # $20 exactly is "up to $20": 2000 x 4.9 % = 98.
        (1000, 2, "RESULT_TYPE_SINGLE", (1500.0, 1500.0), 98),
        # $30: 3.9 % -> 117.
        (1000, 1, "RESULT_TYPE_BACKGAMMON", (1500.0, 1500.0), 117),
        # $200: 2.9 % -> 580.
        (10000, 2, "RESULT_TYPE_SINGLE", (1500.0, 1500.0), 580),
        # 1560 v 1600: one below 1620 -> +25 %: 1000 x 4.9 % x 1.25 = 61.25 -> 61.
        (1000, 1, "RESULT_TYPE_SINGLE", (1560.0, 1600.0), 61),
        # 1500 v 1610: not both below 1550; +25 % and difference 110 -> +50 %:
        # 1000 x 4.9 % x 1.75 = 85.75 -> 86.
        (1000, 1, "RESULT_TYPE_SINGLE", (1500.0, 1610.0), 86),
        # 1380 counts as 1400 v 1700: +25 %, difference 300 -> +200 %: x 3.25 = 159.25 -> 159.
        (1000, 1, "RESULT_TYPE_SINGLE", (1380.0, 1700.0), 159),
        # Both above 1700: no increase, -50 %: 1000 x 4.9 % x 0.5 = 24.5 -> 25.
        (1000, 1, "RESULT_TYPE_SINGLE", (1710.0, 1800.0), 25),
        # Both above 1650, $500 win at 2.9 % = 1450 each: capped at $5.
        (25000, 2, "RESULT_TYPE_SINGLE", (1660.0, 1690.0), 500),
    ],
)
def test_rates_bands_and_rating_rules_by_hand(
    stake: int, cube: int, result: str, ratings: tuple[float, float], each: int
) -> None:
    figures = schedule.money_game(stake, cube, result, ratings)
    assert figures.commission_per_player == each
    assert figures.winner_credit == figures.win_sum - 2 * each
    assert figures.loser_debit == figures.win_sum


def test_dollars() -> None:
    assert [schedule.dollars(c) for c in (0, 5, 902, -1000)] == [
        "$0.00", "$0.05", "$9.02", "-$10.00"]


def test_the_demo_picks_bear_offs_first_then_plays_that_hit_nothing() -> None:
    plays = [{"notation": "13/7* 8/7"}, {"notation": "13/7 13/8"}, {"notation": "6/off 5/3"}]
    assert choose(plays) == "6/off 5/3"
    assert choose(plays[:2]) == "13/7 13/8"
