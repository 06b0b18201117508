"""The benchmarks' simple player (``services.game.bench.simple_play``): it hits when it
can, and games between two of them last about as many turns as games between people
(about 50 rolls), where random legal plays take about twice as many."""

from __future__ import annotations

import random
import statistics

from services.backgammon import game as games
from services.backgammon.board import Board
from services.backgammon.cube import CubeRules
from services.backgammon.game import Phase
from services.game.bench import Chooser, random_play, simple_play
from services.game.views import legal_play_messages


def _side(**points: int) -> tuple[int, ...]:
    """A side's 25 counts from ``p<point>=count`` (``p25``: the bar)."""
    counts = [0] * 25
    for name, count in points.items():
        counts[int(name[1:]) - 1] = count
    return tuple(counts)


def test_a_hit_is_chosen_over_a_quiet_play() -> None:
    # The mover's 13 checkers on its 6-point and 2 on its 8-point; the opponent's blot on
    # the opponent's 20-point, the mover's 5-point, and 14 checkers on its own 6-point.
    board = Board(_side(p6=13, p8=2), _side(p20=1, p6=14))
    plays = legal_play_messages(board, (3, 1))
    assert any("*" in play.notation for play in plays)
    assert any("*" not in play.notation for play in plays)
    assert "*" in simple_play(plays, random.Random(0))


def _rolls_per_game(choose: Chooser, seed: int, games_played: int) -> float:
    rng = random.Random(seed)
    rolls = []
    for _ in range(games_played):
        dice = (0, 0)
        while dice[0] == dice[1]:
            dice = (rng.randint(1, 6), rng.randint(1, 6))
        game, count = games.start_game(CubeRules(), *dice), 1
        while game.phase is not Phase.OVER:
            if game.phase is Phase.ROLL:
                game, count = games.roll(game, (rng.randint(1, 6), rng.randint(1, 6))), count + 1
                continue
            assert game.dice is not None
            plays = legal_play_messages(game.board, game.dice)
            game = games.play(game, choose(plays, rng) if plays else "")
        rolls.append(count)
    return statistics.mean(rolls)


def test_simple_players_finish_a_game_in_about_half_the_rolls_of_random_ones() -> None:
    simple = _rolls_per_game(simple_play, 1, 12)
    assert 35 <= simple <= 65  # people's games: about 50 rolls
    assert _rolls_per_game(random_play, 1, 12) >= 1.5 * simple
