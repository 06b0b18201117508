"""The pure assistance detector: engine closeness, timing, the sequential verdict.

Expected values are worked out by hand in the comments (or taken from published
chi-square tables), not by the code under test.
"""

from __future__ import annotations

import dataclasses
import math
import random
from statistics import NormalDist

import pytest

from services.antiabuse.domain import assistance
from services.antiabuse.domain.assistance import Move, chi_square_lower_z, engine_test, timing_test
from services.antiabuse.domain.findings import Detector, Severity
from tests.support.assistance_population import flagged_at_some_look, honest_player, uniform_bot


def checker(error: float, seconds: float | None, game: str = "g1") -> Move:
    return Move(game, 1, "checker", True, error, seconds)


def forced(seconds: float, game: str = "g1") -> Move:
    return Move(game, 1, "checker", False, 0.0, seconds)


def cube(kind: str, error: float, seconds: float, game: str = "g1") -> Move:
    return Move(game, 1, kind, True, error, seconds)


def test_an_engine_perfect_window_against_the_floor() -> None:
    # 81 decisions of error 0, no history: mu0 = 0.004 (the floor), sigma0 = 3 x 0.004 = 0.012,
    # z = (0.004 - 0) / (0.012 / sqrt(81)) = 0.004 x 9 / 0.012 = 3.0.
    found = engine_test([0.0] * 81, [])
    assert found.reference_source == "floor"
    assert found.z == pytest.approx(3.0)
    # 203 decisions: sqrt(203) / 3 = 14.2478 / 3 = 4.7493 (the chess conviction level, just).
    assert engine_test([0.0] * 203, []).z == pytest.approx(4.7493, abs=1e-4)


def test_a_strong_honest_window_is_not_below_the_floor() -> None:
    # Mean 0.006 (PR 3), above the floor 0.004: z = (0.004 - 0.006) x sqrt(400) / 0.012 = -3.333.
    window = [0.0, 0.0, 0.0, 0.0, 0.03] * 80
    assert engine_test(window, []).z == pytest.approx(-3.3333, abs=1e-4)


def test_against_the_players_own_history() -> None:
    # History: 100 x 0.0 and 100 x 0.04: mean 0.02, sum of squares 200 x 0.02^2 = 0.08,
    # variance 0.08 / 199 = 0.000402010, so its own uncertainty 0.000402010 / 200 = 0.00000201005.
    # sigma0 = max(3 x 0.02, 0.02005) = 0.06; a window of 100 zeros:
    # z = 0.02 / sqrt(0.06^2 / 100 + 0.00000201005) = 0.02 / sqrt(0.00003801005)
    #   = 0.02 / 0.00616523 = 3.2440.
    found = engine_test([0.0] * 100, [0.0, 0.04] * 100)
    assert found.reference_source == "own history"
    assert found.reference == pytest.approx(0.02)
    assert found.z == pytest.approx(3.2440, abs=1e-3)
    # A history shorter than 200 decisions is not used: the floor is.
    assert engine_test([0.0] * 100, [0.0, 0.04] * 99).reference_source == "floor"


def exact_chi_square_cdf(x: float, k: int) -> float:
    """P(chi2(k) <= x) for even k, exactly: 1 - e^(-x/2) sum_{j < k/2} (x/2)^j / j!
    (an independent computation: the Poisson form of the chi-square with even degrees)."""
    half = x / 2
    return 1 - math.exp(-half) * sum(half**j / math.factorial(j) for j in range(k // 2))


@pytest.mark.parametrize(
    ("statistic", "k"), [(3.9403, 10), (14.9535, 30), (35.5345, 60), (27.0, 60), (50.0, 60)]
)
def test_wilson_hilferty_against_the_exact_chi_square(statistic: float, k: int) -> None:
    # The lower tail as a z: the normal quantile of 1 - P(chi2 <= x), from the exact form.
    # (Within 2% up to about 4 sigma, where the timing z is clipped; past it the cube root
    # overstates: 9.7 against 8.2 at chi2(60) = 4.)
    exact = -NormalDist().inv_cdf(exact_chi_square_cdf(statistic, k))
    assert chi_square_lower_z(statistic, k) == pytest.approx(exact, abs=0.02 * max(1.0, abs(exact)))
    # Tables, as a check of the exact form:
    # P(chi2(10) <= 3.9403) = 0.05, P(chi2(30) <= 14.9535) = 0.01.
    assert exact_chi_square_cdf(3.9403, 10) == pytest.approx(0.05, abs=1e-4)
    assert exact_chi_square_cdf(14.9535, 30) == pytest.approx(0.01, abs=1e-4)


def test_machine_timing_uniform_no_faster_forced_no_slower_cube() -> None:
    moves = [checker(0.0, 3.0)] * 60 + [forced(3.0)] * 10 + [cube("take", 0.0, 3.0)] * 6
    found = timing_test(moves)
    assert found is not None
    # Every log time equal: spread 0, X = 0, z = (1 - 2/(9k)) / sqrt(2/(9k)) with k = 65:
    # 2/585 = 0.0034188, (0.9965812) / 0.0584705 = 17.04, clipped to 4.
    assert found.uniform_z == 4.0
    # Forced: difference 0 against people's -0.7; pooled sd 0 -> the floor 0.5;
    # unit = 0.5 x sqrt(1/10 + 1/60) = 0.5 x 0.341565 = 0.170783; z = 0.7 / 0.170783 = 4.099 -> 4.
    assert found.forced_z == 4.0
    # Cube actions: difference 0 against people's +0.4; unit = 0.5 x sqrt(1/6 + 1/60)
    # = 0.5 x 0.428174 = 0.214087; z = 0.4 / 0.214087 = 1.8684.
    assert found.hard_z == pytest.approx(1.8684, abs=1e-3)
    # Stouffer (4 + 4 + 1.8684) / sqrt(3) = 5.697, clipped to 4.
    assert found.z == 4.0


def test_human_timing_pulls_the_other_way() -> None:
    # Checker plays alternate e^0 = 1 s and e^2 = 7.389 s
    # (log mean 1, log sd sqrt(60/59) = 1.00844);
    # forced plays e^0 = 1 s (log 0), cube actions e^2 (log 2).
    moves = [checker(0.0, s) for s in (1.0, math.e**2)] * 30
    moves += [forced(1.0)] * 10 + [cube("pass", 0.0, math.e**2)] * 10
    found = timing_test(moves)
    assert found is not None
    # Counted log times: 30 zeros and 40 twos (70 values): mean 80/70 = 1.142857,
    # sum of squares 30 x 1.142857^2 + 40 x 0.857143^2 = 39.18367 + 29.38776 = 68.57143,
    # variance 68.57143 / 69 = 0.993789; X = 69 x 0.993789 / 0.25 = 274.2857, X/k = 3.975155,
    # cube root 1.583508; z = (1 - 0.00322061 - 1.583508) / 0.0567504 = -10.4 -> -4.
    assert found.uniform_z == -4.0
    # Forced: difference 0 - 1 = -1; pooled sd: sqrt((9 x 0 + 59 x 1.016949) / 68) = 0.939336;
    # unit = 0.939336 x sqrt(1/10 + 1/60) = 0.939336 x 0.341565 = 0.320844;
    # z = (-1 + 0.7) / 0.320844 = -0.9350.
    assert found.forced_z == pytest.approx(-0.9350, abs=1e-3)
    # Cube: difference 2 - 1 = +1, the same unit; z = (0.4 - 1) / 0.320844 = -1.8701.
    assert found.hard_z == pytest.approx(-1.8701, abs=1e-3)
    # Stouffer: (-4 - 0.9350 - 1.8701) / sqrt(3) = -6.8051 / 1.7320508 = -3.9289.
    assert found.z == pytest.approx(-3.9289, abs=1e-3)


def test_too_few_timed_decisions_is_no_timing() -> None:
    assert timing_test([checker(0.0, 3.0)] * 29) is None
    assert timing_test([checker(0.0, None)] * 100) is None


def bot(n: int, seconds: float = 3.0) -> list[Move]:
    return [checker(0.0, seconds, game=f"g{i // 40}") for i in range(n)]


def test_a_bot_needs_enough_decisions_then_is_alerted_then_high() -> None:
    # 59 decisions: no verdict before 60, however perfect.
    assert assistance.assess("bot", bot(59)) is None
    # 60: engine z = sqrt(60)/3 = 2.5820; timing: uniform only (no forced, no cube), 4 (clipped);
    # sigma = (2.5820 + 4) / sqrt(2) = 4.6543: MEDIUM (3 <= sigma < 4.75).
    finding = assistance.assess("bot", bot(60))
    assert finding is not None
    assert finding.detector is Detector.ASSISTANCE
    assert finding.subjects == ("bot",)
    assert finding.severity is Severity.MEDIUM
    assert finding.score == pytest.approx(4.65, abs=0.01)
    # 66: (sqrt(66)/3 + 4) / sqrt(2) = (2.7080 + 4) / 1.41421 = 4.7433: MEDIUM;
    # 67: (sqrt(67)/3 + 4) / sqrt(2) = (2.7285 + 4) / 1.41421 = 4.7578: HIGH.
    assert getattr(assistance.assess("bot", bot(66)), "severity", None) is Severity.MEDIUM
    assert getattr(assistance.assess("bot", bot(67)), "severity", None) is Severity.HIGH
    # 100: engine z = 10/3 = 3.3333; sigma = 7.3333 / sqrt(2) = 5.1854: HIGH.
    finding = assistance.assess("bot", bot(100))
    assert finding is not None and finding.severity is Severity.HIGH
    assert finding.score == pytest.approx(5.19, abs=0.01)
    kinds = [e.kind for e in finding.evidence]
    assert kinds == ["engine_closeness", "machine_like_timing"]
    assert finding.evidence[0].details["engine_agreement"] == "1.000"
    assert finding.evidence[0].game_ids == ("g0", "g1", "g2")


def test_engine_closeness_must_hold_on_its_own() -> None:
    # Uniform timing but errors at the floor: engine z = 0 < 2, no finding whatever the timing.
    moves = [checker(e, 3.0) for e in [0.0, 0.0, 0.0, 0.0, 0.02] * 40]
    assert assistance.assess("quick", moves) is None


def test_without_timing_the_engine_z_alone() -> None:
    # 81 perfect untimed decisions: engine z = 3.0 = sigma: MEDIUM; 80: 2.98, nothing.
    finding = assistance.assess("p", [checker(0.0, None)] * 81)
    assert finding is not None and finding.severity is Severity.MEDIUM
    assert finding.score == pytest.approx(3.0)
    assert assistance.assess("p", [checker(0.0, None)] * 80) is None


def test_human_like_think_times_are_no_alibi_for_engine_play() -> None:
    # 81 perfect decisions at 1 s and e^2 s alternately (human-like spread, timing z < 0):
    # sigma = max(engine z, Stouffer) = engine z = sqrt(81) / 3 = 3.0: MEDIUM; at 203,
    # sqrt(203) / 3 = 4.7493, still MEDIUM; at 204, sqrt(204) / 3 = 4.7610: HIGH.
    def faking(n: int) -> list[Move]:
        return [checker(0.0, 1.0 if i % 2 else math.e**2) for i in range(n)]

    finding = assistance.assess("p", faking(81))
    assert finding is not None and finding.severity is Severity.MEDIUM
    assert finding.score == pytest.approx(3.0)
    assert finding.evidence[1].details["z_timing"].startswith("-")
    assert assistance.assess("p", faking(80)) is None
    finding = assistance.assess("p", faking(203))
    assert finding is not None and finding.severity is Severity.MEDIUM
    finding = assistance.assess("p", faking(204))
    assert finding is not None and finding.severity is Severity.HIGH


def test_the_window_is_the_latest_600_counted_decisions() -> None:
    # 300 honest decisions (mean 0.02) then 600 perfect ones: the history is the 300 honest,
    # mean 0.02 > floor, so the reference is the player's own.
    honest = [checker(e, None) for e in [0.0, 0.04] * 150]
    verdict = assistance.judge(honest + [checker(0.0, None)] * 600)
    assert verdict is not None
    assert verdict.engine.decisions == 600
    assert verdict.engine.reference_source == "own history"
    assert verdict.engine.reference == pytest.approx(0.02)


def test_honest_strong_players_are_not_flagged_and_bots_are() -> None:
    # 200 honest players from PR 2.5 (mean error 0.005, stronger than the world's best
    # long-run) to PR 10, each judged after every session over 600 decisions, and 50 bots.
    rng = random.Random(20261201)
    honest = [honest_player(rng, 0.005 + 0.015 * i / 199, 600) for i in range(200)]
    false_positives = sum(flagged_at_some_look(moves) for moves in honest)
    assert false_positives <= 2  # at most 1% of honest players, ever, over every look
    bots = [uniform_bot(rng, 180) for _ in range(50)]  # 180 decisions: about one 7-point match
    caught = sum(assistance.assess("b", moves) is not None for moves in bots)
    assert caught >= 45  # recall >= 0.9


# -- the shape of the choices: which play was made, against how close the alternatives were


def ranked(rank: int, second: float, third: float | None = None, game: str = "g1") -> Move:
    """A counted checker play of ``rank`` whose second- and third-best plays lose
    ``second`` and ``third``; its error is the loss of the play made."""
    error = (0.0, second, third if third is not None else 0.0)[rank - 1] if rank <= 3 else 0.2
    return Move(game, 1, "checker", True, error, None, rank, second, third)


def log_kt(seconds: int, total: int) -> float:
    """The Krichevsky-Trofimov probability of any sequence of ``total`` two-way choices,
    ``seconds`` of them the second: prod (i + 1/2) over each side's counts / prod (t + 1),
    = Gamma(k + 1/2) Gamma(n - k + 1/2) / (pi n!) (an independent computation: the closed
    form, not the sequential one)."""
    return (math.lgamma(seconds + 0.5) + math.lgamma(total - seconds + 0.5)
            - 2 * math.lgamma(0.5) - math.lgamma(total + 1))


def test_the_gap_blind_likelihood_learns_the_rates_as_it_goes() -> None:
    # Two-way choices best, best, second: 1/2 x (1.5/2) x (0.5/3) = 1/16.
    choices = [assistance.Choice(1, 0.01, None), assistance.Choice(1, 0.01, None),
               assistance.Choice(2, 0.01, None)]
    assert assistance._bot_log_likelihood(choices) == pytest.approx(math.log(1 / 16))
    # Three-way: best (0.5 / 1.5 = 1/3), then the third (0.5 / (1 + 1.5) = 1/5): 1/15.
    choices = [assistance.Choice(1, 0.01, 0.02), assistance.Choice(3, 0.01, 0.02)]
    assert assistance._bot_log_likelihood(choices) == pytest.approx(math.log(1 / 15))


def test_a_persons_choice_among_the_best_three_by_hand() -> None:
    # Second best losing 0.02, third 0.05, no tie preference, slope 50 (temperature 0.02):
    # weights 1, e^-1 = 0.367879, e^-2.5 = 0.082085; total 1.449964.
    # P(second) = 0.367879 / 1.449964 = 0.253716; P(third) = 0.056612; P(best) = 0.689672.
    for rank, chance in ((1, 0.689672), (2, 0.253716), (3, 0.056612)):
        value, _, _ = assistance._person_figures([assistance.Choice(rank, 0.02, 0.05)], 0.0, 50.0)
        assert value == pytest.approx(math.log(chance), abs=1e-5)


# A tie (the second best loses nothing) is a coin flip to a person, up to 65/35 for the
# engine's best (the tie preference e^-0.62: P(second) >= 1 / (1 + e^0.62) = 0.349781).
# One gap alone says nothing: a person of some temperature plays the second best at any
# rate there. So the hand-worked sequences are ties and one large gap (0.1).
TIE_SECOND = 1 / (1 + math.exp(0.62))  # 0.349781


def log_kt3(best: int, second: int, third: int) -> float:
    """The Krichevsky-Trofimov probability of three-way choices with these counts (closed
    form: Gamma(3/2) prod Gamma(n_j + 1/2) / (Gamma(1/2)^3 Gamma(n + 3/2)))."""
    return (math.lgamma(1.5) - 3 * math.lgamma(0.5) + math.lgamma(best + 0.5)
            + math.lgamma(second + 0.5) + math.lgamma(third + 0.5)
            - math.lgamma(best + second + third + 1.5))


def best_person(moves: list[Move]) -> float:
    """The best person's log-likelihood, the ascent run to the end."""
    return assistance._best_person(assistance._choices(moves)[0], assistance.DEFAULT_POLICY)[0]


def gap_blind_bot(per_gap: int, second_best: int) -> list[Move]:
    """The second best ``second_best`` times in ``per_gap`` at a tie, as often at a gap of
    0.1: where it falls in the sequence does not matter to either likelihood."""
    moves = []
    for gap in (0.0, 0.1):
        moves += [ranked(2 if i < second_best else 1, gap, game=f"g{i // 20}")
                  for i in range(per_gap)]
    return moves


def test_a_gap_blind_bot_is_flagged() -> None:
    # 200 ties and 200 gaps of 0.1, the second best 30 times in each (15 %, whatever the gap).
    # The best person: at a tie P(second) = 0.15 wanted, the nearest allowed is 0.349781
    # (tie preference at its bound); at 0.1 the slope fits 0.15 exactly:
    #   ties: 30 ln 0.349781 + 170 ln 0.650219 = 30 x -1.050447 + 170 x -0.430447 = -104.6893
    #   gap:  30 ln 0.15 + 170 ln 0.85 = 30 x -1.897120 + 170 x -0.162519 = -84.5418
    # person -189.2312; the gap-blind mixture: log KT(60 of 400) = -172.3062 (closed form);
    # log e = 16.925, p <= e^-16.925 = 4.5e-8: 5.35 sigma, HIGH.
    moves = gap_blind_bot(200, 30)
    assert best_person(moves) == pytest.approx(-189.2312, abs=1e-3)
    found = assistance.choice_test(moves)
    assert found is not None
    assert found.log_e == pytest.approx(log_kt(60, 400) + 189.2312, abs=1e-3)
    assert found.log_e == pytest.approx(16.925, abs=1e-3)
    assert found.sigma == pytest.approx(-NormalDist().inv_cdf(math.exp(-16.925)), abs=1e-3)
    assert found.sigma > 4.75
    assert found.ranks == (340, 60, 0)
    assert (found.large_gaps, found.second_at_large_gap) == (200, 30)
    assert found.tie_log_odds == pytest.approx(-0.62)
    finding = assistance.assess("bot", moves)
    assert finding is not None and finding.severity is Severity.HIGH
    assert finding.score == pytest.approx(round(found.sigma, 2))
    evidence = {e.kind: e for e in finding.evidence}
    assert evidence["gap_blind_choices"].details["second_best_at_large_gap"] == "30"
    # Its errors: 30 x 0.1 / 400 = 0.0075 a decision (PR 3.75, above the floor of 0.004):
    # the engine route says nothing.
    assert float(evidence["engine_closeness"].details["z_engine"]) < 0
    # Half of it (100 and 100, 15 each): person -94.6156, KT(30 of 200) -87.4188: log e
    # 7.197 (p <= 0.00075, 3.18 sigma): MEDIUM.
    half = assistance.assess("bot", gap_blind_bot(100, 15))
    assert half is not None and half.severity is Severity.MEDIUM


def test_a_strong_person_who_weighs_the_gap_is_not() -> None:
    # The same 400 positions, a person: the second best at half the ties (100 of 200) and
    # twice at the gap of 0.1. Best person: P = 0.5 at a tie (no preference), 0.01 at 0.1:
    #   200 ln 0.5 + 2 ln 0.01 + 198 ln 0.99 = -138.6294 - 9.2103 - 1.9899 = -149.8297;
    # gap-blind: log KT(102 of 400) = -230.3270: log e = -80.50, nothing. Their errors are
    # 2 x 0.1 / 400 = 0.0005 a decision (PR 0.25, past the best humans: the engine route's
    # business): it is their choices, not their level, that say person.
    moves = ([ranked(2 if i % 2 else 1, 0.0) for i in range(200)]
             + [ranked(2 if i < 2 else 1, 0.1) for i in range(200)])
    assert best_person(moves) == pytest.approx(-149.8297, abs=1e-3)
    found = assistance.choice_test(moves)
    assert found is not None
    # The ascent stops once the person fits well enough: the figure is at most this.
    assert found.log_e <= log_kt(102, 400) + 149.8297 + 1e-3 + 10
    assert found.log_e < 0 and found.sigma == 0.0


def test_a_third_best_never_played_is_evidence_a_person_playing_it_none() -> None:
    # 150 three-way choices, the second and third best each losing 0.01.
    # A bot: 120 best, 30 second, never the third. The best person gives the second and the
    # third the same weight w: 30 ln w - 150 ln(1 + 2w), largest at 30/w = 300/(1 + 2w),
    # w = 0.125: P = 0.8, 0.1, 0.1: 120 ln 0.8 + 30 ln 0.1 = -95.8548 (w is reachable:
    # e^(tie - slope x 0.01)). KT(120, 30, 0) = -80.4224: log e = 15.43, HIGH.
    bot = [ranked(2 if i % 5 == 0 else 1, 0.01, 0.01) for i in range(150)]
    assert best_person(bot) == pytest.approx(120 * math.log(0.8) + 30 * math.log(0.1), abs=1e-3)
    found = assistance.choice_test(bot)
    assert found is not None and found.ranks == (120, 30, 0)
    assert found.log_e == pytest.approx(log_kt3(120, 30, 0) + 95.8548, abs=1e-3)
    assert found.log_e == pytest.approx(15.43, abs=0.01)
    # A person: 90 best, 30 second, 30 third: w = 1/3, P = 0.6, 0.2, 0.2: 90 ln 0.6 + 60 ln
    # 0.2 = -142.5406; KT(90, 30, 30) = -147.5575: log e = -5.02 at most, nothing.
    person = [ranked((1, 1, 1, 2, 3)[i % 5], 0.01, 0.01) for i in range(150)]
    assert best_person(person) == pytest.approx(-142.5406, abs=1e-3)
    found = assistance.choice_test(person)
    assert found is not None and found.ranks == (90, 30, 30)
    assert found.log_e < 0


def test_near_forced_choices_are_no_evidence() -> None:
    # 300 positions with two plays, the second losing 0.5 (a forced-looking choice): a
    # person and the engine alike play the best every time. The best person: P(second)
    # -> 0, log-likelihood -> 0; the gap-blind mixture log KT(0 of 300) = lgamma(300.5) -
    # lgamma(0.5) - lgamma(301) = -3.4247: log e -3.42, nothing.
    found = assistance.choice_test([ranked(1, 0.5) for _ in range(300)])
    assert found is not None
    assert found.log_e == pytest.approx(-3.4247, abs=1e-3)
    # (300 perfect decisions are still the engine route's business: sqrt(300)/3 = 5.77.)
    finding = assistance.assess("p", [ranked(1, 0.5) for _ in range(300)])
    assert finding is not None and finding.score == pytest.approx(5.77, abs=0.01)


def test_fourth_or_worse_plays_are_counted_apart_and_unranked_decisions_ignored() -> None:
    moves = ([ranked(1, 0.02, 0.03)] * 30 + [ranked(4, 0.02, 0.03)] * 5
             + [Move("g", 1, "checker", True, 0.0, None)] * 50  # before ranks were published
             + [Move("g", 1, "double", True, 0.0, None, None, None, None)] * 5)
    assert assistance.choice_test(moves) is None  # 30 ranked choices < 40
    found = assistance.choice_test(moves + [ranked(2, 0.02, 0.03)] * 10)
    assert found is not None
    assert (found.choices, found.worse, found.ranks) == (40, 5, (30, 10, 0))


def in_games(moves: list[Move], prefix: str) -> list[Move]:
    """``moves`` moved to games of their own (``prefix`` + the game id)."""
    return [dataclasses.replace(m, game_id=prefix + m.game_id) for m in moves]


def weighs_the_gap() -> list[Move]:
    """An expert: the second best at half of 200 ties and 40 of 200 gaps of 0.05 (PR 2.5).
    Best person: P = 0.5 at a tie, 0.2 at 0.05 (both reachable): 200 ln 0.5 + 40 ln 0.2 +
    160 ln 0.8 = -238.7099; gap-blind log KT(140 of 400) = -262.2008: log e -23.49."""
    return ([ranked(2 if i % 2 else 1, 0.0, game=f"g{i // 20}") for i in range(200)]
            + [ranked(2 if i % 5 == 0 else 1, 0.05, game=f"g{i // 20}") for i in range(200)])


def test_a_helped_accounts_games_beside_its_own_other_account_are_consultings() -> None:
    # One person, two accounts: alone, the helped account plays as an expert (log e -23.49,
    # error 0.005 a decision, above the floor: nothing); in the games where its own other
    # account sat at another table it plays the engine's plays, the second best 15 % of the
    # time whatever it costs (the gap-blind bot above, log e 16.9). Those games are
    # consulting's evidence: left out,
    # the judgement is the solo play's alone, and that is no assistance.
    solo = in_games(weighs_the_gap(), "solo-")
    helped = in_games(gap_blind_bot(200, 30), "beside-")
    consulted = {(m.game_id, m.game_number) for m in helped}
    assert len(consulted) == 10
    together = solo + helped
    assert assistance.assess("helped", together) is not None  # read whole: gap-blind
    assert best_person(solo) == pytest.approx(-238.7099, abs=1e-3)
    expert = assistance.choice_test(solo)  # the ascent stops once the fit is good enough
    assert expert is not None and expert.log_e < 0 and expert.sigma == 0.0
    assert assistance.assess("helped", solo) is None
    assert assistance.assess("helped", together, consulted=consulted) is None


def test_an_accounts_solo_play_is_still_judged_when_it_has_consulted_games() -> None:
    # A bot whose own other account sat at another table in some of its games: those are
    # left out, its gap-blind solo play (400 decisions, log e 16.925, 5.35 sigma) is judged
    # as if they had never been played, and the evidence says how many were left out.
    solo = in_games(gap_blind_bot(200, 30), "solo-")
    beside = in_games(weighs_the_gap(), "beside-")
    consulted = {(m.game_id, m.game_number) for m in beside}
    alone = assistance.assess("bot", solo)
    found = assistance.assess("bot", beside + solo, consulted=consulted)
    assert alone is not None and found is not None
    assert found.severity is Severity.HIGH
    assert found.score == alone.score == pytest.approx(5.35, abs=0.01)
    details = {e.kind: e for e in found.evidence}["engine_closeness"].details
    assert details["decisions_left_to_consulting"] == "400"
    assert details["decisions"] == "400"


def test_a_thrower_is_not_flagged_a_gap_blind_bot_is() -> None:
    # A player losing on purpose: in positions of two or three plays its worst play is the
    # second or third best whatever it costs, so its choices among the best three are the
    # gap-blind bot's above (log e 16.925); besides them it throws 150 plays far (the worst
    # of many, fourth or worse, 0.2 each: left out of the choice test, counted in the
    # error). Error per decision: (30 x 0.1 + 150 x 0.2) / 550 = 0.06, PR 30, past every
    # person's play (the cap, 0.05): thrown, not helped; no finding.
    thrower = gap_blind_bot(200, 30) + [ranked(5, 0.02, 0.03)] * 150
    verdict = assistance.judge(thrower)
    assert verdict is not None and verdict.choice is not None
    assert verdict.engine.mean == pytest.approx(33 / 550)
    assert verdict.choice.log_e == pytest.approx(16.925, abs=1e-3)
    assert verdict.choice.worse == 150
    assert assistance.assess("thrower", thrower) is None
    # The bot's own error, 3 / 400 = 0.0075 (PR 3.75), is within it: HIGH.
    bot = assistance.assess("bot", gap_blind_bot(200, 30))
    assert bot is not None and bot.severity is Severity.HIGH
    # At the cap itself the route still speaks: 3 + 0.2 k over 400 + k = 0.05 at k = 113.33;
    # 113 such plays (0.04994) alert, 114 (0.05006) do not.
    assert assistance.assess("bot", gap_blind_bot(200, 30) + [ranked(5, 0.02, 0.03)] * 113)
    assert not assistance.assess("bot", gap_blind_bot(200, 30) + [ranked(5, 0.02, 0.03)] * 114)
