"""Resignations: offering to lose a single game, a gammon or a backgammon; accept or reject.

The player on turn offers; the opponent answers. Accepting ends the game with the
offered kind times the cube (the Jacoby rule applies as for a played-out win).
"""

from __future__ import annotations

from dataclasses import dataclass

from services.backgammon.errors import ResignationError
from services.backgammon.scoring import EndReason, GameResult, WinKind, points_for


@dataclass(frozen=True, slots=True)
class Resignation:
    """An offer by ``by`` to lose ``kind`` (single, gammon or backgammon)."""

    by: int
    kind: WinKind


def offer(by: int, kind: WinKind | int) -> Resignation:
    try:
        level = WinKind(kind)
    except ValueError as exc:
        raise ResignationError(
            f"resign as 1 (single), 2 (gammon) or 3 (backgammon), not {kind}"
        ) from exc
    return Resignation(by, level)


def accept(
    resignation: Resignation, player: int, cube_value: int, *, jacoby: bool, cube_turned: bool
) -> GameResult:
    """``player`` (the opponent of the resigner) accepts: the game ends."""
    if player == resignation.by:
        raise ResignationError("the player who resigns cannot accept their own offer")
    points = points_for(resignation.kind, cube_value, jacoby=jacoby, cube_turned=cube_turned)
    return GameResult(player, resignation.kind, cube_value, points, EndReason.RESIGNED)


def reject(resignation: Resignation, player: int) -> None:
    """``player`` rejects the offer; play goes on (nothing to change but the offer itself)."""
    if player == resignation.by:
        raise ResignationError("the player who resigns cannot reject their own offer")
