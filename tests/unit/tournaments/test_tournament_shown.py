"""The lobby's polls of an unchanged tournament reuse the message built for it
(``api.Shown``): the store hands out one aggregate object per stored version; a changed
one is built again, reusing its unchanged parts' messages, to the same message."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from services.tournaments import messages
from services.tournaments.api import Shown
from services.tournaments.domain import bracket as brackets
from services.tournaments.domain import lobby
from services.tournaments.domain.lobby import Entrant, Tournament
from services.tournaments.domain.rules import Rules, SitAndGo
from tavla.tournaments.v1 import tournaments_pb2

NOW = datetime(2026, 12, 5, 14, 0, tzinfo=UTC)


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
