"""Assistance (bots, consulting software): play too close to the engine for too long.

Pure. Input: one player's analysed decisions, oldest first (the analysis service's
``MatchAnalysed``: per decision its kind, whether it is counted, its error in
normalised equity at 0-ply, and the seconds the game timed), and optionally the
population's per-decision figures (context only, see below).

**Engine closeness** (a cumulative one-sided z over the player's latest
``window`` counted decisions). Null hypothesis: a human whose error per decision
has mean ``mu0`` and standard deviation ``sigma0``, where

- ``mu0 = max(floor_error, own history mean)``: the player's own level from the
  counted decisions before the window (at least ``history_min`` of them), never
  below ``floor_error`` = 0.004 (PR 2.0), below the best human series (the best
  players' long-run PR is about 2.5 to 4): nobody honest is expected to play
  better than that, so a strong honest player with no history is compared with
  the floor, not with the average player;
- ``sigma0 = max(sd_ratio x mu0, own history sd)``: human errors are mostly zero
  with a long tail; a zero-inflated exponential with 60% zeros has sd = 2 x mean,
  real ones have heavier tails, so 3 x mean.

``z = (mu0 - mean) / sqrt(sigma0^2 / n + s_hist^2 / m)`` (the second term only when
the reference is the player's own history of ``m`` decisions, for its own
uncertainty). An engine-perfect bot has mean 0, so with the floor ``z = sqrt(n) / 3``:
3 sigma after 81 decisions, 4.75 after 203. Against the population (its mean) the
player's z is evidence only: it would convict every strong honest player.

**Timing** (corroboration; "uniform think times, long thinks on forced moves, no
slowdown on hard decisions"), on natural logs of seconds, each a one-sided z
positive for machine-like timing, each clipped to +-``timing_cap``:

- *uniform*: the spread of log think times against the human floor
  ``log_sd_floor`` = 0.5 (people's log-time sd is 0.7 to 1.0): ``X = k s^2 /
  0.5^2`` is chi-square with ``k = n - 1`` degrees of freedom at the floor; its
  lower tail as a z by the Wilson-Hilferty cube root,
  ``z = ((1 - 2/(9k)) - (X/k)^(1/3)) / sqrt(2/(9k))``;
- *forced*: forced plays (one legal play, timed) against ordinary counted checker
  plays: people play them about half as long (``forced_gap`` = 0.7 in log), so
  ``z = (diff + 0.7) / (s sqrt(1/n_f + 1/n_o))``, ``s`` the pooled log sd, at least 0.5;
- *hard*: cube actions (double, take, pass) against ordinary checker plays: people
  take longer (``hard_gap`` = 0.4 in log, 1.5 times), ``z = (0.4 - diff) / (...)``.

The timing z is their Stouffer sum over the available parts (``/ sqrt(k)``),
clipped to +-``timing_cap``: timing alone never convicts.

**Verdict.** Needs ``min_decisions`` counted decisions in the window and an
engine-closeness z of at least ``engine_min`` (the play itself must be
suspicious), then ``sigma = max(z_engine, (z_engine + z_timing) / sqrt(2))``: the
Stouffer sum when machine-like timing strengthens the case, the engine z alone
otherwise (human-like timing is no alibi: a bot may fake think times, and
people's timing is so far from the floor that it would outweigh any play). Taking
the larger of two standard normals at most doubles the chance of a false alarm
at a given level under the null (0.13% a look at 3 sigma becomes at most 0.27%).
MEDIUM at ``alert_sigma`` = 3, HIGH at ``high_sigma`` = 4.75 (chess fair-play's
conviction level); never CRITICAL (a person decides). An engine-perfect bot with
machine-like think times (timing z at its cap, 4) is HIGH from 67 counted decisions
(``(sqrt(n)/3 + 4)/sqrt(2) >= 4.75``; one 7-point match gives each player 100 to
190); one with human-like think times is MEDIUM from 81 and HIGH from 204.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from services.antiabuse.domain.findings import Detector, Evidence, Finding, Severity

CUBE_ACTIONS = frozenset({"double", "take", "pass"})
MIN_SECONDS = 0.05  # a log of a zero or a clock's rounding is not a think time
SHOWN_GAMES = 20


@dataclass(frozen=True)
class Move:
    """One decision of a player, as the analysis service graded and timed it."""

    game_id: str
    game_number: int
    kind: str  # checker | double | no_double | take | pass
    counted: bool
    error: float
    seconds: float | None


@dataclass(frozen=True)
class Population:
    """Every player's counted decisions together (context for the evidence)."""

    decisions: int
    mean: float
    sd: float


@dataclass(frozen=True)
class AssistancePolicy:
    window: int = 600
    history_min: int = 200
    min_decisions: int = 60
    floor_error: float = 0.004
    sd_ratio: float = 3.0
    log_sd_floor: float = 0.5
    forced_gap: float = 0.7
    hard_gap: float = 0.4
    timing_min: int = 30
    side_min: int = 5
    timing_cap: float = 4.0
    engine_min: float = 2.0
    alert_sigma: float = 3.0
    high_sigma: float = 4.75


DEFAULT_POLICY = AssistancePolicy()


@dataclass(frozen=True)
class EngineTest:
    decisions: int
    mean: float
    reference: float
    reference_source: str  # "floor" | "own history"
    z: float


@dataclass(frozen=True)
class TimingTest:
    timed: int
    log_sd: float
    uniform_z: float | None
    forced_z: float | None
    hard_z: float | None
    z: float


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def sd(values: Sequence[float]) -> float:
    """Sample standard deviation (n - 1); 0 for fewer than two values."""
    if len(values) < 2:
        return 0.0
    centre = mean(values)
    return math.sqrt(sum((v - centre) ** 2 for v in values) / (len(values) - 1))


def clip(value: float, cap: float) -> float:
    return max(-cap, min(cap, value))


def stouffer(zs: Sequence[float]) -> float:
    return sum(zs) / math.sqrt(len(zs))


def engine_test(
    window: Sequence[float], history: Sequence[float], policy: AssistancePolicy = DEFAULT_POLICY
) -> EngineTest:
    """How far the window's error per decision lies below a human's reference, in sigma."""
    n = len(window)
    reference, source, spread, own_var = policy.floor_error, "floor", 0.0, 0.0
    if len(history) >= policy.history_min and mean(history) > policy.floor_error:
        reference, source, spread = mean(history), "own history", sd(history)
        own_var = spread**2 / len(history)
    sigma0 = max(policy.sd_ratio * reference, spread)
    observed = mean(window)
    z = (reference - observed) / math.sqrt(sigma0**2 / n + own_var)
    return EngineTest(n, observed, reference, source, z)


def chi_square_lower_z(statistic: float, k: int) -> float:
    """The lower tail of a chi-square(k) at ``statistic`` as a z (positive: smaller than
    expected), by the Wilson-Hilferty cube-root normal approximation."""
    spread = 2.0 / (9.0 * k)
    cube_root: float = math.pow(statistic / k, 1.0 / 3.0)
    return ((1.0 - spread) - cube_root) / math.sqrt(spread)


def _log_seconds(moves: Sequence[Move]) -> list[float]:
    return [math.log(max(m.seconds, MIN_SECONDS)) for m in moves if m.seconds is not None]


def _gap_z(
    side: list[float], ordinary: list[float], human_gap: float, policy: AssistancePolicy
) -> float | None:
    """How far ``side``'s mean log time lies from ``ordinary``'s plus a human's gap, in
    sigma (positive: further towards ``ordinary``'s than people's are); None if too few."""
    if len(side) < policy.side_min or len(ordinary) < policy.timing_min:
        return None
    pooled = math.sqrt(
        ((len(side) - 1) * sd(side) ** 2 + (len(ordinary) - 1) * sd(ordinary) ** 2)
        / (len(side) + len(ordinary) - 2)
    )
    unit = max(pooled, policy.log_sd_floor) * math.sqrt(1 / len(side) + 1 / len(ordinary))
    return clip((mean(side) - mean(ordinary) - human_gap) / unit, policy.timing_cap)


def timing_test(
    moves: Sequence[Move], policy: AssistancePolicy = DEFAULT_POLICY
) -> TimingTest | None:
    """Machine-like timing over ``moves``, in sigma; None when too few were timed."""
    counted = _log_seconds([m for m in moves if m.counted])
    if len(counted) < policy.timing_min:
        return None
    ordinary = _log_seconds([m for m in moves if m.counted and m.kind == "checker"])
    # A roll with no legal play passes at once (0 s, untimed in effect): not a forced think.
    forced = _log_seconds(
        [m for m in moves if not m.counted and m.kind == "checker" and (m.seconds or 0.0) > 0.0]
    )
    hard_log = _log_seconds([m for m in moves if m.counted and m.kind in CUBE_ACTIONS])
    k = len(counted) - 1
    spread = k * sd(counted) ** 2 / policy.log_sd_floor**2
    uniform = clip(chi_square_lower_z(spread, k), policy.timing_cap)
    # Forced plays: people are faster (gap -0.7); a machine is not, so diff - gap > 0.
    forced_z = _gap_z(forced, ordinary, -policy.forced_gap, policy)
    # Cube actions: people are slower (gap +0.4); a machine is not, so gap - diff > 0.
    hard = _gap_z(hard_log, ordinary, policy.hard_gap, policy)
    hard_z = None if hard is None else -hard
    parts = [z for z in (uniform, forced_z, hard_z) if z is not None]
    return TimingTest(
        timed=len(counted),
        log_sd=sd(counted),
        uniform_z=uniform,
        forced_z=forced_z,
        hard_z=hard_z,
        z=clip(stouffer(parts), policy.timing_cap),
    )


@dataclass(frozen=True)
class Verdict:
    sigma: float
    engine: EngineTest
    timing: TimingTest | None
    recent: Sequence[Move]  # the window's decisions, uncounted ones among them


def judge(moves: Sequence[Move], policy: AssistancePolicy = DEFAULT_POLICY) -> Verdict | None:
    """The sequential verdict on a player's decisions (oldest first); None before
    ``min_decisions`` counted decisions."""
    counted_at = [i for i, m in enumerate(moves) if m.counted]
    if len(counted_at) < policy.min_decisions:
        return None
    start = counted_at[-policy.window :][0] if len(counted_at) > policy.window else 0
    recent = moves[start:]
    window = [m.error for m in recent if m.counted]
    history = [m.error for m in moves[:start] if m.counted]
    engine = engine_test(window, history, policy)
    timing = timing_test(recent, policy)
    sigma = engine.z if timing is None else max(engine.z, stouffer([engine.z, timing.z]))
    return Verdict(sigma, engine, timing, recent)


def _figure(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}"


def median(values: Sequence[float]) -> float | None:
    """The middle value (the mean of the two middle ones for an even count); None if empty."""
    if not values:
        return None
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def _timing_evidence(moves: Sequence[Move], timing: TimingTest) -> Evidence:
    def seconds(chosen: Sequence[Move]) -> str:
        return _figure(median([m.seconds for m in chosen if m.seconds is not None]))

    return Evidence(
        kind="machine_like_timing",
        description="think times: uniform spread, forced plays not faster, cube actions not slower",
        details={
            "timed_decisions": str(timing.timed),
            "log_seconds_sd": f"{timing.log_sd:.3f}",
            "median_seconds_checker": seconds(
                [m for m in moves if m.counted and m.kind == "checker"]
            ),
            "median_seconds_forced": seconds(
                [m for m in moves if not m.counted and m.kind == "checker" and (m.seconds or 0) > 0]
            ),
            "median_seconds_cube": seconds([m for m in moves if m.kind in CUBE_ACTIONS]),
            "z_uniform": _figure(timing.uniform_z),
            "z_forced": _figure(timing.forced_z),
            "z_hard": _figure(timing.hard_z),
            "z_timing": f"{timing.z:.2f}",
        },
    )


def assess(
    account_id: str,
    moves: Sequence[Move],
    population: Population | None = None,
    policy: AssistancePolicy = DEFAULT_POLICY,
) -> Finding | None:
    """One player's assistance finding, or None."""
    verdict = judge(moves, policy)
    if verdict is None or verdict.engine.z < policy.engine_min:
        return None
    if verdict.sigma < policy.alert_sigma:
        return None
    severity = Severity.HIGH if verdict.sigma >= policy.high_sigma else Severity.MEDIUM
    engine = verdict.engine
    window = [m for m in verdict.recent if m.counted]
    games = tuple(dict.fromkeys(m.game_id for m in verdict.recent))
    details = {
        "decisions": str(engine.decisions),
        "error_per_decision": f"{engine.mean:.5f}",
        "reference_error": f"{engine.reference:.5f}",
        "reference": engine.reference_source,
        "engine_agreement": f"{sum(1 for m in window if m.error == 0.0) / len(window):.3f}",
        "z_engine": f"{engine.z:.2f}",
    }
    if population is not None and population.decisions and population.sd > 0:
        details["population_error"] = f"{population.mean:.5f}"
        details["z_below_population"] = (
            f"{(population.mean - engine.mean) * math.sqrt(engine.decisions) / population.sd:.2f}"
        )
    evidence = [
        Evidence(
            kind="engine_closeness",
            description="error per decision far below a human's, for many decisions",
            game_ids=games[-SHOWN_GAMES:],
            details=details,
        )
    ]
    if verdict.timing is not None:
        evidence.append(_timing_evidence(verdict.recent, verdict.timing))
    return Finding(
        detector=Detector.ASSISTANCE,
        subjects=(account_id,),
        severity=severity,
        score=round(verdict.sigma, 2),
        score_meaning=(
            "sigma: one-sided z that this play is closer to the engine, with more machine-like "
            "timing, than a human's; alert at 3, HIGH at 4.75 (chess fair-play's conviction level)"
        ),
        evidence=tuple(evidence),
    )
