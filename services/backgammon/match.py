"""Match and money-session scoring: match to N points, Crawford state, money sessions.

``length == 0`` is money play (a session of single games with optional Jacoby rule
and beavers). In a match to N, the Crawford rule (on by default) forbids doubling in
the one game right after a player first reaches N-1 points; the games after it are
"post-Crawford" and doubling is allowed again. Jacoby and beavers are money-only.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from services.backgammon.cube import DEFAULT_CAP, CubeRules
from services.backgammon.errors import MatchOver, RulesError
from services.backgammon.scoring import GameResult


@dataclass(frozen=True, slots=True)
class MatchRules:
    length: int = 0
    crawford: bool = True
    jacoby: bool = False
    beavers: bool = False
    cube_cap: int = DEFAULT_CAP

    def __post_init__(self) -> None:
        if self.length < 0:
            raise RulesError(f"match length must be 0 (money) or positive, got {self.length}")
        if self.length and (self.jacoby or self.beavers):
            raise RulesError("the Jacoby rule and beavers apply to money play only, not matches")

    @property
    def is_money(self) -> bool:
        return self.length == 0


@dataclass(frozen=True, slots=True)
class MatchScore:
    """Score between games; ``crawford_game`` is True for the game about to be played."""

    rules: MatchRules
    score: tuple[int, int] = (0, 0)
    crawford_game: bool = False
    post_crawford: bool = False
    games_played: int = 0

    @property
    def winner(self) -> int | None:
        if self.rules.is_money:
            return None
        for player in (0, 1):
            if self.score[player] >= self.rules.length:
                return player
        return None

    @property
    def is_over(self) -> bool:
        return self.winner is not None

    def cube_rules(self) -> CubeRules:
        """Cube rules of the next game."""
        return CubeRules(
            cap=self.rules.cube_cap,
            beavers=self.rules.beavers,
            jacoby=self.rules.jacoby,
            crawford_game=self.crawford_game,
        )


def new_match(rules: MatchRules) -> MatchScore:
    return MatchScore(rules)


def record_game(match: MatchScore, result: GameResult) -> MatchScore:
    """Add a finished game's points and move the Crawford state on."""
    if match.is_over:
        raise MatchOver("the match is already over")
    score = list(match.score)
    score[result.winner] += result.points
    new_score = (score[0], score[1])
    after = replace(match, score=new_score, games_played=match.games_played + 1)
    length = match.rules.length
    if match.rules.is_money or not match.rules.crawford:
        return replace(after, crawford_game=False)
    if match.crawford_game:
        return replace(after, crawford_game=False, post_crawford=True)
    reached_match_point = (
        not match.post_crawford
        and new_score[result.winner] == length - 1
        and match.score[result.winner] < length - 1
    )
    return replace(after, crawford_game=reached_match_point)
