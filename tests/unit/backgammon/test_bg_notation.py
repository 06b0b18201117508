"""GNU Backgammon move notation: printing as gnubg does, parsing back, finding the play."""

from __future__ import annotations

import pytest

from services.backgammon.board import STARTING_BOARD
from services.backgammon.errors import IllegalPlay, InvalidNotation
from services.backgammon.movegen import find_play
from services.backgammon.notation import format_play, parse_moves
from services.backgammon.plays import legal_plays
from tests.unit.backgammon.bg_testdata import make_board, notations, random_play_positions


def test_hit_is_marked_and_moves_sorted_by_source() -> None:
    board = make_board({13: 5, 8: 3, 6: 5, 24: 2}, {18: 1, 6: 14})  # blot on my 7 point
    assert "13/7* 8/7" in notations(board, (6, 1))


def test_entering_from_the_bar() -> None:
    board = make_board({25: 1, 13: 14}, {1: 15})
    assert "bar/22 13/7" in notations(board, (6, 3))


def test_bearing_off() -> None:
    board = make_board({6: 2, 5: 13}, {1: 15})
    assert notations(board, (6, 6)) == {"6/off(2) 5/off(2)"}
    assert {"6/off 5/off", "6/1 6/off"} <= notations(board, (6, 5))


def test_repeated_moves_are_counted() -> None:
    assert "8/4(2)" in notations(STARTING_BOARD, (2, 2))
    assert "24/18(2) 13/7(2)" in notations(STARTING_BOARD, (6, 6))


def test_one_checker_moving_twice_is_joined_and_a_hit_on_the_way_kept() -> None:
    board = make_board({13: 15}, {15: 1, 1: 14})  # blot on my 10 point
    # Through 10 hits on the way; through 7 does not: two different results, two texts.
    assert notations(board, (6, 3)) == {"13/10*/4", "13/4", "13/10* 13/7"}


def test_format_uses_the_board_before_the_play_for_hits() -> None:
    board = make_board({13: 2}, {17: 1, 1: 14})
    assert format_play(board, [(13, 8), (8, 7)]) == "13/8*/7"
    assert format_play(board, [(13, 12), (12, 7)]) == "13/7"


@pytest.mark.parametrize(
    ("text", "moves"),
    [
        ("13/7* 8/7", [(13, 7), (8, 7)]),
        ("bar/22", [(25, 22)]),
        ("6/off(2)", [(6, 0), (6, 0)]),
        ("24/18*/13", [(24, 18), (18, 13)]),
        ("8/4(2) 6/2(2)", [(8, 4), (8, 4), (6, 2), (6, 2)]),
    ],
)
def test_parse_moves(text: str, moves: list[tuple[int, int]]) -> None:
    assert parse_moves(text) == moves


@pytest.mark.parametrize("text", ["", "13-7", "7/13", "13/26", "bar", "13/7(5)"])
def test_parse_refuses_what_is_not_gnubg_notation(text: str) -> None:
    with pytest.raises(InvalidNotation):
        parse_moves(text)


def test_every_printed_play_parses_back_to_the_same_play() -> None:
    for board, dice in random_play_positions(seed=3, count=300):
        plays = legal_plays(board, dice)
        for play in plays:
            assert find_play(board, dice, play.notation, plays) == play


def test_equivalent_spellings_find_the_same_play() -> None:
    play = find_play(STARTING_BOARD, (3, 1), "24/21 21/20")
    assert play.notation == "24/20"


def test_an_illegal_play_names_the_legal_ones() -> None:
    with pytest.raises(IllegalPlay, match="legal plays: 24/23 24/21, 24/20"):
        find_play(STARTING_BOARD, (3, 1), "24/20 6/5")
