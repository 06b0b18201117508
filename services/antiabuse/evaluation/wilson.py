"""The Wilson score interval of a binomial proportion (pure).

A rate measured on N accounts is a binomial proportion; its 95 % interval says what
the run shows about the rate itself. Wilson's interval (E. B. Wilson, 1927) rather than
the textbook ``p +- z sqrt(p (1 - p) / n)``: that one collapses to a width of 0 at 0 of
N (no false alarm "proves" a rate of exactly 0) and leaves [0, 1] near the edges, which
are exactly where a recall near 1 and a false-positive rate near 0 lie. Wilson's upper
bound at 0 of N is ``z^2 / (N + z^2)``: 0.76 % for N = 500, so 500 honest accounts
without a false alarm are needed before "below 1 %" means something.

    centre = (p + z^2 / 2n) / (1 + z^2 / n)
    half   = z sqrt(p (1 - p) / n + z^2 / 4n^2) / (1 + z^2 / n)
"""

from __future__ import annotations

import math

Z_95 = 1.959963984540054  # the standard normal's 97.5 % quantile: a two-sided 95 % interval


def wilson_interval(successes: int, trials: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval of ``successes`` of ``trials``; (0, 1) for no trials."""
    if trials < 0 or not 0 <= successes <= max(trials, 0):
        raise ValueError(f"{successes} successes of {trials} trials is not a proportion")
    if trials == 0:
        return 0.0, 1.0
    if successes == 0:  # the closed form: the general one leaves a rounding residue above 0
        return 0.0, z * z / (trials + z * z)
    p = successes / trials
    z2 = z * z
    denominator = 1 + z2 / trials
    centre = (p + z2 / (2 * trials)) / denominator
    half = z * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)
