"""The pure play detectors: binomial tails, a player's own level, thrown losses, sandbagging,
win trading, deliberate disconnects and the analysis half of chip dumping.

Every expected figure is worked out by hand in the comment beside it.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from services.antiabuse.domain import chip_dumping, deliberate_disconnect, dumping_play
from services.antiabuse.domain import rating_manipulation as rm
from services.antiabuse.domain.deliberate_disconnect import Stop
from services.antiabuse.domain.findings import Detector, Severity
from services.antiabuse.domain.play import PlayedGame, baseline, far_below
from services.antiabuse.domain.rating_manipulation import RatingChange, Result
from services.antiabuse.domain.stats import binomial_tail, median

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def at(hours: float) -> datetime:
    return T0 + timedelta(hours=hours)


def game(
    n: int,
    won: bool,
    epd: float,
    *,
    who: str = "p",
    opponent: str = "o",
    decisions: int = 30,
    take: float = 0.0,
    passed: float = 0.0,
) -> PlayedGame:
    return PlayedGame(f"g{n}", who, opponent, won, epd, decisions, take, passed, at(n))


# A player whose wins were played at 0.020, 0.018, 0.025 and 0.019 per decision:
# sorted 0.018, 0.019, 0.020, 0.025, median (0.019 + 0.020) / 2 = 0.0195.
WINS = [game(1, True, 0.020), game(2, True, 0.018), game(3, True, 0.025), game(4, True, 0.019)]


def test_binomial_tails_by_hand() -> None:
    assert binomial_tail(5, 5, 0.35) == pytest.approx(0.35**5)  # 0.0052521875
    # P(X >= 4 | 5, 0.35) = 5 x 0.35^4 x 0.65 + 0.35^5 = 0.0487703125 + 0.0052521875
    assert binomial_tail(4, 5, 0.35) == pytest.approx(0.0540225)
    assert binomial_tail(7, 7, 0.5) == pytest.approx(1 / 128)
    assert binomial_tail(2, 3, 0.5) == pytest.approx(4 / 8)  # C(3,2) + C(3,3) = 4 of 8
    assert binomial_tail(0, 4, 0.3) == 1.0
    assert binomial_tail(5, 4, 0.3) == 0.0
    with pytest.raises(ValueError):
        binomial_tail(1, 2, 1.5)
    assert median([3.0, 1.0, 2.0]) == 2.0
    assert median([4.0, 1.0, 3.0, 2.0]) == 2.5


def test_a_players_level_is_the_median_of_their_wins_and_far_below_needs_both_margins() -> None:
    assert baseline(WINS) == pytest.approx(0.0195)
    assert baseline(WINS[:2]) is None  # two wins: too few to judge anyone by
    level = 0.0195
    # 0.090 >= 2.5 x 0.0195 = 0.04875 and 0.090 - 0.0195 = 0.0705 >= 0.04: far below.
    assert far_below(game(5, False, 0.090), level)
    # 0.045 < 0.04875: a bad game, not a thrown one.
    assert not far_below(game(6, False, 0.045), level)
    assert not far_below(game(7, False, 0.090, decisions=9), level)  # too few decisions
    assert not far_below(game(8, True, 0.090), level)  # a win is never thrown
    # A strong player (0.005): 0.020 is 4x their level but only 0.015 above it (< 0.04).
    assert not far_below(game(9, False, 0.020), 0.005)


def test_three_thrown_losses_are_rating_manipulation_and_an_honest_loser_is_not() -> None:
    # Each loss >= 0.0875: far below 0.0195 and below a beginner's line too (judged alone).
    tanker = WINS + [game(10 + i, False, epd) for i, epd in enumerate((0.09, 0.11, 0.10))]
    finding = rm.assess_thrown("p", tanker, [])
    assert finding is not None
    assert finding.detector is Detector.RATING_MANIPULATION
    assert finding.subjects == ("p",)
    assert finding.severity is Severity.MEDIUM
    assert finding.score == 3.0
    (evidence,) = finding.evidence
    assert evidence.kind == "losses_below_own_level"
    assert evidence.game_ids == ("g10", "g11", "g12")
    assert evidence.details["baseline_error_per_decision"] == "0.0195"
    assert rm.assess_thrown("p", tanker[:-1], []) is None  # two: not yet
    # Six thrown losses (twice the minimum): HIGH.
    six = tanker + [game(20 + i, False, 0.1) for i in range(3)]
    assert rm.assess_thrown("p", six, []).severity is Severity.HIGH  # type: ignore[union-attr]
    # An honest loser on a bad day: losses at 0.030 to 0.045, all under 0.04875.
    honest = WINS + [game(30 + i, False, e) for i, e in enumerate((0.03, 0.045, 0.035, 0.04))]
    assert rm.assess_thrown("p", honest, []) is None
    # No baseline (under three wins): nobody is judged on nothing.
    assert rm.assess_thrown("p", tanker[2:], []) is None


def change(n: int, previous: float, new: float, opponent: float | None = None) -> RatingChange:
    return RatingChange(f"r{n}", previous, new, opponent, at(n))


def test_a_rating_drop_then_wins_at_low_tables_is_sandbagging_an_ordinary_dip_is_not() -> None:
    # Peak 1600, three losses to 1500 (a fall of 100), then wins against 1450 and 1480,
    # both <= 1600 - 100 = 1500.
    fall = [
        change(1, 1600, 1570),
        change(2, 1570, 1540),
        change(3, 1540, 1500),
        change(4, 1500, 1512, opponent=1450),
        change(5, 1512, 1525, opponent=1480),
    ]
    found = rm.sandbagging(fall, rm.DEFAULT_POLICY)
    assert found is not None
    assert (found.peak, found.trough) == (1600, 1500)
    assert [c.game_id for c in found.low_wins] == ["r4", "r5"]
    # An ordinary dip: 1600 to 1540 (60 < 100), then a win against 1530.
    dip = [change(1, 1600, 1570), change(2, 1570, 1540), change(3, 1540, 1552, opponent=1530)]
    assert rm.sandbagging(dip, rm.DEFAULT_POLICY) is None
    # The same fall with one low win is not enough (two are needed).
    assert rm.sandbagging(fall[:4], rm.DEFAULT_POLICY) is None
    # Alone, sandbagging raises nothing; with thrown losses it lifts MEDIUM to HIGH.
    assert rm.assess_thrown("p", WINS, fall) is None
    tanker = WINS + [game(10 + i, False, epd) for i, epd in enumerate((0.09, 0.11, 0.10))]
    finding = rm.assess_thrown("p", tanker, fall)
    assert finding is not None and finding.severity is Severity.HIGH
    assert [e.kind for e in finding.evidence] == [
        "losses_below_own_level",
        "rating_drop_then_low_tables",
    ]
    assert finding.evidence[1].details["opponent_ratings"] == "1450.0,1480.0"


def results(winners: str) -> list[Result]:
    return [Result(f"s{i}", w, at(i)) for i, w in enumerate(winners)]


def test_results_alternating_within_a_pair_are_win_trading() -> None:
    # abababab: 7 changes in 7 transitions, p = (1/2)^7 = 1/128 = 0.0078125 <= 0.01: MEDIUM.
    finding = rm.assess_win_trading("b", "a", results("abababab"))
    assert finding is not None
    assert finding.subjects == ("a", "b")
    assert finding.severity is Severity.MEDIUM
    assert finding.score == pytest.approx(0.007812, abs=1e-6)
    assert finding.evidence[0].details["alternations"] == "7"
    # 11 sessions alternating: 10 of 10, p = 1/1024 = 0.000977 <= 0.001: HIGH.
    high = rm.assess_win_trading("a", "b", results("ababababab"[:10] + "a"))
    assert high is not None and high.severity is Severity.HIGH
    # aababbab: changes at 2,3,4,6,7 = 5 of 7; P(X >= 5 | 7, 1/2) = (21 + 7 + 1) / 128 = 0.227.
    assert rm.alternations(results("aababbab")) == 5
    assert rm.assess_win_trading("a", "b", results("aababbab")) is None
    # Seven alternating sessions: under the minimum of eight, however unlikely.
    assert rm.assess_win_trading("a", "b", results("abababa")) is None


def stops(shares: list[float], who: str = "p") -> list[Stop]:
    return [Stop(f"d{i}", who, s, at(i)) for i, s in enumerate(shares)]


def test_disconnects_concentrated_in_losing_positions_beyond_chance() -> None:
    # Five abandoned sessions, all losing (<= 0.4): p = 0.35^5 = 0.00525 <= 0.01: MEDIUM.
    finding = deliberate_disconnect.assess("p", stops([0.1, 0.3, 0.4, 0.2, 0.05]))
    assert finding is not None
    assert finding.detector is Detector.DELIBERATE_DISCONNECT
    assert finding.severity is Severity.MEDIUM
    assert finding.score == pytest.approx(0.00525)
    assert finding.evidence[0].game_ids == ("d0", "d1", "d2", "d3", "d4")
    # Nine of nine: 0.35^9 = 7.88e-5 <= 1e-4: HIGH.
    assert deliberate_disconnect.assess("p", stops([0.2] * 9)).severity is Severity.HIGH  # type: ignore[union-attr]
    # Four of four: 0.35^4 = 0.0150 > 0.01: not yet, however suspicious.
    assert deliberate_disconnect.assess("p", stops([0.2] * 4)) is None
    # Five losing of six: 6 x 0.35^5 x 0.65 + 0.35^6 = 0.02048 + 0.00184 = 0.0223 > 0.01.
    assert deliberate_disconnect.p_value(stops([0.2] * 5 + [0.9])) == pytest.approx(0.0223218, 1e-5)
    assert deliberate_disconnect.assess("p", stops([0.2] * 5 + [0.9])) is None
    # One accidental disconnect while losing: never enough.
    assert deliberate_disconnect.assess("p", stops([0.1])) is None
    # Share 0.41 is not losing; the same session twice is one stop; others' stops ignored.
    assert not deliberate_disconnect.losing(stops([0.41])[0])
    assert deliberate_disconnect.assess("p", stops([0.2] * 5, who="q")) is None
    assert deliberate_disconnect.assess("p", stops([0.2]) * 5) is None


def test_the_givers_play_corroborates_a_one_way_flow_and_lifts_it_to_high() -> None:
    # The giver's wins against others: level 0.0195. Losses to the receiver "r" at 0.09 and
    # 0.10 per decision (far below: >= 0.04875 and >= 0.0595), one with a hopeless take
    # (0.5) and one passing an easy take (0.35), both >= 0.3.
    losses = [
        game(10, False, 0.09, opponent="r", take=0.5),
        game(11, False, 0.10, opponent="r", passed=0.35),
        game(12, False, 0.02, opponent="r"),
    ]
    evidence = dumping_play.corroboration("p", "r", WINS + losses)
    assert [e.kind for e in evidence] == [
        "played_below_own_level",
        "hopeless_double_taken",
        "easy_take_passed",
    ]
    assert evidence[0].game_ids == ("g10", "g11")
    assert evidence[1].game_ids == ("g10",)
    assert evidence[2].game_ids == ("g11",)
    # One game showing a sign is not enough: an honest loser blunders a cube now and then.
    assert (
        dumping_play.corroboration("p", "r", [*WINS, game(10, False, 0.02, opponent="r", take=0.5)])
        == []
    )
    # A weak player who just loses (no wins to measure a level, cube errors under 0.3).
    weak = [game(i, False, 0.06, opponent="r", take=0.2) for i in range(6)]
    assert dumping_play.corroboration("p", "r", weak) == []
    # Losses to someone else do not corroborate a flow to "r".
    assert (
        dumping_play.corroboration(
            "p",
            "r",
            [*WINS, game(10, False, 0.09, opponent="x"), game(11, False, 0.1, opponent="x")],
        )
        == []
    )
    # Four settled games, 20.00 net one way: nothing alone (1/16 by chance between
    # equals); with the corroboration: HIGH, the evidence appended.
    transfers = [
        chip_dumping.Transfer(f"t{i}", f"g{10 + i}", "p", "r", 500, "USD", T0) for i in range(4)
    ]
    bare = chip_dumping.assess(transfers, T0)
    assert bare is None
    lifted = chip_dumping.assess(transfers, T0, corroboration=evidence)
    assert lifted is not None and lifted.severity is Severity.HIGH
    assert [e.kind for e in lifted.evidence][1:] == [e.kind for e in evidence]


def transfer(n: int, loser: str, winner: str, amount: int = 500) -> chip_dumping.Transfer:
    return chip_dumping.Transfer(f"t{n}", f"g{n}", loser, winner, amount, "USD", at(n))


def test_a_dump_givers_losses_to_their_receiver_are_chip_dumping_not_rating_manipulation() -> None:
    # The giver's wins against others: level 0.0195. Four losses to "r" at 0.20 per decision
    # (far below: >= 0.04875 and >= 0.0595), each 5.00 one way, r never losing to them.
    dumped = [game(10 + i, False, 0.20, opponent="r") for i in range(4)]
    moved = [transfer(10 + i, "p", "r") for i in range(4)]
    assert rm.receivers("p", moved, at(20)) == {"r"}
    assert rm.assess_thrown("p", WINS + dumped, [], receivers={"r"}) is None
    # The same losses, no money flowing one way (played for nothing): 4 of 4 judged losses
    # far below, P(X >= 4 | 4, 0.1) = 0.0001 <= 0.01: rating manipulation.
    assert rm.assess_thrown("p", WINS + dumped, []) is not None
    # Two games one way already make a flow (chip dumping's minimums come later); one lost
    # game is a game, not a flow.
    assert rm.receivers("p", moved[:2], at(20)) == {"r"}
    assert rm.receivers("p", moved[:1], at(20)) == set()


def test_a_win_traders_thrown_losses_still_count() -> None:
    # p throws three games to "t" at 0.20 and beats "t" twice in between (results
    # alternating): 3 of 5 games one way, 0.6 < 0.9, so "t" is no receiver.
    traded = [game(10, False, 0.2, opponent="t"), game(11, True, 0.02, opponent="t"),
              game(12, False, 0.2, opponent="t"), game(13, True, 0.02, opponent="t"),
              game(14, False, 0.2, opponent="t")]  # fmt: skip
    moved = [transfer(10, "p", "t"), transfer(11, "t", "p"), transfer(12, "p", "t"),
             transfer(13, "t", "p"), transfer(14, "p", "t")]  # fmt: skip
    assert rm.receivers("p", moved, at(20)) == set()
    # Wins: the four of WINS and two at 0.02: median of 0.018, 0.019, 0.02, 0.02, 0.02, 0.025
    # = 0.02; the three losses at 0.2 are far below (>= 0.05, >= 0.06), 3 of 3 judged:
    # P = 0.1^3 = 0.001 <= 0.01: MEDIUM.
    finding = rm.assess_thrown("p", WINS + traded, [], receivers=set())
    assert finding is not None and finding.severity is Severity.MEDIUM
    assert finding.evidence[0].game_ids == ("g10", "g12", "g14")
    assert finding.evidence[0].details["p_value"] == "0.001000"


def test_thrown_losses_must_be_more_than_honest_bad_days_explain() -> None:
    bad = [game(10 + i, False, 0.09) for i in range(3)]  # far below a level of 0.0195
    # 3 far below of 5 judged losses: P(X >= 3 | 5, 0.1) = 10 x 0.001 x 0.81
    # + 5 x 0.0001 x 0.9 + 0.00001 = 0.0081 + 0.00045 + 0.00001 = 0.00856 <= 0.01.
    ordinary = [game(20 + i, False, 0.03) for i in range(9)]
    five = rm.assess_thrown("p", WINS + bad + ordinary[:2], [])
    assert five is not None and five.severity is Severity.MEDIUM
    assert five.evidence[0].details["judged_losses"] == "5"
    assert five.evidence[0].details["p_value"] == "0.008560"
    # 3 of 6: 20 x 0.001 x 0.729 + 15 x 0.0001 x 0.81 + 6 x 0.00001 x 0.9 + 0.000001
    # = 0.01458 + 0.001215 + 0.000054 + 0.000001 = 0.01585 > 0.01: bad days.
    assert rm.assess_thrown("p", WINS + bad + ordinary[:3], []) is None
    # 3 of 12 (a player who loses often): 1 - 0.9^12 - 12 x 0.1 x 0.9^11 - 66 x 0.01 x 0.9^10
    # = 1 - 0.28243 - 0.37657 - 0.23013 = 0.1109: nothing.
    assert rm.assess_thrown("p", WINS + bad + ordinary, []) is None
    # A loss of 9 decisions is not judged, so it does not dilute the count either.
    short = [game(30 + i, False, 0.03, decisions=9) for i in range(9)]
    assert rm.assess_thrown("p", WINS + bad + ordinary[:2] + short, []) is not None


def test_a_giver_without_wins_is_judged_against_a_beginners_level() -> None:
    # No wins, so no level of their own: judged against 0.035, far below it from
    # 2.5 x 0.035 = 0.0875 (and 0.0875 - 0.035 = 0.0525 >= 0.04).
    losses = [game(10, False, 0.25, opponent="r"), game(11, False, 0.088, opponent="r"),
              game(12, False, 0.087, opponent="r")]  # fmt: skip
    evidence = dumping_play.corroboration("p", "r", losses)
    assert [e.kind for e in evidence] == ["played_below_own_level"]
    assert evidence[0].game_ids == ("g10", "g11")
    assert "too few wins" in evidence[0].description
    # One such loss alone is not enough (two games must show a sign).
    assert dumping_play.corroboration("p", "r", [losses[0], losses[2]]) == []
    # Four games, 20.00 one way, 1/16 by fair play: with the giver's play, HIGH.
    moved = [transfer(10 + i, "p", "r") for i in range(4)]
    assert chip_dumping.assess(moved, at(20)) is None
    lifted = chip_dumping.assess(moved, at(20), corroboration=evidence)
    assert lifted is not None and lifted.severity is Severity.HIGH


def ten_straight(loser: str = "w", winner: str = "s") -> list[chip_dumping.Transfer]:
    return [transfer(i, loser, winner, 1000) for i in range(10)]


def test_a_flow_the_measured_skill_gap_explains_is_not_dumping() -> None:
    # w loses ten straight games of 10.00 to s (100.00 net). As a coin between equals:
    # 0.5^10 = 1/1024 = 0.000977 <= 0.001, MEDIUM (no analysis: as before).
    flows = ten_straight()
    assert chip_dumping.assess(flows, at(20)) is not None
    # Measured: w plays 0.040 a decision in their wins, s 0.010, 20 decisions a game: s
    # gains 20 x 0.030 = 0.6 equity a game, a win chance of 0.5 + 0.6 / 2 = 0.8; ten
    # straight is 0.8^10 = 0.1074 by fair play at those strengths: nothing.
    gap = chip_dumping.Strengths(0.040, 0.010, 20)
    assert gap.receiver_win_chance(chip_dumping.DEFAULT_POLICY) == pytest.approx(0.8)
    assert chip_dumping.assess(flows, at(20), strengths=gap) is None
    # A gap of 0.002 (s at 0.018): 0.5 + 20 x 0.002 / 2 = 0.52, 0.52^10 = 0.001446 > 0.001.
    small = chip_dumping.Strengths(0.020, 0.018, 20)
    assert chip_dumping.assess(flows, at(20), strengths=small) is None
    # An enormous gap never makes the chance above 1 (0.5 + 20 x 0.2 / 2 = 2.5, held at 1).
    huge = chip_dumping.Strengths(0.210, 0.010, 20)
    assert huge.receiver_win_chance(chip_dumping.DEFAULT_POLICY) == 1.0


def test_a_stronger_or_unmeasured_giver_is_judged_as_an_equal() -> None:
    flows = ten_straight()
    # w measures stronger (0.010 against 0.040): judged as a coin, never below it: 1/1024.
    stronger = chip_dumping.Strengths(0.010, 0.040, 20)
    assert stronger.receiver_win_chance(chip_dumping.DEFAULT_POLICY) == 0.5
    finding = chip_dumping.assess(flows, at(20), strengths=stronger)
    assert finding is not None and finding.severity is Severity.MEDIUM
    details = finding.evidence[0].details
    assert details["receiver_win_chance"] == "0.5000"
    assert details["chance_at_measured_strengths"] == "0.000976562"
    # Either level unknown (too few wins): no gap is claimed, a coin.
    for unmeasured in (chip_dumping.Strengths(None, 0.010, 20),
                       chip_dumping.Strengths(0.040, None, 20)):  # fmt: skip
        assert chip_dumping.assess(flows, at(20), strengths=unmeasured) is not None


def test_a_flow_lost_in_real_games_needs_a_stricter_line() -> None:
    # Equal levels (0.02 each): a coin. Ten straight, 1/1024: MEDIUM while the losses were
    # not real games (5 of 10 played out is not more than half)...
    flows = ten_straight()
    half = chip_dumping.Strengths(0.02, 0.02, 20, losses_played_out=5)
    assert chip_dumping.assess(flows, at(20), strengths=half) is not None
    # ...nothing once 6 of the 10 were played out at w's level: the line is 0.0001.
    real = chip_dumping.Strengths(0.02, 0.02, 20, losses_played_out=6)
    assert chip_dumping.assess(flows, at(20), strengths=real) is None
    # 14 straight, 8 of them real games: 0.5^14 = 0.000061 <= 0.0001, MEDIUM; 13 straight,
    # 7 real: 0.5^13 = 0.000122 > 0.0001, nothing.
    fourteen = [transfer(i, "w", "s", 1000) for i in range(14)]
    most = chip_dumping.Strengths(0.02, 0.02, 20, losses_played_out=8)
    assert chip_dumping.assess(fourteen, at(20), strengths=most) is not None
    seven = chip_dumping.Strengths(0.02, 0.02, 20, losses_played_out=7)
    assert chip_dumping.assess(fourteen[:13], at(20), strengths=seven) is None


def test_the_strengths_are_the_players_levels_and_the_flows_real_games() -> None:
    # The giver p: WINS, level 0.0195. The receiver r: wins at 0.010, 0.012, 0.008 against
    # others, level 0.010. The flow's games g10 to g13, p's decisions 20, 22, 9, 24 and
    # r's 20, 24, 9, 22: sorted 9, 9, 20, 20, 22, 22, 24, 24, median (20 + 22) / 2 = 21.
    receiver_wins = [game(1 + i, True, epd, who="r") for i, epd in enumerate((0.010, 0.012, 0.008))]
    losses = [
        game(10, False, 0.030, opponent="r", decisions=20),  # 0.030 < 0.04875: played out
        game(11, False, 0.090, opponent="r", decisions=22),  # far below: not a real game
        game(12, False, 0.030, opponent="r", decisions=9),  # too short to judge
        game(13, False, 0.040, opponent="r", decisions=24),  # 0.040 < 0.04875: played out
    ]
    theirs = [game(10 + i, True, 0.01, who="r", opponent="p", decisions=d)
              for i, d in enumerate((20, 24, 9, 22))]  # fmt: skip
    measured = dumping_play.strengths(
        "p", "r", WINS + losses, receiver_wins + theirs, {"g10", "g11", "g12", "g13"}
    )
    assert measured.giver_level == pytest.approx(0.0195)
    # r's wins: 0.008, 0.010, 0.01 x 4, 0.012: median 0.010.
    assert measured.receiver_level == pytest.approx(0.010)
    assert measured.decisions_per_game == 21
    assert measured.losses_played_out == 2
    # A giver with no wins is judged against a beginner's 0.035: 0.05 played out, 0.09 not.
    unmeasured = dumping_play.strengths(
        "p", "r", [game(10, False, 0.05, opponent="r"), game(11, False, 0.09, opponent="r")],
        receiver_wins, {"g10", "g11"})  # fmt: skip
    assert unmeasured.giver_level is None and unmeasured.losses_played_out == 1


def played(who: str, opponent: str, won: bool, epd: float, n: int) -> PlayedGame:
    return game(n, won, epd, who=who, opponent=opponent)


def levels(*accounts: str) -> list[PlayedGame]:
    """Each account's three wins against others at 0.018, 0.019, 0.020: level 0.019."""
    wins = (0.018, 0.019, 0.020)
    return [played(a, "x", True, epd, 100 + 3 * i + j)
            for i, a in enumerate(accounts) for j, epd in enumerate(wins)]  # fmt: skip


def test_alternating_results_in_real_games_are_chance_not_win_trading() -> None:
    # Friends alternating throughout, 8 sessions: 7 of 7 changes, p = 1/128 <= 0.01.
    sessions = results("abababab")
    # Each of their 8 losses played out at the loser's level (0.03 < 2.5 x 0.019 = 0.0475).
    honest = levels("a", "b") + [
        played("b" if r.winner == "a" else "a", r.winner, False, 0.03, i)
        for i, r in enumerate(sessions)
    ]
    assert rm.pair_losses("a", "b", honest).played_out == 8
    assert rm.assess_win_trading("a", "b", sessions, games=honest) is None
    # 4 of the 8 played out is not more than half: the alternation counts, MEDIUM.
    short = [replace_decisions(g, 5) if g.game_id in {"g0", "g1", "g2", "g3"} else g
             for g in honest]  # fmt: skip
    assert rm.pair_losses("a", "b", short).played_out == 4
    finding = rm.assess_win_trading("a", "b", sessions, games=short)
    assert finding is not None and finding.severity is Severity.MEDIUM
    assert finding.evidence[0].details["losses_played_out"] == "4"
    # Unanalysed (no games): judged on the alternation alone, as before.
    assert rm.assess_win_trading("a", "b", sessions) is not None


def replace_decisions(g: PlayedGame, decisions: int) -> PlayedGame:
    return PlayedGame(g.game_id, g.account_id, g.opponent, g.won, g.error_per_decision,
                      decisions, g.worst_take_error, g.worst_pass_error, g.at)  # fmt: skip


def test_losses_thrown_to_each_other_are_win_trading_below_eight_sessions() -> None:
    # Six sessions, ababab: too few for the alternation test. Every loss thrown at 0.20
    # (far below 0.019: >= 0.0475 and >= 0.059), by both: 6 of 6 judged,
    # P(X >= 6 | 6, 0.1) = 0.1^6 = 1e-6 <= 0.01, and 6 = twice the minimum of 3: HIGH.
    sessions = results("ababab")
    thrown = levels("a", "b") + [
        played("b" if r.winner == "a" else "a", r.winner, False, 0.20, i)
        for i, r in enumerate(sessions)
    ]
    finding = rm.assess_win_trading("a", "b", sessions, games=thrown)
    assert finding is not None and finding.subjects == ("a", "b")
    assert finding.severity is Severity.HIGH
    (evidence,) = finding.evidence
    assert evidence.kind == "losses_thrown_to_each_other"
    assert (evidence.details["thrown_losses"], evidence.details["judged_losses"]) == ("6", "6")
    assert evidence.details["p_value"] == "0.000001"
    # Three sessions, aba: b threw two, a one: 3 of 3, 0.1^3 = 0.001 <= 0.01: MEDIUM.
    three = rm.assess_win_trading("a", "b", sessions[:3], games=thrown[:9])
    assert three is not None and three.severity is Severity.MEDIUM
    # One way only (a dump giver's: b throws, a never loses): chip dumping's, not this.
    one_way = levels("a", "b") + [played("b", "a", False, 0.20, i) for i in range(6)]
    assert rm.assess_win_trading("a", "b", results("aaaaaa"), games=one_way) is None
    # Both threw, but 3 of 12 judged losses: 0.1109 > 0.01, honest bad days explain it.
    mixed = [*thrown[:6], played("b", "a", False, 0.20, 0), played("a", "b", False, 0.20, 1),
             played("b", "a", False, 0.20, 2)]  # fmt: skip
    mixed += [played("a" if i % 2 else "b", "b" if i % 2 else "a", False, 0.03, 10 + i)
              for i in range(9)]  # fmt: skip
    assert rm.pair_losses("a", "b", mixed).judged == 12
    assert rm.assess_win_trading("a", "b", results("ab" * 6), games=mixed) is None
