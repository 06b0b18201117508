"""Adapters over the rules library's public functions, for what it does not offer yet.

Everything here is a thin composition of ``services.backgammon`` calls; no rule of
backgammon is re-implemented. Gaps covered (reported to the library's owner):

- games ended outside the board (timeout, leaving, disconnection) have no
  ``GameResult`` constructor: :func:`force_end` builds one with the library's
  scoring so the ``.mat`` export can close the game;
- the library maps no Match ID from a ``Game`` and ``MatchScore``: :func:`match_id_of`;
- the level a forfeit concedes is the library's ``win_kind`` of the board as if the
  winner had just borne off: :func:`forfeit_kind`;
- ``RulesError`` subclasses become kit errors with the library's message: :func:`kit_error`;
- the site lets either player offer to resign, the library only the player on turn:
  :func:`offer_resignation_by`.
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

from services.backgammon import errors as rules_errors
from services.backgammon import game as bg
from services.backgammon import resign as resigns
from services.backgammon.board import Board
from services.backgammon.game import Action, ActionKind, Game, Phase
from services.backgammon.match import MatchScore
from services.backgammon.match_id import GameStateCode, MatchIdState, encode
from services.backgammon.position_id import encode as encode_position
from services.backgammon.scoring import EndReason, GameResult, WinKind, points_for, win_kind
from services.kit.errors import DomainError, FailedPrecondition, InvalidArgument

_EMPTY_SIDE = (0,) * 25

# Input the caller got wrong (fix the request) vs. an action the game state refuses now.
_INVALID = (
    rules_errors.IllegalPlay,
    rules_errors.InvalidNotation,
    rules_errors.InvalidDice,
    rules_errors.InvalidPosition,
)


def kit_error(error: rules_errors.RulesError) -> DomainError:
    """The kit error a rules refusal becomes, keeping the library's message."""
    if isinstance(error, _INVALID):
        return InvalidArgument(str(error))
    return FailedPrecondition(str(error))


def forfeit_kind(game: Game, loser: int) -> WinKind:
    """What ``loser`` concedes by forfeiting now: single, or gammon/backgammon if nothing is off."""
    loser_side = game.board.player if game.turn == loser else game.board.opponent
    return win_kind(Board.trusted(_EMPTY_SIDE, loser_side))


def force_end(game: Game, winner: int, kind: WinKind, points: int) -> Game:
    """``game`` closed with ``winner`` scoring ``points`` (a forfeit, timeout or settlement)."""
    # The library has no end reason for these; RESIGNED is the nearest (nothing printed by .mat).
    result = GameResult(winner, kind, game.cube.value, points, EndReason.RESIGNED)
    return replace(game, phase=Phase.OVER, result=result, resignation=None)


def forfeit_points(game: Game, kind: WinKind) -> int:
    """Points of a forfeit at ``kind``, with the Jacoby rule as the library scores it."""
    return points_for(kind, game.cube.value, jacoby=game.rules.jacoby, cube_turned=game.cube.turned)


_END_STATE = {
    EndReason.BORNE_OFF: GameStateCode.OVER,
    EndReason.DOUBLE_DROPPED: GameStateCode.DROPPED,
    EndReason.RESIGNED: GameStateCode.RESIGNED,
}


def _decider(game: Game) -> int:
    if game.phase is Phase.DOUBLE_OFFERED and game.cube.offered_by is not None:
        return 1 - game.cube.offered_by
    if game.phase is Phase.RESIGN_OFFERED and game.resignation is not None:
        return 1 - game.resignation.by
    return game.turn


# Memoised encodings: every view and most events of a command name the position and the
# Match ID, and consecutive states share them (a roll leaves the board as it was).
_match_id = lru_cache(maxsize=4096)(encode)
position_id_of = lru_cache(maxsize=8192)(encode_position)


def match_id_of(game: Game, score: MatchScore) -> str:
    """GNU Backgammon Match ID of ``game`` being played at ``score``."""
    state = GameStateCode.PLAYING
    if game.result is not None:
        state = _END_STATE[game.result.reason]
    resignation = game.resignation
    return _match_id(
        MatchIdState(
            cube_value=game.cube.value,
            cube_owner=game.cube.owner,
            on_roll=game.turn,
            crawford=score.crawford_game,
            game_state=state,
            turn=_decider(game),
            doubled=game.phase is Phase.DOUBLE_OFFERED,
            resignation=0 if resignation is None else int(resignation.kind),
            dice=game.dice or (0, 0),
            match_length=score.rules.length,
            score=score.score,
        )
    )


def offer_resignation_by(game: Game, player: int, kind: WinKind | int) -> Game:
    """``player`` offers to resign, on turn or not (the site's rule: either player may).

    The player on turn goes through the library. The other player's offer is recorded as
    the library records one (a RESIGN action, phase RESIGN_OFFERED, the offer's ``by``),
    so the library's accept and reject answer it unchanged.
    """
    if player == game.turn:
        return bg.offer_resignation(game, kind)
    if game.phase not in (Phase.ROLL, Phase.MOVE):
        raise rules_errors.WrongTurn(
            f"not allowed now: the game is in phase {game.phase.value!r}, needs roll or move"
        )
    offer = resigns.offer(player, kind)
    action = Action(player, ActionKind.RESIGN, value=int(offer.kind))
    return replace(
        game, resignation=offer, phase=Phase.RESIGN_OFFERED, history=(*game.history, action)
    )
