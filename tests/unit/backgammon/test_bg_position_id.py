"""Position IDs: bit-exact with GNU Backgammon (gnubg-nn) both ways, and clear errors."""

from __future__ import annotations

import gnubg_nn
import pytest
from hypothesis import given

from services.backgammon import position_id
from services.backgammon.bench import default_data_dir
from services.backgammon.board import STARTING_BOARD, Board
from services.backgammon.errors import InvalidPosition
from tests.unit.backgammon.bg_testdata import boards, random_play_positions


def test_starting_position_id_is_gnubgs() -> None:
    assert position_id.encode(STARTING_BOARD) == "4HPwATDgc/ABMA"
    assert position_id.decode("4HPwATDgc/ABMA") == STARTING_BOARD


def test_second_half_of_the_id_is_the_player_on_roll() -> None:
    # gnubg shows 740dAABttxUABA with the player on roll holding a checker on his 21 point.
    board = position_id.decode("740dAABttxUABA")
    assert board.player[20] == 1
    assert board.opponent[:7] == (4, 4, 2, 0, 0, 2, 3)


def test_wildbg_ids_round_trip_and_match_gnubg_decoding() -> None:
    folder = default_data_dir()
    ids = (folder / "contact.csv").read_text().split() + (folder / "race.csv").read_text().split()
    for pid in ids:
        board = position_id.decode(pid)
        assert position_id.encode(board) == pid
        assert board.to_gnubg() == [list(side) for side in gnubg_nn.board_from_position_id(pid)]


def test_random_play_positions_encode_as_gnubg_does() -> None:
    for board, _ in random_play_positions(seed=7, count=500):
        assert position_id.encode(board) == gnubg_nn.position_id(board.to_gnubg())


@given(boards())
def test_any_board_round_trips(board: Board) -> None:
    assert position_id.decode(position_id.encode(board)) == board
    assert position_id.decode_key(position_id.encode_key(board)) == board


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("4HPwATDgc/AB", "14 characters"),
        ("4HPwATDgc/AB!A", "base64"),
        ("//////////////", "ends before"),
    ],
)
def test_invalid_ids_are_refused_with_a_reason(text: str, reason: str) -> None:
    with pytest.raises(InvalidPosition, match=reason):
        position_id.decode(text)


def test_an_id_with_too_many_checkers_is_refused() -> None:
    # 16 one-bits then zeros: sixteen checkers on the opponent's ace point.
    key = ((1 << 16) - 1).to_bytes(10, "little")
    with pytest.raises(InvalidPosition, match="max 15"):
        position_id.decode_key(key)


def test_a_key_with_bits_after_both_sides_is_refused() -> None:
    with pytest.raises(InvalidPosition, match="beyond"):
        position_id.decode_key((1 << 50).to_bytes(10, "little"))


def test_board_refuses_both_colours_on_one_point() -> None:
    player = (1,) + (0,) * 24
    opponent = (0,) * 23 + (1, 0)  # the opponent's 24 point is the player's 1 point
    with pytest.raises(InvalidPosition, match="both players"):
        Board(player, opponent)
