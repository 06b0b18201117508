"""The house commission on one settlement, computed from a versioned schedule.

The winner pays the commission for both players. The rate follows the win sum
(single game) or the stake and length (match), then the rating adjustments:
increases add up, unless both players are above or both below the no-increase
bounds; then the discount when both are strong; then the per-player cap. Each
player's commission is rounded half-up to the cent.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from services.wallet.domain.errors import InvalidSettlement, UnknownCurrency
from services.wallet.domain.money import Money, round_half_up
from services.wallet.domain.schedule import CommissionSchedule, RatingRules, band_admits
from services.wallet.domain.terms import GameTerms, Match, MoneyGame, WinType, win_sum

Rating = int | Decimal


@dataclass(frozen=True, slots=True)
class RatingAdjustment:
    """How the players' ratings change the base rate."""

    counted_ratings: tuple[Decimal, Decimal]  # after the floor, in the order given
    increase: Decimal
    discount: Decimal
    cap_per_player: int | None


@dataclass(frozen=True, slots=True)
class CommissionQuote:
    """The full breakdown of one settlement's commission (the Settled event carries it)."""

    schedule_version: str
    amount: Money  # W for a single game, S for a match: what the loser pays
    base_rate: Decimal
    adjustment: RatingAdjustment
    rate: Decimal  # base_rate adjusted for ratings, before the per-player cap
    per_player: Money
    capped: bool

    @property
    def total(self) -> Money:
        return self.per_player.times(2)

    @property
    def winner_credit(self) -> Money:
        return self.amount - self.total

    @property
    def loser_debit(self) -> Money:
        return self.amount


def single_game_base_rate(schedule: CommissionSchedule, win: Money) -> Decimal:
    for band in schedule.single_bands:
        if band_admits(band.up_to, band.up_to_inclusive, win.amount):
            return band.rate
    raise AssertionError("the parser guarantees an unbounded last band")


def series_base_rate(schedule: CommissionSchedule, stake: Money, length: int) -> Decimal:
    for band in schedule.series_bands:
        if band_admits(band.up_to, band.up_to_inclusive, stake.amount):
            return min(band.base + schedule.per_extra_point * (length - 1), band.cap)
    raise AssertionError("the parser guarantees an unbounded last band")


def _as_rating(rating: Rating, floor: int) -> Decimal:
    if type(rating) is not int and not isinstance(rating, Decimal):
        raise InvalidSettlement(f"a rating must be an integer or a decimal, got {rating!r}")
    return max(Decimal(rating), Decimal(floor))


def _difference_increase(rules: RatingRules, difference: Decimal) -> Decimal:
    reached = [item.increase for item in rules.difference_increases if difference >= item.at_least]
    return reached[-1] if reached else Decimal(0)


def rating_adjustment(rules: RatingRules, first: Rating, second: Rating) -> RatingAdjustment:
    """The adjustment for two players' ratings; a rating below the floor counts as the floor."""
    a, b = _as_rating(first, rules.floor), _as_rating(second, rules.floor)
    both_above = min(a, b) > rules.no_increase_when_both_above
    both_below = max(a, b) < rules.no_increase_when_both_below
    increase = Decimal(0)
    if not (both_above or both_below):
        if min(a, b) < rules.low_rating_below:
            increase += rules.low_rating_increase
        increase += _difference_increase(rules, abs(a - b))
    strong = min(a, b) > rules.discount_when_both_above
    capped = min(a, b) > rules.cap_when_both_above
    return RatingAdjustment(
        counted_ratings=(a, b),
        increase=increase,
        discount=rules.discount if strong else Decimal(0),
        cap_per_player=rules.cap_per_player if capped else None,
    )


def _quote(
    schedule: CommissionSchedule, amount: Money, base_rate: Decimal, ratings: tuple[Rating, Rating]
) -> CommissionQuote:
    if amount.currency != schedule.currency:
        raise UnknownCurrency(
            f"schedule {schedule.version} is for {schedule.currency}, "
            f"it cannot price a settlement in {amount.currency}"
        )
    adjustment = rating_adjustment(schedule.rating, *ratings)
    rate = base_rate * (1 + adjustment.increase) * (1 - adjustment.discount)
    uncapped = round_half_up(amount.amount * rate)
    cap = adjustment.cap_per_player
    per_player = uncapped if cap is None else min(uncapped, cap)
    return CommissionQuote(
        schedule_version=schedule.version,
        amount=amount,
        base_rate=base_rate,
        adjustment=adjustment,
        rate=rate,
        per_player=Money(per_player, amount.currency),
        capped=per_player < uncapped,
    )


def quote_single_game(
    schedule: CommissionSchedule,
    game: MoneyGame,
    cube: int,
    win_type: WinType,
    ratings: tuple[Rating, Rating],
) -> CommissionQuote:
    """Commission on a money game won with ``win_type`` at ``cube``."""
    win = win_sum(game, cube, win_type)
    return _quote(schedule, win, single_game_base_rate(schedule, win), ratings)


def quote_match(
    schedule: CommissionSchedule, match: Match, ratings: tuple[Rating, Rating]
) -> CommissionQuote:
    """Commission on a match: the loser pays the stake whatever the score."""
    base_rate = series_base_rate(schedule, match.stake, match.length)
    return _quote(schedule, match.stake, base_rate, ratings)


def quote_amount(
    schedule: CommissionSchedule,
    terms: GameTerms,
    amount: Money,
    ratings: tuple[Rating, Rating],
) -> CommissionQuote:
    """Commission on ``amount`` changing hands under ``terms`` (used for disconnection splits).

    A money game's rate follows the amount itself, as if it were the win sum; a
    match's rate follows its stake and length, applied to the amount.
    """
    if isinstance(terms, Match):
        base_rate = series_base_rate(schedule, terms.stake, terms.length)
    else:
        base_rate = single_game_base_rate(schedule, amount)
    return _quote(schedule, amount, base_rate, ratings)
