"""The in-process evaluator: GNU Backgammon's nets (``gnubg-nn``, GPLv3) plus cube and MET.

Public API (used in-process by the service's worker pool, match analysis and tests;
``roll_values`` and ``pass_equity`` are for luck)::

    from services.analysis.domain.engine import Evaluator, decode
    board, state = decode(position_id, gnubg_match_id)   # InvalidPosition on bad ids
    # (decode_trusted: the same for ids already validated, without the checks: faster)
    engine = Evaluator()                                  # Kazaross-XG2 MET, cube cap 64
    ev = engine.evaluate(board, state, plies=0)           # -> PositionEvaluation
    ev.chances.win ... ev.cubeless_equity, ev.cubeful_equity, ev.cube_action,
    ev.no_double, ev.double_take, ev.double_pass, ev.match_winning_chance, ev.exact
    moves = engine.best_moves(board, state, (3, 1), plies=0)  # -> list[RankedPlay], best first
    figures = engine.settlement(board, state)             # -> SettlementFigures

Conventions: ``board`` is seen from ``state.on_roll`` (the gnubg Position ID's side);
all figures are for that player, before the dice are rolled (``evaluate``) or with
the given dice (``best_moves``). Money equities are per unit of the current cube;
match equities are gnubg's normalised equity (+1 = winning the cube value, -1 =
losing it) and ``match_winning_chance`` the cubeful chance of winning the match.

How the figures are made:

- cubeless chances: the net at 0, 1 or 2 plies (``gnubg_nn.probabilities``), except in
  bear-offs (both sides all home) where the rules library's exact one-sided bear-off
  figures are used at every ply (``exact`` = True). Chances follow gnubg: gammons
  include backgammons.
- money cubeful equity: Janowski's interpolation (the rules library's
  ``bearoff_eval.janowski``, GNU Backgammon's Cl2CfMoney) with gnubg's cube
  efficiencies: 0.68 in contact, 0.55 + 0.00125 x pips clamped to [0.6, 0.7] in
  races, 0.6 in bear-offs; the player on roll doubles when right; the Jacoby rule
  (from the Match ID) and the house cap (64: a cube at the cap is dead).
- match cubeful equity: Janowski's live-cube interpolation over match-winning chances
  from the Kazaross-XG2 table (:mod:`services.analysis.domain.match_cube`, gnubg's
  Cl2CfMatch and GetPoints: cash points from the live cube one level up, the recube vig),
  with the same cube efficiencies: no double at the current cube and access,
  double/take at twice the cube owned by the taker, double/pass = winning the cube.
- plies > 0: the n-ply cubeless chances go through the same cube model (gnubg instead
  searches cubeful); at 0-ply the two agree.

Speed: a money game outside the bear-off is one call into ``_fastcube`` (C, built by
setup.py): it classifies the board, calls the net and does the Janowski and cube
arithmetic above in the same order as this module, so the figures are the same to the
last bit (tests/unit/analysis/test_engine_fast_path.py); ``best_moves`` hands it every
candidate result of a roll at once, and ``evaluate_trusted`` (the worker) a Position ID
it decodes itself. Matches, bear-offs and finished games take the Python path, which is
also the whole of it when the extension is not built.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import Enum
from functools import lru_cache
from types import ModuleType
from typing import NamedTuple

import gnubg_nn

from services.analysis.domain import match_cube
from services.analysis.domain.match_cube import Access, Score
from services.analysis.domain.met import MatchEquityTable, kazaross_xg2
from services.backgammon import match_id, position_id
from services.backgammon.bearoff_eval import (
    BEAROFF_CUBE_EFFICIENCY,
    CubeAccess,
    MoneyCube,
    Probabilities,
    is_bearoff,
    janowski,
)
from services.backgammon.bearoff_eval import probabilities as bearoff_probabilities
from services.backgammon.board import BAR, CHECKERS, HOME_POINTS, Board
from services.backgammon.cube import DEFAULT_CAP
from services.backgammon.errors import InvalidPosition, RulesError
from services.backgammon.match_id import MatchIdState
from services.backgammon.movegen import Play
from services.backgammon.plays import legal_plays

_fast: ModuleType | None
try:  # the money path's C fast path (setup.py builds it); this module is its reference
    from services.analysis.domain import _fastcube

    _fast = _fastcube
except ImportError:  # pragma: no cover - only when the extension was not built
    _fast = None

CONTACT_CUBE_EFFICIENCY = 0.68
CONTACT_CLASSES = frozenset((gnubg_nn.c_contact, gnubg_nn.c_crashed))
MAX_PLIES = 2
# The 21 distinct rolls, high die first; a non-double comes up 2 times in 36.
ROLLS = tuple((high, low) for high in range(1, 7) for low in range(1, high + 1))


class CubeAction(Enum):
    NO_DOUBLE = "no_double"
    DOUBLE_TAKE = "double_take"
    DOUBLE_PASS = "double_pass"
    TOO_GOOD = "too_good"


# The C path's cube access codes: bearoff_eval.CubeAccess as the player on roll sees it.
_CENTRED, _OWNED, _UNAVAILABLE, _DEAD = range(4)


# Chances and PositionEvaluation are named tuples, not frozen dataclasses: one is made per
# net call, and a frozen dataclass's __init__ (a setattr call per field) cost more than
# the cube arithmetic around the net. Both are as immutable and compare by value alike.
class Chances(NamedTuple):
    """Cubeless outcome chances of the player on roll (gammons include backgammons)."""

    win: float
    win_gammon: float
    win_backgammon: float
    lose_gammon: float
    lose_backgammon: float

    @property
    def cubeless_equity(self) -> float:
        """Money equity per unit of cube with gammons and backgammons counting."""
        return (
            2.0 * self.win
            - 1.0
            + self.win_gammon
            - self.lose_gammon
            + self.win_backgammon
            - self.lose_backgammon
        )

    def inverted(self) -> Chances:
        """The same chances seen from the other player."""
        return Chances(
            1.0 - self.win,
            self.lose_gammon,
            self.lose_backgammon,
            self.win_gammon,
            self.win_backgammon,
        )

    def for_janowski(self) -> Probabilities:
        # Cl2CfMoney's W and L count a backgammon as one more gammon.
        return Probabilities(
            self.win, self.win_gammon + self.win_backgammon, self.lose_gammon + self.lose_backgammon
        )


class PositionEvaluation(NamedTuple):
    chances: Chances
    cubeless_equity: float
    cubeful_equity: float
    no_double: float
    double_take: float
    double_pass: float
    cube_action: CubeAction
    match_winning_chance: float | None  # None in money games
    plies: int
    exact: bool
    # Match play: the MWC after winning and after losing the current cube value.
    cube_mwcs: tuple[float, float] | None = None


@dataclass(frozen=True, slots=True)
class RankedPlay:
    notation: str
    result: Board  # seen from the mover
    chances: Chances  # the mover's, after the play
    equity: float  # cubeful, the mover's
    equity_loss: float


@dataclass(frozen=True, slots=True)
class SettlementFigures:
    """The on-roll player's share of the stake at risk, and what it came from."""

    on_roll_share: float
    cubeful_equity: float
    chances: Chances
    match_winning_chance: float | None
    exact: bool
    basis: str


def decode(position: str, gnubg_match: str) -> tuple[Board, MatchIdState]:
    """Both gnubg ids, or :class:`InvalidPosition` saying which one is wrong and why."""
    try:
        board = position_id.decode(position)
    except RulesError as error:
        raise InvalidPosition(
            f"position id {position!r} is not a valid gnubg Position ID: {error}"
        ) from error
    try:
        state = match_id.decode(gnubg_match) if gnubg_match else MatchIdState()
    except RulesError as error:
        raise InvalidPosition(
            f"match id {gnubg_match!r} is not a valid gnubg Match ID: {error}"
        ) from error
    if board.is_over():
        raise InvalidPosition(f"position id {position!r} is a finished game: nothing to evaluate")
    return board, state


def decode_trusted(position: str, gnubg_match: str) -> tuple[Board, MatchIdState]:
    """:func:`decode` for ids already validated (by the service, before queueing): the
    board by gnubg-nn's C decoder, the Match ID's state memoised (few distinct ones)."""
    opponent, player = gnubg_nn.board_from_position_id(position)
    return Board.trusted(tuple(player), tuple(opponent)), _match_state(gnubg_match)


@lru_cache(maxsize=4096)
def _match_state(gnubg_match: str) -> MatchIdState:
    return match_id.decode(gnubg_match) if gnubg_match else MatchIdState()


def cube_efficiency(board: Board) -> float:
    """gnubg's cube efficiency for Janowski (eval.c GetCubeEfficiency)."""
    if gnubg_nn.classify(board.to_gnubg()) in CONTACT_CLASSES:
        return CONTACT_CUBE_EFFICIENCY
    if is_bearoff(board):
        return BEAROFF_CUBE_EFFICIENCY
    if board.is_race():
        return min(max(0.55 + 0.00125 * board.pip_count(), 0.6), 0.7)
    return CONTACT_CUBE_EFFICIENCY


def finished_chances(result: Board) -> Chances:
    """The mover's chances when the play bore off the last checker."""
    loser = result.opponent
    gammon = sum(loser) == CHECKERS
    # The loser's checkers in the winner's home board are on the loser's points 19..24.
    backgammon = gammon and (loser[BAR] > 0 or any(loser[24 - HOME_POINTS : 24]))
    return Chances(1.0, float(gammon), float(backgammon), 0.0, 0.0)


class Evaluator:
    """Evaluations with one MET and house cube cap; cheap to build, safe to share in a process."""

    def __init__(self, met: MatchEquityTable | None = None, cube_cap: int = DEFAULT_CAP) -> None:
        self.met = met or kazaross_xg2()
        self.cube_cap = cube_cap
        # Match ID -> the C path's (cube access, Jacoby) in a money game, None in a match:
        # the worker's per-request path looks its cube up once per distinct Match ID.
        self._money_cubes: dict[str, tuple[int, bool] | None] = {}

    # -- cubeless ---------------------------------------------------------------------

    def chances(self, board: Board, plies: int = 0) -> tuple[Chances, bool]:
        """Cubeless chances of ``board.player`` before rolling, and whether they are exact."""
        if not 0 <= plies <= MAX_PLIES:
            raise InvalidPosition(f"plies must be 0, 1 or 2, got {plies}")
        if gnubg_nn.classify(board.to_gnubg()) in CONTACT_CLASSES:  # 0.3 us: skips the checks
            return Chances(*gnubg_nn.probabilities(board.to_gnubg(), plies)), False
        if is_bearoff(board):
            exact = bearoff_probabilities(board)
            return Chances(exact.win, exact.win_gammon, 0.0, exact.lose_gammon, 0.0), True
        return Chances(*gnubg_nn.probabilities(board.to_gnubg(), plies)), False

    # -- cube ---------------------------------------------------------------------------

    def evaluate(self, board: Board, state: MatchIdState, plies: int = 0) -> PositionEvaluation:
        if not state.match_length:
            fast = self._money_fast((board.opponent, board.player), state, plies)
            if fast is None and _fast is not None and is_bearoff(board):
                fast = self._money_bearoff(board, state, plies)
            if fast is not None:
                return fast
        return self._evaluate(board, state, plies)

    def evaluate_trusted(
        self, position: str, gnubg_match: str, plies: int = 0
    ) -> PositionEvaluation:
        """:meth:`evaluate` of :func:`decode_trusted`'s board and state: the worker's
        per-request path, kept to one Python frame around the C call, which decodes the
        Position ID itself (no board object made)."""
        cube = self._money_cubes.get(gnubg_match)
        if cube is not None and _fast is not None and 0 <= plies <= MAX_PLIES:
            evaluation: PositionEvaluation | None = _fast.money(
                gnubg_nn.probabilities, position, plies, *cube
            )
            if evaluation is not None:
                return evaluation
            board, state = decode_trusted(position, gnubg_match)
            if is_bearoff(board):
                return self._money_bearoff(board, state, plies)
            return self._evaluate(board, state, plies)
        board, state = decode_trusted(position, gnubg_match)
        if len(self._money_cubes) >= 4096:  # bounded: a money session's score is in the ID
            self._money_cubes.clear()
        self._money_cubes[gnubg_match] = (
            None if state.match_length else (self._money_access(state), state.jacoby)
        )
        return self.evaluate(board, state, plies)

    def _money_fast(
        self, an_board: Sequence[Sequence[int]] | str, state: MatchIdState, plies: int
    ) -> PositionEvaluation | None:
        """:meth:`_money` over the net's chances in one C call (``_fastcube``: the same
        arithmetic in the same order, the same figures to the last bit) for a board in
        gnubg's layout or its Position ID; None in a bear-off (exact chances), a finished
        game or without the extension."""
        if _fast is None:
            return None
        if not 0 <= plies <= MAX_PLIES:
            raise InvalidPosition(f"plies must be 0, 1 or 2, got {plies}")
        evaluation: PositionEvaluation | None = _fast.money(
            gnubg_nn.probabilities, an_board, plies, self._money_access(state), state.jacoby
        )
        return evaluation

    def _money_bearoff(self, board: Board, state: MatchIdState, plies: int) -> PositionEvaluation:
        """:meth:`_money` of a bear-off's exact chances through the C path's cube arithmetic
        (``exact``: the same figures to the last bit)."""
        if _fast is None:
            return self._evaluate(board, state, plies)
        exact = bearoff_probabilities(board)
        chances = Chances(exact.win, exact.win_gammon, 0.0, exact.lose_gammon, 0.0)
        evaluation: PositionEvaluation = _fast.exact(
            chances, BEAROFF_CUBE_EFFICIENCY, plies, self._money_access(state), state.jacoby
        )
        return evaluation

    def _money_many(
        self, results: list[Board], after_state: MatchIdState, plies: int
    ) -> list[PositionEvaluation | None]:
        """The next player's money evaluations of the boards ``results`` (seen from the
        mover) in one C call; all None in a match or without the extension."""
        if _fast is None or after_state.match_length or not results:
            return [None] * len(results)
        if not 0 <= plies <= MAX_PLIES:
            raise InvalidPosition(f"plies must be 0, 1 or 2, got {plies}")
        boards = [(result.player, result.opponent) for result in results]  # swapped, gnubg's
        evaluations: list[PositionEvaluation | None] = _fast.money_many(
            gnubg_nn.probabilities, boards, plies, self._money_access(after_state),
            after_state.jacoby,
        )  # fmt: skip
        return evaluations

    def _money_access(self, state: MatchIdState) -> int:
        """:meth:`_money_cube`'s access for the player on roll, as the C path's code."""
        if state.cube_value * 2 > self.cube_cap:
            return _DEAD
        if state.cube_owner is None:
            return _CENTRED
        return _OWNED if state.cube_owner == state.on_roll else _UNAVAILABLE

    def _evaluate(self, board: Board, state: MatchIdState, plies: int) -> PositionEvaluation:
        chances, exact = self.chances(board, plies)
        if state.match_length:
            return self._match(board, state, chances, plies, exact)
        return self._money(board, state, chances, plies, exact)

    def _money_cube(self, state: MatchIdState, for_on_roll: bool = True) -> MoneyCube:
        can_double = state.cube_value * 2 <= self.cube_cap
        if not can_double:
            access = CubeAccess.DEAD
        elif state.cube_owner is None:
            access = CubeAccess.CENTRED
        elif (state.cube_owner == state.on_roll) == for_on_roll:
            access = CubeAccess.OWNED
        else:
            access = CubeAccess.UNAVAILABLE
        return MoneyCube(access, can_double, state.jacoby)

    def _money(
        self, board: Board, state: MatchIdState, chances: Chances, plies: int, exact: bool
    ) -> PositionEvaluation:
        efficiency = cube_efficiency(board)
        cube = self._money_cube(state)
        janowski_chances = chances.for_janowski()
        no_double = janowski(janowski_chances, cube, efficiency)
        taken = MoneyCube(
            CubeAccess.UNAVAILABLE, state.cube_value * 4 <= self.cube_cap, jacoby=False
        )
        double_take = 2.0 * janowski(janowski_chances, taken, efficiency)
        can_double = cube.access in (CubeAccess.CENTRED, CubeAccess.OWNED)
        action, cubeful = decide(no_double, double_take, 1.0, can_double)
        cubeless = chances.cubeless_equity if cube.gammons_count else 2.0 * chances.win - 1.0
        return PositionEvaluation(
            chances, cubeless, cubeful, no_double, double_take, 1.0, action, None, plies, exact
        )

    def _aways(self, state: MatchIdState) -> tuple[int, int, bool]:
        me, them = state.on_roll, 1 - state.on_roll
        away = state.match_length - state.score[me]
        opponent_away = state.match_length - state.score[them]
        post_crawford = not state.crawford and 1 in (away, opponent_away) and away != opponent_away
        return away, opponent_away, post_crawford

    def _score(self, state: MatchIdState) -> Score:
        away, them, post = self._aways(state)
        return Score(away, them, state.crawford, post)

    def match_winning_chance(self, state: MatchIdState, chances: Chances, cube: int) -> float:
        """Cubeless MWC of the player on roll with the game played for ``cube`` points."""
        return match_cube.dead(self.met, self._score(state), chances, cube)

    def _match(
        self, board: Board, state: MatchIdState, chances: Chances, plies: int, exact: bool
    ) -> PositionEvaluation:
        score = self._score(state)
        value = state.cube_value
        win_cube = score.mwc(self.met, value, 0)
        lose_cube = score.mwc(self.met, 0, value)

        def normalised(mwc: float) -> float:
            spread = win_cube - lose_cube
            return 0.0 if spread <= 0 else (2.0 * mwc - (win_cube + lose_cube)) / spread

        if state.cube_owner is None:
            access = Access.CENTRED
        else:
            access = Access.OWNED if state.cube_owner == state.on_roll else Access.UNAVAILABLE
        efficiency = cube_efficiency(board)
        no_double = match_cube.cubeful(self.met, score, chances, value, access, efficiency)
        double_take = match_cube.cubeful(
            self.met, score, chances, 2 * value, Access.UNAVAILABLE, efficiency
        )
        may_double = (
            not state.crawford
            and access is not Access.UNAVAILABLE
            and score.away > value  # a cube already at the player's need gains nothing
            and score.opponent_away > 0
        )
        action, mwc = decide(no_double, double_take, win_cube, may_double)
        cubeless = match_cube.dead(self.met, score, chances, value)
        return PositionEvaluation(
            chances,
            normalised(cubeless),
            normalised(mwc),
            normalised(no_double),
            normalised(double_take),
            normalised(win_cube),
            action,
            mwc,
            plies,
            exact,
            (win_cube, lose_cube),
        )

    # -- plays --------------------------------------------------------------------------

    def best_moves(
        self, board: Board, state: MatchIdState, dice: tuple[int, int], plies: int = 0
    ) -> list[RankedPlay]:
        """Every legal play of ``dice`` (distinct results), best first, with its equity loss.

        A play's equity is minus the opponent's cubeful equity before their roll (in the
        mover's units: per current cube in money, normalised match equity in a match).
        """
        after_state = _after_turn(state)
        plays: list[Play] = []
        seen: set[tuple[tuple[int, ...], tuple[int, ...]]] = set()
        for play in legal_plays(board, dice):
            key = (play.result.player, play.result.opponent)
            if key not in seen:
                seen.add(key)
                plays.append(play)
        # Money: the opponent's evaluations of every result in one C call (None where it
        # leaves one to the Python path: a bear-off, a finished game).
        theirs = self._money_many([p.result for p in plays], after_state, plies)
        ranked: list[tuple[float, str, Board, Chances]] = []
        for play, evaluation in zip(plays, theirs, strict=True):
            if evaluation is None:
                equity, chances = self._after_play(play.result, state, after_state, plies)
            else:
                equity, chances = -evaluation.cubeful_equity, evaluation.chances.inverted()
            ranked.append((equity, play.notation, play.result, chances))
        ranked.sort(key=lambda item: -item[0])
        best = ranked[0][0] if ranked else 0.0
        return [RankedPlay(n, r, c, e, best - e) for e, n, r, c in ranked]

    def roll_values(
        self, board: Board, state: MatchIdState, plies: int = 0
    ) -> dict[tuple[int, int], float]:
        """The on-roll player's equity after each of the 21 rolls (high die first), each
        roll played as the net's 0-ply cubeless choice (gnubg-nn's C move search) and
        valued as :meth:`best_moves` values a play; a roll with no play passes. For luck."""
        after_state = _after_turn(state)
        gnubg_board = board.to_gnubg()
        values: dict[tuple[int, int], float] = {}
        for roll in ROLLS:
            move, key = gnubg_nn.bestmove(gnubg_board, roll[0], roll[1], b=1)
            result = Board.from_gnubg(gnubg_nn.boardfromkey(key)).swapped() if move else board
            values[roll] = self._after_play(result, state, after_state, plies)[0]
        return values

    def pass_equity(self, board: Board, state: MatchIdState, plies: int = 0) -> float:
        """The on-roll player's equity when the dice rolled have no legal play (the turn passes)."""
        return self._after_play(board, state, _after_turn(state), plies)[0]

    def _after_play(
        self, result: Board, state: MatchIdState, after_state: MatchIdState, plies: int
    ) -> tuple[float, Chances]:
        if not sum(result.player):
            chances = finished_chances(result)
            if state.match_length:
                return self._match(result, state, chances, plies, True).no_double, chances
            return self._money(result, state, chances, plies, True).no_double, chances
        theirs = self.evaluate(result.swapped(), after_state, plies)
        if state.match_length and theirs.match_winning_chance is not None:
            mine = self._match(result, state, theirs.chances.inverted(), plies, theirs.exact)
            return _renormalise(1.0 - theirs.match_winning_chance, mine), theirs.chances.inverted()
        return -theirs.cubeful_equity, theirs.chances.inverted()

    # -- settlement ---------------------------------------------------------------------

    def settlement(self, board: Board, state: MatchIdState, plies: int = 0) -> SettlementFigures:
        """The on-roll player's share of the stake at risk where play stopped.

        Money: the wallet's pot is each side's largest loss at the current cube (3 x cube),
        so the share is (1 + E / 3) / 2 for the cubeful equity E per cube, clamped to
        [0, 1]. Match: the cubeful chance of winning the match. A pending double is
        valued as the doubled player's better answer (take or pass); a pending
        resignation as the better, for the side offered it, of accepting or playing on
        (the offer binds the resigner). Dice already rolled: the best play's equity, each
        play searched one ply shallower than ``plies``.
        """
        evaluation = self.evaluate(board, state, plies)
        basis = "cubeful equity before the roll"
        equity = evaluation.cubeful_equity
        mwc = evaluation.match_winning_chance
        if state.doubled:
            equity, mwc, basis = self._pending_double(evaluation)
        elif state.resignation:
            equity, mwc, basis = self._pending_resignation(board, state, evaluation)
        elif state.dice != (0, 0):
            equity, mwc, basis = self._rolled(board, state, plies)
        share = mwc if mwc is not None else (1.0 + equity / 3.0) / 2.0
        share = min(max(share, 0.0), 1.0)
        return SettlementFigures(share, equity, evaluation.chances, mwc, evaluation.exact, basis)

    def _pending_double(self, evaluation: PositionEvaluation) -> tuple[float, float | None, str]:
        equity = min(evaluation.double_take, evaluation.double_pass)
        answer = "take" if evaluation.double_take <= evaluation.double_pass else "pass"
        mwc = None
        if evaluation.match_winning_chance is not None:
            mwc = _mwc_of(evaluation, equity)
        return equity, mwc, f"pending double: the doubled player's better answer ({answer})"

    def _pending_resignation(
        self, board: Board, state: MatchIdState, evaluation: PositionEvaluation
    ) -> tuple[float, float | None, str]:
        # The player asked to answer is ``turn``; the resigner is the other one.
        resigner_on_roll = state.turn != state.on_roll
        offered = float(state.resignation)  # points per cube: 1 single, 2 gammon, 3 backgammon
        if state.match_length:
            away, them, post = self._aways(state)
            post = post or state.crawford  # the game after the Crawford game is post-Crawford
            points = state.resignation * state.cube_value
            if resigner_on_roll:
                accept_mwc = self.met.winning_chance(away, them - points, post_crawford=post)
            else:
                accept_mwc = self.met.winning_chance(away - points, them, post_crawford=post)
            play_on = evaluation.match_winning_chance or 0.0
            mwc = min(accept_mwc, play_on) if resigner_on_roll else max(accept_mwc, play_on)
            return (
                _renormalise(mwc, evaluation),
                mwc,
                "pending resignation: the receiver's better answer",
            )
        accept = -offered if resigner_on_roll else offered
        equity = (
            min(accept, evaluation.cubeful_equity)
            if resigner_on_roll
            else max(accept, evaluation.cubeful_equity)
        )
        return equity, None, "pending resignation: the receiver's better answer"

    def _rolled(
        self, board: Board, state: MatchIdState, plies: int
    ) -> tuple[float, float | None, str]:
        plies = max(plies - 1, 0)  # one search per play: a ply shallower than before the roll
        moves = self.best_moves(board, state, state.dice, plies)
        if moves:
            equity = moves[0].equity
        else:  # no legal play: the opponent is on roll with the board unchanged
            equity = self._after_play(board, state, _after_turn(state), plies)[0]
        mwc = None
        if state.match_length:
            mwc = _mwc_of(self.evaluate(board, state, plies), equity)
        return equity, mwc, "the best play of the dice rolled"


def decide(
    no_double: float, double_take: float, double_pass: float, can_double: bool
) -> tuple[CubeAction, float]:
    """gnubg's cube decision from the three equities of the player who may double."""
    if not can_double:
        return CubeAction.NO_DOUBLE, no_double
    doubled = min(double_take, double_pass)
    if doubled > no_double:
        action = CubeAction.DOUBLE_PASS if double_pass <= double_take else CubeAction.DOUBLE_TAKE
        return action, doubled
    if no_double >= double_pass and double_take >= double_pass:
        return CubeAction.TOO_GOOD, no_double
    return CubeAction.NO_DOUBLE, no_double


if _fast is not None:
    _fast.configure(Chances, PositionEvaluation, tuple(CubeAction))


def _after_turn(state: MatchIdState) -> MatchIdState:
    """The state the opponent sees on roll after this turn (dice not yet rolled)."""
    return replace(
        state, on_roll=1 - state.on_roll, turn=1 - state.on_roll, dice=(0, 0), doubled=False
    )


def _mwc_of(evaluation: PositionEvaluation, normalised: float) -> float:
    """Back from normalised match equity to a match-winning chance, at the current cube."""
    win, lose = evaluation.cube_mwcs or (1.0, 0.0)
    return (normalised * (win - lose) + win + lose) / 2.0


def _renormalise(mwc: float, evaluation: PositionEvaluation) -> float:
    """A match-winning chance as normalised match equity at the current cube."""
    win, lose = evaluation.cube_mwcs or (1.0, 0.0)
    return 0.0 if win <= lose else (2.0 * mwc - (win + lose)) / (win - lose)
