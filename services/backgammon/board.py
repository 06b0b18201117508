"""The position model: checker counts per point for both sides, seen from the player on roll.

Indexing follows GNU Backgammon's ``TanBoard``: each side is a 25-tuple where index
``i`` (0..23) is that side's own point ``i + 1`` and index 24 is its bar. The player
on roll moves from high to low indices; the opponent's point ``p`` is the player's
point ``25 - p``. Checkers not on the board have been borne off.
"""

from __future__ import annotations

from dataclasses import dataclass

from services.backgammon.errors import InvalidPosition

CHECKERS = 15
POINTS = 24
BAR = 24  # index of the bar in a side's 25-tuple
HOME_POINTS = 6

Side = tuple[int, ...]

_START_SIDE: Side = (0, 0, 0, 0, 0, 5, 0, 3, 0, 0, 0, 0, 5) + (0,) * 10 + (2, 0)


@dataclass(frozen=True, slots=True)
class Board:
    """Both sides' checkers; ``player`` is the side on roll (the one that moves next)."""

    player: Side
    opponent: Side

    def __post_init__(self) -> None:
        for name, side in (("player", self.player), ("opponent", self.opponent)):
            if len(side) != POINTS + 1:
                raise InvalidPosition(f"{name} needs 25 counts (24 points + bar), got {len(side)}")
            if any(n < 0 for n in side):
                raise InvalidPosition(f"{name} has a negative checker count")
            if sum(side) > CHECKERS:
                raise InvalidPosition(f"{name} has {sum(side)} checkers on the board, max 15")
        for point in range(POINTS):
            if self.player[point] and self.opponent[POINTS - 1 - point]:
                raise InvalidPosition(f"point {point + 1} holds checkers of both players")

    @classmethod
    def trusted(cls, player: Side, opponent: Side) -> Board:
        """Build without validation; only for boards derived from an already valid one."""
        board = object.__new__(cls)
        object.__setattr__(board, "player", player)
        object.__setattr__(board, "opponent", opponent)
        return board

    def swapped(self) -> Board:
        """The same position seen by the other player (whose turn comes next)."""
        return Board.trusted(self.opponent, self.player)

    def borne_off(self, *, opponent: bool = False) -> int:
        side = self.opponent if opponent else self.player
        return CHECKERS - sum(side)

    def pip_count(self, *, opponent: bool = False) -> int:
        side = self.opponent if opponent else self.player
        return sum((i + 1) * n for i, n in enumerate(side))

    def is_race(self) -> bool:
        """True when no contact remains: every player checker is past every opponent checker."""
        mine = [i for i in range(POINTS + 1) if self.player[i]]
        theirs = [POINTS - 1 - i for i in range(POINTS) if self.opponent[i]]
        if self.opponent[BAR]:
            theirs.append(-1)
        if not mine or not theirs:
            return True
        return max(mine) < min(theirs) if not self.player[BAR] else False

    def is_over(self) -> bool:
        """True when either side has borne off all fifteen checkers."""
        return sum(self.player) == 0 or sum(self.opponent) == 0

    def to_gnubg(self) -> list[list[int]]:
        """GNU Backgammon's ``anBoard`` layout: opponent first, player on roll second."""
        return [list(self.opponent), list(self.player)]

    @classmethod
    def from_gnubg(cls, an_board: list[list[int]] | tuple[tuple[int, ...], ...]) -> Board:
        return cls(tuple(an_board[1]), tuple(an_board[0]))


STARTING_BOARD = Board(_START_SIDE, _START_SIDE)
