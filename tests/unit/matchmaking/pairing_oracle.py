"""Brute-force optimum of one pairing wave: the independent program the wave is checked against.

Written from the rules in ``services/matchmaking/domain/pairing.py``'s docstring,
not from its code: admissibility is recomputed here from the raw ticket fields,
and the optimum (most pairs, then least total gap) is found by trying every
matching. Tests feed it integer (or half-point) ratings, acceptances and waits,
so every float here is exact and totals compare with ``==``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from functools import cache

from services.matchmaking.domain.pairing import Ticket

Score = tuple[int, float]  # (pairs, -total gap): larger is better
Matching = tuple[tuple[int, int], ...]


def accepts_now(ticket: Ticket, now: datetime, per_second: float, cap: float) -> float:
    waited = max(0.0, (now - ticket.entered_at).total_seconds())
    return ticket.max_rating_difference + min(cap, per_second * waited)


def may_pair(
    a: Ticket,
    b: Ticket,
    now: datetime,
    per_second: float,
    cap: float,
    forbidden: frozenset[frozenset[str]],
) -> bool:
    gap = abs(a.rating - b.rating)
    return (
        a.account_id != b.account_id
        and frozenset((a.account_id, b.account_id)) not in forbidden
        and gap <= accepts_now(a, now, per_second, cap)
        and gap <= accepts_now(b, now, per_second, cap)
    )


def in_rating_order(tickets: Sequence[Ticket]) -> list[Ticket]:
    return sorted(tickets, key=lambda t: (t.rating, t.ticket_id))


def optimum(
    tickets: Sequence[Ticket],
    now: datetime,
    per_second: float,
    cap: float,
    forbidden: frozenset[frozenset[str]] = frozenset(),
) -> Score:
    """The best score over every matching (memoised over the set of tickets still free)."""
    n = len(tickets)

    @cache
    def best(free: int) -> Score:
        if free == 0:
            return (0, 0.0)
        i = (free & -free).bit_length() - 1
        rest = free & ~(1 << i)
        result = best(rest)  # ticket i waits
        for j in range(n):
            if rest >> j & 1 and may_pair(tickets[i], tickets[j], now, per_second, cap, forbidden):
                pairs, minus_gap = best(rest & ~(1 << j))
                option = (pairs + 1, minus_gap - abs(tickets[i].rating - tickets[j].rating))
                result = max(result, option)
        return result

    return best((1 << n) - 1)


def matchings(n: int, allowed: Sequence[Sequence[bool]]) -> Iterator[Matching]:
    """Every matching of tickets ``0..n-1`` using only allowed pairs."""

    def extend(free: tuple[int, ...]) -> Iterator[Matching]:
        if not free:
            yield ()
            return
        first, rest = free[0], free[1:]
        yield from extend(rest)
        for k, other in enumerate(rest):
            if allowed[first][other]:
                for tail in extend(rest[:k] + rest[k + 1 :]):
                    yield ((first, other), *tail)

    yield from extend(tuple(range(n)))


def splits_into_short_runs(n: int, matching: Matching, longest: int) -> bool:
    """Whether no pair crosses the cuts that split ``0..n-1`` into runs of at most ``longest``."""
    crossed = [False] * (n + 1)  # crossed[c]: some pair has i < c <= j
    for i, j in matching:
        for cut in range(i + 1, j + 1):
            crossed[cut] = True
    last_cut = 0
    for cut in range(1, n + 1):
        if not crossed[cut] or cut == n:
            if cut - last_cut > longest:
                return False
            last_cut = cut
    return True


def short_run_optimum(
    tickets: Sequence[Ticket],
    now: datetime,
    per_second: float,
    cap: float,
    forbidden: frozenset[frozenset[str]] = frozenset(),
    longest: int = 6,
) -> Score:
    """The best score over matchings that split, in rating order, into runs of <= ``longest``."""
    ordered = in_rating_order(tickets)
    n = len(ordered)
    allowed = [[may_pair(a, b, now, per_second, cap, forbidden) for b in ordered] for a in ordered]
    best: Score = (0, 0.0)
    for matching in matchings(n, allowed):
        if splits_into_short_runs(n, matching, longest):
            gap = sum(ordered[j].rating - ordered[i].rating for i, j in matching)
            best = max(best, (len(matching), -gap))
    return best


def _measure_the_class_gap(pools: int = 2000, seed: int = 1) -> None:
    """How often the wave (best over runs of six) misses the true optimum on small pools.

    Run ``python -m tests.unit.matchmaking.pairing_oracle``; the matchmaking README quotes it.
    Two kinds of pools of 2-10 tickets, waits of 0-60 s, bonus 2/s capped at 300:

    - plausible: ratings N(1550, 150) in whole points, 30% of tickets accepting
      only 50-150 (the rest 300), one account each, a forbidden pair in 30%;
    - hostile: ratings uniform over 1400-1700, acceptances 0-100 (or 300),
      accounts shared at random, up to n random forbidden pairs.
    """
    import random
    from datetime import UTC, timedelta

    from services.matchmaking.domain.pairing import ForbiddenPairs, WaitingBonus, pair_wave

    rng = random.Random(seed)
    now = datetime(2026, 12, 1, tzinfo=UTC)
    bonus = WaitingBonus(2.0, 300.0)

    def plausible(size: int) -> tuple[list[Ticket], list[tuple[str, str]]]:
        tickets = [
            Ticket(
                f"t{i}",
                f"a{i}",
                float(round(rng.gauss(1550, 150))),
                300.0 if rng.random() < 0.7 else float(rng.choice([50, 100, 150])),
                now - timedelta(seconds=rng.randrange(0, 60)),
            )
            for i in range(size)
        ]
        forbidden = [("a0", "a1")] if rng.random() < 0.3 else []
        return tickets, forbidden

    def hostile(size: int) -> tuple[list[Ticket], list[tuple[str, str]]]:
        tickets = [
            Ticket(
                f"t{i}",
                f"a{rng.randrange(size + 2)}",
                float(rng.randrange(1400, 1700)),
                float(rng.choice([0, 20, 50, 100, 300])),
                now - timedelta(seconds=rng.randrange(0, 60)),
            )
            for i in range(size)
        ]
        accounts = sorted({t.account_id for t in tickets})
        if len(accounts) < 2:
            return tickets, []
        pairs = (rng.sample(accounts, 2) for _ in range(rng.randint(0, size)))
        return tickets, [(a, b) for a, b in pairs]

    for name, draw in (("plausible", plausible), ("hostile", hostile)):
        fewer_pairs = wider_gap = 0
        for _ in range(pools):
            tickets, pairs = draw(rng.randint(2, 10))
            forbidden = frozenset(frozenset(pair) for pair in pairs)
            wave = pair_wave(tickets, now, bonus=bonus, forbidden=ForbiddenPairs(pairs))
            got = (len(wave.pairs), -sum(pair.gap for pair in wave.pairs))
            best = optimum(tickets, now, bonus.points_per_second, bonus.cap, forbidden)
            fewer_pairs += got[0] < best[0]
            wider_gap += got[0] == best[0] and got[1] < best[1]
        print(
            f"{name}: {pools} pools, fewer pairs than the optimum in {fewer_pairs}, "
            f"as many pairs with a larger total gap in {wider_gap}"
        )


if __name__ == "__main__":
    _measure_the_class_gap()
