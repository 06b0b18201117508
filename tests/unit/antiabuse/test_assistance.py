"""The pure assistance detector: engine closeness, timing, the sequential verdict.

Expected values are worked out by hand in the comments (or taken from published
chi-square tables), not by the code under test.
"""

from __future__ import annotations

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
