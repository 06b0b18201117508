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

**The shape of the choices** (a second route, on the same window). An error rate alone
cannot tell a strong person from a bot that adds noise: a bot playing the engine's best
play except the second best 10 to 20 % of the time, with human think times, plays at PR
2.5 to 5, inside the range of the strongest honest players (the held-out evaluation
measured 0 of 12 such bots caught by the route above, and lowering its floor would
accuse the experts). The shape of the mistakes differs. A person's choice between plays
depends on how close they are: between two plays of equal equity it is a coin flip, and
the further the second best falls behind, the rarer it is chosen; and now and then the
third best is. A bot adding noise plays the second best whatever it costs (as often when
it loses 0.1 as when it loses nothing) and almost never anything worse. The analysis
publishes, per checker play, its rank among the engine's ranked plays and the second-
and third-best plays' losses, which is what this needs.

- *The person* (the null): among the best three plays, play *j* is chosen with weight 1,
  ``exp(tie - slope x loss_2)``, ``exp(tie - slope x loss_3)`` (a softmax over the
  equity lost at temperature ``1/slope``, restricted to the best three, so that the
  plays below them, which the analysis does not publish, do not matter: a conditional
  logit keeps the ratios of the rest). ``slope >= 0`` is fitted to the player (a weak
  player's is small, a strong one's large), and so is ``tie`` in ``[-tie_preference,
  0]``: a person may favour the engine's choice between plays of equal equity, up to
  65/35 (0.62 in log-odds; the simulated people are coin flips there, real strong
  players' 0-ply agreement on near-equal plays is not measured, so the allowance errs
  on their side at a cost in power). The person fitting the player's choices best
  (maximum likelihood: concave in (tie, slope), a projected Newton ascent).
- *The gap-blind chooser* (the alternative): the best, second and third play at fixed
  rates whatever the gaps, the rates learnt as it goes (each choice predicted from the
  ones before it, counts plus a half: Krichevsky-Trofimov).
- *The test*: ``E = L_chooser / L_best person``. Since the chooser's predictions are made
  before each choice and the person's likelihood is the maximum over every person, ``E``
  is an e-value under any person of this model (universal inference, Wasserman, Ramdas
  and Balakrishnan 2020): ``P(E >= 1/alpha) <= alpha`` whatever their temperature and
  tie preference, with no normal approximation. ``sigma`` is the normal quantile of
  ``p = min(1, 1/E)``: 3 sigma (MEDIUM) is ``log E >= 6.6``, 4.75 (HIGH) ``log E >=
  13.8``. Decisions: the counted checker plays of the window with a published rank, the
  play made among the best three (a fourth-or-worse play is left out, conditioning on
  the best three, and counted in the evidence); at least ``choice_min`` = 40.

What it costs the bot: the second best played at a tie no more often than at a gap of
0.1 is far from a coin flip there, and never a third-best play is far from a person who
plays the second at that rate. By simulation on the held-out pool (600 ranked positions,
sampled per decision as ``evaluation/decisions.py`` does): a bot at 10 to 20 % is
flagged in 3 of 4 runs by 60 counted checker plays, 19 of 20 by 90, all by 150 (HIGH by
then); of 1350 simulated people from PR 2 to 22 (150 per tier) with 60 to 500 decisions,
judged every 25, none. Forced and near-forced positions: a forced play is not
counted; a play whose second best loses a lot is played by person and bot alike and
weighs nothing either way (300 of them: ``log E = -3.4``). Limits: a bot that picks
among the plays within a margin of the best, as a person would, or that plays the third
best now and then, is not gap-blind and is left to the engine route and to people; a
person much more attached to the engine's choice at a tie than 65/35 would look like a
bot (the analysis grades at 0-ply: for equal 0-ply equities its order is its own).
The verdict is the larger of the two routes' sigmas; the chance of a false alarm of either
at a look is at most the sum of theirs.

**What is other detectors' evidence** (left out, as rating manipulation leaves a dump
giver's losses to chip dumping). Gap-blind choices are the shape of any play that does
not weigh the gaps, and two other abuses have it:

- *Consulting one's own other account.* A person at two tables at once with two accounts
  (joined by a strong link: a device, a mailbox, a payment instrument) who plays the
  engine's plays at one while the other idles is consulting's case, judged there with
  exactly those overlapping games against the account's others
  (:mod:`.consulting_play`, the one-person test). The decisions of the account's games
  that overlapped a game of its own other account (``consulted``: the caller's, from the
  same notion of overlap) are left out of the whole judgement, both routes: assistance
  reads the account's other play (its solo games), where a bot is still a bot. The
  held-out evaluation's consultants' helped accounts (5 of 8 flagged here on their
  overlapping games) are consulting's. An account that never sits at another table
  while its own other account does loses nothing; a bot operator who only ever plays
  both accounts at once is left to consulting and multi-accounting (the strong link
  names the pair).
- *Thrown play.* A player losing on purpose plays the worst play; in a position with two
  or three plays that is the second or third best whatever it costs, which is gap-blind
  too (a held-out dump giver reached 3.01 sigma on it). Assistance is play too close to
  the engine: the gap-blind route exists because a noisy bot plays within the people's
  range (PR 2.5 to 5 at 10 to 20 % second best), where the error rate cannot tell them
  apart. So the route may alert only while the window's error per decision is within
  the range of people's own play, at most ``choice_max_error`` = 0.05 (PR 25, past the
  weakest tier of the held-out population's people, PR 22): play further from the engine
  than any honest person's is losing on purpose, not help. Measured on the held-out
  population at every look: the bots' windows from 0.001 to 0.030 (a short window with a
  cube error in it reaches PR 15, so a bound at a strong player's PR 10 would cost
  looks), the dump givers' from 0.085 to 0.25. A bot that throws enough equity away to
  pass it plays worse than any person and gains nothing from its engine. The cap only
  removes alerts, so the e-value's guarantee stands. (Leaving out the games lost to a
  one-way money-flow receiver, as rating manipulation does, would need the results and
  settlements the play detectors do not read, and would miss a thrower whose flow is not
  one way yet.)
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from statistics import NormalDist

from services.antiabuse.domain.findings import Detector, Evidence, Finding, Severity

CUBE_ACTIONS = frozenset({"double", "take", "pass"})
MIN_SECONDS = 0.05  # a log of a zero or a clock's rounding is not a think time
SHOWN_GAMES = 20

GameKey = tuple[str, int]  # (session id, game number)


@dataclass(frozen=True)
class Move:
    """One decision of a player, as the analysis service graded and timed it."""

    game_id: str
    game_number: int
    kind: str  # checker | double | no_double | take | pass
    counted: bool
    error: float
    seconds: float | None
    # Checker plays, when the analysis published them: the play's rank among the engine's
    # ranked plays (1: the best) and the second- and third-best plays' losses.
    rank: int | None = None
    second_loss: float | None = None
    third_loss: float | None = None


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
    choice_min: int = 40  # ranked choices (best, second, third) before the choice test
    tie_preference: float = 0.62  # log-odds: a person may favour the engine's best at a tie, 65/35
    large_gap: float = 0.04  # evidence only: a second best losing this much (gnubg's "doubtful")
    choice_max_error: float = 0.05  # PR 25: further from the engine is thrown, not helped


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
class Choice:
    """A counted checker play the analysis ranked: the play's rank (1, 2 or 3) and the
    second- and third-best plays' losses (the third None with only two plays)."""

    rank: int
    second: float
    third: float | None


@dataclass(frozen=True)
class ChoiceTest:
    choices: int  # best, second-best and third-best plays judged
    ranks: tuple[int, int, int]  # how many of them were the best, the second, the third
    worse: int  # counted plays ranked fourth or worse (left out of the test: see above)
    large_gaps: int  # choices whose second best lost at least ``large_gap``
    second_at_large_gap: int  # ... where the second best was played
    temperature: float  # the person fitting the choices best (inf: indifferent to gaps)
    tie_log_odds: float  # and their preference for the engine's best at a tie
    log_e: float  # log of the e-value: the bot mixture's likelihood over the best person's
    sigma: float


def _choices(moves: Sequence[Move]) -> tuple[list[Choice], int]:
    """The counted checker plays with a rank among the best three, and how many ranked
    fourth or worse."""
    made: list[Choice] = []
    worse = 0
    for m in moves:
        if not m.counted or m.kind != "checker" or m.rank is None or m.second_loss is None:
            continue
        if m.rank <= 2 or (m.rank == 3 and m.third_loss is not None):
            made.append(Choice(m.rank, max(0.0, m.second_loss), m.third_loss))
        else:
            worse += 1
    return made, worse


def _bot_log_likelihood(choices: Sequence[Choice]) -> float:
    """The log-likelihood of the choices under a gap-blind chooser whose rates are
    learnt as it goes: each choice predicted from the ones before it (Krichevsky-Trofimov:
    counts plus a half), whatever the gaps. Predictable, so its ratio to the best person's
    likelihood is an e-value whatever the person."""
    counts = [0, 0, 0]
    total = 0.0
    for choice in choices:
        options = 2 if choice.third is None else 3
        total += math.log((counts[choice.rank - 1] + 0.5) / (sum(counts[:options]) + options / 2))
        counts[choice.rank - 1] += 1
    return total


def _person_figures(
    choices: Sequence[Choice], tie: float, slope: float
) -> tuple[float, tuple[float, float], tuple[float, float, float]]:
    """The person model's log-likelihood, gradient and Hessian (aa, bb, ab) in (tie, slope):
    the play of rank j chosen with weight 1, exp(tie - slope x second), exp(tie - slope x
    third) among the best three."""
    total = grad_a = grad_b = h_aa = h_bb = h_ab = 0.0
    for c in choices:
        x2 = tie - slope * c.second
        x3 = tie - slope * c.third if c.third is not None else -math.inf
        top = max(0.0, x2, x3)
        w1, w2, w3 = math.exp(-top), math.exp(x2 - top), math.exp(x3 - top)
        z = w1 + w2 + w3
        p2, p3 = w2 / z, w3 / z
        third = c.third if c.third is not None else 0.0
        played = (0.0, x2, x3)[c.rank - 1]
        total += played - (top + math.log(z))
        mean_a = p2 + p3
        mean_b = -(p2 * c.second + p3 * third)
        grad_a += (c.rank > 1) - mean_a
        grad_b += (0.0, -c.second, -third)[c.rank - 1] - mean_b
        h_aa -= mean_a * (1 - mean_a)
        h_bb -= p2 * c.second**2 + p3 * third**2 - mean_b**2
        h_ab -= mean_b * (1 - mean_a)
    return total, (grad_a, grad_b), (h_aa, h_bb, h_ab)


MAX_SLOPE = 10_000.0  # 1/temperature: a person at 0.0001 is an engine already


def _best_person(
    choices: Sequence[Choice], policy: AssistancePolicy, enough: float = math.inf
) -> tuple[float, float, float]:
    """The person who makes these choices most likely: (log-likelihood, tie, slope), the
    maximum over tie in [-tie_preference, 0] and slope in [0, MAX_SLOPE]. The
    log-likelihood is concave in (tie, slope) (a conditional logit), so a projected Newton
    ascent from anywhere reaches the maximum. It stops early once a person fits at least
    ``enough`` (the e-value can then no longer reach the alert line: an honest player
    costs a step or two)."""
    tie, slope = 0.0, 30.0
    value, grad, hess = _person_figures(choices, tie, slope)
    for _ in range(40):
        if value >= enough:
            break
        step = _newton_step(grad, hess, tie, slope, policy.tie_preference)
        if step is None:
            break
        for _ in range(30):  # halve until it improves (a concave function: it will)
            new_tie = min(0.0, max(-policy.tie_preference, tie + step[0]))
            new_slope = min(MAX_SLOPE, max(0.0, slope + step[1]))
            new = _person_figures(choices, new_tie, new_slope)
            if new[0] >= value:
                break
            step = (step[0] / 2, step[1] / 2)
        else:
            break
        moved = abs(new_tie - tie) + abs(new_slope - slope) / max(1.0, slope)
        tie, slope = new_tie, new_slope
        value, grad, hess = new
        if moved < 1e-7:
            break
    return value, tie, slope


def _newton_step(
    grad: tuple[float, float], hess: tuple[float, float, float], tie: float, slope: float,
    tie_bound: float,
) -> tuple[float, float] | None:
    """Newton's step for the person's maximum, the tie held at a bound it presses on."""
    (g_a, g_b), (h_aa, h_bb, h_ab) = grad, hess
    at_bound = (tie >= 0.0 and g_a > 0) or (tie <= -tie_bound and g_a < 0)
    det = h_aa * h_bb - h_ab * h_ab
    if not at_bound and det > 1e-12:
        step = ((-h_bb * g_a + h_ab * g_b) / det, (h_ab * g_a - h_aa * g_b) / det)
    else:
        step = (0.0, -g_b / h_bb if h_bb < -1e-12 else g_b)
    # A wide first step (the slope's scale is in the thousands) is not to leave the box
    # at once: at most double or halve the slope per step.
    limit = max(slope, 10.0)
    step = (step[0], max(-limit / 2, min(limit, step[1])))
    if abs(step[0]) < 1e-9 and abs(step[1]) < 1e-6 * max(1.0, slope):
        return None
    return step


def choice_test(
    moves: Sequence[Move], policy: AssistancePolicy = DEFAULT_POLICY
) -> ChoiceTest | None:
    """The shape of a player's choices: a gap-blind chooser's against the best-fitting
    person's, as an e-value and its sigma; None before ``choice_min`` ranked choices."""
    choices, worse = _choices(moves)
    if len(choices) < policy.choice_min:
        return None
    bot = _bot_log_likelihood(choices)
    alert_log_e = -math.log(1.0 - NormalDist().cdf(policy.alert_sigma))
    person, tie, slope = _best_person(choices, policy, enough=bot - alert_log_e + 1e-9)
    log_e = bot - person  # below the alert line: at most this (the ascent stopped early)
    p_value = math.exp(-min(max(log_e, 0.0), 700.0))
    sigma = -NormalDist().inv_cdf(p_value) if p_value < 1.0 else 0.0
    large = [c for c in choices if c.second >= policy.large_gap]
    return ChoiceTest(
        choices=len(choices),
        ranks=(sum(c.rank == 1 for c in choices), sum(c.rank == 2 for c in choices),
               sum(c.rank == 3 for c in choices)),
        worse=worse,
        large_gaps=len(large),
        second_at_large_gap=sum(c.rank == 2 for c in large),
        temperature=1 / slope if slope > 0 else math.inf,
        tie_log_odds=tie,
        log_e=log_e,
        sigma=sigma,
    )


@dataclass(frozen=True)
class Verdict:
    sigma: float
    engine: EngineTest
    timing: TimingTest | None
    recent: Sequence[Move]  # the window's decisions, uncounted ones among them
    choice: ChoiceTest | None = None

    def strongest(self, policy: AssistancePolicy) -> float:
        """The larger of the two routes' sigmas (the engine route only past ``engine_min``,
        the choice route only for play within people's error, ``choice_max_error``)."""
        engine = self.sigma if self.engine.z >= policy.engine_min else -math.inf
        choice = -math.inf
        if self.choice is not None and self.engine.mean <= policy.choice_max_error:
            choice = self.choice.sigma
        return max(engine, choice)


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
    return Verdict(sigma, engine, timing, recent, choice_test(recent, policy))


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


def _choice_evidence(choice: ChoiceTest) -> Evidence:
    best, second, third = choice.ranks
    return Evidence(
        kind="gap_blind_choices",
        description=(
            "which play was chosen, against how close the alternatives were: the second best "
            "played as often when it lost much as when it lost little, the third seldom"
        ),
        details={
            "choices": str(choice.choices),
            "best": str(best),
            "second_best": str(second),
            "third_best": str(third),
            "fourth_or_worse": str(choice.worse),
            "large_gaps": str(choice.large_gaps),
            "second_best_at_large_gap": str(choice.second_at_large_gap),
            "person_temperature": f"{choice.temperature:.4f}",
            "person_tie_log_odds": f"{choice.tie_log_odds:.2f}",
            "log_e_value": f"{choice.log_e:.2f}",
            "sigma_choices": f"{choice.sigma:.2f}",
        },
    )


def left_to_consulting(moves: Sequence[Move], consulted: Collection[GameKey]) -> list[Move]:
    """``moves`` without the decisions of the ``consulted`` games (those that overlapped a
    game of the same person's other account: consulting's evidence, see above)."""
    return [m for m in moves if (m.game_id, m.game_number) not in consulted]


def assess(
    account_id: str,
    moves: Sequence[Move],
    population: Population | None = None,
    policy: AssistancePolicy = DEFAULT_POLICY,
    consulted: Collection[GameKey] = frozenset(),
) -> Finding | None:
    """One player's assistance finding, or None. ``consulted``: the account's games that
    overlapped a game of its own other account, whose decisions are consulting's."""
    own = left_to_consulting(moves, consulted)
    verdict = judge(own, policy)
    if verdict is None:
        return None
    sigma = verdict.strongest(policy)
    if sigma < policy.alert_sigma:
        return None
    severity = Severity.HIGH if sigma >= policy.high_sigma else Severity.MEDIUM
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
    if len(own) < len(moves):
        details["decisions_left_to_consulting"] = str(len(moves) - len(own))
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
    if verdict.choice is not None:
        evidence.append(_choice_evidence(verdict.choice))
    return Finding(
        detector=Detector.ASSISTANCE,
        subjects=(account_id,),
        severity=severity,
        score=round(sigma, 2),
        score_meaning=(
            "sigma: the larger of a one-sided z that this play is closer to the engine, with "
            "more machine-like timing, than a human's, and the normal quantile of the "
            "gap-blind-choice test's p-value (1 / its e-value); alert at 3, HIGH at 4.75 "
            "(chess fair-play's conviction level)"
        ),
        evidence=tuple(evidence),
    )
