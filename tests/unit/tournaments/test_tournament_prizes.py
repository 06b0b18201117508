"""Prize tables, cash payouts and satellite tickets, against payouts worked by hand.

The remainder rule (services/tournaments/domain/prizes.py): each paid place wins
floor(pool x share / 10000); the units left over go to 1st place.
"""

from __future__ import annotations

import pytest

from services.kit.money_bounds import INT64_MAX
from services.tournaments.domain.field import MAX_FIELD, finishing_tiers
from services.tournaments.domain.prizes import (
    PRIZE_TABLES,
    PrizeError,
    PrizeTable,
    TicketPrizes,
    cash_payouts,
    prize_table,
    ticket_prizes,
)

STANDARD = prize_table("standard")


def test_eight_seats_of_1000_at_65_35() -> None:
    # 8 x 1000 = 8000: 65% = 5200, 35% = 2800, nothing left over.
    assert cash_payouts(8000, STANDARD, 8) == (5200, 2800)


def test_an_odd_pool_at_65_35_gives_the_leftover_unit_to_the_winner() -> None:
    # 1001 x 0.65 = 650.65 -> 650; 1001 x 0.35 = 350.35 -> 350; 1001 - 1000 = 1 to 1st.
    assert cash_payouts(1001, STANDARD, 8) == (651, 350)


def test_four_seats_at_70_30() -> None:
    # 999 x 0.70 = 699.3 -> 699; 999 x 0.30 = 299.7 -> 299; 1 left over to 1st.
    assert cash_payouts(999, STANDARD, 4) == (700, 299)


def test_sixteen_seats_pay_the_semi_final_losers_alike() -> None:
    # 1003 x 50% = 501.5 -> 501; x 25% = 250.75 -> 250; x 12.5% = 125.375 -> 125 (twice);
    # 501 + 250 + 125 + 125 = 1001, so 2 units go to 1st.
    assert cash_payouts(1003, STANDARD, 16) == (503, 250, 125, 125)


def test_thirty_two_seats() -> None:
    # 3207 x 40% = 1282.8 -> 1282; x 20% = 641.4 -> 641; x 10% = 320.7 -> 320 (x2);
    # x 5% = 160.35 -> 160 (x4); 1282 + 641 + 640 + 640 = 3203, 4 units to 1st.
    assert cash_payouts(3207, STANDARD, 32) == (1286, 641, 320, 320, 160, 160, 160, 160)


def test_a_field_is_paid_by_its_brackets_row() -> None:
    # 5 entrants play in an 8-slot bracket, 3 in a 4-slot one, 2 in a 2-slot one.
    assert cash_payouts(1000, STANDARD, 5) == (650, 350)
    assert cash_payouts(1000, STANDARD, 3) == (700, 300)
    assert cash_payouts(1000, STANDARD, 2) == (1000,)
    assert cash_payouts(1000, prize_table("winner-takes-all"), 600) == (1000,)


def test_the_largest_pool_the_ledger_holds_is_paid_without_overflow() -> None:
    # (2^63 - 1) x 0.65 = 5995191823955604274.55 -> ...274; x 0.35 -> 3228180212899171532;
    # their sum is one unit short of the pool, which goes to 1st.
    assert cash_payouts(INT64_MAX, STANDARD, 8) == (5995191823955604275, 3228180212899171532)


def test_an_empty_pool_pays_nothing() -> None:
    assert cash_payouts(0, STANDARD, 16) == (0, 0, 0, 0)


@pytest.mark.parametrize("pool", [-1, INT64_MAX + 1, True, 10.5])
def test_a_pool_outside_the_ledgers_range_is_refused(pool: object) -> None:
    with pytest.raises(PrizeError, match="prize pool"):
        cash_payouts(pool, STANDARD, 8)  # type: ignore[arg-type]


@pytest.mark.parametrize("field", [0, 1, MAX_FIELD + 1])
def test_a_field_outside_a_knockout_is_refused(field: int) -> None:
    with pytest.raises(PrizeError, match="2 to 1024 entrants"):
        cash_payouts(1000, STANDARD, field)


def test_an_unknown_table_names_the_published_ones() -> None:
    with pytest.raises(PrizeError, match="the cash tables are standard, winner-takes-all"):
        prize_table("65-35")


def test_a_table_without_a_row_for_the_field_says_which_it_has() -> None:
    table = PrizeTable("eights", "8 only", {8: (6_500, 3_500)})
    with pytest.raises(PrizeError, match=r"no row for 12 entrants .* brackets of 8"):
        table.shares(12)


@pytest.mark.parametrize(
    ("rows", "reason"),
    [
        ({8: (6_500, 3_000)}, "sum to 9500"),
        ({8: (3_500, 6_500)}, "never wins less"),
        ({16: (5_000, 2_500, 1_500, 1_000)}, "places 3-4 are shared"),
        ({8: (5_000, 3_000, 2_000)}, "pays 3 places"),
        ({4: (5_000, 3_000, 1_000, 1_000)}, "pays 4 places"),  # past half the bracket
        ({6: (10_000,)}, "power of two"),
        ({8: (10_000, 0)}, "positive share"),
    ],
)
def test_an_unpayable_table_is_refused_when_made(
    rows: dict[int, tuple[int, ...]], reason: str
) -> None:
    with pytest.raises(ValueError, match=reason):
        PrizeTable("bad", "", rows)


@pytest.mark.parametrize("name", sorted(PRIZE_TABLES))
def test_every_published_table_pays_every_field_exactly_and_ties_alike(name: str) -> None:
    table = PRIZE_TABLES[name]
    for field in range(2, MAX_FIELD + 1):
        for pool in (0, 1, 999_999, 10**12 + 7):
            amounts = cash_payouts(pool, table, field)
            assert sum(amounts) == pool
            for best, worst in finishing_tiers(field):
                assert len(set(amounts[best - 1 : worst])) <= 1


def test_satellite_tickets_go_to_whole_finishes() -> None:
    # 1000 buys 4 tickets of 220 (880); 4 is a whole finish (the semi-finalists);
    # 1000 - 880 = 120 is left over (cash to the next finish: the remainder rule).
    assert ticket_prizes(1000, 220, 16) == TicketPrizes(4, 220, 120)
    # 700 buys 3 tickets, but 3 would split the semi-final losers: 2 tickets (440),
    # 700 - 440 = 260 left over.
    assert ticket_prizes(700, 220, 16) == TicketPrizes(2, 220, 260)
    # 5 entrants, 1000 buys 4: the four players of round 2 (an 8-slot bracket).
    assert ticket_prizes(1000, 220, 5) == TicketPrizes(4, 220, 120)
    # An exact pool: 8 x 55 = 440 buys 2 tickets, nothing left.
    assert ticket_prizes(440, 220, 8) == TicketPrizes(2, 220, 0)


def test_a_pool_below_one_ticket_is_left_over_whole() -> None:
    assert ticket_prizes(100, 220, 4) == TicketPrizes(0, 220, 100)


def test_a_ticket_to_a_free_target_is_refused() -> None:
    with pytest.raises(PrizeError, match="must have a buy-in"):
        ticket_prizes(1000, 0, 8)
