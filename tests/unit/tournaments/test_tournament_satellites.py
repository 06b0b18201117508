"""Satellites as the service runs them: a Sit & Go whose tickets are won by the best whole
finishes once the final is won, and whose pool over whole tickets is paid in cash to the
next finish (the satellite remainder rule); figures worked by hand."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from services.tournaments.domain import bracket as brackets
from services.tournaments.domain import lobby
from services.tournaments.domain.lobby import Entrant, Ticket, Tournament
from services.tournaments.domain.prizes import remainder_cash
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
    lobby.require_sit_and_go_satellite(satellite(250))
    tournament = finished(satellite(250))
    assert tournament.bracket is not None
    assert lobby.ticket_winners(tournament, TARGET) == (tournament.bracket.champion,)


def test_a_pool_of_two_tickets_goes_to_both_finalists_best_first() -> None:
    # 4 x 500 = 2000 buys two tickets of 1000: the final's winner, then its loser.
    tournament = finished(satellite(500))
    assert tournament.bracket is not None
    final = tournament.bracket.final
    assert lobby.ticket_winners(tournament, TARGET) == (final.winner, brackets.order_of(final)[1])


def test_a_whole_pool_of_tickets_pays_no_cash() -> None:
    tournament = finished(satellite(500))  # 2000: two tickets of 1000, nothing over
    assert lobby.satellite_prizes(tournament, TARGET)[1] == {}


def test_what_one_ticket_leaves_is_the_runner_ups_in_cash() -> None:
    # 4 x 300 = 1200 buys one ticket of 1000 (the champion's) and leaves 200: the next
    # finish is 2nd, one player, who wins the 200 in cash.
    tournament = finished(satellite(300))
    assert tournament.bracket is not None
    final = tournament.bracket.final
    winners, cash = lobby.satellite_prizes(tournament, TARGET)
    assert winners == (final.winner,)
    assert cash == {brackets.order_of(final)[1]: 200}


def test_what_two_tickets_leave_is_shared_by_the_semi_final_losers() -> None:
    # 4 x 750 = 3000 buys three tickets, which would split the semi-final losers: the two
    # finalists win one each (2000) and the semi-final losers share 1000: 500 each.
    tournament = finished(satellite(750))
    assert tournament.bracket is not None
    winners, cash = lobby.satellite_prizes(tournament, TARGET)
    semi_losers = {
        player for match_id in ("r1m1", "r1m2")
        for player in brackets.order_of(tournament.bracket.match(match_id))
        if player not in winners
    }  # fmt: skip
    assert len(winners) == 2 and cash == {player: 500 for player in semi_losers}
    assert 2 * 1_000 + sum(cash.values()) == 3_000


def test_the_units_that_do_not_divide_go_to_first_place() -> None:
    # 201 over whole tickets among the 2 semi-final losers: 100 each, 1 to 1st.
    assert remainder_cash(201, 2) == (100, 1)
    assert remainder_cash(200, 1) == (200, 0)
    assert remainder_cash(0, 4) == (0, 0)
    assert remainder_cash(7, 0) == (0, 7)  # no finish below the tickets


def test_only_a_sit_and_go_satellite_is_run() -> None:
    start = Scheduled(NOW + timedelta(hours=2), NOW, NOW + timedelta(hours=1), 4, 8)
    scheduled = Rules(start, (1,), "blitz", "USD", 250, 0, "tickets", target_tournament_id="t")
    with pytest.raises(InvalidRules, match="a satellite is a Sit & Go"):
        lobby.require_sit_and_go_satellite(scheduled)


def test_tickets_are_won_only_once_the_final_is_won() -> None:
    entrants = tuple(Entrant(name, "", "", NOW) for name in "abcd")
    drawn = Tournament("sat", "Satellite", satellite(250), SEED, NOW, entrants=entrants)
    tournament = lobby.close_registration(drawn)
    with pytest.raises(brackets.MatchNotInPlay):
        lobby.ticket_winners(tournament, TARGET)


def test_a_ticket_enters_its_holder_with_its_own_holds() -> None:
    ticket = Ticket("sat", "c", "target", 1_000, "hold-b", "hold-f")
    assert ticket.entrant(NOW) == Entrant("c", "hold-b", "hold-f", NOW)
