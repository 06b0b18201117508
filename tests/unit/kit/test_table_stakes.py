"""The table-stakes cap, worked by hand.

A $1.00 table (100 minor units per point) where the poorer player has $10.00 left
(at_risk = 1000): the cube may reach 8 (100 x 8 = 800 <= 1000; 100 x 16 = 1600 > 1000);
at cube 4 a gammon counts (100 x 4 x 2 = 800 <= 1000) but a backgammon only as a gammon
(100 x 4 x 3 = 1200 > 1000); at cube 8 everything counts as a single game (800, 1600).
"""

from __future__ import annotations

import pytest

from services.kit.errors import InvalidArgument
from services.kit.money_bounds import AmountOutOfBounds, MoneyBounds
from services.kit.table_stakes import (
    capped_loss,
    capped_multiplier,
    max_cube,
    max_multiplier,
    may_reach,
    require_bring_in,
    session_goes_on,
)


def test_max_cube_is_the_highest_power_of_two_the_poorer_stake_covers() -> None:
    assert max_cube(100, 1000) == 8
    assert max_cube(100, 800) == 8  # exactly covered counts
    assert max_cube(100, 799) == 4
    assert max_cube(100, 100) == 1
    assert max_cube(100, 99) == 0  # not even cube 1: no game
    assert max_cube(1, 10**6) == 64  # the house cap
    assert max_cube(100, 10**6, cube_cap=4) == 4  # the table's own cap
    assert max_cube(100, 10**6, cube_cap=0) == 64  # 0 means 64, as for tables


def test_may_reach_a_cube_only_while_a_single_game_there_is_covered() -> None:
    assert may_reach(250, 1000, 4)  # 250 x 4 = 1000
    assert not may_reach(250, 1000, 8)  # 2000 > 1000
    assert may_reach(250, 250, 1)


def test_max_multiplier_at_each_cube() -> None:
    assert max_multiplier(100, 1, 1000) == 3  # 300 <= 1000
    assert max_multiplier(100, 2, 1000) == 3  # 600
    assert max_multiplier(100, 4, 1000) == 2  # 800 <= 1000 < 1200
    assert max_multiplier(100, 8, 1000) == 1  # 800 <= 1000 < 1600
    assert max_multiplier(100, 16, 1000) == 0  # 1600 > 1000: a cube that may not be reached
    assert max_multiplier(100, 2, 500) == 2  # 400 <= 500 < 600


def test_a_result_counts_down_to_what_the_cap_covers_never_below_a_single_game() -> None:
    assert capped_multiplier(100, 4, 3, 1000) == 2  # backgammon counts as a gammon
    assert capped_multiplier(100, 4, 2, 1000) == 2
    assert capped_multiplier(100, 8, 2, 1000) == 1  # gammon counts as a single game
    assert capped_multiplier(100, 1, 3, 1000) == 3  # uncapped
    assert capped_multiplier(100, 1, 1, 1000) == 1


def test_capped_loss_is_never_more_than_at_risk() -> None:
    assert capped_loss(100, 4, 3, 1000) == 800
    assert capped_loss(100, 8, 3, 1000) == 800
    assert capped_loss(100, 2, 3, 1000) == 600
    assert capped_loss(300, 1, 3, 1000) == 900  # 3 x 300 = 900 <= 1000
    assert capped_loss(400, 1, 3, 1000) == 800  # a backgammon counts as a gammon: 1200 > 1000
    for cube in (1, 2, 4, 8):
        for result in (1, 2, 3):
            assert capped_loss(100, cube, result, 1000) <= 1000


def test_the_session_goes_on_while_both_cover_a_single_game() -> None:
    assert session_goes_on(100, (1000, 1000))
    assert session_goes_on(100, (100, 1900))
    assert not session_goes_on(100, (0, 2000))  # one player holds both stakes
    assert not session_goes_on(100, (99, 1901))  # the rest cannot pay a game at cube 1


def test_bad_input_is_refused_with_a_reason() -> None:
    with pytest.raises(InvalidArgument, match="stake per point"):
        max_cube(0, 1000)
    with pytest.raises(InvalidArgument, match="1, 2 or 3"):
        capped_multiplier(100, 1, 4, 1000)
    with pytest.raises(InvalidArgument, match="cube value"):
        max_multiplier(100, 0, 1000)


def test_the_bring_in_is_bounded_by_the_operator_and_covers_a_game() -> None:
    bounds = MoneyBounds.from_env(
        {"TAVLA_MONEY_MAX_STAKE_USD": "1000", "TAVLA_MONEY_MAX_TABLE_EXPOSURE_USD": "5000"}
    )
    assert require_bring_in(bounds, 100, 5000, "USD") == 5000
    with pytest.raises(AmountOutOfBounds, match="TAVLA_MONEY_MAX_TABLE_EXPOSURE_USD"):
        require_bring_in(bounds, 100, 5001, "USD")
    with pytest.raises(AmountOutOfBounds, match="TAVLA_MONEY_MAX_STAKE_USD"):
        require_bring_in(bounds, 1001, 5000, "USD")
    with pytest.raises(InvalidArgument, match="at least one game at cube 1"):
        require_bring_in(bounds, 100, 99, "USD")
    with pytest.raises(InvalidArgument, match="above 0"):
        require_bring_in(bounds, 100, 0, "USD")
