"""Auto-match pairing: one wave over one pool of compatible queue tickets.

Pure: the caller groups waiting tickets into pools (same kind, length, stake,
currency, options), passes one pool, the current time and the forbidden
account pairs, and gets back the pairs to seat and the tickets left waiting.

Rules
-----
- A ticket accepts, now, ``max_rating_difference + bonus(waited)`` points,
  where the waiting bonus (:class:`WaitingBonus`) is ``points_per_second``
  times the seconds since it entered the queue, capped at ``cap`` (defaults:
  2 points a second, at most +300 after 150 s).
- A pair is admissible when its rating gap is within (``<=``) what both
  tickets accept now, the two tickets belong to different accounts, and the
  two accounts are not a forbidden pair. Nothing else is ever paired.

Objective (lexicographic)
-------------------------
1. the most pairs; 2. among those, the least total rating gap; 3. ties go to
one fixed choice: tickets are ordered by (rating, ticket id), and the dynamic
programme below keeps the first best candidate in a fixed order, so the same
pool gives the same pairs in whatever order it is passed. Ratings and
acceptances are compared in millionths of a point (integers), so gap sums and
ties are exact.

Why sorting by rating solves it
-------------------------------
Number the tickets ``0..n-1`` by rating. Call a pool *uniform* when every
ticket accepts the same difference ``A`` now and no pair is forbidden or
shares an account: then ``(i, j)`` is admissible exactly when
``r_j - r_i <= A``. In a uniform pool some optimal matching pairs only sorted
neighbours ``(i, i+1)``. Take, among the optimal matchings, one with the least
total index span ``sum(j - i)``; it has neither of these:

- a pair ``(i, j)`` with an unpaired ticket ``k`` between: ``(i, k)`` is
  admissible (``r_k - r_i <= r_j - r_i <= A``), keeps the count, does not
  increase the gap, and has a smaller span;
- two pairs over ``a < b < c < d`` that cross ``(a, c), (b, d)`` or nest
  ``(a, d), (b, c)``: ``(a, b), (c, d)`` has each new gap at most an old one
  (so both admissible), a total gap no larger (``(r_b - r_a) + (r_d - r_c)``
  is below either old sum by ``2 (r_c - r_b)``), and a span smaller by
  ``2 (c - b)``.

So a ticket strictly between the ends of a pair would be paired (first
point), to a partner inside (nesting) or outside (crossing) that pair, which
the second point excludes: no ticket lies between, every pair is ``(i, i+1)``.
The best neighbour matching is a prefix recurrence, O(n) after the sort.

Per-ticket acceptance (the waiting bonus makes every ticket's differ), a
ticket of the same account, and forbidden pairs break those exchanges: the
neighbour may be inadmissible while a ticket one or two further is fine. The
wave therefore optimises exactly over a larger class: the matchings in which
the sorted order splits into runs of at most six consecutive tickets and no
pair leaves its run. With ``f[k]`` the best score of the first ``k`` tickets
when no pair crosses the boundary after ticket ``k-1``, the last run is
``k-1`` alone, the pair ``(k-2, k-1)``, or a run of 3 to 6 tickets paired in
a shape that no cut splits into shorter runs (1, 3, 7 and 23 such shapes,
listed at import): a pair over a narrow ticket, crossing ``(a, c), (b, d)``
or nesting ``(a, d), (b, c)`` around a forbidden neighbour pair, and so on.
A uniform pool's optimum is a neighbour matching, which is in the class, so
there the wave is the true optimum. Outside the class are optima that need a
run of seven or more. ``python -m tests.unit.matchmaking.pairing_oracle``
measures the miss against brute force on 2,000 pools of 2-10 tickets each:
none on plausible pools (30% of tickets accepting only 50-150, a forbidden
pair in 30% of pools), 34 with fewer pairs on hostile ones (acceptances down
to 0, shared accounts, up to n forbidden pairs). A ticket left out waits for
the next wave, where its bonus has grown.

A run scores ``M`` per ticket left out plus the gaps of its pairs, with ``M``
above any possible total gap, so minimising the score is the lexicographic
objective. A run whose neighbour pairs are all admissible never beats the
runs of one and two it splits into (the exchanges above only ever need
admissible neighbours), so longer runs are tried only when they hold an
inadmissible neighbour pair, and only from a first ticket, and up to a last
one, that can reach a partner: a dense pool runs at the cost of the
neighbour recurrence.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from operator import attrgetter
from typing import NamedTuple

# Ratings and acceptances become integers of this many units per point.
SCALE = 1_000_000
# What a ticket accepts before any waiting when the player named no limit.
DEFAULT_MAX_RATING_DIFFERENCE = 300.0

_INF = math.inf
_RATING = attrgetter("rating")
_TICKET_ID = attrgetter("ticket_id")
# The longest run of consecutive tickets (by rating) that one wave re-pairs within.
_RUN_LIMIT = 6


@dataclass(frozen=True, slots=True)
class Ticket:
    """A waiting queue ticket as pairing sees it."""

    ticket_id: str
    account_id: str
    rating: float
    # The widest rating difference the player accepts before any waiting bonus.
    max_rating_difference: float
    entered_at: datetime

    def __post_init__(self) -> None:
        if not self.ticket_id or not self.account_id:
            raise ValueError("a ticket needs a ticket id and an account id")
        if not math.isfinite(self.rating):
            raise ValueError(f"ticket {self.ticket_id}: rating must be a finite number")
        difference = self.max_rating_difference
        if not math.isfinite(difference) or difference < 0:
            raise ValueError(
                f"ticket {self.ticket_id}: max_rating_difference must be a finite number >= 0"
            )
        if self.entered_at.tzinfo is None:
            raise ValueError(f"ticket {self.ticket_id}: entered_at must be timezone-aware")


@dataclass(frozen=True, slots=True)
class WaitingBonus:
    """Points added to what a ticket accepts per second it has waited, up to ``cap``."""

    points_per_second: float = 2.0
    cap: float = 300.0

    def __post_init__(self) -> None:
        for name, value in (("points_per_second", self.points_per_second), ("cap", self.cap)):
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"waiting bonus {name} must be a finite number >= 0")

    def after(self, waited_seconds: float) -> float:
        """The bonus after ``waited_seconds`` (a ticket from the future has waited 0)."""
        return min(self.cap, self.points_per_second * max(0.0, waited_seconds))


DEFAULT_BONUS = WaitingBonus()
NO_BONUS = WaitingBonus(0.0, 0.0)


class Pair(NamedTuple):
    """Two tickets to seat together; ``low`` has the lower (or equal) rating."""

    low: Ticket
    high: Ticket

    @property
    def gap(self) -> float:
        return self.high.rating - self.low.rating


@dataclass(frozen=True, slots=True)
class Wave:
    """What one wave decided: pairs in rating order, and the tickets that wait on."""

    pairs: tuple[Pair, ...]
    unpaired: tuple[Ticket, ...]


class ForbiddenPairs:
    """Unordered account pairs that must never sit together (linked accounts, investigations)."""

    __slots__ = ("_partners",)

    def __init__(self, pairs: Iterable[tuple[str, str]] = ()) -> None:
        partners: dict[str, set[str]] = {}
        for first, second in pairs:
            partners.setdefault(first, set()).add(second)
            partners.setdefault(second, set()).add(first)
        self._partners: dict[str, frozenset[str]] = {
            account: frozenset(others) for account, others in partners.items()
        }

    def forbids(self, first: str, second: str) -> bool:
        others = self._partners.get(first)
        return others is not None and second in others

    def __bool__(self) -> bool:
        return bool(self._partners)


NOBODY_FORBIDDEN = ForbiddenPairs()


def acceptance(ticket: Ticket, now: datetime, bonus: WaitingBonus) -> float:
    """The widest rating difference ``ticket`` accepts at ``now``."""
    waited = (now - ticket.entered_at).total_seconds()
    return ticket.max_rating_difference + bonus.after(waited)


def admissible(
    first: Ticket,
    second: Ticket,
    now: datetime,
    *,
    bonus: WaitingBonus,
    forbidden: ForbiddenPairs = NOBODY_FORBIDDEN,
) -> bool:
    """May these two tickets be paired at ``now`` (the rule the wave applies)?"""
    if first.account_id == second.account_id:
        return False
    if forbidden.forbids(first.account_id, second.account_id):
        return False
    gap = _units(abs(first.rating - second.rating))
    return gap <= _units(acceptance(first, now, bonus)) and gap <= _units(
        acceptance(second, now, bonus)
    )


class _Shape(NamedTuple):
    """How a run of ``length`` consecutive tickets is paired: offsets in the run."""

    length: int
    pairs: tuple[tuple[int, int], ...]
    waiting: int


def _unsplittable_shapes(length: int) -> tuple[_Shape, ...]:
    """Every pairing of ``length`` tickets in a row that no cut splits into shorter runs.

    A cut before offset ``c`` splits a pairing unless some pair ``(a, b)`` has
    ``a < c <= b``; the others are the sum of shorter runs, tried already.
    """

    def pairings(free: tuple[int, ...]) -> list[tuple[tuple[int, int], ...]]:
        if not free:
            return [()]
        first, rest = free[0], free[1:]
        found = pairings(rest)
        for index, other in enumerate(rest):
            found += [
                ((first, other), *tail) for tail in pairings(rest[:index] + rest[index + 1 :])
            ]
        return found

    shapes = []
    for pairs in pairings(tuple(range(length))):
        if all(any(a < cut <= b for a, b in pairs) for cut in range(1, length)):
            shapes.append(_Shape(length, pairs, length - 2 * len(pairs)))
    return tuple(shapes)


_ALONE = _Shape(1, (), 1)
_NEIGHBOURS = _Shape(2, ((0, 1),), 0)
# Runs of 3 to _RUN_LIMIT tickets: 1, 3, 7 and 23 shapes.
_SHAPES = {length: _unsplittable_shapes(length) for length in range(3, _RUN_LIMIT + 1)}


def pair_wave(
    tickets: Sequence[Ticket],
    now: datetime,
    *,
    bonus: WaitingBonus = DEFAULT_BONUS,
    forbidden: ForbiddenPairs = NOBODY_FORBIDDEN,
) -> Wave:
    """One wave over one pool: the optimal pairs (see the module docstring) and the rest."""
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    if len({ticket.ticket_id for ticket in tickets}) != len(tickets):
        raise ValueError("a ticket id appears twice in the pool")
    ordered = _in_rating_order(tickets)
    pool = _Pool(ordered, now, bonus, forbidden)
    choices = pool.best_runs()
    return _collect(ordered, choices)


def _acceptances(ordered: Sequence[Ticket], now: datetime, bonus: WaitingBonus) -> list[int]:
    """``acceptance`` of every ticket in units, inlined: a large pool calls it 100,000 times."""
    per_second, cap = bonus.points_per_second, bonus.cap
    if per_second == 0.0 or cap == 0.0:
        return [round(t.max_rating_difference * SCALE) for t in ordered]
    return [
        round(
            (
                t.max_rating_difference
                + min(cap, per_second * max(0.0, (now - t.entered_at).total_seconds()))
            )
            * SCALE
        )
        for t in ordered
    ]


def _in_rating_order(tickets: Sequence[Ticket]) -> list[Ticket]:
    """By rating, equal ratings by ticket id, so the order tickets come in never matters.

    One sort on the float alone, then each run of equal ratings by id: a key
    of (rating, id) tuples costs twice as much, and equal ratings are rare.
    """
    ordered = sorted(tickets, key=_RATING)
    start = 0
    for end in range(1, len(ordered) + 1):
        if end == len(ordered) or ordered[end].rating != ordered[start].rating:
            if end - start > 1:
                ordered[start:end] = sorted(ordered[start:end], key=_TICKET_ID)
            start = end
    return ordered


def _units(points: float) -> int:
    return round(points * SCALE)


class _Pool:
    """The sorted pool in integer units, and the recurrence over its prefixes."""

    def __init__(
        self,
        ordered: Sequence[Ticket],
        now: datetime,
        bonus: WaitingBonus,
        forbidden: ForbiddenPairs,
    ) -> None:
        self.ratings = [round(ticket.rating * SCALE) for ticket in ordered]
        self.accepts = _acceptances(ordered, now, bonus)
        self.accounts = [ticket.account_id for ticket in ordered]
        self.forbidden = forbidden
        # Neighbour gaps, or infinity where the neighbours may not be paired.
        self.next_gap = self._neighbour_gaps()
        # Gaps looked up around inadmissible neighbours, where runs overlap.
        self._gaps: dict[tuple[int, int], float] = {}

    def _neighbour_gaps(self) -> list[float]:
        """``gap(i, i + 1)`` for every ``i``, inlined: it is most of a dense wave's work."""
        ratings, accepts, accounts = self.ratings, self.accepts, self.accounts
        forbidden = self.forbidden
        gaps: list[float] = []
        append = gaps.append
        for i in range(len(ratings) - 1):
            gap = ratings[i + 1] - ratings[i]
            if (
                gap > accepts[i]
                or gap > accepts[i + 1]
                or accounts[i] == accounts[i + 1]
                or (forbidden and forbidden.forbids(accounts[i], accounts[i + 1]))
            ):
                append(_INF)
            else:
                append(gap)
        return gaps

    def gap(self, i: int, j: int) -> float:
        """The gap of sorted tickets ``i < j`` in units, or infinity if inadmissible."""
        gap = self.ratings[j] - self.ratings[i]
        if gap > self.accepts[i] or gap > self.accepts[j]:
            return _INF
        first, second = self.accounts[i], self.accounts[j]
        if first == second or (self.forbidden and self.forbidden.forbids(first, second)):
            return _INF
        return gap

    def best_runs(self) -> list[_Shape]:
        """For each prefix length ``k``, the shape of its optimal last run."""
        n = len(self.ratings)
        # Leaving one ticket out costs more than any total gap: pairs count first.
        left_out = (n // 2) * max(self.accepts, default=0) + 1
        next_gap = self.next_gap
        # Integers while finite (exact sums); infinity marks an impossible run.
        best: list[float] = [0] * (n + 1)
        shapes = [_ALONE] * (n + 1)
        last_break = -_RUN_LIMIT  # the last i < k - 1 whose pair (i, i + 1) is inadmissible
        for k in range(1, n + 1):
            score = best[k - 1] + left_out
            shape = _ALONE
            if k >= 2:
                neighbours = next_gap[k - 2]
                if neighbours == _INF:
                    last_break = k - 2
                else:
                    candidate = best[k - 2] + neighbours
                    if candidate <= score:
                        score, shape = candidate, _NEIGHBOURS
                # Longer runs only help around an inadmissible neighbour pair (module docstring).
                if k >= 3 and last_break >= k - _RUN_LIMIT:
                    score, shape = self._longer_runs(k, last_break, best, left_out, score, shape)
            best[k] = score
            shapes[k] = shape
        return shapes

    def _longer_runs(
        self,
        k: int,
        last_break: int,
        best: list[float],
        left_out: int,
        score: float,
        shape: _Shape,
    ) -> tuple[float, _Shape]:
        """Try the runs of 3 to ``_RUN_LIMIT`` tickets ending at ``k-1`` that hold the break."""
        ratings, accepts = self.ratings, self.accepts
        # Every such run pairs its last ticket and its first one (else a cut splits it):
        # a ticket whose nearest neighbour on that side is beyond its reach cannot be either.
        if ratings[k - 1] - ratings[k - 2] > accepts[k - 1]:
            return score, shape
        first = max(0, k - _RUN_LIMIT)
        near = self._near(first, k)
        for start in range(min(last_break, k - 3), first - 1, -1):
            if ratings[start + 1] - ratings[start] > accepts[start]:
                continue
            before = best[start]
            offset = start - first
            for candidate_shape in _SHAPES[k - start]:
                total = before + candidate_shape.waiting * left_out
                for a, b in candidate_shape.pairs:
                    total += near[offset + a][offset + b]
                    if total >= score:
                        break  # gaps only add: this shape cannot win
                else:
                    score, shape = total, candidate_shape
        return score, shape

    def _near(self, first: int, end: int) -> list[list[float]]:
        """``near[a][b]`` = ``gap(first + a, first + b)`` for the tickets ``first..end-1``."""
        gaps = self._gaps
        near = []
        for i in range(first, end):
            row = [_INF] * (end - first)
            for j in range(i + 1, end):
                found = gaps.get((i, j))
                if found is None:
                    found = gaps[(i, j)] = self.gap(i, j)
                row[j - first] = found
            near.append(row)
        return near


def _collect(ordered: Sequence[Ticket], shapes: list[_Shape]) -> Wave:
    """Walk the recorded runs back from the whole pool to its pairs."""
    pairs: list[Pair] = []
    unpaired: list[Ticket] = []
    k = len(ordered)
    while k > 0:
        shape = shapes[k]
        start = k - shape.length
        if shape is _NEIGHBOURS:
            pairs.append(Pair(ordered[start], ordered[start + 1]))
        elif shape is _ALONE:
            unpaired.append(ordered[start])
        else:
            # Backwards, like the walk: a shape lists its pairs by their lower ticket.
            paired = {offset for pair in shape.pairs for offset in pair}
            pairs += [Pair(ordered[start + a], ordered[start + b]) for a, b in shape.pairs[::-1]]
            waiting = range(shape.length - 1, -1, -1)
            unpaired += [ordered[start + i] for i in waiting if i not in paired]
        k = start
    pairs.reverse()
    unpaired.reverse()
    return Wave(tuple(pairs), tuple(unpaired))
