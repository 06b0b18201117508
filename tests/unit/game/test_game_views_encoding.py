"""The legal plays a Roll answers with are written as bytes directly (views._plays_bytes),
and the stored view is its fixed parts encoded once per game and the rest (views.stored_view).

They must be exactly what protobuf itself makes of the same plays as messages, for
every kind of play: hits, entering from the bar, bearing off, doubles, no play.
The expected bytes come from protobuf's own serializer, not from the code under test.
"""

from __future__ import annotations

import random
from dataclasses import replace

from services.backgammon import game as bg
from services.backgammon import position_id
from services.backgammon.board import STARTING_BOARD, Board
from services.backgammon.game import Phase
from services.backgammon.plays import legal_plays
from services.game import views
from services.game.domain import Action, Kind, Session, Status
from services.game.facts import duration, rules_message, timestamp
from services.game.rules import match_id_of
from services.kit.errors import DomainError
from tavla.game.v1 import game_pb2
from tests.unit.game.test_game_domain import act, new_session, rules


def _positions(count: int, seed: int) -> list[tuple[Board, tuple[int, int]]]:
    """Positions from random games, both sides moving, to the end (bar and bear-off included)."""
    rng = random.Random(seed)
    board, found = STARTING_BOARD, []
    while len(found) < count:
        dice = (rng.randint(1, 6), rng.randint(1, 6))
        found.append((board, dice))
        plays = legal_plays(board, dice)
        board = rng.choice(plays).result.swapped() if plays else board.swapped()
        if board.is_over():
            board = STARTING_BOARD
    return found


def _by_protobuf(board: Board, dice: tuple[int, int]) -> bytes:
    plays = views.legal_play_messages(board, dice)
    return game_pb2.Game(legal_plays=plays).SerializeToString()


def test_the_plays_are_encoded_as_protobuf_encodes_them() -> None:
    positions = _positions(3000, seed=11)
    kinds = {"bar": 0, "off": 0, "hit": 0, "none": 0}
    for board, dice in positions:
        encoded = views._plays_bytes(board, dice)
        assert encoded == _by_protobuf(board, dice), (board, dice)
        notations = [p.notation for p in game_pb2.Game.FromString(encoded).legal_plays]
        kinds["bar"] += any("bar" in n for n in notations)
        kinds["off"] += any("off" in n for n in notations)
        kinds["hit"] += any("*" in n for n in notations)
        kinds["none"] += not notations
    assert all(kinds.values()), kinds  # every kind of play was compared


def test_appended_to_a_stored_view_they_parse_as_its_plays() -> None:
    board, dice = STARTING_BOARD, (6, 5)
    stored = game_pb2.Game(game_id="g", version=3, dice=list(dice)).SerializeToString()
    view = game_pb2.Game.FromString(stored + views._plays_bytes(board, dice))
    assert view.game_id == "g" and view.version == 3
    assert list(view.legal_plays) == list(views.legal_play_messages(board, dice))
    assert "24/13" in [p.notation for p in view.legal_plays]  # the running 6-5 among them


# ---------------------------------------------------------------- the stored view


def _built(session: Session) -> game_pb2.Game:
    """The view without plays made message by message from the session's fields (as the
    service made it before its fixed parts were kept encoded): the reference."""
    game, awaiting, seats = session.game, session.awaiting, session.seats

    def player(index: int) -> game_pb2.PlayerState:
        presence = session.presence[index]
        board = game.board
        pips = board.pip_count() if game.turn == index else board.pip_count(opponent=True)
        state = game_pb2.PlayerState(
            account_id=seats[index].account_id,
            display_name=seats[index].display_name,
            rating=seats[index].rating,
            gnubg_player=index,
            score=session.score.score[index] if session.rules.match_length else 0,
            connected=presence.connected,
            pip_count=pips,
            location_blocked=presence.blocked,
        )
        state.clock.reserve_left.CopyFrom(duration(session.reserves[index]))
        expires = session.expires_at()
        if expires is not None and awaiting == index:
            delay_end = session.decision_started_at + session.rules.clock.move_delay
            state.clock.delay_ends_at.CopyFrom(timestamp(delay_end))
            state.clock.expires_at.CopyFrom(timestamp(expires))
        if presence.deadline is not None:
            state.reconnect_deadline.CopyFrom(timestamp(presence.deadline))
        return state

    view = game_pb2.Game(
        game_id=session.game_id,
        table_id=session.table_id,
        rules=rules_message(session.rules),
        status=views._STATUS[session.status],
        version=session.version,
        game_number=session.game_number,
        players=[player(0), player(1)],
        position_id=position_id.encode(game.board),
        gnubg_match_id=match_id_of(game, session.score),
        phase=views._PHASE[game.phase],
        player_on_roll_account_id=seats[game.turn].account_id,
        awaiting_account_id="" if awaiting is None else seats[awaiting].account_id,
        dice=list(game.dice or ()),
        cube_value=game.cube.value,
        cube_owner_account_id="" if game.cube.owner is None else seats[game.cube.owner].account_id,
        crawford_game=session.score.crawford_game,
        dice_seed_commitment=session.commitment,
        created_at=timestamp(session.created_at),
        updated_at=timestamp(session.updated_at),
        table_stakes_max_cube=session.rules.max_cube() if session.rules.table_stakes else 0,
    )
    if game.resignation is not None:
        view.pending_resign.offered_by_account_id = seats[game.resignation.by].account_id
        view.pending_resign.level = int(game.resignation.kind)  # type: ignore[assignment]
    if session.last_outcome is not None:
        view.last_outcome.CopyFrom(views.outcome_message(session, session.last_outcome))
    if session.winner is not None:
        view.winner_account_id = seats[session.winner].account_id
    return view


def _sessions() -> list[Session]:
    """Sessions in every state a view shows: a match with its score and Crawford game, a
    cube turned and owned, a pending double and resignation, a player away and one whose
    location was blocked, table stakes, and finished sessions."""
    found: list[Session] = []
    rng = random.Random(3)
    tables = [rules(), rules(Kind.MATCH, 5), replace(rules(), table_stakes_minor=1000,
                                                     at_risk_minor=1000)]  # fmt: skip
    for table in tables:
        session = new_session(table)
        while session.status is Status.IN_PROGRESS and len(found) < 400 * (tables.index(table) + 1):
            found.append(session)
            session = _next(session, rng)
        found.append(session)
    return found


def _next(session: Session, rng: random.Random) -> Session:
    game = session.game
    awaiting = session.awaiting
    assert awaiting is not None
    if session.presence[awaiting].blocked:  # a blocked seat acts only once allowed again
        return act(session, Action.LOCATION_ALLOWED, awaiting).session
    choice = rng.random()
    if choice < 0.02:
        return act(session, Action.DISCONNECT, 1 - awaiting).session
    if choice < 0.03:
        return act(session, Action.LOCATION_BLOCKED, 1 - awaiting, "[location_restricted]").session
    if choice < 0.05 and not session.presence[1 - awaiting].blocked:
        return act(session, Action.RECONNECT, 1 - awaiting).session
    if game.phase is Phase.MOVE:
        plays = bg.plays(game)
        return act(session, Action.MOVE, text=rng.choice(plays).notation if plays else "").session
    if game.phase is Phase.DOUBLE_OFFERED:
        return act(session, Action.TAKE if rng.random() < 0.8 else Action.DROP).session
    if game.phase is Phase.RESIGN_OFFERED:
        return act(session, Action.REJECT_RESIGN).session
    for tried, action, text in ((0.08, Action.DOUBLE, ""), (0.09, Action.RESIGN, "1")):
        if choice < tried:
            try:  # refused where the rules or the table do not allow it: roll instead
                return act(session, action, text=text).session
            except DomainError:
                break
    return act(session, Action.ROLL).session


def test_the_stored_view_is_the_view_built_field_by_field() -> None:
    sessions = _sessions()
    for session in sessions:
        assert game_pb2.Game.FromString(views.stored_view(session)) == _built(session)
    shown = [_built(s) for s in sessions]
    assert any(v.pending_resign.offered_by_account_id for v in shown)
    assert any(v.phase == game_pb2.TURN_PHASE_CUBE_RESPONSE for v in shown)
    assert any(v.cube_owner_account_id for v in shown)
    assert any(p.reconnect_deadline.seconds for v in shown for p in v.players)
    assert any(p.location_blocked for v in shown for p in v.players)
    assert any(v.players[0].score or v.players[1].score for v in shown)
    assert any(v.table_stakes_max_cube for v in shown)
    assert any(v.winner_account_id for v in shown)


def test_the_stored_view_follows_a_change_of_a_fixed_field() -> None:
    session = new_session()
    views.stored_view(session)  # the fixed parts kept for this game
    renamed = replace(session, seats=(replace(session.seats[0], display_name="carol"),
                                      session.seats[1]))  # fmt: skip
    view = game_pb2.Game.FromString(views.stored_view(renamed))
    assert view.players[0].display_name == "carol" and view == _built(renamed)
