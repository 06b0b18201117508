"""Satellites as the service runs them: a Sit & Go or a scheduled event whose tickets are
won by the best whole finishes as soon as no more players remain than tickets (the later
matches never played), and whose pool over whole tickets is paid in cash to the next
finish (the satellite remainder rule); figures worked by hand."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from services.tournaments import messages
from services.tournaments.domain import bracket as brackets
from services.tournaments.domain import lobby
from services.tournaments.domain.lobby import Entrant, Status, Ticket, Tournament
from services.tournaments.domain.prize_places import satellite_places
from services.tournaments.domain.prizes import (
    PrizeError,
    SatellitePlan,
    TicketPrizes,
    remainder_cash,
    satellite_plan,
)
from services.tournaments.domain.rules import (
    InvalidRules,
    Rules,
    Scheduled,
    SitAndGo,
    validate_satellite_target,
)
from tavla.tournaments.v1 import tournaments_pb2

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


def test_tickets_are_won_only_once_no_more_players_remain_than_tickets() -> None:
    entrants = tuple(Entrant(name, "", "", NOW) for name in "abcd")
    drawn = Tournament("sat", "Satellite", satellite(250), SEED, NOW, entrants=entrants)
    tournament = lobby.close_registration(drawn)
    with pytest.raises(brackets.MatchNotInPlay):
        lobby.ticket_winners(tournament, TARGET)


def play(tournament: Tournament, *results: tuple[str, str]) -> Tournament:
    """``tournament`` after each (match id, winner) was played."""
    bracket = tournament.bracket
    assert bracket is not None
    for match_id, winner in results:
        bracket = brackets.start(bracket, match_id, f"g-{match_id}").bracket
        bracket = brackets.record_result(bracket, match_id, game_id=f"g-{match_id}",
                                         winner=winner).bracket  # fmt: skip
    return lobby.with_bracket(tournament, bracket)


def drawn(rules: Rules, order: str) -> Tournament:
    """A running tournament whose seating was drawn in ``order`` (one letter a player)."""
    entrants = tuple(Entrant(name, f"{name}-b", f"{name}-f", NOW) for name in order)
    return Tournament("sat", "Satellite", rules, SEED, NOW, status=Status.RUNNING,
                      entrants=entrants, bracket=brackets.build(tuple(order)))  # fmt: skip


def ids(matches: tuple[brackets.Match, ...]) -> list[str]:
    return [match.id for match in matches]


def test_two_tickets_among_four_are_won_by_the_first_rounds_winners_without_a_final() -> None:
    # 4 x 500 = 2000 buys two tickets of 1000, nothing over: two players left win them, so
    # the 2-round bracket plays round 1 only (rounds played: 2 - log2(2) = 1).
    tournament = drawn(satellite(500), "abcd")  # r1m1 a-b, r1m2 c-d
    assert ids(lobby.matches_to_play(tournament, 1_000)) == ["r1m1", "r1m2"]
    tournament = play(tournament, ("r1m1", "b"))
    assert not lobby.prizes_due(tournament, 1_000)  # b, c and d are still in
    tournament = play(tournament, ("r1m2", "c"))
    assert tournament.bracket is not None
    assert ids(tournament.bracket.ready()) == ["r2m1"]  # the final could be played ...
    assert lobby.matches_to_play(tournament, 1_000) == ()  # ... and is not
    assert lobby.prizes_due(tournament, 1_000)
    # Equal tickets, best first and in the drawn order within the shared 1st-2nd place.
    assert lobby.satellite_prizes(tournament, TARGET) == (("b", "c"), {})


def test_two_tickets_among_eight_go_to_the_semi_final_winners() -> None:
    # 8 x 250 = 2000: two tickets of 1000, nothing over; 3 rounds, rounds played 3 - 1 = 2.
    tournament = drawn(satellite(250, seats=8), "abcdefgh")
    tournament = play(tournament, ("r1m1", "a"), ("r1m2", "d"), ("r1m3", "e"), ("r1m4", "h"))
    assert ids(lobby.matches_to_play(tournament, 1_000)) == ["r2m1", "r2m2"]
    tournament = play(tournament, ("r2m1", "d"))
    assert not lobby.prizes_due(tournament, 1_000)
    tournament = play(tournament, ("r2m2", "e"))
    assert lobby.matches_to_play(tournament, 1_000) == ()
    assert lobby.satellite_prizes(tournament, TARGET) == (("d", "e"), {})


def test_one_ticket_is_still_won_by_playing_the_final() -> None:
    # 4 x 250 = 1000: one ticket; rounds played 2 - log2(1) = 2, the final included.
    tournament = play(drawn(satellite(250), "abcd"), ("r1m1", "a"), ("r1m2", "c"))
    assert ids(lobby.matches_to_play(tournament, 1_000)) == ["r2m1"]
    assert not lobby.prizes_due(tournament, 1_000)


def test_a_cash_tournament_plays_every_round() -> None:
    rules = Rules(SitAndGo(4), (1,), "blitz", "USD", 500, 10, "standard")
    tournament = play(drawn(rules, "abcd"), ("r1m1", "a"), ("r1m2", "c"))
    assert ids(lobby.matches_to_play(tournament)) == ["r2m1"]
    assert not lobby.prizes_due(tournament)


def scheduled_satellite(buy_in: int, minimum: int = 4, maximum: int = 8) -> Rules:
    start = Scheduled(NOW + timedelta(hours=2), NOW, NOW + timedelta(hours=1), minimum, maximum)
    return Rules(start, (1,), "blitz", "USD", buy_in, 10, "tickets",
                 target_tournament_id="target", ticket_value=1_000)  # fmt: skip


def test_a_scheduled_satellite_is_settled_by_its_drawn_field_the_units_left_to_the_first() -> (
    None
):
    # Five entrants at 4.55: a pool of 22.75 buys two tickets of 10.00 (three would split the
    # semi-final losers: a field of 5 pays whole finishes of 1, 2 or 4), leaving 2.75.
    # A bracket of 8 (3 rounds) with byes for a, b and c: rounds played 3 - 1 = 2.
    # The next finish, the semi-final losers (places 3-4), share 275: floor(275 / 2) = 137
    # each; 275 - 2 x 137 = 1 unit does not divide and goes to 1st place, shared by the two
    # ticket winners: the first of them in the drawn order takes it.
    # Check: 2 x 1000 + 137 + 137 + 1 = 2275.
    tournament = drawn(scheduled_satellite(455, minimum=4), "abcde")
    assert satellite_plan(tournament.prize_pool, 1_000, 5) == SatellitePlan(
        5, TicketPrizes(2, 1_000, 275), 2, 3, 4, 137, 1
    )
    # r1m1-r1m3 are byes; r1m4 d-e and r2m1 a-b are ready; r2m2 waits for r1m4's winner.
    assert ids(lobby.matches_to_play(tournament, 1_000)) == ["r1m4", "r2m1"]
    tournament = play(tournament, ("r1m4", "e"), ("r2m1", "b"), ("r2m2", "c"))
    assert lobby.matches_to_play(tournament, 1_000) == ()  # the final b-c is not played
    winners, cash = lobby.satellite_prizes(tournament, TARGET)
    assert winners == ("b", "c")
    assert cash == {"a": 137, "e": 137, "b": 1}
    assert 2 * 1_000 + sum(cash.values()) == 2_275


def test_satellite_plans_by_hand() -> None:
    # 4 x 300 = 1200 at 1000: one ticket, every round played (2), 200 to the runner-up.
    assert satellite_plan(1_200, 1_000, 4) == SatellitePlan(
        4, TicketPrizes(1, 1_000, 200), 2, 2, 2, 200, 0
    )
    # 1000 at 220 among 16: four tickets (880), the quarter-finals decide them (rounds
    # played 4 - 2 = 2), 120 over shared by the 4 quarter-final losers (5-8): 30 each.
    assert satellite_plan(1_000, 220, 16) == SatellitePlan(
        16, TicketPrizes(4, 220, 120), 2, 5, 8, 30, 0
    )
    # 7 x 300 = 2100 at 1000 among 7: two tickets, 100 over for places 3-4, 50 each.
    assert satellite_plan(2_100, 1_000, 7) == SatellitePlan(
        7, TicketPrizes(2, 1_000, 100), 2, 3, 4, 50, 0
    )
    with pytest.raises(PrizeError, match="buys no ticket"):
        satellite_plan(999, 1_000, 4)


def test_a_scheduled_satellite_shows_its_tickets_for_its_field_so_far_or_its_minimum() -> None:
    rules = scheduled_satellite(300, minimum=4)
    tournament = Tournament("sat", "Satellite", rules, SEED, NOW)
    for name in "ab":
        tournament = lobby.register(tournament, Entrant(name, "", "", NOW), NOW)
    # Two entrants so far, shown for the minimum of 4: 1200 buys one ticket, 200 over.
    assert satellite_places(tournament) == satellite_plan(1_200, 1_000, 4)
    for name in "cdefg":
        tournament = lobby.register(tournament, Entrant(name, "", "", NOW), NOW)
    # Seven: 2100 buys two tickets (places 1-2), 100 over, 50 to each of places 3-4.
    shown = messages.tournament_message(tournament).satellite_prizes
    assert (shown.tickets, shown.ticket_value.minor_units, shown.rounds_played) == (2, 1_000, 2)
    assert (shown.remainder.minor_units, shown.remainder_each.minor_units) == (100, 50)
    assert (shown.remainder_best_place, shown.remainder_worst_place) == (3, 4)
    cash = Rules(SitAndGo(4), (1,), "blitz", "USD", 500, 10, "standard")
    assert satellite_places(Tournament("c", "Cash", cash, SEED, NOW)) is None


def test_a_finished_satellites_unplayed_matches_show_as_not_played() -> None:
    tournament = play(drawn(satellite(500), "abcd"), ("r1m1", "a"), ("r1m2", "c"))
    shown = messages.tournament_message(lobby.finished(tournament, NOW))
    states = {match.match_id: match.state for match in shown.bracket}
    assert states == {
        "r1m1": tournaments_pb2.MATCH_STATE_FINISHED,
        "r1m2": tournaments_pb2.MATCH_STATE_FINISHED,
        "r2m1": tournaments_pb2.MATCH_STATE_NOT_PLAYED,
    }


def test_a_scheduled_satellite_is_checked_against_its_target() -> None:
    target_start = Scheduled(NOW + timedelta(hours=5), NOW, NOW + timedelta(hours=4), 2, 64)
    target = Rules(target_start, (3,), "blitz", "USD", 900, 100, "standard")
    validate_satellite_target(scheduled_satellite(250), "target", target)  # 4 x 250 buys one
    with pytest.raises(InvalidRules, match="smallest field"):  # 3 x 250 = 750 buys none
        validate_satellite_target(scheduled_satellite(250, minimum=3), "target", target)
    closes_early = replace(target_start, registration_closes_at=NOW + timedelta(hours=2))
    late = replace(target, start=closes_early)
    with pytest.raises(InvalidRules, match="could never be used"):
        validate_satellite_target(scheduled_satellite(250), "target", late)
    with pytest.raises(InvalidRules, match="worth the target's buy-in plus fee"):
        validate_satellite_target(replace(scheduled_satellite(250), ticket_value=999), "target",
                                  target)  # fmt: skip


def test_only_a_satellite_states_a_ticket_value() -> None:
    with pytest.raises(InvalidRules, match="only a satellite"):
        Rules(SitAndGo(4), (1,), "blitz", "USD", 500, 10, "standard", ticket_value=1_000)


def test_a_ticket_enters_its_holder_with_its_own_holds() -> None:
    ticket = Ticket("sat", "c", "target", 1_000, "hold-b", "hold-f")
    assert ticket.entrant(NOW) == Entrant("c", "hold-b", "hold-f", NOW)
