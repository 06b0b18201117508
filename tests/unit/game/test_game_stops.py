"""Where a game stopped by a timeout or a resignation is recorded for valuation:
the position as it stood (a resignation's without the offer), who stopped, a timer to
value it once the session is over, and nothing for the other ways a game ends."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from services.backgammon import match_id
from services.backgammon.match_id import GameStateCode
from services.game import codec, domain
from services.game.domain import Action, Command, Kind, Penalty, Status
from services.game.rules import match_id_of
from services.game.service import ALL_TIMERS, VALUE_TIMER, timer_changes
from tests.unit.game.test_game_domain import Seeds, act, new_session, rules, to_roll

# GNU Backgammon's Position ID of the starting position (its manual's example).
STARTING_POSITION = "4HPwATDgc/ABMA"


def test_a_timeout_records_the_position_where_the_clock_ran_out() -> None:
    session = new_session(rules(reserve=10))
    waiting = session.awaiting or 0
    expiry = session.expires_at()
    assert expiry is not None
    ended = domain.apply(session, Command(Action.TIMEOUT, waiting), expiry, Seeds()).session
    outcome = ended.last_outcome
    assert outcome is not None and outcome.stopped is not None
    stopped = outcome.stopped
    assert stopped.player == waiting  # whose clock ran out
    # The opening roll is made, its winner's move not yet played: the starting position.
    assert stopped.position_id == STARTING_POSITION
    assert stopped.on_roll == session.game.turn == waiting and not stopped.race
    state = match_id.decode(stopped.gnubg_match_id)
    assert state.game_state is GameStateCode.PLAYING  # the game as it stood, not as scored
    assert state.dice == session.game.dice and state.on_roll == waiting
    # Nothing changes in what the rules settle: the forfeit at the level the position
    # stands (from the start: nothing borne off, back checkers in the winner's home board:
    # a backgammon, 3 points at cube 1), no shares.
    assert outcome.shares is None and outcome.figures is None and outcome.points == 3
    assert timer_changes(session, ended) == ([(VALUE_TIMER, expiry)], ALL_TIMERS)


def test_a_resignation_records_the_position_before_the_offer() -> None:
    session = to_roll(new_session())
    resigner = session.awaiting or 0
    offered = act(session, Action.RESIGN, text="1").session
    accepted = act(offered, Action.ACCEPT_RESIGN).session
    assert accepted.status is Status.FINISHED and accepted.last_outcome is not None
    stopped = accepted.last_outcome.stopped
    assert stopped is not None and stopped.player == resigner
    state = match_id.decode(stopped.gnubg_match_id)
    # No offer pending, still in play, to roll: valued as a position, not as the offer.
    assert state.resignation == 0 and state.game_state is GameStateCode.PLAYING
    assert state.dice == (0, 0) and state.turn == resigner
    assert stopped.gnubg_match_id == match_id_of(session.game, session.score)
    assert timer_changes(offered, accepted)[0] == [(VALUE_TIMER, accepted.updated_at)]


def test_a_resignation_offered_off_turn_keeps_the_dice_rolled() -> None:
    session = new_session()  # the opening roll's winner is to move
    mover = session.awaiting or 0
    offered = act(session, Action.RESIGN, player=1 - mover, text="1").session
    accepted = act(offered, Action.ACCEPT_RESIGN).session
    assert accepted.last_outcome is not None and accepted.last_outcome.stopped is not None
    stopped = accepted.last_outcome.stopped
    assert stopped.player == 1 - mover and stopped.on_roll == mover
    assert match_id.decode(stopped.gnubg_match_id).dice == session.game.dice


def test_other_ends_record_no_stop_and_set_no_valuation() -> None:
    session = to_roll(new_session())
    doubled = act(session, Action.DOUBLE).session
    dropped = act(doubled, Action.DROP).session
    left = act(session, Action.LEAVE, player=0).session
    for before, after in ((doubled, dropped), (session, left)):
        assert after.last_outcome is not None and after.last_outcome.stopped is None
        assert timer_changes(before, after) == ([], ALL_TIMERS)


def test_a_timeout_inside_a_match_that_goes_on_is_not_valued() -> None:
    session = new_session(rules(Kind.MATCH, 5, reserve=10))
    expiry = session.expires_at()
    assert expiry is not None
    step = domain.apply(session, Command(Action.TIMEOUT, session.awaiting or 0), expiry, Seeds())
    assert step.session.status is Status.IN_PROGRESS
    assert VALUE_TIMER not in [kind for kind, _ in timer_changes(session, step.session)[0]]
    over = new_session(rules(Kind.MATCH, 5, penalty=Penalty.LOSE_MATCH, reserve=10))
    expiry = over.expires_at()
    assert expiry is not None
    ended = domain.apply(over, Command(Action.TIMEOUT, over.awaiting or 0), expiry, Seeds())
    assert ended.session.status is Status.FINISHED
    assert timer_changes(over, ended.session)[0] == [(VALUE_TIMER, expiry)]


def test_the_stop_survives_the_codec() -> None:
    session = to_roll(new_session())
    offered = act(session, Action.RESIGN, text="1").session
    ended = act(offered, Action.ACCEPT_RESIGN, at=session.updated_at + timedelta(seconds=3))
    after = ended.session
    state = codec.session_to_state(after)
    back = codec.session_from_state(
        after.game_id, after.version, after.status.value, after.updated_at, state, after.seed
    )
    assert back.last_outcome == after.last_outcome
    # A state saved before stops were recorded reads as no stop (nothing to value).
    assert state["last_outcome"].pop("stopped") is not None
    old = codec.session_from_state(
        after.game_id, after.version, after.status.value, after.updated_at, state, after.seed
    )
    assert old.last_outcome == replace(after.last_outcome, stopped=None)
