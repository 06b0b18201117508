"""Small, exact statistics the play detectors share (pure; no third-party code needed).

``binomial_tail`` is the chance of ``k`` or more successes in ``n`` independent trials
of probability ``p``: the p-value of "this many, or more, by chance" that the
disconnect and win-trading detectors test against. ``hypergeometric_low_tail`` is the
one-sided Fisher exact test consulting runs on a player's best plays (few misses while a
linked account sat at another table, against the player's own other games), and
``binomial_low_tail`` the chance of so few misses for a player at a human's fewest;
``rank_sum_z`` says whether the other account's think times then ran slower than usual.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import comb, exp, lgamma, log, log1p, sqrt


def binomial_tail(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p), summed exactly (n is a count of games: small)."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"a probability is in [0, 1], got {p}")
    if n < 0:
        raise ValueError(f"n is a count, got {n}")
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    return min(1.0, sum(comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k, n + 1)))


def binomial_low_tail(k: int, n: int, p: float) -> float:
    """P(X <= k) for X ~ Binomial(n, p), summed in logs (n is a count of decisions: a
    month of them overflows a float's ``comb``)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"a probability strictly inside (0, 1), got {p}")
    if n < 0:
        raise ValueError(f"n is a count, got {n}")
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    log_p, log_q = log(p), log1p(-p)
    terms = [
        lgamma(n + 1) - lgamma(i + 1) - lgamma(n - i + 1) + i * log_p + (n - i) * log_q
        for i in range(k + 1)
    ]
    top = max(terms)
    return min(1.0, exp(top) * sum(exp(t - top) for t in terms))


def hypergeometric_low_tail(k: int, drawn: int, marked: int, total: int) -> float:
    """P(X <= k) for X the marked items among ``drawn`` taken without replacement from
    ``total`` items of which ``marked`` are marked: the one-sided Fisher exact test of "so
    few marked ones in the draw" (exact integer sums; counts of decisions are small)."""
    if not 0 <= marked <= total or not 0 <= drawn <= total:
        raise ValueError(f"counts out of range: {drawn} drawn, {marked} marked of {total}")
    if k < 0:
        return 0.0
    ways = sum(comb(marked, i) * comb(total - marked, drawn - i) for i in range(k + 1))
    return min(1.0, ways / comb(total, drawn))


def median(values: Sequence[float]) -> float:
    """The middle value (the mean of the two middle ones for an even count)."""
    if not values:
        raise ValueError("the median of nothing")
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def rank_sum_z(first: Sequence[float], second: Sequence[float]) -> float:
    """The one-sided Wilcoxon rank-sum z that ``first`` runs larger than ``second``: the
    rank sum of ``first`` in both together (tied values share their mean rank) against its
    mean under "one distribution", ``n (n + m + 1) / 2``, over its sd ``sqrt(n m (n + m +
    1) / 12)`` (the normal approximation: good from about 10 a side; think times are
    continuous, so ties are rare and left uncorrected)."""
    if not first or not second:
        raise ValueError("the rank-sum test needs values on both sides")
    both = sorted([(v, True) for v in first] + [(v, False) for v in second])
    rank_sum, start = 0.0, 0
    while start < len(both):
        end = start
        while end + 1 < len(both) and both[end + 1][0] == both[start][0]:
            end += 1
        shared = (start + end) / 2 + 1  # the mean of ranks start+1 .. end+1
        rank_sum += shared * sum(mine for _, mine in both[start : end + 1])
        start = end + 1
    n, m = len(first), len(second)
    return (rank_sum - n * (n + m + 1) / 2) / sqrt(n * m * (n + m + 1) / 12)
