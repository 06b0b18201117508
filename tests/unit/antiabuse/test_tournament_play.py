"""The pure tournament detectors: soft play between a pair that meets in a tournament, and
chip dumping through forfeits. Every expected figure is worked out by hand beside it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from services.antiabuse.domain.findings import Detector, Severity
from services.antiabuse.domain.play import PlayedGame
from services.antiabuse.domain.tournament_play import (
    TournamentMatch,
    assess_forfeits,
    assess_soft_play,
    forfeit_test,
)

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def at(hours: float) -> datetime:
    return T0 + timedelta(hours=hours)


def won(n: int, who: str, epd: float) -> PlayedGame:
    return PlayedGame(f"w{who}{n}", who, "rival", True, epd, 30, 0.0, 0.0, at(n))


def lost(game_id: str, who: str, to: str, epd: float, hours: float) -> PlayedGame:
    return PlayedGame(game_id, who, to, False, epd, 30, 0.0, 0.0, at(hours))


def match(
    n: int, winner: str, loser: str, decision: str = "played", *, tournament: str = "t1"
) -> TournamentMatch:
    game_id = f"g{n}" if decision == "played" else ""
    return TournamentMatch(tournament, f"r{n}m1", game_id, winner, loser, decision, at(10 + n))


# The loser's level: the median of wins at 0.020, 0.030, 0.025 is 0.025; far below it is
# at least 2.5 x 0.025 = 0.0625 and at least 0.025 + 0.04 = 0.065, so 0.065 or more.
LEVEL = [won(n, "a", epd) for n, epd in enumerate((0.020, 0.030, 0.025))]


def test_a_tournament_match_lost_far_below_the_losers_level_is_soft_play_low() -> None:
    games = {"a": [*LEVEL, lost("g1", "a", "b", 0.070, 11)], "b": []}
    finding = assess_soft_play("b", "a", [match(1, "b", "a")], games, one_person=False)
    assert finding is not None
    assert finding.detector is Detector.RATING_MANIPULATION
    assert finding.subjects == ("a", "b")
    assert finding.severity is Severity.LOW and finding.score == 1.0
    (evidence,) = finding.evidence
    assert evidence.kind == "tournament_soft_play" and evidence.game_ids == ("g1",)
    assert evidence.details["baseline_error_per_decision"] == "0.0250"
    assert evidence.details["round"] == "1" and evidence.details["loser"] == "a"


def test_a_loss_just_inside_the_margin_is_not_soft_play() -> None:
    # 0.064 >= 0.0625 (the ratio) but 0.064 - 0.025 = 0.039 < 0.04 (the margin).
    games = {"a": [*LEVEL, lost("g1", "a", "b", 0.064, 11)], "b": []}
    assert assess_soft_play("a", "b", [match(1, "b", "a")], games, one_person=False) is None


def test_soft_play_twice_between_the_pair_or_once_between_one_person_is_high() -> None:
    games = {"a": [*LEVEL, lost("g1", "a", "b", 0.070, 11), lost("g2", "a", "b", 0.090, 12)]}
    twice = [match(1, "b", "a"), match(2, "b", "a", tournament="t2")]
    finding = assess_soft_play("a", "b", twice, games, one_person=False)
    assert finding is not None and finding.severity is Severity.HIGH and finding.score == 2.0
    once = assess_soft_play("a", "b", twice[:1], games, one_person=True)
    assert once is not None and once.severity is Severity.HIGH
    assert once.evidence[0].details["one_person"] == "true"


def test_no_judgement_without_the_losers_level_nor_for_a_forfeit() -> None:
    two_wins = {"a": [*LEVEL[:2], lost("g1", "a", "b", 0.200, 11)]}  # 2 wins: no level
    assert assess_soft_play("a", "b", [match(1, "b", "a")], two_wins, one_person=False) is None
    games = {"a": [*LEVEL, lost("g1", "a", "b", 0.200, 11)]}
    no_show = [match(1, "b", "a", "no_show")]  # no game: nothing played to judge
    assert assess_soft_play("a", "b", no_show, games, one_person=False) is None
    # Another pair's match is not this pair's.
    assert assess_soft_play("a", "c", [match(1, "b", "a")], games, one_person=False) is None


def test_the_round_is_read_from_the_match_id() -> None:
    assert TournamentMatch("t", "r2m3", "", "a", "b", "played", T0).round == 2
    assert TournamentMatch("t", "final", "", "a", "b", "played", T0).round == 0


def forfeits_to(receivers: str, decision: str = "no_show") -> list[TournamentMatch]:
    return [match(n, r, "f", decision, tournament=f"t{n}") for n, r in enumerate(receivers)]


def test_three_forfeits_of_three_to_one_player_is_chip_dumping_medium() -> None:
    finding = assess_forfeits("f", {"r"}, forfeits_to("rrr"), one_person=False)
    assert finding is not None
    assert finding.detector is Detector.CHIP_DUMPING and finding.subjects == ("f", "r")
    # 3 of 3 at the base rate 0.2: 0.2^3 = 0.008 <= 0.01, > 0.001.
    assert finding.severity is Severity.MEDIUM and finding.score == pytest.approx(0.008)
    (evidence,) = finding.evidence
    assert evidence.kind == "forfeited_to_the_same_player"
    assert (evidence.details["forfeits"], evidence.details["matches_against"]) == ("3", "3")
    assert evidence.details["tournaments"] == "t0,t1,t2"


def test_five_of_five_is_high_and_one_person_is_high_at_three() -> None:
    five = assess_forfeits("f", {"r"}, forfeits_to("rrrrr", "disconnected"), one_person=False)
    assert five is not None and five.severity is Severity.HIGH
    assert five.score == pytest.approx(0.00032)  # 0.2^5
    linked = assess_forfeits("f", {"r", "f"}, forfeits_to("rrr"), one_person=True)
    assert linked is not None and linked.severity is Severity.HIGH


def test_forfeits_to_accounts_linked_to_the_receiver_count_together() -> None:
    # r and r2 are one person: 3 of 3 to the group, 0.008; to r alone 2 of 2, nothing.
    finding = assess_forfeits("f", {"r", "r2"}, forfeits_to(["r", "r2", "r"]), one_person=False)
    assert finding is not None and finding.subjects == ("f", "r", "r2")
    assert assess_forfeits("f", {"r"}, forfeits_to(["r", "r2", "r"]), one_person=False) is None


def test_forfeits_within_chance_raise_nothing() -> None:
    # One honest no-show; two of two (below the minimum of 3, 0.04 anyway).
    assert assess_forfeits("f", {"r"}, forfeits_to("r"), one_person=False) is None
    assert assess_forfeits("f", {"r"}, forfeits_to("rr"), one_person=False) is None
    # 3 of 4 against r (one played and won by f): 4 x 0.2^3 x 0.8 + 0.2^4 = 0.0272.
    matches = [*forfeits_to("rrr"), match(9, "f", "r")]
    test = forfeit_test("f", {"r"}, matches)
    assert (test.matches, test.forfeits) == (4, 3)
    assert test.p_value == pytest.approx(0.0272)
    assert assess_forfeits("f", {"r"}, matches, one_person=False) is None


def test_a_player_who_no_shows_everybody_is_judged_at_their_own_rate() -> None:
    # 3 of 3 to r, and 1 of 4 against others: the chance is 1/4, 0.25^3 = 0.015625 > 0.01.
    others = [match(20 + n, o, "f", "no_show" if o == "x" else "played") for n, o in
              enumerate("xyzw")]
    test = forfeit_test("f", {"r"}, [*forfeits_to("rrr"), *others])
    assert test.chance == 0.25 and test.p_value == pytest.approx(0.015625)
    assert assess_forfeits("f", {"r"}, [*forfeits_to("rrr"), *others], one_person=False) is None
