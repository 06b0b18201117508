"""What is at stake at a table: a single money game or a match, and how a game ends.

Both the hold (what a player must have set aside) and the settlement (what the
loser pays) follow from these terms, so they live in one place.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from services.wallet.domain.errors import InvalidSettlement
from services.wallet.domain.money import Money, require_positive

# Cube values a money game can reach (64 is the house limit on redoubles).
CUBE_VALUES: frozenset[int] = frozenset({1, 2, 4, 8, 16, 32, 64})


class WinType(IntEnum):
    """How a money game ended; the value is the multiplier of stake x cube."""

    SINGLE = 1
    GAMMON = 2
    BACKGAMMON = 3


@dataclass(frozen=True, slots=True)
class MoneyGame:
    """A single game for ``stake`` per point, multiplied by the cube and the result."""

    stake: Money

    def __post_init__(self) -> None:
        require_positive(self.stake, "the stake")


@dataclass(frozen=True, slots=True)
class Match:
    """A match to ``length`` points; the loser pays ``stake`` whatever the score."""

    stake: Money
    length: int

    def __post_init__(self) -> None:
        require_positive(self.stake, "the match stake")
        if type(self.length) is not int or self.length < 1:
            raise InvalidSettlement(f"a match is played to 1 point or more, got {self.length!r}")


GameTerms = MoneyGame | Match


def require_cube(cube: int) -> int:
    if cube not in CUBE_VALUES:
        raise InvalidSettlement(f"cube value {cube!r} is not one of {sorted(CUBE_VALUES)}")
    return cube


def win_sum(game: MoneyGame, cube: int, win_type: WinType) -> Money:
    """W = stake x cube x result: what the loser of a money game pays."""
    return game.stake.times(require_cube(cube) * int(win_type))


def largest_possible_loss(terms: GameTerms, cube: int) -> Money:
    """The most a player can lose at this cube: a backgammon in a money game, a match's stake."""
    if isinstance(terms, Match):
        return terms.stake
    return win_sum(terms, cube, WinType.BACKGAMMON)
