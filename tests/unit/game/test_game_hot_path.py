"""The command path's shortcuts give what the plain library calls give."""

from __future__ import annotations

import hashlib
import json
from dataclasses import fields, replace
from datetime import timedelta

import pytest

from services.backgammon import dice
from services.backgammon.match_id import decode as decode_match_id
from services.backgammon.position_id import encode as position_id
from services.game import codec, domain
from services.game.domain import Action, Session, Status
from services.game.rules import match_id_of, position_id_of
from services.game.service import _hash
from tests.unit.game.test_game_domain import act, new_session, to_roll


def test_an_evolved_session_is_the_replaced_one() -> None:
    session = to_roll(new_session())
    later = session.updated_at + timedelta(seconds=3)
    for changes in (
        {"version": session.version + 1, "updated_at": later},
        {"decision_started_at": later},
        {"status": Status.FINISHED, "winner": 1},
        {f.name: getattr(session, f.name) for f in fields(Session)},
    ):
        assert domain._evolved(session, **changes) == replace(session, **changes)


def test_a_session_has_no_post_init_for_evolving_to_skip() -> None:
    # _evolved copies the slots; a __post_init__ (a check on every new session) would be
    # skipped by it, so adding one means replacing _evolved by dataclasses.replace.
    assert not hasattr(Session, "__post_init__")


def test_an_evolved_session_refuses_an_unknown_field() -> None:
    with pytest.raises(TypeError, match="no field 'colour'"):
        domain._evolved(new_session(), colour="red")


def test_memoised_ids_and_commitment_are_the_librarys() -> None:
    session = new_session()
    seen = set()
    for _ in range(12):  # through rolls and plays of one game
        session = act(to_roll(session), Action.ROLL).session
        game = session.game
        assert position_id_of(game.board) == position_id(game.board)
        assert session.commitment == dice.commitment(session.seed)
        shown = decode_match_id(match_id_of(game, session.score))
        assert (shown.dice, shown.on_roll, shown.cube_value) == (game.dice, game.turn, 1)
        seen.add(match_id_of(game, session.score))
    assert len(seen) > 1  # the memo answers for the state asked, not the first one


def test_the_state_text_is_the_state_through_a_game_and_a_read_back() -> None:
    session = new_session()
    for _ in range(30):  # rolls and plays: the fixed part is reused, the rest follows
        session = act(to_roll(session), Action.ROLL).session
        assert json.loads(codec.state_json(session)) == codec.session_to_state(session)
    again = codec.session_from_state(
        session.game_id, session.version, session.status.value, session.updated_at,
        codec.session_to_state(session), session.seed,
    )  # fmt: skip
    assert json.loads(codec.state_json(again)) == codec.session_to_state(again)


def test_the_state_text_follows_a_change_of_a_fixed_field() -> None:
    session = new_session()
    codec.state_json(session)  # the fixed part kept for this game
    renamed = replace(session, seats=(replace(session.seats[0], display_name="carol"),
                                      session.seats[1]))  # fmt: skip
    assert json.loads(codec.state_json(renamed))["seats"][0][1] == "carol"
    moved = replace(session, table_id="t-other")
    assert json.loads(codec.state_json(moved))["table_id"] == "t-other"


def test_a_command_hash_is_the_stored_one() -> None:
    # Stored answers are matched by this hash: it must not change with its encoding.
    command = {"player": 1, "action": "move", "text": "8/5 6/5"}
    expected = json.dumps(command, sort_keys=True).encode()
    assert _hash(command) == hashlib.sha256(expected).hexdigest()
