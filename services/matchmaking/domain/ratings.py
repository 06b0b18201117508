"""FIBS ratings: how a finished match moves both players' ratings, and how a rating shows.

The formula (after FIBS): for a match to ``n`` points (a single money
game counts as n = 1) between ratings ``r1`` and ``r2``, with D = |r1 - r2|,

    P_upset = 1 / (10^(D * sqrt(n) / 2000) + 1)

is the underdog's chance to win. The winner gains ``4 * K_w * sqrt(n) * P`` and the
loser loses ``4 * K_l * sqrt(n) * P``, where P = P_upset when the favourite won and
1 - P_upset when the underdog won, and each player's own ``K = max(1, 5 -
experience / 100)``, experience being the sum of the lengths of their earlier
rated matches. Everybody starts at 1500 with experience 0. With equal ratings
either player may be called the favourite: P_upset is then 1/2 both ways.

A disconnection settlement has no winner in the usual sense: the house rules
analyse the position and split the money (``../shared/reference/``). The rating is
split the same way (:func:`rate_split`): each player's change is the expected
FIBS change under the analysed shares, so a share of 1 is a plain win and an
even split of two equal players moves nobody.

Display and the commission schedule (house rules): a rating below 1400 counts as
1400 and is shown as "1400*".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from services.kit.errors import InvalidArgument

START_RATING = 1500.0
START_EXPERIENCE = 0
# House rules: below this a rating counts as this in the commission schedule, shown with a star.
RATING_FLOOR = 1400.0


@dataclass(frozen=True)
class Standing:
    """A player's rating and experience (points of rated matches played) at one moment."""

    rating: float
    experience: int

    def __post_init__(self) -> None:
        if not math.isfinite(self.rating):
            raise InvalidArgument(f"a rating must be a finite number, got {self.rating!r}")
        if self.experience < 0:
            raise InvalidArgument(f"experience cannot be negative, got {self.experience}")


NEW_PLAYER = Standing(START_RATING, START_EXPERIENCE)


@dataclass(frozen=True)
class RatingUpdate:
    """Both players' standings after one rated match, in the order they were given."""

    after: tuple[Standing, Standing]
    changes: tuple[float, float]


def k_factor(experience: int) -> float:
    """How fast a player's rating moves: 5 for a newcomer, down to 1 from 400 points played."""
    return max(1.0, 5.0 - experience / 100.0)


def upset_probability(difference: float, length: int) -> float:
    """The underdog's chance to win a match to ``length`` points ``difference`` points apart."""
    return 1.0 / (math.pow(10.0, abs(difference) * math.sqrt(length) / 2000.0) + 1.0)


def _check_length(length: int) -> None:
    if length < 1:
        raise InvalidArgument(
            f"a match length must be at least 1 (a single money game counts 1), got {length}"
        )


def _win_changes(first: Standing, second: Standing, length: int) -> tuple[float, float]:
    """(what ``first`` gains by beating ``second``, what ``second`` loses by it)."""
    upset = upset_probability(first.rating - second.rating, length)
    # The winner is the favourite when its rating is the higher one: then the result
    # was expected and moves little (P_upset); an upset moves a lot (1 - P_upset).
    p = upset if first.rating >= second.rating else 1.0 - upset
    scale = 4.0 * math.sqrt(length) * p
    return k_factor(first.experience) * scale, k_factor(second.experience) * scale


def _after(
    first: Standing, second: Standing, length: int, changes: tuple[float, float]
) -> RatingUpdate:
    return RatingUpdate(
        after=(
            Standing(first.rating + changes[0], first.experience + length),
            Standing(second.rating + changes[1], second.experience + length),
        ),
        changes=changes,
    )


def rate_win(first: Standing, second: Standing, length: int, winner: int) -> RatingUpdate:
    """The ratings after a match to ``length`` that player ``winner`` (0 or 1) won."""
    _check_length(length)
    if winner not in (0, 1):
        raise InvalidArgument(f"the winner is player 0 or 1, got {winner}")
    if winner == 0:
        gain, loss = _win_changes(first, second, length)
        return _after(first, second, length, (gain, -loss))
    gain, loss = _win_changes(second, first, length)
    return _after(first, second, length, (-loss, gain))


def rate_split(first: Standing, second: Standing, length: int, first_share: float) -> RatingUpdate:
    """The ratings after a match settled by analysis: ``first`` got ``first_share`` of it.

    Each change is the FIBS change of a win weighted by the player's share plus that
    of a loss weighted by the opponent's: share 1 is :func:`rate_win` for ``first``.
    """
    _check_length(length)
    if not 0.0 <= first_share <= 1.0:
        raise InvalidArgument(f"a settlement share is between 0 and 1, got {first_share}")
    first_gain, second_loss = _win_changes(first, second, length)
    second_gain, first_loss = _win_changes(second, first, length)
    second_share = 1.0 - first_share
    changes = (
        first_share * first_gain - second_share * first_loss,
        second_share * second_gain - first_share * second_loss,
    )
    return _after(first, second, length, changes)


def commission_rating(rating: float) -> float:
    """The rating the commission schedule counts: never below 1400 (house rules)."""
    return max(rating, RATING_FLOOR)


def display_rating(rating: float) -> str:
    """How a rating is shown: whole points, "1400*" below 1400 (house rules).

    Rounded down, so a shown figure never reaches a commission threshold (1550,
    1620, 1650, 1700) the rating itself has not: 1649.7 shows as 1649.
    """
    if rating < RATING_FLOOR:
        return f"{RATING_FLOOR:.0f}*"
    return str(math.floor(rating))
