"""Two-sided figures for bear-offs: outcome probabilities and money equities.

A bear-off here is a position where both sides have every remaining checker on their
own points 1..6 (nothing on the bar, so no contact is possible) and the game is not
over. What this module owns:

- :func:`probabilities`: cubeless outcome chances for the player on roll, from the
  one-sided distributions of :mod:`services.backgammon.bearoff` combined as GNU
  Backgammon combines its one-sided database: the side on roll needing ``i`` rolls
  wins if the other needs ``i`` or more; it wins a gammon if the other needs ``i``
  or more to bear off its *first* checker; it loses a gammon if it needs more than
  ``j`` rolls for its first checker while the other finishes in ``j``. The figures
  are exact for two players who each play every roll to minimise their expected
  rolls (to finish, or to save the gammon when that is at stake). Against gnubg's
  one-sided database they agree to about 1e-5. Play that maximises the chance to win
  outright (gnubg's two-sided database for up to 6 checkers a side) can differ, by up
  to about half a percent of winning chance where an underdog gains by gambling.
- Backgammons are impossible: a backgammon needs a loser's checker on the bar or in
  the winner's home board, and here every checker is in its owner's home board and
  can only move further in or off. Gammons are possible only against a side with all
  fifteen checkers still on the board.
- :func:`money_equity`: the money-game equity of the player on roll per unit of the
  cube, cubeful by Rick Janowski's interpolation between the dead-cube (cubeless)
  and live-cube equities with cube efficiency 0.6, GNU Backgammon's value for
  one-sided bear-off positions, and the player's right to double before rolling
  (double/take against double/pass). Jacoby (gammons count single while the cube is
  centred) is honoured; beavers are not modelled (a correct double is never beavered).
- :func:`equity_after_roll`: the same once the dice are rolled: the best play's value.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from itertools import accumulate

from services.backgammon.bearoff import Distribution, OneSided, default_database, home_of
from services.backgammon.board import CHECKERS, HOME_POINTS, Board
from services.backgammon.plays import legal_plays

# GNU Backgammon's cube efficiency for one-sided bear-off positions (eval.c, rOSCubeX).
BEAROFF_CUBE_EFFICIENCY = 0.6


@dataclass(frozen=True, slots=True)
class Probabilities:
    """Cubeless chances of the player on roll; gammons are included in ``win``/``lose``."""

    win: float
    win_gammon: float
    lose_gammon: float

    @property
    def lose(self) -> float:
        return 1.0 - self.win

    def cubeless_equity(self, *, gammons: bool = True) -> float:
        """Points per unit of cube: +1/-1 a single game, +2/-2 a gammon (if they count)."""
        single = self.win - self.lose
        return single + (self.win_gammon - self.lose_gammon if gammons else 0.0)


class CubeAccess(Enum):
    """The cube as the player on roll sees it."""

    CENTRED = "centred"
    OWNED = "owned"  # the player on roll owns it
    UNAVAILABLE = "unavailable"  # the opponent owns it
    DEAD = "dead"  # nobody can double any more (cap reached): cubeless

    def for_opponent(self) -> CubeAccess:
        swap = {CubeAccess.OWNED: CubeAccess.UNAVAILABLE, CubeAccess.UNAVAILABLE: CubeAccess.OWNED}
        return swap.get(self, self)


@dataclass(frozen=True, slots=True)
class MoneyCube:
    """The money-game cube state for an evaluation: access, whether the on-roll player may
    double now (below the cap), and the Jacoby rule."""

    access: CubeAccess
    can_redouble: bool = True  # False when doubling would pass the cap
    jacoby: bool = False

    @property
    def gammons_count(self) -> bool:
        return not (self.jacoby and self.access is CubeAccess.CENTRED)

    def for_opponent(self) -> MoneyCube:
        return MoneyCube(self.access.for_opponent(), self.can_redouble, self.jacoby)


def is_bearoff(board: Board) -> bool:
    """Both sides have checkers left, all of them on their own points 1..6."""
    return all(sum(side) and not any(side[HOME_POINTS:]) for side in (board.player, board.opponent))


def _survival(distribution: Distribution) -> list[float]:
    """P(at least n rolls) for n = 0 .. end (the caller reads 0.0 from there on): the
    running sums from the top down, tail[n] = tail[n + 1] + P(n)."""
    tail = list(accumulate(reversed(distribution.probabilities), initial=0.0))
    tail.reverse()
    return tail[:1] * distribution.start + tail


def combine(on_roll: OneSided, other: OneSided) -> Probabilities:
    """Two one-sided entries as the probabilities of the side on roll (see module docstring)."""
    # Plain loops over lists (no per-term calls): the exact path of every bear-off
    # evaluation runs here, so it is kept fast; the sums are made in the same order.
    other_finish, other_first = _survival(other.rolls), _survival(other.first_off)
    mine_first = _survival(on_roll.first_off)
    finish_end, first_end, mine_end = len(other_finish), len(other_first), len(mine_first)
    win = win_gammon = lose_gammon = 0.0
    n = on_roll.rolls.start
    for p in on_roll.rolls.probabilities:
        win += p * (other_finish[n] if n < finish_end else 0.0)
        win_gammon += p * (other_first[n] if n < first_end else 0.0)
        n += 1
    n = other.rolls.start + 1
    for q in other.rolls.probabilities:
        lose_gammon += q * (mine_first[n] if n < mine_end else 0.0)
        n += 1
    win = min(max(win, 0.0), 1.0)  # sums of floats may stray by an ulp
    return Probabilities(win, min(max(win_gammon, 0.0), win), min(max(lose_gammon, 0.0), 1 - win))


def probabilities(board: Board) -> Probabilities:
    """Cubeless chances of ``board.player`` (on roll, dice not yet rolled) in a bear-off."""
    if not is_bearoff(board):
        raise ValueError("not a bear-off: both sides need all their checkers in their home board")
    database = default_database()
    return combine(database.lookup(home_of(board.player)), database.lookup(home_of(board.opponent)))


def janowski(chances: Probabilities, cube: MoneyCube, efficiency: float) -> float:
    """Janowski's cubeful money equity with no double now (GNU Backgammon's Cl2CfMoney)."""
    dead = chances.cubeless_equity(gammons=cube.gammons_count)
    p = chances.win
    if cube.access is CubeAccess.DEAD or not 1e-7 < p < 1 - 1e-7:
        return dead
    w = 1.0 + chances.win_gammon / p
    lo = 1.0 + chances.lose_gammon / (1.0 - p)
    return dead * (1.0 - efficiency) + _live(w, lo, p, cube) * efficiency


def _live(w: float, lo: float, p: float, cube: MoneyCube) -> float:
    """The live-cube equity: piecewise linear in p between take and cash points."""
    take = (lo - 0.5) / (w + lo + 0.5)
    cash = (lo + 1.0) / (w + lo + 0.5)
    if cube.access is CubeAccess.CENTRED:
        if p < take:
            return -1.0 if cube.jacoby else -lo + (lo - 1.0) * p / take
        if p < cash:
            return -1.0 + 2.0 * (p - take) / (cash - take)
        return 1.0 if cube.jacoby else 1.0 + (w - 1.0) * (p - cash) / (1.0 - cash)
    if cube.access is CubeAccess.OWNED:
        if p < cash:
            return -lo + (1.0 + lo) * p / cash
        return 1.0 + (w - 1.0) * (p - cash) / (1.0 - cash)
    if p < take:  # the opponent owns the cube
        return -lo + (lo - 1.0) * p / take
    return -1.0 + (w + 1.0) * (p - take) / (1.0 - take)


def cubeful_before_roll(
    chances: Probabilities, cube: MoneyCube, efficiency: float = BEAROFF_CUBE_EFFICIENCY
) -> float:
    """The on-roll player's equity per unit of cube, doubling if that is right.

    A double is worth min(double/take, double/pass = +1); it is made when that beats
    not doubling. After a take the cube is turned (Jacoby no longer applies) and owned
    by the opponent, at twice the value.
    """
    no_double = janowski(chances, cube, efficiency)
    if cube.access not in (CubeAccess.CENTRED, CubeAccess.OWNED) or not cube.can_redouble:
        return no_double
    taken = MoneyCube(CubeAccess.UNAVAILABLE, cube.can_redouble, jacoby=False)
    double_take = 2.0 * janowski(chances, taken, efficiency)
    return max(no_double, min(double_take, 1.0))


def money_equity(board: Board, cube: MoneyCube) -> float:
    """Cubeful equity per unit of cube of ``board.player``, on roll before rolling."""
    return cubeful_before_roll(probabilities(board), cube)


def _win_value(board: Board, gammons: bool) -> float:
    """What bearing off the last checker wins against ``board.opponent`` (per unit of cube)."""
    return 2.0 if gammons and sum(board.opponent) == CHECKERS else 1.0


def equity_after_roll(
    board: Board, dice: tuple[int, int], value: Callable[[Board], float], *, gammons: bool
) -> float:
    """The best play of ``dice``: max over plays of the result's worth to the mover.

    ``value(after)`` is the worth to the side then on roll (the opponent) of the board
    ``after`` seen from that side; a play that bears off the last checker wins outright.
    """
    best = -3.0
    for option in legal_plays(board, dice):
        after = option.result
        finished = not sum(after.player)
        worth = _win_value(after, gammons) if finished else -value(after.swapped())
        best = max(best, worth)
    return best
