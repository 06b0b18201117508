"""Satellites as the service runs them: a Sit & Go whose pool buys whole tickets, won by
the best whole finishes once the final is won; figures worked by hand."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from services.tournaments.domain import bracket as brackets
from services.tournaments.domain import lobby
from services.tournaments.domain.lobby import Entrant, Ticket, Tournament
from services.tournaments.domain.rules import InvalidRules, Rules, Scheduled, SitAndGo

NOW = datetime(2026, 12, 5, 14, 0, tzinfo=UTC)
SEED = bytes(range(32))
# The target: a buy-in of 900 and a fee of 100, so a ticket is worth 1000.
TARGET = Rules(SitAndGo(8), (3,), "blitz", "USD", 900, 100, "standard")


def satellite(buy_in: int, seats: int = 4) -> Rules:
    return Rules(SitAndGo(seats), (1,), "blitz", "USD", buy_in, 10, "tickets",
                 target_tournament_id="target")  # fmt: skip


def finished(rules: Rules) -> Tournament:
    """Four entrants a-d, every match won by its top seat."""
    tournament = Tournament("sat", "Satellite", rules, SEED, NOW)
    for name in "abcd":
        entrant = Entrant(name, f"{name}-buy-in", f"{name}-fee", NOW)
        tournament = lobby.register(tournament, entrant, NOW)
    tournament = lobby.close_registration(tournament)
    bracket = tournament.bracket
    assert bracket is not None
    for match_id in ("r1m1", "r1m2", "r2m1"):
        top = brackets.order_of(bracket.match(match_id))[0]
        bracket = brackets.start(bracket, match_id, f"g-{match_id}").bracket
        bracket = brackets.record_result(bracket, match_id, game_id=f"g-{match_id}",
                                         winner=top).bracket  # fmt: skip
    return lobby.with_bracket(tournament, bracket)


def test_a_pool_of_one_ticket_goes_to_the_winner() -> None:
    # 4 x 250 = 1000 buys exactly one ticket of 900 + 100: the champion's.
    lobby.require_whole_tickets(satellite(250), TARGET)
    tournament = finished(satellite(250))
    assert tournament.bracket is not None
    assert lobby.ticket_winners(tournament, TARGET) == (tournament.bracket.champion,)


def test_a_pool_of_two_tickets_goes_to_both_finalists_best_first() -> None:
    # 4 x 500 = 2000 buys two tickets of 1000: the final's winner, then its loser.
    tournament = finished(satellite(500))
    assert tournament.bracket is not None
    final = tournament.bracket.final
    assert lobby.ticket_winners(tournament, TARGET) == (final.winner, brackets.order_of(final)[1])


def test_a_pool_that_leaves_money_over_is_refused_at_creation() -> None:
    # 4 x 300 = 1200 buys one ticket and leaves 200; 4 x 750 = 3000 buys three, which
    # would split the semi-final losers, so two tickets and 1000 left.
    with pytest.raises(InvalidRules, match=r"\(1200\) buys 1 ticket\(s\) of 1000 with 200 left"):
        lobby.require_whole_tickets(satellite(300), TARGET)
    with pytest.raises(InvalidRules, match=r"\(3000\) buys 2 ticket\(s\) of 1000 with 1000 left"):
        lobby.require_whole_tickets(satellite(750), TARGET)


def test_only_a_sit_and_go_satellite_is_run() -> None:
    start = Scheduled(NOW + timedelta(hours=2), NOW, NOW + timedelta(hours=1), 4, 8)
    scheduled = Rules(start, (1,), "blitz", "USD", 250, 0, "tickets", target_tournament_id="t")
    with pytest.raises(InvalidRules, match="a satellite is a Sit & Go"):
        lobby.require_whole_tickets(scheduled, TARGET)


def test_tickets_are_won_only_once_the_final_is_won() -> None:
    entrants = tuple(Entrant(name, "", "", NOW) for name in "abcd")
    drawn = Tournament("sat", "Satellite", satellite(250), SEED, NOW, entrants=entrants)
    tournament = lobby.close_registration(drawn)
    with pytest.raises(brackets.MatchNotInPlay):
        lobby.ticket_winners(tournament, TARGET)


def test_a_ticket_enters_its_holder_with_its_own_holds() -> None:
    ticket = Ticket("sat", "c", "target", 1_000, "hold-b", "hold-f")
    assert ticket.entrant(NOW) == Entrant("c", "hold-b", "hold-f", NOW)
