"""Sample matches for the benchmark and tests: what a site's players might record.

:func:`net_match` plays a match (or money session) with the rules library (the game
service's engine), each play near GNU Backgammon's net's 0-ply favourite and cube
actions at random, so that its positions are like real ones (random legal plays
reach odd positions and games of hundreds of moves). Seeded: reproducible.
"""

from __future__ import annotations

import random

import gnubg_nn

from services.backgammon import game as games
from services.backgammon.cube import may_double
from services.backgammon.game import Game, Phase
from services.backgammon.match import MatchRules, new_match, record_game
from services.backgammon.movegen import Play
from services.backgammon.selfplay import Odds


def _net_play(game: Game, rng: random.Random) -> Play | str:
    """The net's 0-ply cubeless favourite 3 times in 4, else one of its next three."""
    options = games.plays(game)
    if not options:
        return ""

    def equity(play: Play) -> float:
        if not sum(play.result.player):
            return 3.0
        win, wg, wbg, lg, lbg = gnubg_nn.probabilities(play.result.swapped().to_gnubg(), 0)
        return -float(2 * win - 1 + wg - lg + wbg - lbg)

    ranked = sorted(options, key=equity, reverse=True)
    return ranked[0] if rng.random() < 0.75 else rng.choice(ranked[1:4] or ranked)


def net_match(rules: MatchRules, rng: random.Random, max_games: int = 3) -> list[Game]:
    """A match (or money session) of the rules library, plays chosen near the net's best
    and cube actions at random (as a player of the site might): what the game service
    records and exports."""
    score = new_match(rules)
    played: list[Game] = []
    odds = Odds(double=0.08, drop=0.3)
    while not score.is_over and len(played) < max_games:
        while True:
            die0, die1 = rng.randint(1, 6), rng.randint(1, 6)
            if die0 != die1:
                break
        game = games.start_game(score.cube_rules(), die0, die1)
        while game.phase is not Phase.OVER:
            if game.phase is Phase.MOVE:
                game = games.play(game, _net_play(game, rng))
            elif game.phase is Phase.ROLL:
                if rng.random() < odds.double and may_double(game.cube, game.turn, game.rules):
                    game = games.double(game)
                else:
                    game = games.roll(game, (rng.randint(1, 6), rng.randint(1, 6)))
            else:
                game = games.drop(game) if rng.random() < odds.drop else games.take(game)
        assert game.result is not None
        played.append(game)
        score = record_game(score, game.result)
    return played
