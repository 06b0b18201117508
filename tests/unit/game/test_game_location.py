"""Location in the session aggregate: when a seat is due a check, and a blocked
seat treated as disconnected until an allowed check brings it back within the window."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from services.backgammon import game as bg
from services.game import codec, domain
from services.game.domain import Action, Command, Located
from services.kit.errors import FailedPrecondition
from tests.unit.game.test_game_domain import START, Seeds, new_session, rules

EVERY = timedelta(minutes=5)
REASON = "playing for real money is not allowed from here: in Florida [location_restricted]"
MALTA = Located("198.51.100.7", "MT", START)


@pytest.mark.parametrize(
    ("located", "address", "residence", "after", "due"),
    [
        (None, "198.51.100.7", "MT", timedelta(0), True),  # never checked
        (MALTA, "198.51.100.7", "MT", timedelta(seconds=299), False),  # same place, in time
        (MALTA, "192.0.2.10", "MT", timedelta(seconds=1), True),  # another address
        (MALTA, "198.51.100.7", "US-FL", timedelta(seconds=1), True),  # another residence
        (MALTA, "198.51.100.7", "MT", timedelta(seconds=300), True),  # the interval passed
    ],
)
def test_a_check_is_due_on_a_new_address_or_residence_or_when_the_interval_passed(
    located: Located | None, address: str, residence: str, after: timedelta, due: bool
) -> None:
    assert domain.location_due(located, address, residence, START + after, EVERY) is due


def blocked(player: int, at: timedelta = timedelta(seconds=30)) -> domain.Transition:
    session = new_session(rules(delay=12, reserve=60))
    command = Command(Action.LOCATION_BLOCKED, player, REASON)
    return domain.apply(session, command, START + at, Seeds())


def test_a_block_disconnects_the_seat_pausing_its_clock_and_says_why() -> None:
    session = new_session(rules(delay=12, reserve=60))
    player = session.awaiting or 0
    step = blocked(player)
    names = [f.DESCRIPTOR.name for f in step.facts]
    assert names == ["PlayerLocationBlocked", "PlayerDisconnected"]
    assert step.facts[0].reason == REASON  # type: ignore[attr-defined]
    gone = step.session
    assert gone.version == session.version + 1
    assert not gone.presence[player].connected and gone.presence[player].blocked == REASON
    assert gone.presence[player].deadline == START + timedelta(seconds=30, minutes=5)
    assert gone.expires_at() is None and gone.reserves[player] == timedelta(seconds=42)
    assert not domain.apply(gone, Command(Action.LOCATION_BLOCKED, player, REASON), START,
                            Seeds()).changed  # fmt: skip


def test_a_blocked_seat_cannot_act_come_back_or_leave_but_the_window_settles_it() -> None:
    gone = blocked(0).session
    play = bg.plays(gone.game)[0].notation if gone.awaiting == 0 else ""
    attempts = [Command(Action.RECONNECT, 0), Command(Action.LEAVE, 0)]
    if play:
        attempts.append(Command(Action.MOVE, 0, play))
    for command in attempts:
        with pytest.raises(FailedPrecondition, match="location_restricted"):
            domain.apply(gone, command, START + timedelta(minutes=1), Seeds())
    late = START + timedelta(seconds=30, minutes=5)
    settled = domain.apply(gone, Command(Action.SETTLE, 0), late, Seeds())
    assert settled.changed  # nobody played yet: cancelled, as any disconnection would be
    assert settled.session.status is domain.Status.CANCELLED


def test_an_allowed_check_brings_a_blocked_seat_back_only_within_the_window() -> None:
    gone = blocked(1).session
    back = domain.apply(gone, Command(Action.LOCATION_ALLOWED, 1), START + timedelta(minutes=2),
                        Seeds())  # fmt: skip
    assert [f.DESCRIPTOR.name for f in back.facts] == ["PlayerReconnected"]
    assert back.session.presence[1] == domain.Presence()
    assert not domain.apply(back.session, Command(Action.LOCATION_ALLOWED, 1), START,
                            Seeds()).changed  # fmt: skip
    with pytest.raises(FailedPrecondition, match="reconnect window closed"):
        domain.apply(gone, Command(Action.LOCATION_ALLOWED, 1), START + timedelta(minutes=6),
                     Seeds())  # fmt: skip


def test_a_block_of_a_seat_already_away_keeps_its_window() -> None:
    session = new_session()
    away = domain.apply(session, Command(Action.DISCONNECT, 1), START, Seeds()).session
    step = domain.apply(away, Command(Action.LOCATION_BLOCKED, 1, REASON),
                        START + timedelta(minutes=3), Seeds())  # fmt: skip
    assert [f.DESCRIPTOR.name for f in step.facts] == ["PlayerLocationBlocked"]
    assert step.session.presence[1].deadline == START + timedelta(minutes=5)


def test_the_block_survives_storage_and_replays_from_the_action_log() -> None:
    gone = blocked(0).session
    state = codec.session_to_state(gone)
    back = codec.session_from_state(
        gone.game_id, gone.version, gone.status.value, gone.updated_at, state, gone.seed
    )
    assert back.presence == gone.presence
    command = codec.command_from_state(
        codec.command_to_state(Command(Action.LOCATION_BLOCKED, 0, REASON))
    )
    assert command == Command(Action.LOCATION_BLOCKED, 0, REASON)
    # States written before location checks have three presence fields: read as unblocked.
    state["presence"] = [p[:3] for p in state["presence"]]
    old = codec.session_from_state(
        gone.game_id, gone.version, gone.status.value, gone.updated_at, state, gone.seed
    )
    assert old.presence[0].blocked == "" and not old.presence[0].connected


def test_only_real_money_sessions_are_located() -> None:
    assert new_session().real_money  # the test tables play in EUR
    assert not new_session(replace(rules(), currency="PLAY")).real_money
