"""The legal plays a Roll answers with are written as bytes directly (views._plays_bytes).

They must be exactly what protobuf itself makes of the same plays as messages, for
every kind of play: hits, entering from the bar, bearing off, doubles, no play.
The expected bytes come from protobuf's own serializer, not from the code under test.
"""

from __future__ import annotations

import random

from services.backgammon.board import STARTING_BOARD, Board
from services.backgammon.plays import legal_plays
from services.game import views
from tavla.game.v1 import game_pb2


def _positions(count: int, seed: int) -> list[tuple[Board, tuple[int, int]]]:
    """Positions from random games, both sides moving, to the end (bar and bear-off included)."""
    rng = random.Random(seed)
    board, found = STARTING_BOARD, []
    while len(found) < count:
        dice = (rng.randint(1, 6), rng.randint(1, 6))
        found.append((board, dice))
        plays = legal_plays(board, dice)
        board = rng.choice(plays).result.swapped() if plays else board.swapped()
        if board.is_over():
            board = STARTING_BOARD
    return found


def _by_protobuf(board: Board, dice: tuple[int, int]) -> bytes:
    plays = views.legal_play_messages(board, dice)
    return game_pb2.Game(legal_plays=plays).SerializeToString()


def test_the_plays_are_encoded_as_protobuf_encodes_them() -> None:
    positions = _positions(3000, seed=11)
    kinds = {"bar": 0, "off": 0, "hit": 0, "none": 0}
    for board, dice in positions:
        encoded = views._plays_bytes(board, dice)
        assert encoded == _by_protobuf(board, dice), (board, dice)
        notations = [p.notation for p in game_pb2.Game.FromString(encoded).legal_plays]
        kinds["bar"] += any("bar" in n for n in notations)
        kinds["off"] += any("off" in n for n in notations)
        kinds["hit"] += any("*" in n for n in notations)
        kinds["none"] += not notations
    assert all(kinds.values()), kinds  # every kind of play was compared


def test_appended_to_a_stored_view_they_parse_as_its_plays() -> None:
    board, dice = STARTING_BOARD, (6, 5)
    stored = game_pb2.Game(game_id="g", version=3, dice=list(dice)).SerializeToString()
    view = game_pb2.Game.FromString(stored + views._plays_bytes(board, dice))
    assert view.game_id == "g" and view.version == 3
    assert list(view.legal_plays) == list(views.legal_play_messages(board, dice))
    assert "24/13" in [p.notation for p in view.legal_plays]  # the running 6-5 among them
