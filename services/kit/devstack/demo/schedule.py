"""The house commission on a money game, worked out by the demo from the schedule's own text.

Deliberately independent of the wallet (``services/wallet/domain``): the demo
checks the wallet's settlement against this arithmetic, so it must not ask the
wallet how to compute it. The source is the commission schedule in
``../shared/reference/`` (GammonEmpire, "Commisions when Playing for Real
Money"), read this way:

- "Commission is taken from the final win sum (the winner pays for both
  players)": the win sum is stake x cube x result (1 single, 2 gammon, 3
  backgammon); the loser pays the win sum, the winner gets it less two
  commissions, each the win sum x the rate, rounded half up to the cent (the
  schedule's example: $5, gammon, $0.49 each, $9.02 credited, $10 debited).
- "Up to $20: 4.9%", "$20 Up to $100: 3.9%", "Over $100: 2.9%" of the win sum.
- Ratings: a rating below 1400 counts as 1400; no increase when both players are
  above 1650 or both below 1550; otherwise +25 % if either is below 1620, and
  +50 % / +100 % / +150 % / +200 % for a difference of 100 / 200 / 250 / 300 or
  more (the highest step reached), the increases added up; -50 % when both are
  above 1700; at most $5 per player when both are above 1650.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

MULTIPLIER = {"RESULT_TYPE_SINGLE": 1, "RESULT_TYPE_GAMMON": 2, "RESULT_TYPE_BACKGAMMON": 3}
# (win sum up to and including, in cents; rate)
BANDS: tuple[tuple[int | None, Decimal], ...] = (
    (2_000, Decimal("0.049")),
    (10_000, Decimal("0.039")),
    (None, Decimal("0.029")),
)
DIFFERENCE_STEPS = ((300, Decimal(2)), (250, Decimal("1.5")), (200, Decimal(1)),
                    (100, Decimal("0.5")))
CAP_CENTS = 500


@dataclass(frozen=True)
class Settlement:
    """What one money game moves, and how the figures were reached (``lines``)."""

    win_sum: int
    commission_per_player: int
    winner_credit: int
    loser_debit: int
    lines: tuple[str, ...]


def dollars(cents: int) -> str:
    sign = "-" if cents < 0 else ""
    return f"{sign}${abs(cents) // 100}.{abs(cents) % 100:02d}"


def base_rate(win_sum: int) -> tuple[Decimal, str]:
    for up_to, rate in BANDS:
        if up_to is None or win_sum <= up_to:
            band = f"up to {dollars(up_to)}" if up_to is not None else "over $100"
            return rate, band
    raise AssertionError("the last band is unbounded")


def rating_terms(first: float, second: float) -> tuple[Decimal, Decimal, bool, str]:
    """(increase, discount, capped at $5, in words) for two players' ratings."""
    a, b = (max(Decimal(str(r)), Decimal(1400)) for r in (first, second))
    words = [f"ratings {a.normalize():f} and {b.normalize():f}"]
    increase = Decimal(0)
    if max(a, b) < 1550:
        words.append("both below 1550: no increase")
    elif min(a, b) > 1650:
        words.append("both above 1650: no increase")
    else:
        if min(a, b) < 1620:
            increase += Decimal("0.25")
            words.append("one below 1620: +25%")
        for at_least, step in DIFFERENCE_STEPS:
            if abs(a - b) >= at_least:
                increase += step
                words.append(f"difference {abs(a - b):f} >= {at_least}: +{step * 100:.0f}%")
                break
    discount = Decimal("0.5") if min(a, b) > 1700 else Decimal(0)
    if discount:
        words.append("both above 1700: -50%")
    capped = min(a, b) > 1650
    if capped:
        words.append("both above 1650: at most $5 each")
    return increase, discount, capped, "; ".join(words)


def money_game(stake: int, cube: int, result: str, ratings: tuple[float, float]) -> Settlement:
    """The settlement of a money game won by ``result`` at ``cube`` (stake in cents)."""
    win_sum = stake * cube * MULTIPLIER[result]
    rate, band = base_rate(win_sum)
    increase, discount, capped, words = rating_terms(*ratings)
    adjusted = rate * (1 + increase) * (1 - discount)
    exact = Decimal(win_sum) * adjusted
    each = int(exact.quantize(Decimal(1), rounding=ROUND_HALF_UP))
    if capped:
        each = min(each, CAP_CENTS)
    lines = (
        f"win sum = stake {dollars(stake)} x cube {cube} x {MULTIPLIER[result]} "
        f"({result.removeprefix('RESULT_TYPE_').lower()}) = {dollars(win_sum)}",
        f"rate {rate * 100:.1f}% (win sum {band}); {words}",
        f"commission each = {dollars(win_sum)} x {adjusted * 100:.4g}% = {exact / 100:.4f} "
        f"-> {dollars(each)} (half up); the winner pays both",
        f"winner +{dollars(win_sum - 2 * each)}, loser -{dollars(win_sum)}",
    )
    return Settlement(win_sum, each, win_sum - 2 * each, win_sum, lines)
