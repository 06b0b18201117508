"""Table stakes: what one game at a table-stakes table may put at risk.

At a table-stakes table each player brings a stake from their balance (held by the
wallet for the whole session) and money games are played there, one after another,
until one player holds both stakes or a player leaves between games. A game may
never cost a player more than they have left at the table, so the game is capped by
``at_risk``, the smaller of the two players' remaining stakes when it starts:

- the cube may stand at ``c`` only while ``stake x c <= at_risk`` (a single game at
  that cube is covered): a double past that is refused;
- at cube ``c``, a gammon or backgammon counts only as far as the largest
  multiplier ``m`` (1 single, 2 gammon, 3 backgammon) with
  ``stake x c x m <= at_risk``: the result is capped, never refused.

So the loser of a game pays ``stake x cube x min(result, max_multiplier)``, which is
never more than ``at_risk``, hence never more than either player has left. A session
goes on while both remaining stakes cover a single game at cube 1
(``stake <= min(remaining)``); otherwise it is over.

The game service (refusing doubles, capping the result), the wallet (settling the
capped result) and matchmaking (starting the next game) use these same functions.
Amounts are integer minor units; products go through :func:`checked_product`.
"""

from __future__ import annotations

from typing import Final

from services.kit.errors import InvalidArgument
from services.kit.money_bounds import MAX_CUBE, Bound, MoneyBounds, checked_product

SINGLE: Final = 1
BACKGAMMON: Final = 3


def _require_positive(value: int, what: str) -> None:
    if type(value) is not int or value <= 0:
        raise InvalidArgument(f"{what} must be a whole number above 0, got {value!r}")


def max_cube(stake: int, at_risk: int, cube_cap: int = MAX_CUBE) -> int:
    """The highest cube value (a power of two up to ``cube_cap``) a game may reach with
    ``at_risk`` left; 0 when not even cube 1 is covered (no game can be played)."""
    _require_positive(stake, "the stake per point")
    cap = cube_cap or MAX_CUBE
    cube = 0
    candidate = 1
    while candidate <= min(cap, MAX_CUBE) and may_reach(stake, at_risk, candidate):
        cube = candidate
        candidate *= 2
    return cube


def may_reach(stake: int, at_risk: int, cube: int) -> bool:
    """Whether the cube may stand at ``cube`` (a single game there risks no more than
    ``at_risk``)."""
    _require_positive(stake, "the stake per point")
    _require_positive(cube, "the cube value")
    return checked_product(stake, cube, what="the stake at that cube") <= at_risk


def max_multiplier(stake: int, cube: int, at_risk: int) -> int:
    """The largest result multiplier (1 to 3) that ``at_risk`` covers at ``cube``; 0 when not
    even a single game at that cube is covered."""
    _require_positive(stake, "the stake per point")
    _require_positive(cube, "the cube value")
    per_unit = checked_product(stake, cube, what="the stake at that cube")
    return max(0, min(BACKGAMMON, at_risk // per_unit))


def capped_multiplier(stake: int, cube: int, result: int, at_risk: int) -> int:
    """What a game won ``result`` (1 single, 2 gammon, 3 backgammon) at ``cube`` counts: the
    result, down to the largest multiplier ``at_risk`` covers (at least a single game)."""
    if result not in (1, 2, BACKGAMMON):
        raise InvalidArgument(f"a result counts 1, 2 or 3 times the cube, got {result!r}")
    return max(SINGLE, min(result, max_multiplier(stake, cube, at_risk)))


def capped_loss(stake: int, cube: int, result: int, at_risk: int) -> int:
    """What the loser pays: stake x cube x the capped multiplier, in minor units."""
    multiplier = capped_multiplier(stake, cube, result, at_risk)
    return checked_product(stake, cube, multiplier, what="the loss of a table-stakes game")


def session_goes_on(stake: int, remaining: tuple[int, int]) -> bool:
    """Whether another game can be played: both remaining stakes cover a single game at
    cube 1. Otherwise one player holds (nearly) both stakes and the session is over."""
    _require_positive(stake, "the stake per point")
    return min(remaining) >= stake


def require_bring_in(bounds: MoneyBounds, stake: int, bring_in: int, currency: str) -> int:
    """The stake each player brings to a table-stakes table, checked: at least one game at
    cube 1 (``stake``), and within the operator's bounds (the stake per point against
    ``STAKE``, the bring-in, the most a player can lose at the table, against
    ``TABLE_EXPOSURE``). Returns the bring-in."""
    _require_positive(bring_in, "the table stake each player brings")
    bounds.require(Bound.STAKE, stake, currency)
    if bring_in < stake:
        raise InvalidArgument(
            f"the table stake each player brings ({bring_in} minor units) must cover at least "
            f"one game at cube 1, the stake per point ({stake} minor units)"
        )
    return bounds.require(Bound.TABLE_EXPOSURE, bring_in, currency)
