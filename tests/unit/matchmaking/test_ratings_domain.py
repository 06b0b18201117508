"""The FIBS formula, the "1400*" display and the commission floor, checked by hand and by property.

Expected values are worked out in the comments from the formula (after FIBS):
P_upset = 1 / (10^(D*sqrt(n)/2000) + 1); the winner gains 4*K_w*sqrt(n)*P, the
loser loses 4*K_l*sqrt(n)*P (P = P_upset if the favourite won, else 1 - P_upset);
K = max(1, 5 - experience/100).
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from services.kit.errors import InvalidArgument
from services.matchmaking.domain.ratings import (
    NEW_PLAYER,
    Standing,
    commission_rating,
    display_rating,
    k_factor,
    rate_split,
    rate_win,
    upset_probability,
)


def test_two_new_players_one_money_game() -> None:
    # D = 0 -> P_upset = 1 / (10^0 + 1) = 1/2; K = 5 for both; n = 1, sqrt(n) = 1.
    # winner: +4 * 5 * 1 * 1/2 = +10; loser: -10.
    update = rate_win(NEW_PLAYER, NEW_PLAYER, 1, winner=0)
    assert update.changes == pytest.approx((10.0, -10.0))
    assert update.after == (Standing(1510.0, 1), Standing(1490.0, 1))


def test_an_upset_in_a_four_point_match() -> None:
    # 1000 (experience 0, K = 5) beats 2000 (experience 250, K = 5 - 2.5 = 2.5), n = 4.
    # D = 1000, D*sqrt(4)/2000 = 1 -> P_upset = 1/(10 + 1) = 1/11; the underdog won: P = 10/11.
    # winner: +4 * 5 * 2 * 10/11 = 400/11 = 36.3636...; loser: -4 * 2.5 * 2 * 10/11 = -200/11.
    underdog, favourite = Standing(1000.0, 0), Standing(2000.0, 250)
    update = rate_win(favourite, underdog, 4, winner=1)
    assert update.changes == pytest.approx((-200 / 11, 400 / 11))
    assert update.after[0].rating == pytest.approx(1981.8181818)
    assert update.after[1].rating == pytest.approx(1036.3636364)
    assert (update.after[0].experience, update.after[1].experience) == (254, 4)


def test_the_favourite_wins_a_25_point_match_and_the_loser_is_at_the_k_floor() -> None:
    # 1700 (experience 350, K = 5 - 3.5 = 1.5) beats 1300 (experience 1000, K = max(1, -5) = 1).
    # D = 400, sqrt(25) = 5, 400*5/2000 = 1 -> P_upset = 1/11; the favourite won: P = 1/11.
    # winner: +4 * 1.5 * 5 / 11 = 30/11 = 2.7273; loser: -4 * 1 * 5 / 11 = -20/11 = -1.8182.
    update = rate_win(Standing(1700.0, 350), Standing(1300.0, 1000), 25, winner=0)
    assert update.changes == pytest.approx((30 / 11, -20 / 11))
    assert update.after[0].rating == pytest.approx(1702.7272727)
    assert update.after[1].rating == pytest.approx(1298.1818182)


def test_an_irrational_power() -> None:
    # 1000 beats 2000 in one game, both new (K = 5): D*sqrt(1)/2000 = 1/2, 10^0.5 = 3.16227766,
    # P_upset = 1/4.16227766 = 0.24025307; underdog won: P = 0.75974693;
    # winner: +4 * 5 * 0.75974693 = +15.1949386; loser: -15.1949386.
    update = rate_win(Standing(1000.0, 0), Standing(2000.0, 0), 1, winner=0)
    assert update.changes == pytest.approx((15.1949386, -15.1949386))
    assert upset_probability(1000.0, 1) == pytest.approx(0.24025307)


def test_equal_ratings_different_experience() -> None:
    # Both 1500, n = 9 (sqrt 3), P = 1/2. Winner experience 100: K = 4 -> +4*4*3/2 = +24.
    # Loser experience 1000: K = 1 -> -4*1*3/2 = -6.
    update = rate_win(Standing(1500.0, 1000), Standing(1500.0, 100), 9, winner=1)
    assert update.changes == pytest.approx((-6.0, 24.0))
    assert update.after == (Standing(1494.0, 1009), Standing(1524.0, 109))


def test_a_disconnection_split() -> None:
    # Two new players, one game, player 0 got 0.75 of the stake:
    # 0.75 * (+10) + 0.25 * (-10) = +5 for player 0, and -5 for player 1.
    update = rate_split(NEW_PLAYER, NEW_PLAYER, 1, 0.75)
    assert update.changes == pytest.approx((5.0, -5.0))
    # The underdog's analysed half of the 4-point match above: it would have won
    # 400/11 and the favourite lost 200/11; the favourite would have won
    # 4*2.5*2*(1/11) = 20/11 and the underdog lost 4*5*2*(1/11) = 40/11.
    # Underdog: 0.5*400/11 - 0.5*40/11 = 180/11; favourite: 0.5*20/11 - 0.5*200/11 = -90/11.
    split = rate_split(Standing(2000.0, 250), Standing(1000.0, 0), 4, 0.5)
    assert split.changes == pytest.approx((-90 / 11, 180 / 11))


def test_k_factor_by_hand() -> None:
    assert k_factor(0) == 5.0
    assert k_factor(100) == 4.0
    assert k_factor(399) == pytest.approx(1.01)
    assert k_factor(400) == 1.0
    assert k_factor(100_000) == 1.0


@pytest.mark.parametrize(
    ("rating", "shown", "counted"),
    [
        (1500.0, "1500", 1500.0),
        (1649.99, "1649", 1649.99),  # never shown as 1650, a threshold it has not reached
        (1400.0, "1400", 1400.0),
        (1399.99, "1400*", 1400.0),
        (1012.5, "1400*", 1400.0),
    ],
)
def test_display_and_commission_floor(rating: float, shown: str, counted: float) -> None:
    assert display_rating(rating) == shown
    assert commission_rating(rating) == counted


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: rate_win(NEW_PLAYER, NEW_PLAYER, 0, winner=0), "at least 1"),
        (lambda: rate_win(NEW_PLAYER, NEW_PLAYER, -3, winner=0), "at least 1"),
        (lambda: rate_win(NEW_PLAYER, NEW_PLAYER, 1, winner=2), "player 0 or 1"),
        (lambda: rate_split(NEW_PLAYER, NEW_PLAYER, 1, 1.5), "between 0 and 1"),
        (lambda: Standing(float("nan"), 0), "finite"),
        (lambda: Standing(1500.0, -1), "negative"),
    ],
)
def test_bad_input_is_refused_with_a_reason(call: object, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        call()  # type: ignore[operator]


ratings = st.floats(min_value=0.0, max_value=3000.0, allow_nan=False)
experiences = st.integers(min_value=0, max_value=5000)
lengths = st.integers(min_value=1, max_value=25)


@given(ratings, experiences, lengths, st.sampled_from([0, 1]))
def test_equal_players_move_equal_and_opposite(rating: float, experience: int, length: int,
                                               winner: int) -> None:
    player = Standing(rating, experience)
    update = rate_win(player, player, length, winner)
    assert update.changes[0] == pytest.approx(-update.changes[1])
    # P = 1/2: the winner gains 2 * K * sqrt(n).
    assert abs(update.changes[0]) == pytest.approx(2 * k_factor(experience) * math.sqrt(length))


@given(ratings, ratings, experiences, lengths)
def test_same_experience_is_zero_sum(first: float, second: float, experience: int,
                                     length: int) -> None:
    update = rate_win(Standing(first, experience), Standing(second, experience), length, 0)
    assert update.changes[0] == pytest.approx(-update.changes[1])


@given(ratings, st.floats(min_value=1.0, max_value=1500.0), experiences, lengths)
def test_the_underdog_gains_more_than_the_favourite_would(
    low: float, gap: float, experience: int, length: int
) -> None:
    underdog, favourite = Standing(low, experience), Standing(low + gap, experience)
    underdog_wins = rate_win(underdog, favourite, length, winner=0).changes[0]
    favourite_wins = rate_win(underdog, favourite, length, winner=1).changes[1]
    assert underdog_wins > favourite_wins > 0
    # The two outcomes' gains add up to the whole stake of the match: 4 * K * sqrt(n).
    assert underdog_wins + favourite_wins == pytest.approx(
        4 * k_factor(experience) * math.sqrt(length)
    )


@given(ratings, ratings, st.integers(min_value=400, max_value=100_000), lengths,
       st.sampled_from([0, 1]))
def test_k_floor_at_one(first: float, second: float, experience: int, length: int,
                        winner: int) -> None:
    assert k_factor(experience) == 1.0
    update = rate_win(Standing(first, experience), Standing(second, experience), length, winner)
    # With K = 1 no change can exceed 4 * sqrt(n) (P <= 1).
    assert all(abs(change) <= 4 * math.sqrt(length) for change in update.changes)


@given(experiences)
def test_k_is_never_below_one_nor_above_five(experience: int) -> None:
    assert 1.0 <= k_factor(experience) <= 5.0


@given(ratings, ratings, experiences, experiences, lengths, st.sampled_from([0, 1]))
def test_winner_up_loser_down_and_experience_grows(
    first: float, second: float, e1: int, e2: int, length: int, winner: int
) -> None:
    update = rate_win(Standing(first, e1), Standing(second, e2), length, winner)
    assert update.changes[winner] > 0 > update.changes[1 - winner]
    assert (update.after[0].experience, update.after[1].experience) == (e1 + length, e2 + length)
    assert update.after[0].rating == first + update.changes[0]


@given(ratings, ratings, experiences, experiences, lengths)
def test_a_whole_share_is_a_win(first: float, second: float, e1: int, e2: int,
                                length: int) -> None:
    a, b = Standing(first, e1), Standing(second, e2)
    assert rate_split(a, b, length, 1.0).changes == pytest.approx(rate_win(a, b, length, 0).changes)
    assert rate_split(a, b, length, 0.0).changes == pytest.approx(rate_win(a, b, length, 1).changes)


@given(st.floats(min_value=-5000.0, max_value=5000.0, allow_nan=False))
def test_the_shown_and_counted_rating_never_fall_below_1400(rating: float) -> None:
    assert commission_rating(rating) >= 1400.0
    shown = display_rating(rating)
    assert shown == "1400*" if rating < 1400 else int(shown) <= rating < int(shown) + 1
