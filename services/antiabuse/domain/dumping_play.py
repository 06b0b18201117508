"""The analysis half of chip dumping (pure): how the giver lost the games that moved the money.

:func:`services.antiabuse.domain.chip_dumping.assess` finds a pair's one-way money
flow; this module reads the giver's analysed losses to the receiver in that flow
and returns the ``corroboration`` evidence that lifts the flow's finding from
MEDIUM to HIGH:

- ``played_below_own_level``: losses played far below the giver's own level
  (:func:`services.antiabuse.domain.play.far_below`, the baseline being the median
  of all their analysed wins in the window, against anyone) and far below a beginner's
  (:func:`services.antiabuse.domain.play.cautious_level`: at least 0.0875 per decision;
  a level from a few clean wins made a weak friend's ordinary bad days, 0.056 and 0.077
  against a level of 0.015, two signs on a flow their skill gap explained, fresh seed
  880005); a giver with too few wins to
  have a level (fewer than 3: a dumper who mixes in few honest games, or loses them) is
  judged against the weakest level a rated player has (``LevelPolicy.unmeasured`` 0.035,
  the top of GNU Backgammon's "beginner" band; above it the scale says "awful"): a loss at
  2.5 x that, 0.0875 per decision (PR 44), is far below anyone's level;
- ``hopeless_double_taken``: a take that cost at least ``cube_blunder`` (0.3,
  normalised equity; gnubg calls 0.16 a blunder) against passing;
- ``easy_take_passed``: a pass that cost at least ``cube_blunder`` against taking;
- ``resigned_in_good_position``: a resignation to the receiver where the giver's share
  of the position (the game service's ``StopValued``: money ``(1 + E/3) / 2``, a match
  the match-winning chance) was at least ``good_share`` (0.55: money cubeful equity
  +0.3 or better per cube; a match 55% or better to win it).

Why 0.55: an honest player resigns when the game is lost, at an equity near -1 per
cube (a single game lost for sure; lower with gammon chances). Resigning at E >= +0.3
gives away at least 1.3 points per cube, eight times gnubg's blunder line (0.16), in a
position the resigner was more likely to win; a misjudged resignation happens in close
positions (E around -0.5 to 0), not there. 0.6 (E >= +0.6) would miss a dumper who
resigns in modestly good positions; anything at 0.5 or below would count honest
resignations of close positions. The evaluation's own error (a few hundredths of
equity) is far from the 1.3 points of margin.

Why a floor for an unknown level: the held-out evaluation's one missed dumping pair (of
8) lost 4 games to the receiver at 0.2 to 0.4 per decision, one resigned at a share of
0.7, but the giver had won none of their honest games, so without a level only the
resignation counted (1 sign of the 2 needed) and the flow (4 of 4: 1/16 by fair play)
stayed below every line. Its honest players lost 2,166 games of 10 decisions or more,
one of them at 0.0875 or worse (0.099) and none at 0.1.

A strong player beating a weak one produces the flow but not these: the weak
player's losses are at their own level, and their cube errors are not gifts.
An honest loser blunders a cube now and then, so nothing is returned unless at
least ``min_games`` of the giver's losses to the receiver show a sign.
Resignations need no ``MatchAnalysed``: the valuation comes with the session's end.

:func:`strengths` measures the pair for the chance route instead
(:class:`services.antiabuse.domain.chip_dumping.Strengths`): both players' own levels,
the decisions a game gives each, and how many of the giver's losses to the receiver were
real games played at their own level (the reasons are in that module's docstring).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import datetime

from services.antiabuse.domain.chip_dumping import Strengths
from services.antiabuse.domain.findings import Evidence
from services.antiabuse.domain.play import (
    DEFAULT_LEVEL,
    LevelPolicy,
    PlayedGame,
    baseline,
    cautious_level,
    far_below,
    level_or_floor,
)
from services.antiabuse.domain.stats import median


@dataclass(frozen=True)
class DumpingPlayPolicy:
    level: LevelPolicy = DEFAULT_LEVEL
    cube_blunder: float = 0.3
    min_games: int = 2
    good_share: float = 0.55


@dataclass(frozen=True)
class Resignation:
    """A session ``account_id`` resigned to ``opponent``, with their share where they did."""

    game_id: str
    account_id: str
    opponent: str
    share: float
    at: datetime


DEFAULT_POLICY = DumpingPlayPolicy()


def corroboration(
    giver: str,
    receiver: str,
    giver_games: Sequence[PlayedGame],
    policy: DumpingPlayPolicy = DEFAULT_POLICY,
    resignations: Sequence[Resignation] = (),
) -> list[Evidence]:
    """Evidence from the giver's analysed losses and valued resignations to ``receiver``
    (empty: none, or too little)."""
    mine = [g for g in giver_games if g.account_id == giver]
    losses = sorted((g for g in mine if not g.won and g.opponent == receiver), key=lambda g: g.at)
    own = baseline(mine, policy.level)
    level = cautious_level(level_or_floor(mine, policy.level), policy.level)
    signs: list[tuple[str, str, Callable[[PlayedGame], bool]]] = [
        (
            "hopeless_double_taken",
            "took hopeless doubles in {n} game(s) (costing at least {cut} against passing)",
            lambda g: g.worst_take_error >= policy.cube_blunder,
        ),
        (
            "easy_take_passed",
            "passed easy takes in {n} game(s) (costing at least {cut} against taking)",
            lambda g: g.worst_pass_error >= policy.cube_blunder,
        ),
    ]
    signs.insert(
        0,
        (
            "played_below_own_level",
            "lost {n} game(s) to the receiver far below their own level "
            + (
                f"({own:.3f} per decision in their wins; judged against {level:.3f})"
                if own is not None
                else f"(too few wins to measure it: judged against {level:.3f}, a beginner's)"
            ),
            lambda g: far_below(g, level, policy.level),
        ),
    )
    found = {kind: [g for g in losses if test(g)] for kind, _, test in signs}
    resigned = sorted(
        (
            r
            for r in resignations
            if r.account_id == giver and r.opponent == receiver and r.share >= policy.good_share
        ),
        key=lambda r: r.at,
    )
    games = {g.game_id for games in found.values() for g in games} | {r.game_id for r in resigned}
    if len(games) < policy.min_games:
        return []
    evidence = [
        _evidence(kind, text, found[kind], giver, receiver, policy)
        for kind, text, _ in signs
        if found[kind]
    ]
    if resigned:
        evidence.append(_resigned(resigned, giver, receiver, policy))
    return evidence


def strengths(
    giver: str,
    receiver: str,
    giver_games: Sequence[PlayedGame],
    receiver_games: Sequence[PlayedGame],
    flow_games: Collection[str],
    policy: DumpingPlayPolicy = DEFAULT_POLICY,
) -> Strengths:
    """What the analysis measured of the pair (the chance route's null,
    :class:`services.antiabuse.domain.chip_dumping.Strengths`): the giver's level
    (:func:`giver_level`) and the receiver's own (the median of their wins, None below
    3), the median decisions a player made in the flow's
    analysed games (0 when none was analysed: the coin between equals), and the giver's
    losses to the receiver in the flow played out at their own level (10 or more decisions,
    not far below it, nor below a beginner's; a giver without a level judged against
    ``LevelPolicy.unmeasured``; as by :func:`corroboration`)."""
    mine = [g for g in giver_games if g.account_id == giver]
    theirs = [g for g in receiver_games if g.account_id == receiver]
    decisions = [float(g.decisions) for g in (*mine, *theirs) if g.game_id in flow_games]
    own = giver_level(mine, receiver, policy.level)
    level = cautious_level(level_or_floor(mine, policy.level), policy.level)
    played_out = [
        g
        for g in mine
        if g.game_id in flow_games
        and not g.won
        and g.opponent == receiver
        and g.decisions >= policy.level.min_decisions
        and not far_below(g, level, policy.level)
    ]
    return Strengths(
        giver_level=own,
        receiver_level=baseline(theirs, policy.level),
        decisions_per_game=median(decisions) if decisions else 0.0,
        losses_played_out=len(played_out),
    )


def giver_level(
    games: Sequence[PlayedGame], receiver: str, policy: LevelPolicy = DEFAULT_LEVEL
) -> float | None:
    """The giver's level for the chance route's null: the median error per decision of
    their games (``min_decisions`` or more, wins and losses) against anyone but the
    receiver when there are ``min_baseline_games`` of them, else of all their games; None
    with fewer; never above ``unmeasured`` (a beginner's), and without the losses far below
    a beginner's (thrown: :func:`.play.far_below`). Games against others are the giver's
    real strength (a weak player's wins flatter it); the games with the receiver, which a
    dumper controls, count only without those, and then playing them badly buys at most a
    beginner's losses (the README's "Skill gap")."""
    played = [
        g
        for g in games
        if g.decisions >= policy.min_decisions and not far_below(g, policy.unmeasured, policy)
    ]
    outside = [g for g in played if g.opponent != receiver]
    measured = outside if len(outside) >= policy.min_baseline_games else played
    if len(measured) < policy.min_baseline_games:
        return None
    return min(median([g.error_per_decision for g in measured]), policy.unmeasured)


def _resigned(
    resigned: Sequence[Resignation], giver: str, receiver: str, policy: DumpingPlayPolicy
) -> Evidence:
    return Evidence(
        "resigned_in_good_position",
        f"{giver} resigned {len(resigned)} game(s) to the receiver in good positions "
        f"(their share of the position at least {policy.good_share})",
        game_ids=tuple(r.game_id for r in resigned),
        details={
            "giver": giver,
            "receiver": receiver,
            "shares": ",".join(f"{r.share:.4f}" for r in resigned),
        },
    )


def _evidence(
    kind: str,
    text: str,
    games: Sequence[PlayedGame],
    giver: str,
    receiver: str,
    policy: DumpingPlayPolicy,
) -> Evidence:
    return Evidence(
        kind,
        f"{giver} " + text.format(n=len(games), cut=policy.cube_blunder),
        game_ids=tuple(g.game_id for g in games),
        details={
            "giver": giver,
            "receiver": receiver,
            "errors_per_decision": ",".join(f"{g.error_per_decision:.4f}" for g in games),
            "worst_take_errors": ",".join(f"{g.worst_take_error:.4f}" for g in games),
            "worst_pass_errors": ",".join(f"{g.worst_pass_error:.4f}" for g in games),
        },
    )
