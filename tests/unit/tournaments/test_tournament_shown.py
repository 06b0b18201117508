"""The lobby's polls of an unchanged tournament reuse the message built for it
(``shown.Shown``): the store hands out one aggregate object per stored version; a changed
one is built again, only its changed matches and their players' standings made anew, to
the message a full build gives."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from services.tournaments import messages
from services.tournaments.domain import bracket as brackets
from services.tournaments.domain import lobby
from services.tournaments.domain.lobby import Entrant, Tournament
from services.tournaments.domain.rules import Rules, SitAndGo
from services.tournaments.shown import Shown
from tavla.tournaments.v1 import tournaments_pb2

NOW = datetime(2026, 12, 5, 14, 0, tzinfo=UTC)
IN_PLAY = (brackets.MatchState.READY, brackets.MatchState.PLAYING)


def _drawn() -> Tournament:
    rules = Rules(SitAndGo(4), (1,), "blitz", "USD", 1_001, 99, "standard")
    tournament = Tournament("t-1", "Sit & Go 4", rules, bytes(range(32)), NOW)
    for name in ("a", "b", "c", "d"):
        tournament = lobby.register(tournament, Entrant(name, "h1", "h2", NOW), NOW)
    return lobby.close_registration(tournament)


def test_an_unchanged_tournament_is_shown_by_the_same_message() -> None:
    shown, tournament = Shown(), _drawn()
    first = shown.message(tournament, {})
    assert shown.message(tournament, {}) is first
    assert shown.message(tournament) is first  # a listing: no prizes yet either


def test_a_change_or_a_prize_builds_the_message_again() -> None:
    shown, tournament = Shown(), _drawn()
    first = shown.message(tournament)
    assert tournament.bracket is not None
    started = lobby.with_bracket(
        tournament, brackets.start(tournament.bracket, "r1m1", "g1").bracket
    )
    again = shown.message(started)
    assert again is not first and again.bracket[0].game_id == "g1"
    paid = shown.message(started, {"a": 2_803})
    assert [s.prize.minor_units for s in paid.standings if s.account_id == "a"] == [2_803]
    equal_but_new = replace(started)  # another version read back: built again, not trusted
    assert shown.message(equal_but_new) is not again


def test_a_message_built_again_after_each_change_is_the_one_built_from_scratch() -> None:
    """Reusing the unchanged matches' and standings' messages shows what a full build
    shows: after each game, each result, the finish and its prizes."""
    shown, tournament = Shown(), _drawn()
    steps = [tournament]
    tournament = lobby.started(tournament, NOW)
    for match_id in ("r1m1", "r1m2", "r2m1"):
        assert tournament.bracket is not None
        bracket = brackets.start(tournament.bracket, match_id, f"g-{match_id}").bracket
        steps.append(tournament := lobby.with_bracket(tournament, bracket))
        winner = brackets.order_of(bracket.match(match_id))[1]
        bracket = brackets.record_result(
            bracket, match_id, game_id=f"g-{match_id}", winner=winner
        ).bracket
        steps.append(tournament := lobby.with_bracket(tournament, bracket))
    steps.append(tournament := lobby.finished(tournament, NOW))
    for step in steps:
        assert shown.message(step) == messages.tournament_message(step)
    paid = {"a": 2_803, "b": 1_509}
    assert shown.message(tournament, paid) == messages.tournament_message(tournament, paid)
    assert shown.message(tournament, paid).bracket[-1].state == tournaments_pb2.MATCH_STATE_FINISHED


def _read_back(tournament: Tournament) -> Tournament:
    """The same state as another replica's read of the database gives it: equal, but
    every match a new object."""
    bracket = tournament.bracket
    assert bracket is not None
    rounds = tuple(tuple(replace(m) for m in matches) for matches in bracket.rounds)
    return replace(tournament, bracket=replace(bracket, rounds=rounds))


@pytest.mark.parametrize("seats", [2, 8, 32])
def test_after_any_change_the_view_shows_what_a_full_build_shows(seats: int) -> None:
    """Games, results and no-shows in a random order, some states read back from the
    database (equal, not the same objects), some polls skipped (several changes between
    two polls): each poll's message is the one built from scratch, standings in order."""
    rng = random.Random(seats)
    lengths = (1, 3)[: max(1, seats.bit_length() - 1)]  # at most one a round
    rules = Rules(SitAndGo(seats), lengths, "blitz", "USD", 1_001, 99, "standard")
    tournament = Tournament("t-2", "Sit & Go", rules, bytes(range(32)), NOW)
    for n in range(seats):
        tournament = lobby.register(tournament, Entrant(f"p{n}", "h1", "h2", NOW), NOW)
    tournament = lobby.started(lobby.close_registration(tournament), NOW)
    shown = Shown()
    assert tournament.bracket is not None
    while not tournament.bracket.finished:
        bracket = tournament.bracket
        match = rng.choice([m for m in bracket.matches() if m.state in IN_PLAY])
        players = brackets.order_of(match)
        if not match.game_id and rng.random() < 0.2:
            change = brackets.record_forfeit(
                bracket, match.id, loser=rng.choice(players), decision=brackets.Decision.NO_SHOW
            )
        elif not match.game_id:
            change = brackets.start(bracket, match.id, f"g-{match.id}")
        else:
            change = brackets.record_result(
                bracket, match.id, game_id=match.game_id, winner=rng.choice(players)
            )
        tournament = lobby.with_bracket(tournament, change.bracket)
        if rng.random() < 0.3:
            continue  # no poll of this state
        polled = _read_back(tournament) if rng.random() < 0.3 else tournament
        assert shown.message(polled) == messages.tournament_message(polled)
    tournament = lobby.finished(tournament, NOW)
    paid = {tournament.bracket.order[0]: 2_000}
    for polled in (tournament, _read_back(tournament)):
        assert shown.message(polled) == messages.tournament_message(polled)
        assert shown.message(polled, paid) == messages.tournament_message(polled, paid)
