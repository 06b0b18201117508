"""Intentional losing and rating manipulation (pure): thrown losses, sandbagging, win trading.

Three patterns, all ``Detector.RATING_MANIPULATION``:

- **Thrown losses** (one account): losses played far below the player's own level
  (:mod:`services.antiabuse.domain.play`). At least ``min_thrown`` of them in the
  window, and more of the player's judged losses (10 or more decisions) than honest bad
  days explain: the binomial tail P(X >= thrown), X ~ Binomial(judged losses,
  ``thrown_base_rate``), at most ``thrown_alpha``; MEDIUM; twice ``min_thrown``, or the
  sandbagging pattern besides, is HIGH. Losses to an opponent the player's money flows
  to one way (``receivers``: ``flow_games`` or more games between them, nearly all of
  their games and money from the player, :func:`services.antiabuse.domain.chip_dumping.one_way`;
  one lost game is a game, not a flow) are left out:
  losing on purpose to move money to one account is chip dumping, judged there with the
  same analysis, not an attempt on the rating (the held-out evaluation's dump givers,
  losing only to their receiver, were 5 of its 7 false alarms here). A win trader's
  thrown losses go to an opponent they also beat, so they still count.
- **Sandbagging** (evidence on the thrown-losses finding, never an alert alone): the
  rating fell at least ``min_drop`` from its peak in the window, and after the fall the
  player won at least ``min_low_wins`` games against opponents rated at least
  ``min_drop`` below that peak. Alone it is what an honest player's bad week followed
  by a recovery looks like (matchmaking seats by rating, so after any fall the tables
  are lower): it only strengthens losses that were thrown.
Why a test and not a count: every honest player has bad days, and a player who loses
often has more of them; "3 losses far below" over a month flagged a player at 12 judged losses
whose 3 worst were bad days (the held-out evaluation). ``thrown_base_rate`` 0.1 (one
honest loss in ten far below the player's level) is an assumption on the high side, not
a measurement: the rule's two margins are meant to make a honest game far below rare,
and the held-out population's honest players had 11 such losses in 1,413 judged (0.8 %).
At 0.1 and ``thrown_alpha`` 0.01 (as win trading's): 3 of up to 5 judged losses (3 of 5:
p = 0.0086), 4 of up to 9 (0.0083), 5 of up to 14 are enough; 3 of 12 (p = 0.11) is
not. Judged alone, a loss is thrown only when it is also far below a beginner's level
(0.0875 per decision at least, :func:`services.antiabuse.domain.play.thrown`): a level
measured on 3 unusually clean wins made every ordinary bad day of two honest PR 20
players look thrown (the level's own noise), and honest losses reach 0.0875 at a measured
0.2 % (1.9 % for the weakest), under the assumed base rate whatever the level's error.

- **Win trading** (a pair): results alternating within a pair. Under independent
  games a change of winner from one game to the next has probability 2q(1-q) <= 1/2
  whatever the players' strengths q, so the number of changes over n games is at
  most as extreme as Binomial(n - 1, 1/2), and its upper tail is a conservative
  p-value. MEDIUM at p <= ``alpha``, HIGH at p <= ``strong_alpha``, from
  ``min_pair_games`` games (8 games alternating throughout: p = 1/128), unless the
  analysis shows the games were real: more than half of the pair's sessions were lost
  played out at the loser's own level (10 or more decisions, not far below it, the
  loser's level measured), ``PairLosses.played_out``. Why: 1/128 is the chance of one
  look at one pair, and friends and households play each other dozens of times, each
  session a new look; the held-out evaluation's fresh seeds flagged a household or a pair
  of friends for 8 sessions alternating throughout (1 in 128 pairs that meet 8 times) on
  two of three seeds, and a fair pair crosses 0.01 at some look within 30 sessions with
  probability 0.026 (0.0028 at 0.001). A trader's losses are gifts: thrown (far below
  the loser's level) or resigned before they are played (under 10 decisions); an honest
  pair's are played, at their level, and the analysis says so. Losses it cannot judge
  (too short, no level, no analysis) clear nobody: alternation is then judged alone,
  as before.
- **Losses thrown to each other** (a pair, ``losses_thrown_to_each_other``): each of the
  pair lost to the other far below their own level, and the pair's losses to each other
  so judged are more than honest bad days explain: P(X >= thrown), X ~ Binomial(judged
  losses between them, ``thrown_base_rate``), at most ``thrown_alpha``, at least
  ``min_thrown`` of them. MEDIUM; HIGH with alternating results besides, or at twice
  ``min_thrown``. Why: a trading pair that meets 6 or 7 times never reaches the
  alternation test's 8 sessions, and each trader's own thrown-losses test dilutes 3
  thrown losses among their honest ones (3 of 6 judged: p = 0.016); the held-out
  evaluation's fresh seeds missed 4 traders so (3 thrown of 6 and of 8 judged, or 2 thrown
  of 2). Between the two of them the question is sharper: of their losses to each other,
  how many were thrown, and by both (a dump giver throws one way only, which is chip
  dumping's). 3 of 3 is p = 0.001; an honest pair needs a bad day far below each one's
  level against each other at the assumed rate of one loss in ten (the held-out honest
  players' measured rate is 0.8 %). A loser with too few wins for a level of their own
  is judged against a beginner's (``LevelPolicy.unmeasured``, as chip dumping judges such
  a giver): a trader who won only 2 of the pair's games has no level, and their losses to
  the partner, at 0.15 to 0.45 a decision, went unjudged (fresh seed 990001: a pair whose
  8 sessions changed winner 4 times of 7 was missed). Honest players without a level lose
  at 0.0875 or worse in 0.23 % of their losses (:mod:`services.antiabuse.domain.play`),
  and the partner must have thrown too.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from services.antiabuse.domain.chip_dumping import DEFAULT_POLICY as DEFAULT_FLOWS
from services.antiabuse.domain.chip_dumping import FlowPolicy, Transfer, flows, one_way
from services.antiabuse.domain.findings import Detector, Evidence, Finding, Severity, pair
from services.antiabuse.domain.play import (
    DEFAULT_LEVEL,
    LevelPolicy,
    PlayedGame,
    baseline,
    cautious_level,
    far_below,
    level_or_floor,
    thrown,
)
from services.antiabuse.domain.stats import binomial_tail


@dataclass(frozen=True)
class RatingChange:
    """One ``RatingChanged`` of the account, with its opponent's rating then (if known)."""

    game_id: str
    previous: float
    new: float
    opponent_rating: float | None
    at: datetime

    @property
    def won(self) -> bool:
        return self.new > self.previous


@dataclass(frozen=True)
class Result:
    """Who won one finished session between a pair."""

    game_id: str
    winner: str
    at: datetime


@dataclass(frozen=True)
class RatingPolicy:
    window: timedelta = timedelta(days=30)
    level: LevelPolicy = DEFAULT_LEVEL
    min_thrown: int = 3
    thrown_base_rate: float = 0.1  # an honest loss far below the player's level (assumed)
    thrown_alpha: float = 0.01
    flow_games: int = 2  # games one way to one opponent that make a flow, not a game
    min_drop: float = 100.0
    min_low_wins: int = 2
    min_pair_games: int = 8
    alpha: float = 0.01
    strong_alpha: float = 0.001


DEFAULT_POLICY = RatingPolicy()


@dataclass(frozen=True)
class Sandbag:
    peak: float
    trough: float
    low_wins: tuple[RatingChange, ...]


def sandbagging(changes: Sequence[RatingChange], policy: RatingPolicy) -> Sandbag | None:
    """The deepest fall from a peak followed by wins at tables rated below the peak."""
    ordered = sorted(changes, key=lambda c: c.at)
    best: Sandbag | None = None
    for i, top in enumerate(ordered):
        peak = top.previous
        rest = ordered[i:]
        bottom = min(range(len(rest)), key=lambda j: rest[j].new)
        trough = rest[bottom].new
        if peak - trough < policy.min_drop:
            continue
        low = tuple(
            c
            for c in rest[bottom + 1 :]
            if c.won
            and c.opponent_rating is not None
            and c.opponent_rating <= peak - policy.min_drop
        )
        if len(low) >= policy.min_low_wins and (
            best is None or peak - trough > best.peak - best.trough
        ):
            best = Sandbag(peak, trough, low)
    return best


def assess_thrown(
    account_id: str,
    games: Sequence[PlayedGame],
    changes: Sequence[RatingChange],
    policy: RatingPolicy = DEFAULT_POLICY,
    receivers: Collection[str] = (),
) -> Finding | None:
    """The account's finding for losses thrown (and sandbagging), if any. ``receivers``:
    opponents the account's money flows to one way, whose losses are chip dumping's."""
    mine = [
        g for g in games if g.account_id == account_id and (g.won or g.opponent not in receivers)
    ]
    losses = thrown(mine, policy.level)
    if len(losses) < policy.min_thrown:
        return None
    judged = sum(1 for g in mine if not g.won and g.decisions >= policy.level.min_decisions)
    p_value = binomial_tail(len(losses), judged, policy.thrown_base_rate)
    if p_value > policy.thrown_alpha:
        return None
    evidence = [_thrown_evidence(losses, mine, policy, judged, p_value)]
    fall = sandbagging(changes, policy)
    if fall is not None:
        evidence.append(_sandbag_evidence(fall, policy))
    strong = fall is not None or len(losses) >= 2 * policy.min_thrown
    return Finding(
        detector=Detector.RATING_MANIPULATION,
        subjects=(account_id,),
        severity=Severity.HIGH if strong else Severity.MEDIUM,
        score=float(len(losses)),
        score_meaning=f"losses in {policy.window.days} days played far below the player's "
        "own level (error per decision at least "
        f"{policy.level.factor}x and {policy.level.margin} above the median of their wins, "
        f"or of {policy.level.unmeasured}, a beginner's, when theirs is better), "
        f"more than honest bad days explain (binomial tail at {policy.thrown_base_rate} "
        f"<= {policy.thrown_alpha})",
        evidence=tuple(evidence),
    )


def receivers(
    account_id: str,
    transfers: Sequence[Transfer],
    now: datetime,
    policy: RatingPolicy = DEFAULT_POLICY,
    flow_policy: FlowPolicy = DEFAULT_FLOWS,
) -> set[str]:
    """The opponents ``account_id``'s money flows to one way (``transfers``: the settlements
    between the account and any opponents): ``flow_games`` or more games, nearly all of
    them and of the money lost by the account. Their losses are chip dumping's."""
    by_pair: dict[tuple[str, str], list[Transfer]] = {}
    for transfer in transfers:
        by_pair.setdefault(pair(transfer.loser, transfer.winner), []).append(transfer)
    return {
        flow.receiver
        for mine in by_pair.values()
        for flow in flows(mine, now, flow_policy)
        if flow.giver == account_id
        and len(flow.games) >= policy.flow_games
        and one_way(flow, flow_policy)
    }


def _thrown_evidence(
    losses: Sequence[PlayedGame],
    games: Sequence[PlayedGame],
    policy: RatingPolicy,
    judged: int,
    p_value: float,
) -> Evidence:
    level = baseline(games, policy.level) or 0.0
    line = cautious_level(level, policy.level)
    return Evidence(
        "losses_below_own_level",
        f"{len(losses)} of {judged} losses played far below the player's level: error per "
        f"decision {', '.join(f'{g.error_per_decision:.3f}' for g in losses)} against "
        f"{level:.3f} in their wins (judged against {line:.3f}); chance by honest bad days "
        f"{p_value:.2g}",
        game_ids=tuple(g.game_id for g in losses),
        details={
            "baseline_error_per_decision": f"{level:.4f}",
            "judged_against": f"{line:.4f}",
            "errors_per_decision": ",".join(f"{g.error_per_decision:.4f}" for g in losses),
            "opponents": ",".join(sorted({g.opponent for g in losses})),
            "analysed_games": str(len(games)),
            "judged_losses": str(judged),
            "p_value": f"{p_value:.6f}",
        },
    )


def _sandbag_evidence(fall: Sandbag, policy: RatingPolicy) -> Evidence:
    return Evidence(
        "rating_drop_then_low_tables",
        f"rating fell from {fall.peak:.0f} to {fall.trough:.0f}, then {len(fall.low_wins)} "
        f"wins against players rated {policy.min_drop:.0f} or more below {fall.peak:.0f}",
        game_ids=tuple(c.game_id for c in fall.low_wins),
        details={
            "peak": f"{fall.peak:.1f}",
            "trough": f"{fall.trough:.1f}",
            "opponent_ratings": ",".join(f"{c.opponent_rating:.1f}" for c in fall.low_wins),
        },
    )


def alternations(results: Sequence[Result]) -> int:
    """How many times the winner changed from one session to the next (oldest first)."""
    ordered = sorted(results, key=lambda r: r.at)
    return sum(1 for a, b in itertools.pairwise(ordered) if a.winner != b.winner)


@dataclass(frozen=True)
class PairLosses:
    """A pair's losses to each other of 10 or more decisions, each judged against its loser's
    own level, or a beginner's when the loser has too few wins for one (shorter losses are
    not judged)."""

    judged: int
    thrown: tuple[PlayedGame, ...]  # far below the loser's level, oldest first

    @property
    def played_out(self) -> int:
        """Losses played at the loser's own level: real games, honestly lost."""
        return self.judged - len(self.thrown)

    @property
    def throwers(self) -> frozenset[str]:
        return frozenset(g.account_id for g in self.thrown)

    def p_value(self, policy: RatingPolicy) -> float:
        """The chance of this many thrown among the judged by honest bad days."""
        return binomial_tail(len(self.thrown), self.judged, policy.thrown_base_rate)


def pair_losses(
    first: str, second: str, games: Sequence[PlayedGame], policy: RatingPolicy = DEFAULT_POLICY
) -> PairLosses:
    """Each one's losses to the other among ``games`` (both accounts' analysed sessions,
    against anyone: a level is measured on all of one's wins; a player with too few wins
    for one judged against ``LevelPolicy.unmeasured``, a beginner's, module docstring)."""
    judged = 0
    thrown_games: list[PlayedGame] = []
    for me, other in ((first, second), (second, first)):
        mine = [g for g in games if g.account_id == me]
        level = level_or_floor(mine, policy.level)
        losses = [
            g
            for g in mine
            if not g.won and g.opponent == other and g.decisions >= policy.level.min_decisions
        ]
        judged += len(losses)
        thrown_games += [g for g in losses if far_below(g, level, policy.level)]
    return PairLosses(judged, tuple(sorted(thrown_games, key=lambda g: g.at)))


def assess_win_trading(
    first: str,
    second: str,
    results: Sequence[Result],
    policy: RatingPolicy = DEFAULT_POLICY,
    games: Sequence[PlayedGame] = (),
) -> Finding | None:
    """The pair's finding when its results alternate more than chance allows in games that
    were not real, or its losses to each other were thrown both ways (module docstring).
    ``games``: both accounts' analysed sessions in the window."""
    losses = pair_losses(first, second, games, policy)
    alternating = _alternation_p(results, losses, policy)
    traded = _traded_losses(losses, policy)
    if alternating is None and traded is None:
        return None
    evidence: list[Evidence] = []
    if alternating is not None:
        evidence.append(_alternation_evidence(results, alternating, losses))
    if traded is not None:
        evidence.append(_traded_evidence(losses, traded))
    strong = (
        (alternating is not None and alternating <= policy.strong_alpha)
        or (alternating is not None and traded is not None)
        or (traded is not None and len(losses.thrown) >= 2 * policy.min_thrown)
    )
    return Finding(
        detector=Detector.RATING_MANIPULATION,
        subjects=pair(first, second),
        severity=Severity.HIGH if strong else Severity.MEDIUM,
        score=round(min(p for p in (alternating, traded) if p is not None), 6),
        score_meaning="the smaller of the chances of the winner changing this often or more "
        "between independent games (binomial tail at 1/2, conservative for any strengths) "
        "and of this many losses to each other thrown by honest bad days (binomial tail at "
        f"{policy.thrown_base_rate})",
        evidence=tuple(evidence),
    )


def _alternation_p(
    results: Sequence[Result], losses: PairLosses, policy: RatingPolicy
) -> float | None:
    """The alternation's p-value when it counts: enough sessions, beyond ``alpha``, and not
    mostly lost in games played out at the loser's own level."""
    n = len(results)
    if n < policy.min_pair_games or 2 * losses.played_out > n:
        return None
    p_value = binomial_tail(alternations(results), n - 1, 0.5)
    return p_value if p_value <= policy.alpha else None


def _traded_losses(losses: PairLosses, policy: RatingPolicy) -> float | None:
    """The thrown losses' p-value when both threw and honest bad days do not explain it."""
    if len(losses.throwers) < 2 or len(losses.thrown) < policy.min_thrown:
        return None
    p_value = losses.p_value(policy)
    return p_value if p_value <= policy.thrown_alpha else None


def _alternation_evidence(
    results: Sequence[Result], p_value: float, losses: PairLosses
) -> Evidence:
    ordered = sorted(results, key=lambda r: r.at)
    changes = alternations(results)
    return Evidence(
        "alternating_results",
        f"the winner changed {changes} times in {len(ordered)} sessions between the pair; "
        f"{losses.played_out} of the losses were played out at the loser's own level",
        game_ids=tuple(r.game_id for r in ordered),
        details={
            "sessions": str(len(ordered)),
            "alternations": str(changes),
            "winners": ",".join(r.winner for r in ordered),
            "p_value": f"{p_value:.6f}",
            "losses_played_out": str(losses.played_out),
        },
    )


def _traded_evidence(losses: PairLosses, p_value: float) -> Evidence:
    return Evidence(
        "losses_thrown_to_each_other",
        f"{len(losses.thrown)} of the pair's {losses.judged} judged losses to each other were "
        f"played far below the loser's own level, by both of them; chance by honest bad "
        f"days {p_value:.2g}",
        game_ids=tuple(g.game_id for g in losses.thrown),
        details={
            "judged_losses": str(losses.judged),
            "thrown_losses": str(len(losses.thrown)),
            "throwers": ",".join(sorted(losses.throwers)),
            "errors_per_decision": ",".join(f"{g.error_per_decision:.4f}" for g in losses.thrown),
            "p_value": f"{p_value:.6f}",
        },
    )
