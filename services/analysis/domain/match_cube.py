"""Cubeful match-winning chances: Janowski's live-cube interpolation with a MET.

The method of GNU Backgammon's Cl2CfMatch (eval.c). For the player on roll, with
win chance ``p`` (gammon ratios held fixed as ``p`` varies):

- ``win`` / ``lose``: the MWC after winning / losing this game at the cube, averaged
  over single, gammon and backgammon as the chances say;
- ``cash`` / ``opp_cash``: the MWC after the opponent / the player passes a double
  (the cube's value won / lost);
- the player's cash point ``tg``: the ``p`` where the opponent, doubled to twice the
  cube, is indifferent between taking (then owning the cube at 2x, valued by this same
  model one level up with a fully live cube: the recube vig, as gnubg's GetPoints) and
  passing; the opponent's ``opp_tg`` likewise. Levels are worked out from the top
  (where neither side can double any more, so the cube is dead) down. A side that
  may not double (Crawford game, or a cube that already covers what it needs) has no
  cash point (1 for the player, 0 for the opponent).
- the live-cube MWC is piecewise linear in ``p`` between those points, as in money
  play; the result is ``x * live + (1 - x) * dead`` for cube efficiency ``x`` (the
  cash points above come from the live curve alone).
- results of the Crawford game are valued with the post-Crawford row (the next game
  is post-Crawford, as gnubg's getME). The MWCs of each score and cube are memoised.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

from services.analysis.domain.met import MatchEquityTable


class Access(Enum):
    CENTRED = "centred"
    OWNED = "owned"
    UNAVAILABLE = "unavailable"


@dataclass(frozen=True, slots=True)
class Score:
    """Points each side still needs, from the player on roll; Crawford flags."""

    away: int
    opponent_away: int
    crawford: bool
    post_crawford: bool

    def mwc(self, met: MatchEquityTable, won: int, lost: int) -> float:
        """The player's MWC after winning ``won`` or losing ``lost`` points. After the
        Crawford game the next game is post-Crawford (gnubg's getME), so its results
        are valued with the post-Crawford row too."""
        return met.winning_chance(
            self.away - won,
            self.opponent_away - lost,
            post_crawford=self.post_crawford or self.crawford,
        )


class GameChances(Protocol):
    """Cubeless chances (gammons include backgammons): the engine's ``Chances``."""

    @property
    def win(self) -> float: ...
    @property
    def win_gammon(self) -> float: ...
    @property
    def win_backgammon(self) -> float: ...
    @property
    def lose_gammon(self) -> float: ...
    @property
    def lose_backgammon(self) -> float: ...


# Per table, per score and cube: the MWCs after winning/losing a single, gammon and
# backgammon. A match analysis asks for the same few scores a million times.
_Results = tuple[float, float, float, float, float, float]
_RESULTS: dict[int, tuple[MatchEquityTable, dict[tuple[Score, int], _Results]]] = {}


def results(met: MatchEquityTable, score: Score, cube: int) -> _Results:
    """(win 1, 2, 3 x cube, lose 1, 2, 3 x cube) MWCs of the player, memoised."""
    held = _RESULTS.get(id(met))
    if held is None or held[0] is not met:  # keyed by identity; the table is kept alive
        held = _RESULTS[id(met)] = (met, {})
    table = held[1]
    found = table.get((score, cube))
    if found is None:
        found = table[(score, cube)] = (
            score.mwc(met, cube, 0),
            score.mwc(met, 2 * cube, 0),
            score.mwc(met, 3 * cube, 0),
            score.mwc(met, 0, cube),
            score.mwc(met, 0, 2 * cube),
            score.mwc(met, 0, 3 * cube),
        )
    return found


def win_lose(met: MatchEquityTable, score: Score, c: GameChances, cube: int) -> tuple[float, float]:
    """MWC given a win and given a loss at ``cube``, averaged over the kinds of win/loss."""
    w1, w2, w3, l1, l2, l3 = results(met, score, cube)
    lose = 1.0 - c.win
    if c.win > 1e-9:
        win = (
            (c.win - c.win_gammon) * w1
            + (c.win_gammon - c.win_backgammon) * w2
            + c.win_backgammon * w3
        ) / c.win
    else:
        win = w1
    if lose > 1e-9:
        lost = (
            (lose - c.lose_gammon) * l1
            + (c.lose_gammon - c.lose_backgammon) * l2
            + c.lose_backgammon * l3
        ) / lose
    else:
        lost = l1
    return win, lost


def dead(met: MatchEquityTable, score: Score, c: GameChances, cube: int) -> float:
    """Cubeless MWC with the game played for ``cube``."""
    win, lost = win_lose(met, score, c, cube)
    return c.win * win + (1.0 - c.win) * lost


def _crossing(target: float, points: list[tuple[float, float]]) -> float:
    """Where the piecewise linear function through ``points`` (p ascending, values
    ascending) reaches ``target``; 0 or 1 if it never does."""
    if target <= points[0][1]:
        return points[0][0]
    for (p0, v0), (p1, v1) in itertools.pairwise(points):
        if target <= v1:
            return p0 if v1 <= v0 else p0 + (p1 - p0) * (target - v0) / (v1 - v0)
    return points[-1][0]


class _Game:
    """One evaluation's figures at every cube level, worked out once each."""

    def __init__(
        self, met: MatchEquityTable, score: Score, c: GameChances, efficiency: float
    ) -> None:
        self.met, self.score, self.c, self.x = met, score, c, efficiency
        self._outcomes: dict[int, tuple[float, float, float, float]] = {}
        self._points: dict[int, tuple[float, float]] = {}

    def outcomes(self, cube: int) -> tuple[float, float, float, float]:
        """(win, lose, cash, opponent cash) MWCs at ``cube``."""
        if cube not in self._outcomes:
            win, lost = win_lose(self.met, self.score, self.c, cube)
            memo = results(self.met, self.score, cube)
            cash, opp_cash = memo[0], memo[3]
            self._outcomes[cube] = (win, lost, cash, opp_cash)
        return self._outcomes[cube]

    def may_double(self, mine: bool, cube: int) -> bool:
        away = self.score.away if mine else self.score.opponent_away
        return not self.score.crawford and away > cube

    def points(self, cube: int) -> tuple[float, float]:
        """The player's cash point and the opponent's (as the player's win chance) at
        ``cube``, each from the taker's live cube one level up (recube vig)."""
        if cube not in self._points:
            up_tg, up_opp_tg = self.points(2 * cube) if self._live_above(cube) else (1.0, 0.0)
            _, _, cash, opp_cash = self.outcomes(cube)
            tg = 1.0
            if self.may_double(True, cube):  # the opponent takes and owns 2x cube
                tg = _crossing(cash, self._curve(2 * cube, 1.0, up_opp_tg))
            opp_tg = 0.0
            if self.may_double(False, cube):  # the player takes and owns 2x cube
                opp_tg = _crossing(opp_cash, self._curve(2 * cube, up_tg, 0.0))
            self._points[cube] = (tg, opp_tg)
        return self._points[cube]

    def _live_above(self, cube: int) -> bool:
        return self.may_double(True, 2 * cube) or self.may_double(False, 2 * cube)

    def _curve(self, cube: int, tg: float, opp_tg: float) -> list[tuple[float, float]]:
        """The player's cubeful MWC at ``cube`` as (p, MWC) break points, gammon ratios fixed."""
        breaks = sorted({0.0, 1.0, min(max(tg, 0.0), 1.0), min(max(opp_tg, 0.0), 1.0)})
        # Cash points come from the fully live cube (as gnubg's GetPoints): the
        # efficiency blends live and dead only in the final figure.
        return [(p, self.mwc(cube, p, tg, opp_tg, live_only=True)) for p in breaks]

    def mwc(
        self, cube: int, p: float, tg: float, opp_tg: float, *, live_only: bool = False
    ) -> float:
        win, lost, cash, opp_cash = self.outcomes(cube)
        if p <= opp_tg and opp_tg > 0:
            live = lost + (opp_cash - lost) * p / opp_tg
        elif tg >= 1:  # the player cannot cash: linear up to a win
            low, high = (opp_cash, opp_tg) if opp_tg > 0 else (lost, 0.0)
            live = low + (win - low) * (p - high) / (1.0 - high) if high < 1 else win
        elif p < tg:
            low, high = (opp_cash, opp_tg) if opp_tg > 0 else (lost, 0.0)
            live = low + (cash - low) * (p - high) / (tg - high)
        else:
            live = cash + (win - cash) * (p - tg) / (1.0 - tg)
        if live_only:
            return live
        return self.x * live + (1.0 - self.x) * (p * win + (1.0 - p) * lost)


def cubeful(
    met: MatchEquityTable,
    score: Score,
    c: GameChances,
    cube: int,
    access: Access,
    efficiency: float,
) -> float:
    """The player's cubeful MWC before rolling, not doubling now."""
    game = _Game(met, score, c, efficiency)
    tg, opp_tg = game.points(cube)
    if access is Access.UNAVAILABLE:
        tg = 1.0
    if access is Access.OWNED:
        opp_tg = 0.0
    return game.mwc(cube, c.win, tg, opp_tg)
