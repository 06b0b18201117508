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


DEFAULT_LEVEL = LevelPolicy()


def baseline(games: Sequence[PlayedGame], policy: LevelPolicy = DEFAULT_LEVEL) -> float | None:
    """The player's own level: the median error per decision of their won games with
    enough decisions; None below ``min_baseline_games`` of them (no judgement yet)."""
    wins = [g.error_per_decision for g in games if g.won and g.decisions >= policy.min_decisions]
    if len(wins) < policy.min_baseline_games:
        return None
    return median(wins)


def far_below(game: PlayedGame, level: float, policy: LevelPolicy = DEFAULT_LEVEL) -> bool:
    """A loss played far below ``level`` (see the module's docstring)."""
    error = game.error_per_decision
    return (
        not game.won
        and game.decisions >= policy.min_decisions
        and error >= policy.factor * level
        and error - level >= policy.margin
    )


def thrown(games: Sequence[PlayedGame], policy: LevelPolicy = DEFAULT_LEVEL) -> list[PlayedGame]:
    """The losses among ``games`` played far below the player's own level (oldest first)."""
    level = baseline(games, policy)
    if level is None:
        return []
    return sorted((g for g in games if far_below(g, level, policy)), key=lambda g: g.at)
