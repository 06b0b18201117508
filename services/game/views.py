"""The ``Game`` view every call answers with, built from a session (no I/O).

The view is the same for both players and spectators: it holds the dice seed's
commitment, never the seed.
"""

from __future__ import annotations

from datetime import datetime
from functools import lru_cache
from typing import Any

from services.backgammon.board import Board
from services.backgammon.game import Phase
from services.backgammon.plays import result_ids, turn_options, turn_plays
from services.backgammon.position_id import decode as decode_position
from services.game.domain import Outcome, Session, Status, TableRules
from services.game.facts import END_REASON, duration, players, result_type, rules_message, timestamp
from services.game.rules import match_id_of
from services.game.rules import position_id_of as position_id
from tavla.game.v1 import game_pb2

_PHASE = {
    Phase.ROLL: game_pb2.TURN_PHASE_ROLL_OR_DOUBLE,
    Phase.MOVE: game_pb2.TURN_PHASE_MOVE,
    Phase.DOUBLE_OFFERED: game_pb2.TURN_PHASE_CUBE_RESPONSE,
    Phase.RESIGN_OFFERED: game_pb2.TURN_PHASE_RESIGN_RESPONSE,
    Phase.OVER: game_pb2.TURN_PHASE_GAME_OVER,
}
_STATUS = {
    Status.IN_PROGRESS: game_pb2.GAME_STATUS_IN_PROGRESS,
    Status.FINISHED: game_pb2.GAME_STATUS_FINISHED,
    Status.CANCELLED: game_pb2.GAME_STATUS_CANCELLED,
}


def _seat_fixed(session: Session, index: int) -> bytes:
    """A seat's part of ``PlayerState`` that never changes in a session."""
    seat = session.seats[index]
    return game_pb2.PlayerState(
        account_id=seat.account_id,
        display_name=seat.display_name,
        rating=seat.rating,
        gnubg_player=index,
    ).SerializeToString()


def _seat_changing(session: Session, index: int) -> bytes:
    """The rest of a seat's ``PlayerState``: score, presence, pips and clock."""
    presence = session.presence[index]
    game = session.game
    clock = game_pb2.Clock(reserve_left=duration(session.reserves[index]))
    expires = session.expires_at()
    if expires is not None and session.awaiting == index:
        clock.delay_ends_at.CopyFrom(
            timestamp(session.decision_started_at + session.rules.clock.move_delay)
        )
        clock.expires_at.CopyFrom(timestamp(expires))
    state = game_pb2.PlayerState(
        score=session.score.score[index] if session.rules.match_length else 0,
        clock=clock,
        connected=presence.connected,
        pip_count=_pips(game.board)[0 if game.turn == index else 1],
        location_blocked=presence.blocked,
    )
    if presence.deadline is not None:
        state.reconnect_deadline.CopyFrom(timestamp(presence.deadline))
    return state.SerializeToString()


@lru_cache(maxsize=4096)
def _pips(board: Board) -> tuple[int, int]:
    """Pip counts of the player on roll and of the opponent."""
    return board.pip_count(), board.pip_count(opponent=True)


@lru_cache(maxsize=4096)
def legal_play_messages(board: Board, dice: tuple[int, int]) -> tuple[game_pb2.LegalPlay, ...]:
    """The legal plays as messages; memoised because each turn's are shown more than once."""
    options = turn_plays(board, dice)
    ids = result_ids(board, dice)  # the C fast path, in the same order as legal_plays
    if len(ids) != len(options):
        ids = tuple(position_id(play.result) for play in options)
    return tuple(
        game_pb2.LegalPlay(
            notation=play.notation,
            result_position_id=result,
            steps=[game_pb2.CheckerStep(from_point=a, to_point=b) for a, b in play.steps],
        )
        for play, result in zip(options, ids, strict=True)
    )


def _varint(value: int) -> bytes:
    """A non-negative integer in protobuf's base-128 varint encoding."""
    if value < 0x80:
        return bytes((value,))
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _step_entry(step: tuple[int, int]) -> bytes:
    """A ``LegalPlay.steps`` entry (field 3): ``CheckerStep`` from (1) and to (2), zeros omitted."""
    start, end = step
    body = (b"\x08" + _varint(start) if start else b"") + (b"\x10" + _varint(end) if end else b"")
    return b"\x1a" + _varint(len(body)) + body


# Every step a play can have (points 0-25: 25 is the bar, 0 off), encoded once.
_STEP_ENTRIES = {(a, b): _step_entry((a, b)) for a in range(26) for b in range(26)}
_LENGTHS = [_varint(n) for n in range(256)]
_LEGAL_PLAYS_TAG = _varint((17 << 3) | 2)  # Game.legal_plays = 17, length-delimited


def _length(size: int) -> bytes:
    return _LENGTHS[size] if size < 256 else _varint(size)


@lru_cache(maxsize=4096)
def _plays_bytes(board: Board, dice: tuple[int, int]) -> bytes:
    """The legal plays encoded as ``Game.legal_plays`` entries.

    Appended to the bytes of a view stored without plays, they parse as its plays
    (protobuf merges repeated fields), which is cheaper than copying messages. The
    bytes are written here directly, as protobuf serializes the messages of
    :func:`legal_play_messages` (the tests compare them for thousands of positions):
    a message per play and per step cost more than the rest of a Roll call's own work.
    """
    options = turn_options(board, dice)  # plain tuples: no Play made for a play not chosen
    ids = result_ids(board, dice)  # the C fast path, in the same order as legal_plays
    if len(ids) != len(options):
        ids = tuple(position_id(Board.trusted(after, them)) for after, them, _, _ in options)
    entries = []
    steps = _STEP_ENTRIES.__getitem__
    for (_, _, play_steps, play_notation), result in zip(options, ids, strict=True):
        notation, moved = play_notation.encode(), result.encode()
        body = b"".join(
            (
                b"\x0a" + _length(len(notation)) + notation if notation else b"",
                b"\x12" + _length(len(moved)) + moved if moved else b"",
                *map(steps, play_steps),
            )
        )
        entries.append(_LEGAL_PLAYS_TAG + _length(len(body)) + body)
    return b"".join(entries)


def complete(stored: bytes) -> game_pb2.Game:
    """A view stored without its legal plays, with them (they follow from position and dice)."""
    view = game_pb2.Game.FromString(stored)
    if view.phase != game_pb2.TURN_PHASE_MOVE or len(view.dice) != 2:
        return view
    board = decode_position(view.position_id)
    return game_pb2.Game.FromString(stored + _plays_bytes(board, (view.dice[0], view.dice[1])))


def complete_for(session: Session, stored: bytes) -> game_pb2.Game:
    """:func:`complete` for the session the stored view was built from."""
    game = session.game
    if game.phase is not Phase.MOVE or game.dice is None:
        return game_pb2.Game.FromString(stored)
    return game_pb2.Game.FromString(stored + _plays_bytes(game.board, game.dice))


@lru_cache(maxsize=1024)
def _rules_message(rules: TableRules) -> game_pb2.TableRules:
    return rules_message(rules)


def outcome_message(session: Session, outcome: Outcome) -> game_pb2.GameOutcome:
    return game_pb2.GameOutcome(
        winner_account_id=session.seats[outcome.winner].account_id,
        result=result_type(outcome),  # type: ignore[arg-type]
        cube_value=outcome.cube_value,
        points=outcome.points,
        reason=END_REASON[outcome.cause.value],
    )


# Game.players (field 7), length-delimited: one entry per seat.
_PLAYERS_TAG = _varint((7 << 3) | 2)

# The parts of a session's view that never change, encoded, kept per game. An entry is
# used only for the very objects it was made from (sessions are evolved by copying
# their fields, so one game's sessions share them until it is read again).
_FIXED: dict[str, tuple[str, TableRules, tuple[Any, Any], datetime, bytes, tuple[bytes, bytes]]]
_FIXED = {}
_FIXED_KEPT = 20_000  # as many as the session cache holds


def _fixed(session: Session) -> tuple[bytes, tuple[bytes, bytes]]:
    """The view's fixed fields and each seat's, encoded once per game."""
    game_id, rules, seats, created = (
        session.game_id, session.rules, session.seats, session.created_at
    )  # fmt: skip
    kept = _FIXED.get(game_id)
    if (
        kept is not None
        and kept[1] is rules
        and kept[2] is seats
        and kept[3] is created
        and kept[0] == session.table_id
    ):
        return kept[4], kept[5]
    view = game_pb2.Game(
        game_id=game_id,
        table_id=session.table_id,
        rules=_rules_message(rules),
        created_at=timestamp(created),
        table_stakes_max_cube=rules.max_cube() if rules.table_stakes else 0,
    ).SerializeToString()
    players = (_seat_fixed(session, 0), _seat_fixed(session, 1))
    if len(_FIXED) >= _FIXED_KEPT:
        _FIXED.clear()
    _FIXED[game_id] = (session.table_id, rules, seats, created, view, players)
    return view, players


def stored_view(session: Session) -> bytes:
    """The session's ``Game`` view without its legal plays, serialized.

    Protobuf parses concatenated messages as one (each field set in a later part is
    added), so the view is written as its fixed fields and each seat's, encoded once
    per game, then the fields that change with every command: building the whole
    message again was about a sixth of a command's own work.
    """
    fixed, seats = _fixed(session)
    players = []
    for index in (0, 1):
        body = seats[index] + _seat_changing(session, index)
        players.append(_PLAYERS_TAG + _length(len(body)) + body)
    game = session.game
    awaiting = session.awaiting
    view = game_pb2.Game(
        status=_STATUS[session.status],
        version=session.version,
        game_number=session.game_number,
        position_id=position_id(game.board),
        gnubg_match_id=match_id_of(game, session.score),
        phase=_PHASE[game.phase],
        player_on_roll_account_id=session.seats[game.turn].account_id,
        awaiting_account_id="" if awaiting is None else session.seats[awaiting].account_id,
        dice=game.dice or (),
        cube_value=game.cube.value,
        cube_owner_account_id=(
            "" if game.cube.owner is None else session.seats[game.cube.owner].account_id
        ),
        crawford_game=session.score.crawford_game,
        dice_seed_commitment=session.commitment,
        updated_at=timestamp(session.updated_at),
    )
    if game.resignation is not None:
        view.pending_resign.CopyFrom(
            game_pb2.PendingResign(
                offered_by_account_id=session.seats[game.resignation.by].account_id,
                level=int(game.resignation.kind),  # type: ignore[arg-type]
            )
        )
    if session.last_outcome is not None:
        view.last_outcome.CopyFrom(outcome_message(session, session.last_outcome))
    if session.winner is not None:
        view.winner_account_id = session.seats[session.winner].account_id
    return b"".join((fixed, *players, view.SerializeToString()))


def game_view(session: Session, *, with_plays: bool = True) -> game_pb2.Game:
    """The session's ``Game`` view, with the legal plays unless ``with_plays`` is false."""
    stored = stored_view(session)
    return complete_for(session, stored) if with_plays else game_pb2.Game.FromString(stored)


__all__ = ["game_view", "outcome_message", "players"]
