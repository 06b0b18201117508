"""Legal plays through the fastest available path: the C extension, else the Python reference.

``legal_plays`` here returns exactly what :func:`services.backgammon.movegen.legal_plays`
returns (same set of plays, results and notation); the tests check the two agree on
every benchmark position. ``FAST_PATH`` says whether the C extension is loaded.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType

from services.backgammon import movegen
from services.backgammon.board import Board
from services.backgammon.movegen import Play, check_dice

_fast: ModuleType | None
try:
    from services.backgammon import _fastmoves

    _fast = _fastmoves
except ImportError:  # pragma: no cover - only when the extension was not built
    _fast = None

FAST_PATH = _fast is not None


def legal_plays(board: Board, dice: Sequence[int]) -> list[Play]:
    """All legal plays for ``board.player`` rolling ``dice`` (empty when none)."""
    d1, d2 = check_dice(dice)
    if _fast is None:
        return movegen.legal_plays(board, (d1, d2))
    return [
        Play(steps, Board.trusted(player, opponent), notation)
        for player, opponent, steps, notation in _fast.plays(board.player, board.opponent, d1, d2)
    ]


def result_ids(board: Board, dice: Sequence[int]) -> tuple[str, ...]:
    """Position IDs (mover's view) of every legal play's result: the hot-path call."""
    d1, d2 = check_dice(dice)
    if _fast is None:
        from services.backgammon.position_id import encode

        return tuple(encode(p.result) for p in movegen.legal_plays(board, (d1, d2)))
    result: tuple[str, ...] = _fast.results(board.player, board.opponent, d1, d2)
    return result


def count_plays(board: Board, dice: Sequence[int]) -> int:
    """Number of legal plays (0 when the roll cannot be played)."""
    d1, d2 = check_dice(dice)
    if _fast is None:
        return len(movegen.legal_plays(board, (d1, d2)))
    count: int = _fast.count(board.player, board.opponent, d1, d2)
    return count
