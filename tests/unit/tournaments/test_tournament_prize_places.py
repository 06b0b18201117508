"""What each finish wins, shown before a tournament is paid: the published tables' rows for
the field the tournament has or will have, worked by hand (services/tournaments/README.md,
"Prize tables and payouts"), and the API's form of them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from services.tournaments import messages
from services.tournaments.domain import bracket as brackets
from services.tournaments.domain import lobby
from services.tournaments.domain.lobby import Entrant, Tournament
from services.tournaments.domain.prize_places import PrizePlace, prize_field, prize_places
from services.tournaments.domain.rules import Kind, Rules, Scheduled, SitAndGo

NOW = datetime(2026, 12, 5, 14, 0, tzinfo=UTC)
SEED = bytes(range(32))


def sit_and_go(seats: int) -> Tournament:
    rules = Rules(SitAndGo(seats), (3, 5), "blitz", "USD", 1_001, 99, "standard")
    return Tournament("t-1", "Sit & Go", rules, SEED, NOW)


def scheduled() -> Tournament:
    start = Scheduled(
        starts_at=NOW + timedelta(hours=2),
        registration_opens_at=NOW - timedelta(hours=1),
        registration_closes_at=NOW + timedelta(hours=1),
        min_entrants=3,
        max_entrants=8,
    )
    rules = Rules(start, (1,), "standard", "EUR", 500, 50, "standard")
    return Tournament("t-2", "Evening", rules, SEED, NOW)


def with_entrants(tournament: Tournament, count: int) -> Tournament:
    for n in range(count):
        tournament = lobby.register(tournament, Entrant(f"p{n}", "b", "f", NOW), NOW)
    return tournament


def test_a_sit_and_go_shows_its_full_tables_prizes_from_the_start() -> None:
    # 8 x 10.01 = 80.08 at 65/35: 52.052 -> 52.05 and 28.028 -> 28.02, the cent left to 1st.
    empty = sit_and_go(8)
    assert prize_field(empty) == 8
    assert prize_places(empty) == (PrizePlace(1, 1, 6_500, 5_206), PrizePlace(2, 2, 3_500, 2_802))
    # 16 x 10.01 = 160.16 at 50/25/12.5/12.5: the semi-final losers share 3rd-4th.
    assert prize_places(sit_and_go(16)) == (
        PrizePlace(1, 1, 5_000, 8_008),
        PrizePlace(2, 2, 2_500, 4_004),
        PrizePlace(3, 4, 1_250, 2_002),
    )


def test_a_scheduled_event_shows_its_entrants_so_far_but_at_least_its_minimum() -> None:
    # Nobody yet: its minimum of 3 (a 4-slot bracket, 70/30) on 3 x 5.00 = 15.00.
    assert prize_field(scheduled()) == 3
    assert prize_places(scheduled()) == (PrizePlace(1, 1, 7_000, 1_050),
                                         PrizePlace(2, 2, 3_000, 450))
    # Five entrants: an 8-slot bracket, 65/35 on 25.00.
    five = with_entrants(scheduled(), 5)
    assert prize_field(five) == 5
    assert prize_places(five) == (PrizePlace(1, 1, 6_500, 1_625), PrizePlace(2, 2, 3_500, 875))


def test_a_satellite_shows_no_cash_places() -> None:
    rules = Rules(SitAndGo(4), (1,), "blitz", "USD", 100, 10, "tickets",
                  target_tournament_id="t-1")
    assert prize_places(Tournament("t-3", "Satellite", rules, SEED, NOW)) == ()


def test_the_api_carries_the_prize_places_with_their_field() -> None:
    shown = messages.tournament_message(sit_and_go(8))
    assert shown.prize_field == 8
    assert [(p.best_place, p.worst_place, p.share_basis_points, p.amount.minor_units,
             p.amount.currency) for p in shown.prize_places] == [
        (1, 1, 6_500, 5_206, "USD"), (2, 2, 3_500, 2_802, "USD")]


def test_the_house_money_added_is_part_of_the_pool_the_table_pays() -> None:
    # 8 x 10.01 + 10.01 added = 90.09 at 65/35: 58.5585 -> 58.55 and 31.5315 -> 31.53,
    # 0.01 left to 1st: 58.56 and 31.53.
    rules = Rules(SitAndGo(8), (3,), "blitz", "USD", 1_001, 99, "standard", added_prize=1_001)
    added = with_entrants(Tournament("t-3", "Added", rules, SEED, NOW), 8)
    assert added.prize_pool == 9_009
    assert prize_places(added) == (PrizePlace(1, 1, 6_500, 5_856), PrizePlace(2, 2, 3_500, 3_153))
    # A freeroll: no buy-in, no fee, 10.01 added among 16: 50/25/12.5/12.5 is 500.5 -> 500,
    # 250.25 -> 250, 125.125 -> 125 twice; 1 left to 1st: 5.01, 2.50, 1.25, 1.25.
    freeroll = Rules(SitAndGo(16), (1,), "blitz", "USD", 0, 0, "standard", added_prize=1_001)
    assert freeroll.kind is Kind.FREEROLL
    tournament = Tournament("t-4", "Freeroll", freeroll, SEED, NOW)
    assert tournament.prize_pool == 1_001
    assert prize_places(tournament) == (
        PrizePlace(1, 1, 5_000, 501),
        PrizePlace(2, 2, 2_500, 250),
        PrizePlace(3, 4, 1_250, 125),
    )


def test_a_freerolls_prizes_are_paid_from_the_whole_pool_at_the_final() -> None:
    # 4 entrants, 10.01 added, 70/30: 700.7 -> 700, 300.3 -> 300, the 1 left to 1st.
    rules = Rules(SitAndGo(4), (1,), "blitz", "PLAY", 0, 0, "standard", added_prize=1_001)
    tournament = lobby.close_registration(
        with_entrants(Tournament("t-5", "Freeroll", rules, SEED, NOW), 4)
    )
    bracket = tournament.bracket
    assert bracket is not None
    for match_id in ("r1m1", "r1m2", "r2m1"):
        top = brackets.order_of(bracket.match(match_id))[0]
        bracket = brackets.start(bracket, match_id, f"g-{match_id}").bracket
        bracket = brackets.record_result(
            bracket, match_id, game_id=f"g-{match_id}", winner=top
        ).bracket
    final = bracket.final
    awards = lobby.prizes(lobby.with_bracket(tournament, bracket))
    assert awards == {final.winner: 701, brackets.order_of(final)[1]: 300}
