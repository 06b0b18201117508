"""Small, exact statistics the play detectors share (pure; no third-party code needed).

``binomial_tail`` is the chance of ``k`` or more successes in ``n`` independent trials
of probability ``p``: the p-value of "this many, or more, by chance" that the
disconnect and win-trading detectors test against.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import comb


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


def median(values: Sequence[float]) -> float:
    """The middle value (the mean of the two middle ones for an even count)."""
    if not values:
        raise ValueError("the median of nothing")
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2
