"""The position model: sides, swapping, pip counts, borne-off checkers, race detection."""

from __future__ import annotations

import pytest

from services.backgammon.board import STARTING_BOARD, Board
from services.backgammon.errors import InvalidPosition
from tests.unit.backgammon.bg_testdata import make_board


def test_starting_position_has_167_pips_a_side_and_contact() -> None:
    assert STARTING_BOARD.pip_count() == STARTING_BOARD.pip_count(opponent=True) == 167
    assert not STARTING_BOARD.is_race()
    assert STARTING_BOARD.borne_off() == 0


def test_swapping_hands_the_position_to_the_other_player() -> None:
    board = make_board({6: 5, 25: 1}, {1: 2})
    swapped = board.swapped()
    assert swapped.player == board.opponent and swapped.opponent == board.player
    assert swapped.swapped() == board


def test_borne_off_counts_checkers_missing_from_the_board() -> None:
    board = make_board({6: 5}, {1: 15})
    assert board.borne_off() == 10 and board.borne_off(opponent=True) == 0


def test_race_when_the_sides_have_passed_each_other() -> None:
    assert make_board({6: 15}, {6: 15}).is_race()
    assert not make_board({6: 14, 20: 1}, {6: 15}).is_race()  # my 20 is behind their 6 (my 19)
    assert not make_board({6: 15}, {6: 14, 25: 1}).is_race()  # their bar checker must pass mine
    assert not make_board({6: 14, 25: 1}, {6: 15}).is_race()


def test_game_over_when_a_side_has_borne_off_everything() -> None:
    assert make_board({}, {6: 15}).is_over()
    assert not STARTING_BOARD.is_over()


def test_gnubg_layout_round_trips() -> None:
    assert Board.from_gnubg(STARTING_BOARD.to_gnubg()) == STARTING_BOARD


@pytest.mark.parametrize(
    ("player", "message"),
    [((0,) * 24, "25 counts"), ((-1,) + (0,) * 24, "negative"), ((16,) + (0,) * 24, "max 15")],
)
def test_impossible_sides_are_refused(player: tuple[int, ...], message: str) -> None:
    with pytest.raises(InvalidPosition, match=message):
        Board(player, (0,) * 25)
