"""Consulting's one-person test: accounts a strong link makes one person, at two tables at
once, the helped one missing the best play far less often then than in its own games (a
one-sided Fisher exact test), the other idling (a second sign that lets a looser p-value
alert). Figures by hand beside each assertion.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from services.antiabuse.domain import consulting_play
from services.antiabuse.domain.consulting_play import Played, Window, misses
from services.antiabuse.domain.findings import Finding, Severity
from services.antiabuse.domain.stats import (
    binomial_low_tail,
    hypergeometric_low_tail,
    rank_sum_z,
)

T0 = datetime(2026, 12, 1, 20, 0, tzinfo=UTC)


def window(game: str, start_min: int, end_min: int) -> Window:
    return Window(game, 1, T0 + timedelta(minutes=start_min), T0 + timedelta(minutes=end_min))


def plays(game: str, missed: int, best: int, seconds: float = 6.0) -> list[Played]:
    return [Played(game, 1, True, 0.02, seconds)] * missed + [
        Played(game, 1, True, 0.0, seconds)
    ] * best


def test_the_fisher_tail_by_hand() -> None:
    # No marked item in 20 drawn from 40 of which 10 are marked: C(30,20) / C(40,20)
    # = 30045015 / 137846528820 = 0.00021796.
    assert hypergeometric_low_tail(0, 20, 10, 40) == pytest.approx(0.00021796, rel=1e-4)
    assert hypergeometric_low_tail(20, 20, 10, 40) == 1.0
    with pytest.raises(ValueError):
        hypergeometric_low_tail(0, 41, 10, 40)


HELPED_WINDOWS = [window("alone", 0, 30), window("over", 60, 90)]
HELPER_WINDOWS = [window("h-busy", 61, 95)]  # the other table, at the same time


def one_person(
    overlap_missed: int,
    helper_seconds: float,
    person: bool = True,
    helper_own_seconds: float | None = None,
) -> Finding | None:
    # The helped account alone: 16 misses in 40 counted decisions (a club player); at two
    # tables: ``overlap_missed`` of 40. The helper plays only while the helped one does
    # (and, with ``helper_own_seconds``, 40 decisions of a game of its own, alone).
    helped = plays("alone", 16, 24) + plays("over", overlap_missed, 40 - overlap_missed)
    helper = plays("h-busy", 10, 30, seconds=helper_seconds)
    windows = HELPER_WINDOWS
    if helper_own_seconds is not None:
        helper += plays("h-own", 10, 30, seconds=helper_own_seconds)
        windows = [*HELPER_WINDOWS, window("h-own", 200, 230)]
    return consulting_play.assess(
        "helped", "helper", HELPED_WINDOWS, helped, windows, helper, one_person=person
    )


def test_one_person_playing_the_best_plays_while_at_two_tables_is_flagged() -> None:
    # 1 miss of 40 overlapping, 17 of all 80: P(X <= 1) = (C(63,40) + 17 C(63,39)) /
    # C(80,40) = 2.5646e-5 <= 0.001: MEDIUM (the helper at the person's usual 6 s a
    # decision: ratio 1.0); sigma = the normal quantile of 1 - 2.5646e-5 = 4.05.
    finding = one_person(1, helper_seconds=6.0)
    assert finding is not None and finding.severity is Severity.MEDIUM
    assert finding.subjects == ("helped", "helper")
    assert finding.score == pytest.approx(4.05, abs=0.01)
    best, idle = finding.evidence
    assert best.kind == "best_plays_while_own_account_seated"
    assert (best.details["misses_overlapping"], best.details["misses_baseline"]) == ("1", "16")
    assert best.details["p_value"] == "2.56e-05"
    assert best.game_ids == ("over",)
    # The helper has no games of its own: its usual pace is the person's at the other
    # account (6 s); at 15 s a decision while seated (2.5 times) it was busy: HIGH.
    assert idle.details["think_time_ratio"] == "1.00"
    high = one_person(1, helper_seconds=15.0)
    assert high is not None and high.severity is Severity.HIGH
    assert high.evidence[1].details["think_time_ratio"] == "2.50"


def test_the_same_play_without_a_strong_link_is_left_to_the_z_test() -> None:
    # A household or a carrier's address links them (no strong link): only the z-test,
    # which needs 60 baseline decisions (40 here): nothing.
    assert one_person(1, helper_seconds=15.0, person=False) is None


def test_one_persons_ordinary_play_at_two_tables_is_not_flagged() -> None:
    # An honest café pair (a shared computer is a strong link) or a player at two tables
    # who plays as usual: 10 misses of 40 overlapping against 16 of 40 alone, 26 of 80.
    # P(X <= 10) = sum over i <= 10 of C(26,i) C(54,40-i) / C(80,40) = 0.1162: above both
    # lines, even with the other account slow (2.5 times the person's pace).
    assert misses(plays("alone", 16, 24) + plays("over", 10, 30), {("over", 1)}) is not None
    assert one_person(10, helper_seconds=15.0) is None
    # Too few decisions on either side: no test (19 overlapping).
    few = plays("alone", 16, 24) + plays("over", 0, 19)
    assert misses(few, {("over", 1)}) is None


def test_between_the_lines_the_idle_other_account_is_the_second_sign() -> None:
    # 7 misses of 40 overlapping, 23 of 80: P(X <= 7) = sum over i <= 7 of C(23,i)
    # C(57,40-i) / C(80,40) = 0.02343: above 0.001, under 0.05 (``idle_alpha``).
    # The other account at the person's 6 s a decision: nothing.
    assert one_person(7, helper_seconds=6.0) is None
    # At 15 s against the person's 6 s at the other account (2.5 >= 2, ``idle_ratio_other``):
    # its 40 think times all above the 40 usual ones, rank sum 41 + ... + 80 = 2420 against
    # 40 x 81 / 2 = 1620, sd sqrt(40 x 40 x 81 / 12) = 103.923: z = 7.70 >= 3.09. MEDIUM
    # (the idle helper is the sign this alert needed, not a HIGH's second one); sigma the
    # normal quantile of 1 - 0.02343 = 1.99.
    found = one_person(7, helper_seconds=15.0)
    assert found is not None and found.severity is Severity.MEDIUM
    assert found.score == pytest.approx(1.99, abs=0.01)
    best, slow = found.evidence
    assert (best.details["p_value"], best.details["alert_line"]) == ("0.0234", "0.05")
    assert slow.details == {
        "account": "helper",
        "think_time_ratio": "2.50",
        "rank_sum_z": "7.70",
        "usual_pace": "the other account's games",
        "population_at_least_as_slow": "",  # no population's paces given
    }
    # 11 s is 1.83 times the other account's pace: two people's paces differ that much
    # (under 2): nothing. Against the helper's own game alone at 6 s (1.83 >= 1.5, z 7.70
    # as above): MEDIUM.
    assert one_person(7, helper_seconds=11.0) is None
    own = one_person(7, helper_seconds=11.0, helper_own_seconds=6.0)
    assert own is not None and own.severity is Severity.MEDIUM
    assert own.evidence[1].details["usual_pace"] == "own games"


def test_the_rank_sum_by_hand() -> None:
    # 1, 2 | 2, 3 | 4 with the first sample 1, 2, 3: ranks 1, 2.5 (the tied 2s share 2 and
    # 3), 4: sum 7.5 against 3 x 6 / 2 = 9, sd sqrt(3 x 2 x 6 / 12) = 1.7321: z = -0.8660.
    assert rank_sum_z([1.0, 2.0, 3.0], [2.0, 4.0]) == pytest.approx(-0.8660, abs=1e-4)
    with pytest.raises(ValueError):
        rank_sum_z([], [1.0])


def test_a_near_equal_play_is_not_a_miss() -> None:
    # Within 0.001 of the best play: as good as the best for this count.
    close = [Played("over", 1, True, 0.0005, 6.0)] * 20 + plays("alone", 0, 20)
    found = misses(close, {("over", 1)})
    assert found is not None and found.overlap_misses == 0 and found.p == 1.0


# Games set aside: the helped account's own game at a third table ("own", played as
# usual) overlaps the helper's game as the consulted ones do.
ASIDE_HELPED = [
    window("alone", 0, 30),
    window("over-a", 60, 90),
    window("own", 61, 91),
    window("over-b", 120, 150),
]
ASIDE_HELPER = [window("h-1", 61, 95), window("h-2", 121, 155)]


def with_own_game(person_set_aside: int = 1) -> Finding | None:
    helped = (
        plays("alone", 8, 12)
        + plays("over-a", 0, 20)
        + plays("own", 8, 12)
        + plays("over-b", 0, 20)
    )
    helper = plays("h-1", 5, 15) + plays("h-2", 5, 15)
    policy = consulting_play.OverlapPolicy(person_set_aside=person_set_aside)
    return consulting_play.assess(
        "helped", "helper", ASIDE_HELPED, helped, ASIDE_HELPER, helper, policy, one_person=True
    )


def test_an_own_game_at_a_third_table_is_set_aside() -> None:
    # 16 misses in 80 decisions. Pooled, 8 of the 60 overlapping: P(X <= 8) = sum over
    # i <= 8 of C(16,i) C(64,60-i) / C(80,60) = 0.01474 > 0.001: nothing.
    assert with_own_game(person_set_aside=0) is None
    # Four splits (none aside, then each of the 3 overlapping games; each leaves 40 or
    # more decisions). With "own" aside, 0 of the 40 consulted decisions missed: all 16
    # misses among the other 40, C(40,16) / C(80,16) = 2.3315e-6; times 4 = 9.326e-6:
    # MEDIUM (above 1e-6, the helper at the person's 6 s), sigma 4.28.
    finding = with_own_game()
    assert finding is not None and finding.severity is Severity.MEDIUM
    assert finding.score == pytest.approx(4.28, abs=0.01)
    best = finding.evidence[0]
    assert best.details["p_value"] == "9.33e-06"
    assert (best.details["games_set_aside"], best.details["splits"]) == ("own", "4")
    assert (best.details["decisions_overlapping"], best.details["misses_overlapping"]) == (
        "40",
        "0",
    )
    assert (best.details["decisions_baseline"], best.details["misses_baseline"]) == ("40", "16")
    assert best.game_ids == ("over-a", "over-b")


def test_the_splits_are_paid_for() -> None:
    # One consulted game (0 of 20) and the own game (8 of 20) beside 8 of 20 alone: with
    # "own" aside C(40,16) / C(60,16) = 4.201e-4, under 0.001 alone, but 3 splits were
    # asked: 1.26e-3 > 0.001: nothing.
    helped = plays("alone", 8, 12) + plays("over-a", 0, 20) + plays("own", 8, 12)
    during = {("over-a", 1), ("own", 1)}
    found = misses(helped, during)
    assert found is not None and found.splits == 3 and found.set_aside == ("own",)
    assert found.p == pytest.approx(3 * 4.201108e-4, rel=1e-5)
    assert (
        consulting_play.assess(
            "helped",
            "helper",
            ASIDE_HELPED[:3],
            helped,
            ASIDE_HELPER[:1],
            plays("h-1", 5, 15),
            one_person=True,
        )
        is None
    )


def test_usual_play_at_two_tables_stays_usual_with_a_game_aside() -> None:
    # 8 of 20 alone, 4 of 20 in each of three overlapping games: the smallest of the 4
    # splits is the pooled one, P(X <= 12) = sum over i <= 12 of C(20,i) C(60,60-i) /
    # C(80,60) = 0.07089 (each game aside: 8 of 40, 0.2196); times 4 = 0.2835: nothing.
    helped = (
        plays("alone", 8, 12)
        + plays("over-a", 4, 16)
        + plays("own", 4, 16)
        + plays("over-b", 4, 16)
    )
    found = misses(helped, {("over-a", 1), ("own", 1), ("over-b", 1)})
    assert found is not None and found.set_aside == () and found.splits == 4
    assert found.p == pytest.approx(4 * 0.0708859, rel=1e-5)


def test_a_split_leaving_too_few_decisions_is_not_asked() -> None:
    # 20 consulted decisions (0 missed) and a short own game (5 of 10), 8 of 20 alone: 13
    # of 50. Setting the consulted game aside would leave 10 (< 20): 2 splits, not 3.
    # Pooled, 5 of 30: 0.06589; "short" aside, 0 of 20: C(30,13) / C(50,13) = 3.3748e-4;
    # times 2 = 6.75e-4 <= 0.001.
    helped = plays("alone", 8, 12) + plays("over-a", 0, 20) + plays("short", 5, 5)
    found = misses(helped, {("over-a", 1), ("short", 1)})
    assert found is not None and found.splits == 2 and found.set_aside == ("short",)
    assert found.p == pytest.approx(2 * 3.3748429e-4, rel=1e-5)


def test_the_binomial_low_tail_by_hand() -> None:
    # At most 1 miss in 60 decisions at 15 %: 0.85^60 + 60 x 0.15 x 0.85^59 = 6.7477e-4.
    assert binomial_low_tail(1, 60, 0.15) == pytest.approx(6.7477e-4, rel=1e-4)
    assert binomial_low_tail(60, 60, 0.15) == 1.0
    assert binomial_low_tail(-1, 60, 0.15) == 0.0
    # A month of decisions (a float's comb would overflow at this size).
    assert 0.0 < binomial_low_tail(150, 2000, 0.15) < 1e-20
    with pytest.raises(ValueError):
        binomial_low_tail(1, 60, 0.0)


def few_of_its_own(own_missed: int, overlap_missed: int) -> Finding | None:
    # Few decisions of its own (20) against 60 at two tables; the other account plays only
    # beside it, at the person's usual 6 s a decision (not idle).
    helped = plays("alone", own_missed, 20 - own_missed) + plays(
        "over", overlap_missed, 60 - overlap_missed
    )
    helper = plays("h-busy", 20, 40)
    return consulting_play.assess(
        "helped", "helper", HELPED_WINDOWS, helped, HELPER_WINDOWS, helper, one_person=True
    )


def test_so_few_misses_that_no_person_makes_them_is_the_second_sign() -> None:
    # 4 misses of 20 alone, 1 of 60 at two tables: P(X <= 1) = (C(75,60) + 5 C(75,59)) /
    # C(80,60) = 0.012737, between the lines; the other account at the person's pace. At the
    # fewest misses a person plays at, 15 %, 1 of 60 is 6.7477e-4 <= 0.001: MEDIUM.
    found = few_of_its_own(4, 1)
    assert found is not None and found.severity is Severity.MEDIUM
    best = found.evidence[0]
    assert (best.details["p_value"], best.details["alert_line"]) == ("0.0127", "0.05")
    assert best.details["p_at_human_floor"] == "0.000675"
    # An expert's good stretch: 8 of 60 (13 %) against 8 of 20 alone. The person's own games
    # say it is unusual (P(X <= 8) = 0.014742), but a person at 15 % misses makes 8 or fewer
    # of 60 with 0.4448: nothing (the other account not idle either).
    stretch = misses(plays("alone", 8, 12) + plays("over", 8, 52), {("over", 1)})
    assert stretch is not None and (stretch.overlap_misses, stretch.base_misses) == (8, 8)
    assert stretch.p == pytest.approx(0.014742, rel=1e-4)
    assert stretch.floor_p == pytest.approx(0.4448, rel=1e-3)
    assert few_of_its_own(8, 8) is None


# The population's paces: bucket floor(log seconds / 0.05) -> accounts. 6 s is bucket
# floor(1.7918 / 0.05) = 35; 11 s (log 2.3979) is bucket 47; bucket 48 holds 11.02-11.59 s.
def population(slow: int, usual: int) -> consulting_play.PacePopulation:
    return consulting_play.PacePopulation({35: usual, 48: slow})


def test_a_population_share_by_hand() -> None:
    # 5 of 100 accounts in buckets at or above 11 s's (47): 0.05; the bucket is counted
    # whole, so 11.5 s (bucket 48) finds the same 5.
    assert population(5, 95).slower_share(2.3979) == pytest.approx(0.05)
    assert population(5, 95).slower_share(2.4423) == pytest.approx(0.05)
    assert population(5, 95).slower_share(2.5) == 0.0  # bucket 50: nobody that slow
    # Under 100 accounts the share says too little: none.
    assert population(4, 50).slower_share(2.3979) is None


def test_an_accounts_pace_is_its_counted_think_times_mean_log() -> None:
    # Counted decisions only (a forced move's pace is the player's setting): logs of 2 s
    # and 8 s, mean (0.6931 + 2.0794) / 2 = 1.3863 (a geometric mean of 4 s); an instant
    # move counts as 0.1 s.
    played = [
        Played("g", 1, True, 0.0, 2.0),
        Played("g", 1, True, 0.0, 8.0),
        Played("g", 1, False, 0.0, 0.5),
        Played("g", 1, True, 0.0, None),
    ]
    assert consulting_play.account_pace(played, 2) == pytest.approx(1.3863, abs=1e-4)
    assert consulting_play.account_pace(played, 3) is None
    assert consulting_play.log_seconds(0.0) == pytest.approx(-2.3026, abs=1e-4)


def with_population(
    paces: consulting_play.PacePopulation, helper_own_seconds: float | None = None
) -> Finding | None:
    # As ``one_person(7, 11.0)``: 7 misses of 40 at two tables against 16 of 40 alone,
    # p = 0.02343; the other account at 11 s, 1.83 times the person's 6 s (under 2).
    helped = plays("alone", 16, 24) + plays("over", 7, 33)
    helper = plays("h-busy", 10, 30, seconds=11.0)
    windows = HELPER_WINDOWS
    if helper_own_seconds is not None:
        helper += plays("h-own", 10, 30, seconds=helper_own_seconds)
        windows = [*HELPER_WINDOWS, window("h-own", 200, 230)]
    return consulting_play.assess(
        "helped", "helper", HELPED_WINDOWS, helped, windows, helper, one_person=True,
        paces=paces,
    )


def test_an_other_account_among_the_populations_slowest_is_the_second_sign() -> None:
    # With no games of its own, its 40 think times at 11 s (pace bucket 47) are as slow as
    # 5 of the population's 100 accounts: 0.05 <= ``pace_share``: MEDIUM, as the idle
    # other account's line (0.05 against p = 0.02343, 1.99 sigma).
    found = with_population(population(5, 95))
    assert found is not None and found.severity is Severity.MEDIUM
    assert found.score == pytest.approx(1.99, abs=0.01)
    best, slow = found.evidence
    assert best.details["alert_line"] == "0.05"
    assert slow.details["population_at_least_as_slow"] == "0.050"
    assert slow.details["usual_pace"] == "the other account's games"
    # 6 of 100 as slow (0.06): an ordinary slow person; nothing.
    assert with_population(population(6, 94)) is None
    # A population of 54 accounts: no share, nothing.
    assert with_population(population(4, 50)) is None


def test_an_other_account_with_games_of_its_own_is_held_to_its_own_pace() -> None:
    # Its own game at 9 s: 11 s is 1.22 times its usual (under 1.5), and a person slow in
    # their own games too is no sign, however slow against the population: nothing.
    assert with_population(population(5, 95), helper_own_seconds=9.0) is None


def test_games_against_each_other_are_no_ones_usual_play() -> None:
    # The helped account threw a game to the other (20 misses of 20, "vs", both seated at
    # that one table), played 8 of 20 alone and 4 of 20 while the other sat elsewhere.
    # Counted as its usual play, the thrown game makes the overlap look good: 4 of 20
    # against 32 of 60, P(X <= 4) = sum over i <= 4 of C(32,i) C(28,20-i) / C(60,20) =
    # 2.88e-4, under 0.001. Left out, 4 of 20 against 12 of 40: 0.1504: nothing, though
    # the other account ran 2.5 times the person's pace (15 s against 6 s).
    helped_windows = [window("alone", 0, 30), window("vs", 35, 55), window("over", 60, 90)]
    helper_windows = [window("vs", 35, 55), window("h-busy", 61, 95)]
    helped = plays("alone", 8, 12) + plays("vs", 20, 0) + plays("over", 4, 16)
    helper = plays("vs", 0, 20) + plays("h-busy", 5, 15, seconds=15.0)
    pooled = misses(helped, {("over", 1)})
    assert pooled is not None and pooled.p == pytest.approx(2.87991e-4, rel=1e-4)
    assert (
        consulting_play.assess(
            "helped", "helper", helped_windows, helped, helper_windows, helper, one_person=True
        )
        is None
    )
