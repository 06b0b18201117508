"""One auto-match wave: optimal against brute force, never an inadmissible pair, deterministic.

Expected values come from hand-worked examples or from ``pairing_oracle``, which
tries every matching and recomputes admissibility from the raw ticket fields.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from itertools import permutations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from services.matchmaking.domain.pairing import (
    NO_BONUS,
    ForbiddenPairs,
    Ticket,
    WaitingBonus,
    Wave,
    admissible,
    pair_wave,
)
from tests.unit.matchmaking.pairing_oracle import (
    Score,
    may_pair,
    optimum,
    short_run_optimum,
)

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def ticket(
    name: str,
    rating: float,
    accepts: float = 300.0,
    *,
    account: str | None = None,
    waited: float = 0.0,
) -> Ticket:
    return Ticket(
        ticket_id=name,
        account_id=account or f"account-{name}",
        rating=rating,
        max_rating_difference=accepts,
        entered_at=NOW - timedelta(seconds=waited),
    )


def pairs_of(wave: Wave) -> list[tuple[str, str]]:
    return [(pair.low.ticket_id, pair.high.ticket_id) for pair in wave.pairs]


def score(wave: Wave) -> Score:
    return (len(wave.pairs), -sum(pair.gap for pair in wave.pairs))


# Pools ------------------------------------------------------------------------------------------


@st.composite
def pools(
    draw: st.DrawFn, *, max_size: int, uniform: bool
) -> tuple[list[Ticket], WaitingBonus, frozenset[frozenset[str]]]:
    """Small pools with integer or half-point ratings, so every sum is exact.

    Uniform pools: one acceptance for all, no waiting bonus, one account each,
    nothing forbidden. Otherwise acceptances, waits, accounts (some shared) and
    forbidden pairs all vary.
    """
    size = draw(st.integers(0, max_size))
    ratings = draw(st.lists(st.integers(2800, 3400), min_size=size, max_size=size))
    if uniform:
        accepts = draw(st.sampled_from([0, 20, 60, 150, 300, 1000]))
        tickets = [ticket(f"t{i}", r / 2, accepts) for i, r in enumerate(ratings)]
        return tickets, NO_BONUS, frozenset()
    accounts = [f"a{draw(st.integers(0, size + 1))}" for _ in range(size)]
    tickets = [
        ticket(
            f"t{i}",
            r / 2,
            draw(st.sampled_from([0, 10, 30, 60, 100, 300])),
            account=accounts[i],
            waited=draw(st.integers(0, 120)),
        )
        for i, r in enumerate(ratings)
    ]
    bonus = WaitingBonus(draw(st.integers(0, 3)), draw(st.integers(0, 100)))
    named = sorted(set(accounts))
    forbidden: frozenset[frozenset[str]] = frozenset()
    if len(named) >= 2:
        chosen = draw(st.lists(st.tuples(st.sampled_from(named), st.sampled_from(named))))
        forbidden = frozenset(frozenset(p) for p in chosen if p[0] != p[1])
    return tickets, bonus, forbidden


def wave_for(
    tickets: Sequence[Ticket], bonus: WaitingBonus, forbidden: frozenset[frozenset[str]]
) -> Wave:
    return pair_wave(tickets, NOW, bonus=bonus, forbidden=rules_for(forbidden))


def rules_for(forbidden: frozenset[frozenset[str]]) -> ForbiddenPairs:
    return ForbiddenPairs((first, second) for first, second in map(sorted, forbidden))


# Against brute force ----------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(pools(max_size=11, uniform=True))
def test_a_uniform_pool_gets_the_true_optimum(
    pool: tuple[list[Ticket], WaitingBonus, frozenset[frozenset[str]]],
) -> None:
    """Same acceptance for all, nothing forbidden: most pairs, then least total gap, exactly."""
    tickets, bonus, forbidden = pool
    wave = wave_for(tickets, bonus, forbidden)
    assert score(wave) == optimum(tickets, NOW, 0.0, 0.0)


@settings(max_examples=300, deadline=None)
@given(pools(max_size=9, uniform=False))
def test_any_pool_gets_the_best_matching_in_runs_of_six(
    pool: tuple[list[Ticket], WaitingBonus, frozenset[frozenset[str]]],
) -> None:
    """The documented class: optimal among matchings splitting into runs of <= 6 by rating."""
    tickets, bonus, forbidden = pool
    rate, cap = bonus.points_per_second, bonus.cap
    wave = wave_for(tickets, bonus, forbidden)
    assert score(wave) == short_run_optimum(tickets, NOW, rate, cap, forbidden)
    assert score(wave) <= optimum(tickets, NOW, rate, cap, forbidden)


@settings(max_examples=300, deadline=None)
@given(pools(max_size=12, uniform=False))
def test_every_pair_is_admissible_and_every_ticket_is_used_once(
    pool: tuple[list[Ticket], WaitingBonus, frozenset[frozenset[str]]],
) -> None:
    tickets, bonus, forbidden = pool
    rate, cap = bonus.points_per_second, bonus.cap
    wave = wave_for(tickets, bonus, forbidden)
    lows = [(low.rating, low.ticket_id) for low, _ in wave.pairs]
    assert lows == sorted(lows)  # pairs in rating order
    for low, high in wave.pairs:
        assert low.rating <= high.rating
        assert low.account_id != high.account_id
        assert frozenset((low.account_id, high.account_id)) not in forbidden
        assert may_pair(low, high, NOW, rate, cap, forbidden)
    used = [t.ticket_id for pair in wave.pairs for t in pair] + [t.ticket_id for t in wave.unpaired]
    assert sorted(used) == sorted(t.ticket_id for t in tickets)


@settings(max_examples=200, deadline=None)
@given(pools(max_size=8, uniform=False))
def test_admissible_applies_the_rule_the_oracle_reads_in_the_docstring(
    pool: tuple[list[Ticket], WaitingBonus, frozenset[frozenset[str]]],
) -> None:
    tickets, bonus, forbidden = pool
    rules = rules_for(forbidden)
    for a in tickets:
        for b in tickets:
            if a is not b:
                expected = may_pair(a, b, NOW, bonus.points_per_second, bonus.cap, forbidden)
                assert admissible(a, b, NOW, bonus=bonus, forbidden=rules) is expected


@settings(max_examples=200, deadline=None)
@given(pools(max_size=12, uniform=False), st.data())
def test_the_order_of_the_pool_does_not_matter(
    pool: tuple[list[Ticket], WaitingBonus, frozenset[frozenset[str]]], data: st.DataObject
) -> None:
    tickets, bonus, forbidden = pool
    shuffled = data.draw(st.permutations(tickets))
    first = wave_for(tickets, bonus, forbidden)
    again = wave_for(shuffled, bonus, forbidden)
    assert pairs_of(again) == pairs_of(first)
    assert [t.ticket_id for t in again.unpaired] == [t.ticket_id for t in first.unpaired]


# Worked by hand ---------------------------------------------------------------------------------


def test_most_pairs_come_before_the_smallest_gap() -> None:
    # (b, c) alone has the smallest gap (10), but two pairs (gaps 100 and 90) beat one.
    tickets = [ticket("a", 1500), ticket("b", 1600), ticket("c", 1610), ticket("d", 1700)]
    wave = pair_wave(tickets, NOW, bonus=NO_BONUS)
    assert pairs_of(wave) == [("a", "b"), ("c", "d")]


def test_neighbours_are_paired_in_a_uniform_pool() -> None:
    tickets = [ticket(name, r) for name, r in [("a", 1400), ("b", 1450), ("c", 1460), ("d", 1700)]]
    # (a, b) + (c, d) = 50 + 240 = 290 is the least total gap with two pairs
    # ((a, c) + (b, d) = 310, (a, d) + (b, c) = 310).
    assert pairs_of(pair_wave(tickets, NOW, bonus=NO_BONUS)) == [("a", "b"), ("c", "d")]


def test_a_forbidden_pair_is_never_paired_even_when_alone() -> None:
    tickets = [ticket("a", 1500, account="ann"), ticket("b", 1500, account="bob")]
    wave = pair_wave(tickets, NOW, bonus=NO_BONUS, forbidden=ForbiddenPairs([("bob", "ann")]))
    assert wave.pairs == ()
    assert {t.ticket_id for t in wave.unpaired} == {"a", "b"}


def test_an_account_is_never_paired_with_itself() -> None:
    tickets = [ticket("a", 1500, account="ann"), ticket("b", 1501, account="ann")]
    assert pair_wave(tickets, NOW, bonus=NO_BONUS).pairs == ()
    # With a third player, ann's closer ticket plays him; her other ticket waits.
    tickets.append(ticket("c", 1502, account="cem"))
    wave = pair_wave(tickets, NOW, bonus=NO_BONUS)
    assert pairs_of(wave) == [("b", "c")]


def test_forbidden_neighbours_are_paired_across_crossing() -> None:
    # a-b and c-d are forbidden, and so is a-d: only (a, c) + (b, d) gives two pairs.
    names = {"a": 1500, "b": 1510, "c": 1520, "d": 1530}
    tickets = [ticket(name, r, account=name) for name, r in names.items()]
    forbidden = ForbiddenPairs([("a", "b"), ("c", "d"), ("a", "d")])
    wave = pair_wave(tickets, NOW, bonus=NO_BONUS, forbidden=forbidden)
    assert sorted(pairs_of(wave)) == [("a", "c"), ("b", "d")]


def test_forbidden_neighbours_are_paired_across_nesting() -> None:
    # a-b, c-d and a-c are forbidden: only (a, d) + (b, c) gives two pairs.
    names = {"a": 1500, "b": 1510, "c": 1520, "d": 1530}
    tickets = [ticket(name, r, account=name) for name, r in names.items()]
    forbidden = ForbiddenPairs([("a", "b"), ("c", "d"), ("a", "c")])
    wave = pair_wave(tickets, NOW, bonus=NO_BONUS, forbidden=forbidden)
    assert sorted(pairs_of(wave)) == [("a", "d"), ("b", "c")]


def test_a_gap_exactly_what_a_ticket_accepts_counts_on_both_sides_of_a_run() -> None:
    # a accepts 10 and is forbidden with b: only (a, c) at exactly 10 (c ties b at 1510,
    # ordered after it by id) with (b, d) makes two pairs.
    tickets = [
        ticket("a", 1500, 10, account="a"),
        ticket("b", 1510, account="b"),
        ticket("c", 1510, account="c"),
        ticket("d", 1515, account="d"),
    ]
    wave = pair_wave(tickets, NOW, bonus=NO_BONUS, forbidden=ForbiddenPairs([("a", "b")]))
    assert pairs_of(wave) == [("a", "c"), ("b", "d")]
    # The mirror image: d accepts 10 and is forbidden with c; only (b, d) at exactly 10 does.
    tickets = [
        ticket("a", 1500, account="a"),
        ticket("b", 1505, account="b"),
        ticket("c", 1505, account="c"),
        ticket("d", 1515, 10, account="d"),
    ]
    wave = pair_wave(tickets, NOW, bonus=NO_BONUS, forbidden=ForbiddenPairs([("c", "d")]))
    assert pairs_of(wave) == [("a", "c"), ("b", "d")]


def test_a_wide_ticket_reaches_over_three_narrow_ones() -> None:
    # x and y accept 300, n1-n3 only 5: n1 and n2 (4 apart) pair, n3 has nobody, and
    # x's only partner is y, four places on (a run of five).
    tickets = [
        ticket("x", 1500),
        ticket("n1", 1550, 5),
        ticket("n2", 1554, 5),
        ticket("n3", 1600, 5),
        ticket("y", 1700),
    ]
    wave = pair_wave(tickets, NOW, bonus=NO_BONUS)
    assert pairs_of(wave) == [("x", "y"), ("n1", "n2")]
    assert [t.ticket_id for t in wave.unpaired] == ["n3"]


def test_a_narrow_ticket_in_between_is_skipped() -> None:
    # b accepts nothing but its own rating; a and c accept each other over it.
    tickets = [ticket("a", 1500), ticket("b", 1510, 0), ticket("c", 1540)]
    wave = pair_wave(tickets, NOW, bonus=NO_BONUS)
    assert pairs_of(wave) == [("a", "c")]
    assert [t.ticket_id for t in wave.unpaired] == ["b"]


def test_two_narrow_tickets_in_between_are_skipped() -> None:
    tickets = [ticket("a", 1500), ticket("b", 1505, 0), ticket("c", 1510, 0), ticket("d", 1520)]
    wave = pair_wave(tickets, NOW, bonus=NO_BONUS)
    assert pairs_of(wave) == [("a", "d")]
    assert [t.ticket_id for t in wave.unpaired] == ["b", "c"]


# The waiting bonus ------------------------------------------------------------------------------

BONUS = WaitingBonus(points_per_second=2.0, cap=300.0)


def test_the_waiting_bonus_admits_a_pair_after_enough_waiting_and_not_before() -> None:
    # Gap 200, each accepts 100: each needs +100, i.e. 50 s at 2 points a second.
    def wave_after(seconds: float) -> Wave:
        tickets = [ticket("a", 1500, 100, waited=seconds), ticket("b", 1700, 100, waited=seconds)]
        return pair_wave(tickets, NOW, bonus=BONUS)

    assert wave_after(0).pairs == ()
    assert wave_after(49.9).pairs == ()
    assert pairs_of(wave_after(50)) == [("a", "b")]


def test_both_tickets_must_have_waited_long_enough() -> None:
    # a has waited 60 s (accepts 220), b only 20 s (accepts 140): the gap of 200 needs both.
    a = ticket("a", 1500, 100, waited=60)
    assert pair_wave([a, ticket("b", 1700, 100, waited=20)], NOW, bonus=BONUS).pairs == ()
    later = pair_wave([a, ticket("b", 1700, 100, waited=50)], NOW, bonus=BONUS)
    assert pairs_of(later) == [("a", "b")]


def test_the_bonus_stops_at_its_cap() -> None:
    # 100 + 300 = 400 at most: a gap of 401 is never bridged, a gap of 400 is.
    far = [ticket("a", 1500, 100, waited=3600), ticket("b", 1901, 100, waited=3600)]
    assert pair_wave(far, NOW, bonus=BONUS).pairs == ()
    near = [ticket("a", 1500, 100, waited=3600), ticket("b", 1900, 100, waited=3600)]
    assert len(pair_wave(near, NOW, bonus=BONUS).pairs) == 1


def test_a_ticket_stamped_after_now_has_waited_nothing() -> None:
    # Replicas' clocks differ a little: a future entry time gives no bonus, not a negative one.
    tickets = [ticket("a", 1500, 100, waited=-30), ticket("b", 1600, 100, waited=-30)]
    assert len(pair_wave(tickets, NOW, bonus=BONUS).pairs) == 1


# Determinism and bad input ----------------------------------------------------------------------


def test_equal_ratings_give_the_same_wave_in_every_order() -> None:
    # Three equal ratings: three optimal waves; the ticket ids decide which, not the order.
    tickets = [ticket(name, 1500) for name in ("a", "b", "c")]
    waves = {
        (tuple(pairs_of(wave)), tuple(t.ticket_id for t in wave.unpaired))
        for wave in (pair_wave(order, NOW, bonus=NO_BONUS) for order in permutations(tickets))
    }
    assert len(waves) == 1


def test_an_empty_pool_and_a_single_ticket_make_no_pairs() -> None:
    assert pair_wave([], NOW) == Wave((), ())
    alone = ticket("a", 1500)
    assert pair_wave([alone], NOW) == Wave((), (alone,))


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"rating": float("nan")}, "rating must be a finite number"),
        ({"max_rating_difference": -1.0}, "max_rating_difference must be a finite number >= 0"),
        ({"entered_at": datetime(2026, 12, 1)}, "entered_at must be timezone-aware"),
        ({"account_id": ""}, "needs a ticket id and an account id"),
    ],
)
def test_a_bad_ticket_is_refused_with_its_reason(fields: dict[str, object], message: str) -> None:
    values: dict[str, object] = {
        "ticket_id": "t",
        "account_id": "ann",
        "rating": 1500.0,
        "max_rating_difference": 300.0,
        "entered_at": NOW,
    }
    values.update(fields)
    with pytest.raises(ValueError, match=message):
        Ticket(**values)  # type: ignore[arg-type]


def test_a_pool_with_a_ticket_twice_or_a_naive_time_is_refused() -> None:
    with pytest.raises(ValueError, match="ticket id appears twice"):
        pair_wave([ticket("a", 1500), ticket("a", 1600)], NOW)
    with pytest.raises(ValueError, match="now must be timezone-aware"):
        pair_wave([ticket("a", 1500)], datetime(2026, 12, 1))
    with pytest.raises(ValueError, match="points_per_second must be a finite number >= 0"):
        WaitingBonus(points_per_second=-1.0)
