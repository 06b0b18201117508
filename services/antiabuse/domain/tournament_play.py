"""Collusion in tournaments (pure): soft play between a pair, chip dumping through forfeits.

A tournament match (``MatchDecided`` on ``tavla.tournaments.v1``) is played as an
unstaked match through the game service and analysed like any other session, or
forfeited by a player who never arrived (``no_show``) or dropped out beyond the game's
rules (``disconnected``). Two patterns:

- **Soft play** (``Detector.RATING_MANIPULATION``, the pair): a played tournament match
  whose loser lost it far below their own level (:func:`services.antiabuse.domain.play.far_below`
  against :func:`services.antiabuse.domain.play.baseline`, the thrown-loss rule): the
  winner moves on in a field that paid to enter. One such match is LOW (an honest
  player's bad game looks the same); ``strong_soft`` of them between the pair in the
  window, or one between accounts strong links make one person, is HIGH.
- **Chip dumping through forfeits** (``Detector.CHIP_DUMPING``, the forfeiter and those
  they forfeited to): the forfeiter's matches against a receiver and the accounts strong
  links make one person with them (the group). An honest forfeit comes whoever the
  opponent is: each of the m matches against the group is forfeited with a chance
  ``p = max(base_forfeit_rate, the forfeiter's own rate against everybody else)``; k
  forfeits to the group or more has ``P(X >= k), X ~ Binomial(m, p)``. MEDIUM from
  ``min_forfeits`` forfeits at p-value <= ``alpha``, HIGH at <= ``strong_alpha`` or when
  the forfeiter is one person with the receiver.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from services.antiabuse.domain.findings import Detector, Evidence, Finding, Severity
from services.antiabuse.domain.play import (
    DEFAULT_LEVEL,
    LevelPolicy,
    PlayedGame,
    baseline,
    far_below,
)
from services.antiabuse.domain.stats import binomial_tail

FORFEITS = frozenset({"no_show", "disconnected"})


@dataclass(frozen=True)
class TournamentMatch:
    """One decided tournament match (a bye has no loser and is never one)."""

    tournament_id: str
    match_id: str  # "r2m3": the third match from the top in round 2
    game_id: str  # "" for a match forfeited before its game was created
    winner: str
    loser: str
    decision: str  # "played", "no_show" or "disconnected"
    at: datetime

    @property
    def forfeited(self) -> bool:
        return self.decision in FORFEITS

    @property
    def round(self) -> int:
        """The round the match id names (0 when it names none)."""
        head = self.match_id.split("m", 1)[0].removeprefix("r")
        return int(head) if head.isdigit() else 0


@dataclass(frozen=True)
class TournamentPolicy:
    window: timedelta = timedelta(days=90)
    level: LevelPolicy = DEFAULT_LEVEL
    strong_soft: int = 2
    base_forfeit_rate: float = 0.2
    min_forfeits: int = 3
    alpha: float = 0.01
    strong_alpha: float = 0.001


DEFAULT_POLICY = TournamentPolicy()


def soft_played(
    matches: Sequence[TournamentMatch],
    games: Mapping[str, Sequence[PlayedGame]],
    policy: TournamentPolicy = DEFAULT_POLICY,
) -> list[tuple[TournamentMatch, PlayedGame, float]]:
    """The played ``matches`` whose loser lost far below their own level, with the loser's
    analysed game and level; ``games`` holds each player's analysed sessions by account."""
    found = []
    for match in sorted(matches, key=lambda m: m.at):
        if match.decision != "played" or not match.game_id:
            continue
        own = games.get(match.loser, ())
        level = baseline(own, policy.level)
        game = next((g for g in own if g.game_id == match.game_id), None)
        if level is not None and game is not None and far_below(game, level, policy.level):
            found.append((match, game, level))
    return found


def assess_soft_play(
    first: str,
    second: str,
    matches: Sequence[TournamentMatch],
    games: Mapping[str, Sequence[PlayedGame]],
    *,
    one_person: bool,
    policy: TournamentPolicy = DEFAULT_POLICY,
) -> Finding | None:
    """The pair's finding when one of them lost a tournament match to the other far below
    their own level (``matches``: the pair's decided tournament matches in the window)."""
    soft = soft_played(
        [m for m in matches if {m.winner, m.loser} == {first, second}], games, policy
    )
    if not soft:
        return None
    strong = one_person or len(soft) >= policy.strong_soft
    return Finding(
        detector=Detector.RATING_MANIPULATION,
        subjects=tuple(sorted((first, second))),
        severity=Severity.HIGH if strong else Severity.LOW,
        score=float(len(soft)),
        score_meaning=f"tournament matches between the pair in {policy.window.days} days "
        "lost far below the loser's own level (error per decision at least "
        f"{policy.level.factor}x and {policy.level.margin} above the median of their wins)",
        evidence=tuple(_soft_evidence(m, g, level, one_person) for m, g, level in soft),
    )


def _soft_evidence(
    match: TournamentMatch, game: PlayedGame, level: float, one_person: bool
) -> Evidence:
    return Evidence(
        "tournament_soft_play",
        f"lost tournament match {match.match_id} to {match.winner} at "
        f"{game.error_per_decision:.3f} per decision against {level:.3f} in their wins",
        game_ids=(match.game_id,),
        details={
            "tournament_id": match.tournament_id,
            "match_id": match.match_id,
            "round": str(match.round),
            "loser": match.loser,
            "winner": match.winner,
            "error_per_decision": f"{game.error_per_decision:.4f}",
            "baseline_error_per_decision": f"{level:.4f}",
            "one_person": str(one_person).lower(),
        },
    )


@dataclass(frozen=True)
class ForfeitTest:
    matches: int  # the forfeiter's matches against the group
    forfeits: int  # of them forfeited
    chance: float  # the chance of a forfeit per match under the null
    p_value: float


def forfeit_test(
    forfeiter: str,
    group: Collection[str],
    matches: Sequence[TournamentMatch],
    policy: TournamentPolicy = DEFAULT_POLICY,
) -> ForfeitTest:
    """``forfeiter``'s forfeits to ``group`` against chance (see the module's docstring);
    ``matches``: the forfeiter's decided tournament matches in the window."""
    mine = [m for m in matches if forfeiter in (m.winner, m.loser)]
    against = [m for m in mine if _opponent(m, forfeiter) in group]
    others = [m for m in mine if _opponent(m, forfeiter) not in group]
    given = sum(1 for m in against if m.forfeited and m.loser == forfeiter)
    elsewhere = sum(1 for m in others if m.forfeited and m.loser == forfeiter)
    own_rate = elsewhere / len(others) if others else 0.0
    chance = max(policy.base_forfeit_rate, own_rate)
    return ForfeitTest(len(against), given, chance, binomial_tail(given, len(against), chance))


def assess_forfeits(
    forfeiter: str,
    group: Collection[str],
    matches: Sequence[TournamentMatch],
    *,
    one_person: bool,
    policy: TournamentPolicy = DEFAULT_POLICY,
) -> Finding | None:
    """The finding when ``forfeiter`` forfeits to ``group`` (a receiver and the accounts
    strong links make one person with them) more often than chance allows."""
    test = forfeit_test(forfeiter, group, matches, policy)
    if test.forfeits < policy.min_forfeits or test.p_value > policy.alpha:
        return None
    given = sorted(
        (m for m in matches if m.forfeited and m.loser == forfeiter and m.winner in group),
        key=lambda m: m.at,
    )
    receivers = sorted({m.winner for m in given})
    strong = one_person or test.p_value <= policy.strong_alpha
    return Finding(
        detector=Detector.CHIP_DUMPING,
        subjects=tuple(sorted({forfeiter, *receivers})),
        severity=Severity.HIGH if strong else Severity.MEDIUM,
        score=round(test.p_value, 6),
        score_meaning="chance of forfeiting this many of the matches against these accounts "
        "or more if forfeits fell on matches regardless of the opponent (binomial tail at "
        "the larger of the base rate and the player's own rate against others)",
        evidence=(
            Evidence(
                "forfeited_to_the_same_player",
                f"forfeited {test.forfeits} of {test.matches} tournament matches against "
                f"{', '.join(receivers)} (chance {test.p_value:.6f})",
                game_ids=tuple(m.game_id for m in given if m.game_id),
                details={
                    "forfeiter": forfeiter,
                    "receivers": ",".join(receivers),
                    "matches_against": str(test.matches),
                    "forfeits": str(test.forfeits),
                    "forfeit_chance": f"{test.chance:.4f}",
                    "p_value": f"{test.p_value:.6f}",
                    "tournaments": ",".join(dict.fromkeys(m.tournament_id for m in given)),
                    "decisions": ",".join(m.decision for m in given),
                    "one_person": str(one_person).lower(),
                },
            ),
        ),
    )


def _opponent(match: TournamentMatch, account_id: str) -> str:
    return match.loser if match.winner == account_id else match.winner
