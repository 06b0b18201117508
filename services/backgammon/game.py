"""One game as a sequence of pure transitions: opening roll, rolls, plays, cube, resignations.

:class:`Game` is a frozen value the game service can store and replay. Players are 0
and 1; ``board`` is always seen from the player whose turn it is (``turn``). Every
transition returns a new Game and appends an :class:`Action` to ``history`` (which
the ``.mat`` export reads). Illegal actions raise a :class:`RulesError` subclass.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import Enum

from services.backgammon import cube as cubes
from services.backgammon import resign as resigns
from services.backgammon.board import STARTING_BOARD, Board
from services.backgammon.cube import Cube, CubeRules
from services.backgammon.errors import (
    IllegalPlay,
    InvalidDice,
    MatchOver,
    ResignationError,
    WrongTurn,
)
from services.backgammon.movegen import Play, check_dice
from services.backgammon.plays import chosen_play, legal_plays, turn_options
from services.backgammon.resign import Resignation
from services.backgammon.scoring import EndReason, GameResult, WinKind, result_of_bear_off


class Phase(Enum):
    ROLL = "roll"  # the player on turn may double, resign or roll
    MOVE = "move"  # dice are rolled; the player must play them
    DOUBLE_OFFERED = "double_offered"  # the other player must take, drop (or beaver)
    RESIGN_OFFERED = "resign_offered"  # the other player must accept or reject
    OVER = "over"


class ActionKind(Enum):
    ROLL = "roll"
    PLAY = "play"  # notation "" when the roll could not be played
    DOUBLE = "double"
    TAKE = "take"
    DROP = "drop"
    BEAVER = "beaver"
    RESIGN = "resign"
    ACCEPT = "accept"
    REJECT = "reject"


@dataclass(frozen=True, slots=True)
class Action:
    player: int
    kind: ActionKind
    dice: tuple[int, int] | None = None
    notation: str = ""
    value: int = 0  # cube value offered, or resignation level


@dataclass(frozen=True, slots=True)
class Game:
    board: Board
    turn: int
    phase: Phase
    cube: Cube
    rules: CubeRules
    dice: tuple[int, int] | None = None
    resignation: Resignation | None = None
    result: GameResult | None = None
    history: tuple[Action, ...] = ()

    @property
    def opponent(self) -> int:
        return 1 - self.turn


def opening_winner(die0: int, die1: int) -> int | None:
    """Who starts: the player with the higher single die; None on a tie (roll again)."""
    check_dice((die0, die1))
    if die0 == die1:
        return None
    return 0 if die0 > die1 else 1


def start_game(rules: CubeRules, die0: int, die1: int, board: Board = STARTING_BOARD) -> Game:
    """Begin a game from the opening roll: the higher die moves first, playing both dice."""
    first = opening_winner(die0, die1)
    if first is None:
        raise InvalidDice(f"the opening dice tie ({die0}-{die1}): both players roll again")
    dice = (die0, die1) if first == 0 else (die1, die0)
    roll_action = Action(first, ActionKind.ROLL, dice)
    return Game(board, first, Phase.MOVE, Cube(), rules, dice, history=(roll_action,))


def _expect(game: Game, *phases: Phase) -> None:
    if game.phase is Phase.OVER:
        raise MatchOver("the game is over")
    if game.phase not in phases:
        allowed = " or ".join(p.value for p in phases)
        raise WrongTurn(
            f"not allowed now: the game is in phase {game.phase.value!r}, needs {allowed}"
        )


def _record(game: Game, action: Action, **changes: object) -> Game:
    return replace(game, history=(*game.history, action), **changes)  # type: ignore[arg-type]


def roll(game: Game, dice: Sequence[int]) -> Game:
    """The player on turn rolls (the dice come from :mod:`services.backgammon.dice`)."""
    _expect(game, Phase.ROLL)
    rolled = check_dice(dice)
    return _record(game, Action(game.turn, ActionKind.ROLL, rolled), phase=Phase.MOVE, dice=rolled)


def plays(game: Game) -> list[Play]:
    """The legal plays of the rolled dice (empty: the player must pass with ``play(game, "")``)."""
    _expect(game, Phase.MOVE)
    assert game.dice is not None
    return legal_plays(game.board, game.dice)


def _choose(game: Game, move: Play | str) -> tuple[Board, str]:
    """The board after ``move`` and its notation; a pass is ("" when no play exists)."""
    assert game.dice is not None
    options = turn_options(game.board, game.dice)
    text = move.notation if isinstance(move, Play) else move
    if not options:
        if text.strip():
            raise IllegalPlay(f"{game.dice} cannot be played here: pass with an empty move")
        return game.board, ""
    chosen = chosen_play(game.board, game.dice, text)
    return chosen.result, chosen.notation


def play(game: Game, move: Play | str) -> Game:
    """Play the rolled dice: a :class:`Play` from :func:`plays`, or gnubg notation text."""
    _expect(game, Phase.MOVE)
    after, notation = _choose(game, move)
    action = Action(game.turn, ActionKind.PLAY, game.dice, notation)
    if sum(after.player) == 0:
        result = result_of_bear_off(
            after,
            game.turn,
            game.cube.value,
            jacoby=game.rules.jacoby,
            cube_turned=game.cube.turned,
        )
        return _record(game, action, board=after, phase=Phase.OVER, dice=None, result=result)
    return _record(
        game, action, board=after.swapped(), turn=game.opponent, phase=Phase.ROLL, dice=None
    )


def double(game: Game) -> Game:
    """The player on turn offers a double before rolling."""
    _expect(game, Phase.ROLL)
    offered = cubes.offer_double(game.cube, game.turn, game.rules)
    action = Action(game.turn, ActionKind.DOUBLE, value=offered.offered_value)
    return _record(game, action, cube=offered, phase=Phase.DOUBLE_OFFERED)


def _answering_player(game: Game) -> int:
    assert game.cube.offered_by is not None
    return 1 - game.cube.offered_by


def take(game: Game) -> Game:
    """The doubled player takes; the doubler (on turn) then rolls."""
    _expect(game, Phase.DOUBLE_OFFERED)
    player = _answering_player(game)
    taken = cubes.take(game.cube, player)
    return _record(
        game, Action(player, ActionKind.TAKE, value=taken.value), cube=taken, phase=Phase.ROLL
    )


def drop(game: Game) -> Game:
    """The doubled player drops: the doubler wins the cube value before the double."""
    _expect(game, Phase.DOUBLE_OFFERED)
    player = _answering_player(game)
    points = cubes.drop(game.cube, player)
    winner = 1 - player
    result = GameResult(winner, WinKind.SINGLE, points, points, EndReason.DOUBLE_DROPPED)
    return _record(game, Action(player, ActionKind.DROP), phase=Phase.OVER, result=result)


def beaver(game: Game) -> Game:
    """The doubled player beavers (money play, if allowed); the doubler must now answer."""
    _expect(game, Phase.DOUBLE_OFFERED)
    player = _answering_player(game)
    beavered = cubes.beaver(game.cube, player, game.rules)
    action = Action(player, ActionKind.BEAVER, value=beavered.offered_value)
    return _record(game, action, cube=beavered)


def offer_resignation(game: Game, kind: WinKind | int) -> Game:
    """The player on turn offers to resign a single game, a gammon or a backgammon."""
    _expect(game, Phase.ROLL, Phase.MOVE)
    offer = resigns.offer(game.turn, kind)
    action = Action(game.turn, ActionKind.RESIGN, value=int(offer.kind))
    return _record(game, action, resignation=offer, phase=Phase.RESIGN_OFFERED)


def accept_resignation(game: Game) -> Game:
    _expect(game, Phase.RESIGN_OFFERED)
    offer = _pending_resignation(game)
    result = resigns.accept(
        offer, 1 - offer.by, game.cube.value, jacoby=game.rules.jacoby, cube_turned=game.cube.turned
    )
    action = Action(1 - offer.by, ActionKind.ACCEPT, value=int(offer.kind))
    return _record(game, action, phase=Phase.OVER, result=result, resignation=None)


def reject_resignation(game: Game) -> Game:
    """The opponent rejects: play resumes where it was (before or after the roll)."""
    _expect(game, Phase.RESIGN_OFFERED)
    offer = _pending_resignation(game)
    resigns.reject(offer, 1 - offer.by)
    back = Phase.MOVE if game.dice is not None else Phase.ROLL
    return _record(game, Action(1 - offer.by, ActionKind.REJECT), phase=back, resignation=None)


def _pending_resignation(game: Game) -> Resignation:
    if game.resignation is None:
        raise ResignationError("no resignation is pending")
    return game.resignation
