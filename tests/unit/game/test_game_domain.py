"""The session aggregate: turns, cube, clocks, presence, endings, replay and storage codec."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from services.backgammon import dice
from services.backgammon import game as bg
from services.backgammon.cube import Cube
from services.backgammon.game import Phase
from services.game import codec, domain
from services.game.domain import (
    Action,
    Cause,
    ClockPreset,
    Command,
    Figures,
    Kind,
    Penalty,
    Seat,
    Session,
    Status,
    TableRules,
)
from services.game.rules import kit_error
from services.game.service import ActionRow, replay, timer_changes
from services.kit.errors import FailedPrecondition, InvalidArgument, PermissionDenied
from services.kit.money_bounds import AmountOutOfBounds, MoneyBounds

START = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
SEATS = (Seat("acc-a", "alice", 1500.0), Seat("acc-b", "bob", 1600.0))


def rules(
    kind: Kind = Kind.MONEY,
    length: int = 0,
    *,
    beaver: bool = False,
    jacoby: bool = False,
    penalty: Penalty = Penalty.LOSE_GAME,
    delay: int = 12,
    reserve: int = 120,
) -> TableRules:
    clock = ClockPreset(
        "test",
        timedelta(seconds=delay),
        timedelta(seconds=reserve),
        timedelta(seconds=reserve),
        penalty,
    )
    return TableRules(kind, length, 250, "EUR", 64, beaver, jacoby, kind is Kind.MATCH, clock)


class Seeds:
    """Deterministic seeds for every game, remembered for replay."""

    def __init__(self) -> None:
        self._rng = random.Random(7)
        self.by_game: dict[int, bytes] = {}

    def first(self) -> bytes:
        self.by_game[1] = self._rng.randbytes(32)
        return self.by_game[1]

    def __call__(self) -> bytes:
        seed = self._rng.randbytes(32)
        self.by_game[len(self.by_game) + 1] = seed
        return seed


def new_session(table: TableRules | None = None, seeds: Seeds | None = None) -> Session:
    seeds = seeds or Seeds()
    return domain.create(
        game_id="g1",
        table_id="t1",
        rules=table or rules(),
        seats=SEATS,
        client_seed="client",
        seed=seeds.first(),
        now=START,
    ).session


def act(
    session: Session,
    action: Action,
    player: int | None = None,
    text: str = "",
    at: datetime | None = None,
    seeds: Seeds | None = None,
) -> domain.Transition:
    who = session.awaiting if player is None else player
    assert who is not None
    return domain.apply(
        session, Command(action, who, text), at or session.updated_at, seeds or Seeds()
    )


def to_roll(session: Session) -> Session:
    """Play first legal plays until someone is to roll (phase ROLL)."""
    while session.game.phase is not Phase.ROLL:
        plays = bg.plays(session.game)
        session = act(session, Action.MOVE, text=plays[0].notation if plays else "").session
    return session


def test_create_makes_the_opening_roll_from_the_committed_seed() -> None:
    seeds = Seeds()
    session = new_session(seeds=seeds)
    number, opening = dice.opening_roll(seeds.by_game[1], "client")
    assert session.version == 1 and session.game_number == 1
    assert session.game.phase is Phase.MOVE
    assert sorted(session.game.dice or ()) == sorted(opening)
    assert session.roll_count == number + 1
    assert session.commitment == dice.commitment(seeds.by_game[1])
    assert session.reserves == (timedelta(seconds=120), timedelta(seconds=120))


def test_a_command_moves_the_version_by_one_and_records_facts() -> None:
    session = new_session()
    play = bg.plays(session.game)[0].notation
    step = act(session, Action.MOVE, text=play, at=START + timedelta(seconds=3))
    assert step.session.version == 2
    names = [f.DESCRIPTOR.name for f in step.facts]
    assert names == ["MovePlayed"]
    assert step.facts[0].time_taken.seconds == 3  # type: ignore[attr-defined]
    assert step.session.game.phase is Phase.ROLL and step.session.awaiting != session.awaiting


def test_only_the_awaited_player_may_act() -> None:
    session = new_session()
    other = 1 - (session.awaiting or 0)
    with pytest.raises(FailedPrecondition, match="not your turn"):
        act(session, Action.ROLL, player=other)
    with pytest.raises(PermissionDenied):
        session.seat_of("somebody-else")


def test_rules_refusals_keep_the_library_message() -> None:
    session = new_session()
    with pytest.raises(FailedPrecondition, match="not allowed now"):
        act(session, Action.DOUBLE)  # after the (opening) roll
    with pytest.raises(InvalidArgument, match="not a legal play"):
        act(session, Action.MOVE, text="6/5(2)")
    with pytest.raises(InvalidArgument, match="not like"):
        act(session, Action.MOVE, text="hello")


def test_reserve_is_charged_beyond_the_delay_and_timeout_loses_the_game() -> None:
    session = new_session(rules(delay=12, reserve=60))
    mover = session.awaiting or 0
    play = bg.plays(session.game)[0].notation
    after = act(session, Action.MOVE, text=play, at=START + timedelta(seconds=20)).session
    assert after.reserves[mover] == timedelta(seconds=52)
    waiting = after.awaiting or 0
    expiry = after.expires_at()
    assert expiry == after.decision_started_at + timedelta(seconds=72)
    assert not domain.apply(
        after, Command(Action.TIMEOUT, waiting), expiry - timedelta(seconds=1), Seeds()
    ).changed
    with pytest.raises(FailedPrecondition, match="time ran out"):
        act(after, Action.ROLL, at=expiry)
    ended = domain.apply(after, Command(Action.TIMEOUT, waiting), expiry, Seeds())
    names = [f.DESCRIPTOR.name for f in ended.facts]
    assert names == ["ClockExpired", "GameEnded"]
    assert ended.session.status is Status.FINISHED
    assert ended.session.winner == 1 - waiting
    assert ended.session.last_outcome is not None
    assert ended.session.last_outcome.cause is Cause.TIMEOUT


def test_timeout_with_lose_match_penalty_ends_the_match() -> None:
    session = new_session(rules(Kind.MATCH, 5, penalty=Penalty.LOSE_MATCH, reserve=10))
    waiting = session.awaiting or 0
    expiry = session.expires_at()
    assert expiry is not None
    ended = domain.apply(session, Command(Action.TIMEOUT, waiting), expiry, Seeds())
    assert [f.DESCRIPTOR.name for f in ended.facts] == ["ClockExpired", "GameEnded", "MatchEnded"]
    assert ended.session.score.score[1 - waiting] >= 5
    assert ended.session.status is Status.FINISHED


def test_lose_game_penalty_in_a_match_starts_the_next_game() -> None:
    session = new_session(rules(Kind.MATCH, 5, reserve=10))
    waiting = session.awaiting or 0
    expiry = session.expires_at()
    assert expiry is not None
    step = domain.apply(session, Command(Action.TIMEOUT, waiting), expiry, Seeds())
    assert step.session.status is Status.IN_PROGRESS and step.session.game_number == 2
    assert [f.DESCRIPTOR.name for f in step.facts][-2:] == ["GameStarted", "DiceRolled"]
    assert len(step.ended) == 1 and step.ended[0].game_number == 1


def test_double_take_and_drop_follow_the_cube_rules() -> None:
    session = to_roll(new_session())
    doubler = session.awaiting or 0
    offered = act(session, Action.DOUBLE).session
    assert offered.awaiting == 1 - doubler and offered.game.phase is Phase.DOUBLE_OFFERED
    answerer = SEATS[1 - doubler].account_id
    took = act(offered, Action.TAKE)
    taken = took.session
    assert taken.game.cube.value == 2 and taken.game.cube.owner == 1 - doubler
    fact = took.facts[0]
    assert fact.DESCRIPTOR.name == "CubeTaken"
    assert (fact.account_id, fact.cube_value) == (answerer, 2)  # type: ignore[attr-defined]
    with pytest.raises(FailedPrecondition, match="owned by player"):
        act(taken, Action.DOUBLE)
    dropped = act(offered, Action.DROP)
    fact = dropped.facts[0]
    assert fact.DESCRIPTOR.name == "CubeDropped"
    # The game is lost at the cube that stood before the refused double.
    assert (fact.account_id, fact.cube_value) == (answerer, 1)  # type: ignore[attr-defined]
    assert dropped.session.status is Status.FINISHED
    assert dropped.session.last_outcome is not None
    assert dropped.session.last_outcome.points == 1
    assert dropped.session.last_outcome.cause is Cause.CUBE_DROPPED


def test_beaver_only_when_the_table_allows_it() -> None:
    session = to_roll(new_session())
    offered = act(session, Action.DOUBLE).session
    with pytest.raises(FailedPrecondition, match="beavers are not allowed"):
        act(offered, Action.BEAVER)
    allowed = to_roll(new_session(rules(beaver=True)))
    beavered = act(act(allowed, Action.DOUBLE).session, Action.BEAVER)
    assert [f.DESCRIPTOR.name for f in beavered.facts] == ["CubeBeavered"]
    assert beavered.session.game.cube.value == 2


def test_resignation_accepted_scores_the_offered_level() -> None:
    session = to_roll(new_session())
    resigner = session.awaiting or 0
    offered = act(session, Action.RESIGN, text="2").session
    assert offered.awaiting == 1 - resigner
    accepted = act(offered, Action.ACCEPT_RESIGN).session
    assert accepted.last_outcome is not None
    assert accepted.last_outcome.points == 2 and accepted.winner == 1 - resigner
    rejected = act(offered, Action.REJECT_RESIGN).session
    assert rejected.game.phase is Phase.ROLL and rejected.awaiting == resigner
    with pytest.raises(InvalidArgument):
        act(session, Action.RESIGN, text="x")


def test_the_player_not_on_turn_may_offer_to_resign_too() -> None:
    session = new_session()
    waiting = 1 - (session.awaiting or 0)
    offered = act(session, Action.RESIGN, player=waiting, text="1").session
    assert offered.game.phase is Phase.RESIGN_OFFERED and offered.awaiting == 1 - waiting
    accepted = act(offered, Action.ACCEPT_RESIGN)
    assert accepted.session.winner == 1 - waiting
    assert accepted.session.last_outcome is not None
    assert accepted.session.last_outcome.cause is Cause.RESIGNED
    rejected = act(offered, Action.REJECT_RESIGN).session
    assert rejected.game.phase is Phase.MOVE and rejected.awaiting == 1 - waiting
    with pytest.raises(FailedPrecondition, match="not allowed now"):
        act(act(to_roll(session), Action.DOUBLE).session, Action.RESIGN, player=0, text="1")


def test_game_ended_reports_the_result_that_scored_and_the_holds() -> None:
    seats = (Seat("acc-a", "alice", 1500.0, "hold-a"), Seat("acc-b", "bob", 1600.0, "hold-b"))
    session = domain.create(
        game_id="g1",
        table_id="t1",
        rules=rules(jacoby=True),
        seats=seats,
        client_seed="client",
        seed=Seeds().first(),
        now=START,
    ).session
    session = to_roll(session)
    offered = act(session, Action.RESIGN, text="2").session
    ended = act(offered, Action.ACCEPT_RESIGN).facts[-1]
    assert ended.DESCRIPTOR.name == "GameEnded"
    assert ended.points == 1 and ended.cube_value == 1  # type: ignore[attr-defined]
    assert ended.result == 1  # type: ignore[attr-defined]  # Jacoby: the gammon counts single
    assert [p.hold_id for p in ended.players] == ["hold-a", "hold-b"]  # type: ignore[attr-defined]


def test_leaving_forfeits_the_whole_match() -> None:
    session = new_session(rules(Kind.MATCH, 7))
    step = act(session, Action.LEAVE, player=0)
    assert step.session.status is Status.FINISHED and step.session.winner == 1
    assert step.session.score.score[1] == 7
    assert step.session.last_outcome is not None
    assert step.session.last_outcome.cause is Cause.LEFT


def test_disconnect_pauses_the_clock_and_reconnect_resumes_it() -> None:
    session = new_session(rules(delay=12, reserve=60))
    player = session.awaiting or 0
    gone = domain.apply(
        session, Command(Action.DISCONNECT, player), START + timedelta(seconds=30), Seeds()
    ).session
    assert gone.expires_at() is None
    assert gone.reserves[player] == timedelta(seconds=42)
    assert gone.presence[player].deadline == START + timedelta(seconds=30, minutes=5)
    back = domain.apply(
        gone, Command(Action.RECONNECT, player), START + timedelta(minutes=2), Seeds()
    )
    assert [f.DESCRIPTOR.name for f in back.facts] == ["PlayerReconnected"]
    assert back.session.expires_at() == START + timedelta(minutes=2, seconds=54)
    again = domain.apply(
        back.session, Command(Action.RECONNECT, player), START + timedelta(minutes=3), Seeds()
    )
    assert not again.changed


def test_no_coming_back_once_the_window_closed() -> None:
    session = new_session()
    gone = domain.apply(session, Command(Action.DISCONNECT, 0), START, Seeds()).session
    with pytest.raises(FailedPrecondition, match="reconnect window closed"):
        domain.apply(gone, Command(Action.RECONNECT, 0), START + timedelta(minutes=5), Seeds())


def test_acting_while_marked_disconnected_reconnects_first() -> None:
    session = new_session()
    player = session.awaiting or 0
    gone = domain.apply(session, Command(Action.DISCONNECT, player), START, Seeds()).session
    play = bg.plays(gone.game)[0].notation
    step = act(gone, Action.MOVE, text=play, at=START + timedelta(seconds=5))
    assert [f.DESCRIPTOR.name for f in step.facts] == ["PlayerReconnected", "MovePlayed"]
    assert step.session.version == gone.version + 1


def played_once(session: Session) -> Session:
    play = bg.plays(session.game)[0].notation
    return act(session, Action.MOVE, text=play, at=START).session


def test_settlement_only_after_the_window_and_with_valid_shares() -> None:
    session = played_once(new_session(rules(Kind.MATCH, 3)))
    gone = domain.apply(session, Command(Action.DISCONNECT, 1), START, Seeds()).session
    early = START + timedelta(minutes=4)
    assert not domain.apply(gone, Command(Action.SETTLE, 1), early, Seeds()).changed
    late = START + timedelta(minutes=5)
    shares = (Decimal("0.7"), Decimal("0.3"))
    step = domain.apply(
        gone, Command(Action.SETTLE, 1, shares=shares, analysed=True), late, Seeds()
    )
    names = [f.DESCRIPTOR.name for f in step.facts]
    assert names == ["GameEnded", "MatchEnded"]
    ended = step.facts[0]
    assert [s.share for s in ended.shares] == ["0.7", "0.3"]  # type: ignore[attr-defined]
    assert ended.analysed and step.session.winner == 0  # type: ignore[attr-defined]
    with pytest.raises(InvalidArgument, match="sum to 1"):
        domain.apply(
            gone, Command(Action.SETTLE, 1, shares=(Decimal("0.7"), Decimal("0.7"))), late, Seeds()
        )


def test_even_split_goes_to_the_player_who_stayed() -> None:
    session = played_once(new_session())
    gone = domain.apply(session, Command(Action.DISCONNECT, 0), START, Seeds()).session
    step = domain.apply(gone, Command(Action.SETTLE, 0), START + timedelta(minutes=5), Seeds())
    assert step.session.winner == 1
    assert step.session.last_outcome is not None
    assert step.session.last_outcome.shares == (Decimal("0.5"), Decimal("0.5"))
    assert not step.session.last_outcome.analysed


def test_a_session_nobody_played_is_cancelled_not_settled() -> None:
    session = new_session(rules(Kind.MATCH, 3))
    gone = domain.apply(session, Command(Action.DISCONNECT, 1), START, Seeds()).session
    step = domain.apply(gone, Command(Action.SETTLE, 1), START + timedelta(minutes=5), Seeds())
    assert [f.DESCRIPTOR.name for f in step.facts] == ["GameCancelled"]
    assert step.facts[0].reason == "bob never arrived"  # type: ignore[attr-defined]
    absent = step.facts[0].absent_account_id  # type: ignore[attr-defined]
    assert absent == session.seats[1].account_id
    assert step.session.status is Status.CANCELLED and step.session.winner is None
    with pytest.raises(FailedPrecondition, match="over"):
        act(step.session, Action.LEAVE, player=0)


def test_match_rules_are_validated() -> None:
    with pytest.raises(InvalidArgument, match=r"1\.\.25 points"):
        new_session(rules(Kind.MATCH, 0))
    with pytest.raises(InvalidArgument, match="money play only"):
        new_session(replace(rules(Kind.MATCH, 5), jacoby=True))
    with pytest.raises(InvalidArgument, match="two different players"):
        domain.create(
            game_id="g",
            table_id="t",
            rules=rules(),
            seats=(SEATS[0], SEATS[0]),
            client_seed="c",
            seed=b"s" * 32,
            now=START,
        )


@pytest.mark.parametrize("cap", [128, 3, 65])
def test_a_cube_cap_past_64_or_not_a_power_of_two_is_refused(cap: int) -> None:
    with pytest.raises(InvalidArgument, match="cube_cap must be a power of two from 1 to 64"):
        new_session(replace(rules(), cube_cap=cap))


def at_cube(session: Session, value: int, cap: int) -> Session:
    """``session`` with the cube at ``value``, owned by the player on roll, under ``cap``
    (a cap above 64 is what a session stored before such caps were refused would carry)."""
    game = session.game
    cube = Cube(value=value, owner=session.awaiting)
    stored = replace(game, cube=cube, rules=replace(game.rules, cap=cap))
    return replace(session, game=stored, rules=replace(session.rules, cube_cap=cap))


@pytest.mark.parametrize("cap", [64, 128])
def test_the_cube_never_goes_past_64(cap: int) -> None:
    session = at_cube(to_roll(new_session(rules(beaver=True))), 32, cap)
    offered = act(session, Action.DOUBLE).session  # 32 -> 64 is the last double
    with pytest.raises(FailedPrecondition, match="it never goes past 64"):
        act(offered, Action.BEAVER)  # would make it 128
    taken = act(offered, Action.TAKE).session
    assert taken.game.cube.value == 64
    with pytest.raises(FailedPrecondition, match="it never goes past 64"):
        act(at_cube(to_roll(taken), 64, cap), Action.DOUBLE)


def play_random(session: Session, seeds: Seeds, rng: random.Random) -> list[ActionRow]:
    """Play a session to its end with random legal decisions, logging like the service."""
    log: list[ActionRow] = []
    now = START
    while session.status is Status.IN_PROGRESS:
        now += timedelta(seconds=2)
        phase = session.game.phase
        if phase is Phase.ROLL:
            action = Action.DOUBLE if rng.random() < 0.05 else Action.ROLL
            command = Command(action, session.awaiting or 0)
            try:
                step = domain.apply(session, command, now, seeds)
            except FailedPrecondition:
                command = Command(Action.ROLL, session.awaiting or 0)
                step = domain.apply(session, command, now, seeds)
        elif phase is Phase.MOVE:
            text = rng.choice(bg.plays(session.game)).notation
            command = Command(Action.MOVE, session.awaiting or 0, text)
            step = domain.apply(session, command, now, seeds)
        else:
            command = Command(Action.TAKE, session.awaiting or 0)
            step = domain.apply(session, command, now, seeds)
        session = step.session
        log.append(
            ActionRow(session.version, "", codec.command_to_state(command), "", "", b"", now)
        )
    return log


def test_the_action_log_replays_to_the_same_session() -> None:
    seeds = Seeds()
    table = rules(Kind.MATCH, 3)
    session = new_session(table, seeds)
    created = ActionRow(
        1,
        "",
        {
            "action": "create",
            "rules": codec.rules_to_state(table),
            "seats": codec.seats_to_state(SEATS),
            "client_seed": "client",
            "table_id": "t1",
        },
        "",
        "",
        b"",
        START,
    )
    log = play_random(session, seeds, random.Random(3))
    replayed, games = replay([created, *log], seeds.by_game)
    final_version = log[-1].version
    assert replayed.version == final_version and replayed.status is Status.FINISHED
    assert len(games) == replayed.score.games_played
    assert all(g.result is not None for g in games)


def test_codec_round_trips_a_session_in_play() -> None:
    session = to_roll(new_session(rules(beaver=True)))
    session = act(session, Action.DOUBLE).session
    gone = domain.apply(session, Command(Action.DISCONNECT, 0), START, Seeds()).session
    state = codec.session_to_state(gone)
    back = codec.session_from_state(
        gone.game_id, gone.version, gone.status.value, gone.updated_at, state, gone.seed
    )
    assert back == replace(gone, game=replace(gone.game, history=()))
    assert "seed" not in state  # the secret stays in its own column


def test_timer_changes_follow_the_clock_and_the_reconnect_window() -> None:
    session = new_session()
    to_set, to_clear = timer_changes(None, session)
    assert [kind for kind, _ in to_set] == ["clock"] and to_clear == []
    gone = domain.apply(
        session, Command(Action.DISCONNECT, session.awaiting or 0), START, Seeds()
    ).session
    to_set, to_clear = timer_changes(session, gone)
    assert [kind for kind, _ in to_set] == [f"reconnect{session.awaiting}"]
    assert to_clear == ["clock"]
    left = act(session, Action.LEAVE, player=0).session
    assert timer_changes(session, left) == ([], ["clock", "reconnect0", "reconnect1"])


def test_kit_error_maps_rules_errors() -> None:
    from services.backgammon import errors

    assert isinstance(kit_error(errors.IllegalPlay("x")), InvalidArgument)
    assert isinstance(kit_error(errors.WrongTurn("x")), FailedPrecondition)
    assert isinstance(kit_error(errors.CubeNotAvailable("x")), FailedPrecondition)
    assert kit_error(errors.WrongTurn("exact words")).message == "exact words"


def test_the_settlement_figures_reach_both_end_events_and_survive_the_codecs() -> None:
    session = played_once(new_session(rules(Kind.MATCH, 3)))
    gone = domain.apply(session, Command(Action.DISCONNECT, 1), START, Seeds()).session
    figures = Figures("neural_net", "cubeful equity before the roll", 0, 2, 0.31, 0.64)
    command = Command(
        Action.SETTLE,
        1,
        shares=(Decimal("0.64"), Decimal("0.36")),
        analysed=True,
        figures=figures,
    )
    assert codec.command_from_state(codec.command_to_state(command)) == command
    step = domain.apply(gone, command, START + timedelta(minutes=5), Seeds())
    for event in step.facts:  # GameEnded, MatchEnded
        recorded = event.settlement  # type: ignore[attr-defined]
        assert (recorded.method, recorded.basis, recorded.plies) == (
            "neural_net",
            "cubeful equity before the roll",
            2,
        )
        assert recorded.cubeful_equity == 0.31 and recorded.match_winning_chance == 0.64
        assert recorded.on_roll_account_id == "acc-a"
    after = step.session
    stored = codec.session_from_state(
        after.game_id,
        after.version,
        after.status.value,
        START,
        codec.session_to_state(after),
        b"",
    )
    assert stored.last_outcome is not None and stored.last_outcome.figures == figures


def test_the_reconnect_window_is_the_tables_and_survives_the_codec() -> None:
    short = replace(rules(), reconnect_window=timedelta(seconds=2))
    session = played_once(new_session(short))
    gone = domain.apply(session, Command(Action.DISCONNECT, 1), START, Seeds()).session
    assert gone.presence[1].deadline == START + timedelta(seconds=2)
    assert domain.settles_by_shares(gone, 1, START + timedelta(seconds=2))
    assert not domain.settles_by_shares(gone, 1, START + timedelta(seconds=1))
    assert codec.rules_from_state(codec.rules_to_state(short)) == short
    # A session stored before the window was a setting had the house's five minutes.
    old = codec.rules_to_state(short)
    del old["reconnect_ms"]
    assert codec.rules_from_state(old).reconnect_window == timedelta(minutes=5)


def test_the_largest_loss_at_a_cube_past_int64_is_refused_not_overflowed() -> None:
    """A double at a stake near the limit: stake x cube x 3 is checked, never a 500."""
    near_the_limit = replace(rules(), stake_minor=2**63 // 4, currency="PLAY")
    session = new_session(near_the_limit)
    assert domain.cover_needed(session, 1) == 2**63 // 4 * 3
    with pytest.raises(AmountOutOfBounds, match="the largest loss at cube 2"):
        domain.cover_needed(session, 2)
    with pytest.raises(AmountOutOfBounds, match="the opening hold"):
        domain.opening_hold(replace(near_the_limit, stake_minor=2**63 // 2))


def test_a_tables_largest_loss_is_held_to_the_operators_bounds() -> None:
    bounds = MoneyBounds.defaults()
    assert domain.largest_loss(rules(), bounds) == 250 * 64 * 3
    assert domain.largest_loss(rules(Kind.MATCH, 5), bounds) == 250
    with pytest.raises(AmountOutOfBounds, match="TAVLA_MONEY_MAX_STAKE_PLAY"):
        domain.largest_loss(replace(rules(), stake_minor=3 * 10**18, currency="PLAY"), bounds)
    tight = MoneyBounds.from_env({"TAVLA_MONEY_MAX_TABLE_EXPOSURE_EUR": "3000"})
    assert domain.largest_loss(replace(rules(), cube_cap=4), tight) == 3000
    with pytest.raises(AmountOutOfBounds, match="TAVLA_MONEY_MAX_TABLE_EXPOSURE_EUR"):
        domain.largest_loss(replace(rules(), cube_cap=8), tight)


def test_a_rated_match_says_so_in_its_match_ended_and_survives_the_codec() -> None:
    table = replace(rules(Kind.MATCH, 3), rated=True)
    step = act(new_session(table), Action.LEAVE, player=0)
    ended = [f for f in step.facts if f.DESCRIPTOR.name == "MatchEnded"]
    assert len(ended) == 1 and ended[0].rated  # type: ignore[attr-defined]
    assert codec.rules_from_state(codec.rules_to_state(table)) == table
    # A session stored before rated tables were a rule was not rated.
    old = codec.rules_to_state(table)
    del old["rated"]
    assert codec.rules_from_state(old).rated is False


def test_only_a_match_may_be_rated() -> None:
    with pytest.raises(InvalidArgument, match="rated is a match option"):
        new_session(replace(rules(), rated=True))
