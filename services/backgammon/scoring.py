"""Game results: single, gammon or backgammon, times the cube, with the Jacoby rule.

A gammon is a win where the loser has borne off no checker; a backgammon, one where
the loser has also a checker on the bar or in the winner's home board. A dropped
double scores the cube value before the double, as a single game.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, IntEnum

from services.backgammon.board import BAR, CHECKERS, HOME_POINTS, POINTS, Board
from services.backgammon.errors import InvalidPosition


class WinKind(IntEnum):
    """How much a win is worth before the cube: 1, 2 or 3 times."""

    SINGLE = 1
    GAMMON = 2
    BACKGAMMON = 3


class EndReason(Enum):
    BORNE_OFF = "borne_off"
    DOUBLE_DROPPED = "double_dropped"
    RESIGNED = "resigned"


@dataclass(frozen=True, slots=True)
class GameResult:
    """The end of one game: who won, how, and the points (kind x cube, Jacoby applied)."""

    winner: int
    kind: WinKind
    cube_value: int
    points: int
    reason: EndReason


def win_kind(board: Board) -> WinKind:
    """The kind of win for ``board.player``, who must have borne off all fifteen checkers."""
    if sum(board.player):
        raise InvalidPosition("the game is not over: the player still has checkers on the board")
    loser = board.opponent
    if sum(loser) < CHECKERS:
        return WinKind.SINGLE
    # The winner's home board is the loser's points 19..24 (indices 18..23).
    if loser[BAR] or any(loser[POINTS - HOME_POINTS : POINTS]):
        return WinKind.BACKGAMMON
    return WinKind.GAMMON


def points_for(kind: WinKind, cube_value: int, *, jacoby: bool, cube_turned: bool) -> int:
    """Points won: Jacoby rule (money play) counts gammons as singles until the cube is turned."""
    if jacoby and not cube_turned:
        return cube_value
    return int(kind) * cube_value


def result_of_bear_off(
    board: Board, winner: int, cube_value: int, *, jacoby: bool, cube_turned: bool
) -> GameResult:
    """Result when ``winner`` (``board.player``) has just borne off the last checker."""
    kind = win_kind(board)
    points = points_for(kind, cube_value, jacoby=jacoby, cube_turned=cube_turned)
    return GameResult(winner, kind, cube_value, points, EndReason.BORNE_OFF)
