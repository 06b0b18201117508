"""Random self-play: whole games and matches of random legal actions, for tests and benchmarks.

The caller passes a seeded :class:`random.Random`, so every run is reproducible.
Doubles, drops, beavers and resignations are chosen at random with small
probabilities so that exports and score transitions see every kind of ending.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from services.backgammon import game as games
from services.backgammon.cube import CubeRules, may_double
from services.backgammon.game import Game, Phase
from services.backgammon.match import MatchRules, MatchScore, new_match, record_game


def _roll(rng: random.Random) -> tuple[int, int]:
    return rng.randint(1, 6), rng.randint(1, 6)


def _opening(rules: CubeRules, rng: random.Random) -> Game:
    while True:
        die0, die1 = rng.randint(1, 6), rng.randint(1, 6)
        if die0 != die1:
            return games.start_game(rules, die0, die1)


@dataclass(frozen=True, slots=True)
class Odds:
    """How often the random player takes each optional action."""

    double: float = 0.05
    resign: float = 0.005
    drop: float = 0.25
    beaver: float = 0.1
    drop_beaver: float = 0.25


def _answer_double(game: Game, rng: random.Random, odds: Odds) -> Game:
    if game.cube.beaver_pending:
        return games.drop(game) if rng.random() < odds.drop_beaver else games.take(game)
    if game.rules.beavers and rng.random() < odds.beaver and game.cube.value * 4 <= game.rules.cap:
        return games.beaver(game)
    return games.drop(game) if rng.random() < odds.drop else games.take(game)


def _step(game: Game, rng: random.Random, odds: Odds) -> Game:
    if game.phase is Phase.ROLL:
        if rng.random() < odds.resign:
            return games.offer_resignation(game, rng.randint(1, 3))
        if rng.random() < odds.double and may_double(game.cube, game.turn, game.rules):
            return games.double(game)
        return games.roll(game, _roll(rng))
    if game.phase is Phase.MOVE:
        options = games.plays(game)
        return games.play(game, rng.choice(options) if options else "")
    if game.phase is Phase.DOUBLE_OFFERED:
        return _answer_double(game, rng, odds)
    if game.phase is Phase.RESIGN_OFFERED:
        return (
            games.accept_resignation(game) if rng.random() < 0.5 else games.reject_resignation(game)
        )
    raise AssertionError(f"no action in phase {game.phase}")


def random_game(rules: CubeRules, rng: random.Random, odds: Odds = Odds()) -> Game:
    """Play one game of random legal actions to its end."""
    game = _opening(rules, rng)
    while game.phase is not Phase.OVER:
        game = _step(game, rng, odds)
    return game


def random_match(
    rules: MatchRules, rng: random.Random, *, max_games: int = 50, odds: Odds = Odds()
) -> tuple[list[Game], MatchScore]:
    """Games of a random match until it ends (or ``max_games`` for money sessions)."""
    score = new_match(rules)
    played: list[Game] = []
    while not score.is_over and len(played) < max_games:
        game = random_game(score.cube_rules(), rng, odds)
        assert game.result is not None
        played.append(game)
        score = record_game(score, game.result)
    return played, score
