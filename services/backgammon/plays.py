"""Legal plays through the fastest available path: the C extension, else the Python reference.

``legal_plays`` here returns exactly what :func:`services.backgammon.movegen.legal_plays`
returns (same set of plays, results and notation); the tests check the two agree on
every benchmark position. ``FAST_PATH`` says whether the C extension is loaded.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from types import ModuleType
from typing import TypeVar

from services.backgammon import movegen
from services.backgammon.board import Board, Side
from services.backgammon.errors import InvalidPosition
from services.backgammon.movegen import Play, check_dice, result_of_moves
from services.backgammon.notation import Step, parse_moves
from services.backgammon.position_id import encode

T = TypeVar("T")

_fast: ModuleType | None
try:
    from services.backgammon import _fastmoves

    _fast = _fastmoves
except ImportError:  # pragma: no cover - only when the extension was not built
    _fast = None

FAST_PATH = _fast is not None

# A legal play as the C path returns it: the mover's side and the opponent's after it,
# its steps and its notation.
Option = tuple[Side, Side, tuple[Step, ...], str]


def _fast_call(function: Callable[..., T], board: Board, dice: Sequence[int]) -> T:
    """Call the C path; it validates the dice itself, so the common case costs no Python check."""
    try:
        return function(board.player, board.opponent, *dice)
    except (ValueError, TypeError) as exc:
        check_dice(dice)  # raises InvalidDice when the dice were the problem
        raise InvalidPosition(str(exc)) from exc


def legal_plays(board: Board, dice: Sequence[int]) -> list[Play]:
    """All legal plays for ``board.player`` rolling ``dice`` (empty when none)."""
    if _fast is None:
        return movegen.legal_plays(board, check_dice(dice))
    return [
        Play(steps, Board.trusted(player, opponent), notation)
        for player, opponent, steps, notation in _fast_call(_fast.plays, board, dice)
    ]


@lru_cache(maxsize=2048)
def turn_plays(board: Board, dice: tuple[int, int]) -> tuple[Play, ...]:
    """:func:`legal_plays`, memoised: a server shows a turn's plays, then checks the one played."""
    return tuple(
        Play(steps, Board.trusted(player, opponent), notation)
        for player, opponent, steps, notation in turn_options(board, dice)
    )


@lru_cache(maxsize=2048)
def turn_options(board: Board, dice: tuple[int, int]) -> tuple[Option, ...]:
    """The legal plays of :func:`legal_plays` (same order) as plain tuples, memoised.

    For a server that shows a turn's plays and then checks the one played: no
    :class:`Play` nor :class:`Board` is made for the many plays nobody picks.
    """
    if _fast is None:
        found = movegen.legal_plays(board, check_dice(dice))
        return tuple((p.result.player, p.result.opponent, p.steps, p.notation) for p in found)
    options: tuple[Option, ...] = tuple(_fast_call(_fast.plays, board, dice))
    return options


def chosen_play(board: Board, dice: tuple[int, int], text: str) -> Play:
    """:func:`movegen.find_play` among :func:`turn_options`: the same play, or the same refusal.

    Only the chosen play becomes a :class:`Play`. A refusal (no play leaves that
    position) is left to ``find_play`` itself, so its message is the library's.
    """
    options = turn_options(board, dice)
    if options:
        target = result_of_moves(board, parse_moves(text))
        for player, opponent, steps, notation in options:
            if player == target.player and opponent == target.opponent:
                return Play(steps, Board.trusted(player, opponent), notation)
    return movegen.find_play(board, dice, text, turn_plays(board, dice))


def result_ids(board: Board, dice: Sequence[int]) -> tuple[str, ...]:
    """Position IDs (mover's view) of every legal play's result: the hot-path call."""
    if _fast is None:
        return tuple(encode(result) for result in movegen.legal_results(board, dice))
    ids: tuple[str, ...] = _fast_call(_fast.results, board, dice)
    return ids


def count_plays(board: Board, dice: Sequence[int]) -> int:
    """Number of legal plays (0 when the roll cannot be played)."""
    if _fast is None:
        return len(movegen.legal_results(board, dice))
    count: int = _fast_call(_fast.count, board, dice)
    return count
