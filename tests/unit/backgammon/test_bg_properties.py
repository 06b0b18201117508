"""Properties of legal plays on arbitrary positions (hypothesis)."""

from __future__ import annotations

from hypothesis import given, settings

from services.backgammon import movegen
from services.backgammon.board import BAR, CHECKERS, POINTS, Board
from services.backgammon.plays import legal_plays
from tests.unit.backgammon.bg_testdata import boards, dice_rolls, max_dice_usable


def _playable(board: Board) -> bool:
    return sum(board.player) > 0 and sum(board.opponent) > 0


@settings(max_examples=300, deadline=None)
@given(boards(), dice_rolls)
def test_checkers_are_conserved(board: Board, dice: tuple[int, int]) -> None:
    for play in legal_plays(board, dice):
        borne_off = sum(1 for _, to in play.steps if to == 0)
        assert sum(play.result.player) == sum(board.player) - borne_off
        assert sum(play.result.opponent) == sum(board.opponent)
        assert play.result.borne_off() <= CHECKERS


@settings(max_examples=300, deadline=None)
@given(boards(), dice_rolls)
def test_no_point_ever_holds_both_colours(board: Board, dice: tuple[int, int]) -> None:
    for play in legal_plays(board, dice):
        for point in range(POINTS):
            assert not (play.result.player[point] and play.result.opponent[POINTS - 1 - point])


@settings(max_examples=200, deadline=None)
@given(boards(), dice_rolls)
def test_every_play_uses_the_maximum_number_of_dice(board: Board, dice: tuple[int, int]) -> None:
    most = max_dice_usable(board, dice)
    plays = legal_plays(board, dice)
    assert (most == 0) == (plays == [])
    assert all(play.dice_used == most for play in plays)


@settings(max_examples=200, deadline=None)
@given(boards(home_only=True), dice_rolls)
def test_bear_off_positions_use_the_maximum_number_of_dice(
    board: Board, dice: tuple[int, int]
) -> None:
    most = max_dice_usable(board, dice)
    assert all(play.dice_used == most for play in legal_plays(board, dice))


@settings(max_examples=300, deadline=None)
@given(boards(), dice_rolls)
def test_fast_path_equals_reference(board: Board, dice: tuple[int, int]) -> None:
    fast = {(p.result, p.notation) for p in legal_plays(board, dice)}
    assert fast == {(p.result, p.notation) for p in movegen.legal_plays(board, dice)}


@settings(max_examples=200, deadline=None)
@given(boards(), dice_rolls)
def test_a_checker_on_the_bar_always_moves_first(board: Board, dice: tuple[int, int]) -> None:
    if board.player[BAR]:
        assert all(play.steps[0][0] == 25 for play in legal_plays(board, dice))
