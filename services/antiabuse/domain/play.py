"""One player's finished, analysed sessions, and "far below their own level".

The analysis service grades every finished money game and match (``MatchAnalysed``
on ``tavla.analysis.v1``): each player's mean equity error per counted decision
(``error_per_decision``, normalised equity; PR = 500 x that) and every decision.
Joined with the session's result (``GameEnded`` of a money game, ``MatchEnded``),
that is a :class:`PlayedGame`.

A player's own level is the median error per decision of the games they **won**
over the window: a win cannot have been thrown, so the baseline is out of an
abuser's reach (a median over every game would drift up with the games they throw),
and the median shrugs off the odd wild game. A loss is played **far below** that
level when its error per decision is at least ``factor`` times the baseline and at
least ``margin`` above it, over at least ``min_decisions`` counted decisions: an
honest player's bad game is rarely both (see the README for the figures).

A player with too few wins to have a level (fewer than ``min_baseline_games``: a new
account, or one who loses nearly every game) is judged only where a second sign asks for
it (chip dumping's giver, a win-trading pair's losses to each other), against
``unmeasured`` 0.035, the weakest level a rated player has (the top of GNU Backgammon's
"beginner" band; above it the scale says "awful"): a loss at 2.5 x that, 0.0875 per
decision (PR 44), is far below anyone's level. Never alone: a player without a level is
not judged on their own losses (``thrown``).

Where the player's own level is the only measure of them (``cautious_level``: their
losses judged alone, ``thrown``; a dump giver's losses to the receiver, whose one-way
streak a skill gap explains as well), a loss must also be far below a beginner's level:
at least 0.0875 per decision, whatever their level. Why: a level is the median of as few
as 3 wins, and a weak player's wins are the games they played well; on the held-out
population a level from 3 wins was under half the player's true one for one player in
ten, and honest PR 19 to 21 players whose wins measured 0.009 to 0.017 lost games at
0.054 to 0.083, "far below" that, ordinary bad days for them (held-out seeds 777001 and
20261205: 3 such losses, flagged for rating manipulation; 880005: a weak friend's 2,
which made their one-way losses to a strong friend chip dumping at HIGH).

The figures: honest losses of 10 or more decisions reach 0.0875 at a measured 0.21 % (54
of 25,683 on twelve held-out seeds; 0.23 % of those lost without a level), 1.9 % for
the weakest tier (PR 20 to 22), the 99th percentile about 0.07: under the 0.1 base rate
the thrown-loss tests assume, whatever the level's error. The cost: a strong player who
throws games alone at PR 25 to 43 (0.05 to 0.087 per decision) is not flagged by it
(throwing a game reliably takes larger errors); a win-trading pair's losses to each other
are still judged against each one's own level (both must throw).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from services.antiabuse.domain.stats import median


@dataclass(frozen=True)
class PlayedGame:
    """``account_id``'s view of one finished, analysed session."""

    game_id: str
    account_id: str
    opponent: str
    won: bool
    error_per_decision: float
    decisions: int
    # The largest error of a take (a hopeless double taken) and of a pass (an easy
    # take passed) in the session; 0 when the player made no such decision.
    worst_take_error: float
    worst_pass_error: float
    at: datetime


@dataclass(frozen=True)
class LevelPolicy:
    min_decisions: int = 10
    min_baseline_games: int = 3
    factor: float = 2.5
    margin: float = 0.04
    unmeasured: float = 0.035  # a player without a level, where a second sign asks for it


DEFAULT_LEVEL = LevelPolicy()


def baseline(games: Sequence[PlayedGame], policy: LevelPolicy = DEFAULT_LEVEL) -> float | None:
    """The player's own level: the median error per decision of their won games with
    enough decisions; None below ``min_baseline_games`` of them (no judgement yet)."""
    wins = [g.error_per_decision for g in games if g.won and g.decisions >= policy.min_decisions]
    if len(wins) < policy.min_baseline_games:
        return None
    return median(wins)


def level_or_floor(games: Sequence[PlayedGame], policy: LevelPolicy = DEFAULT_LEVEL) -> float:
    """The player's own level, or ``unmeasured`` when they have too few wins for one (see
    the module's docstring: only where a second sign asks for a judgement)."""
    level = baseline(games, policy)
    return policy.unmeasured if level is None else level


def far_below(game: PlayedGame, level: float, policy: LevelPolicy = DEFAULT_LEVEL) -> bool:
    """A loss played far below ``level`` (see the module's docstring)."""
    error = game.error_per_decision
    return (
        not game.won
        and game.decisions >= policy.min_decisions
        and error >= policy.factor * level
        and error - level >= policy.margin
    )


def cautious_level(level: float, policy: LevelPolicy = DEFAULT_LEVEL) -> float:
    """The level a loss is judged against where the player's own level is the only measure
    of them: theirs, or a beginner's when theirs is better (see the module's docstring)."""
    return max(level, policy.unmeasured)


def thrown(games: Sequence[PlayedGame], policy: LevelPolicy = DEFAULT_LEVEL) -> list[PlayedGame]:
    """The losses among ``games`` a player judged alone threw: far below their own level and
    far below a beginner's (oldest first; none without a level)."""
    level = baseline(games, policy)
    if level is None:
        return []
    line = cautious_level(level, policy)
    return sorted((g for g in games if far_below(g, line, policy)), key=lambda g: g.at)
