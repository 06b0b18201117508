"""The lobby's polls of an unchanged tournament reuse the message built for it
(``api.Shown``): the store hands out one aggregate object per stored version."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from services.tournaments.api import Shown
from services.tournaments.domain import bracket as brackets
from services.tournaments.domain import lobby
from services.tournaments.domain.lobby import Entrant, Tournament
from services.tournaments.domain.rules import Rules, SitAndGo

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
