"""A game as pure transitions: opening roll, turns, passes, cube and resignation phases, endings."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from services.backgammon import game as games
from services.backgammon.cube import CubeRules
from services.backgammon.errors import (
    CubeNotAvailable,
    IllegalPlay,
    InvalidDice,
    MatchOver,
    WrongTurn,
)
from services.backgammon.game import ActionKind, Phase
from services.backgammon.scoring import EndReason, WinKind
from services.backgammon.selfplay import random_game
from tests.unit.backgammon.bg_testdata import make_board

MONEY = CubeRules()


def test_rule_opening_roll_higher_die_moves_first_with_both_dice() -> None:
    game = games.start_game(MONEY, 2, 5)
    assert game.turn == 1 and game.dice == (5, 2) and game.phase is Phase.MOVE
    assert games.opening_winner(6, 1) == 0


def test_rule_opening_tie_rolls_again() -> None:
    assert games.opening_winner(4, 4) is None
    with pytest.raises(InvalidDice, match="roll again"):
        games.start_game(MONEY, 4, 4)


def test_turn_passes_to_the_other_player_after_a_play() -> None:
    game = games.play(games.start_game(MONEY, 3, 1), "8/5 6/5")
    assert game.turn == 1 and game.phase is Phase.ROLL and game.dice is None
    # The board is now seen from player 1: player 0's new 5 point is player 1's 20 point.
    assert game.board.opponent[4] == 2


def test_an_illegal_play_is_refused() -> None:
    with pytest.raises(IllegalPlay):
        games.play(games.start_game(MONEY, 3, 1), "13/8")


def test_rule_no_legal_play_passes_with_an_empty_move() -> None:
    blocked = make_board({25: 1, 13: 14}, {1: 2, 2: 2, 3: 2, 4: 2, 5: 2, 6: 2})
    game = replace(games.start_game(MONEY, 3, 1), board=blocked)
    assert games.plays(game) == []
    with pytest.raises(IllegalPlay, match="pass"):
        games.play(game, "bar/22")
    passed = games.play(game, "")
    assert passed.turn == 1 and passed.history[-1].notation == ""


def test_rule_double_only_before_rolling() -> None:
    game = games.start_game(MONEY, 3, 1)
    with pytest.raises(WrongTurn, match="phase 'move'"):
        games.double(game)
    game = games.play(game, "8/5 6/5")
    offered = games.double(game)
    assert offered.phase is Phase.DOUBLE_OFFERED
    with pytest.raises(WrongTurn):
        games.roll(offered, (3, 3))


def test_take_returns_to_the_doubler_who_then_rolls() -> None:
    game = games.double(games.play(games.start_game(MONEY, 3, 1), "8/5 6/5"))
    taken = games.take(game)
    assert taken.phase is Phase.ROLL and taken.turn == 1
    assert taken.cube.value == 2 and taken.cube.owner == 0
    with pytest.raises(CubeNotAvailable, match="owned by player 0"):
        games.double(taken)


def test_drop_ends_the_game_for_the_cube_value_before_the_double() -> None:
    game = games.double(games.play(games.start_game(MONEY, 3, 1), "8/5 6/5"))
    over = games.drop(game)
    assert over.phase is Phase.OVER
    assert over.result is not None
    assert (over.result.winner, over.result.points, over.result.reason) == (
        1,
        1,
        EndReason.DOUBLE_DROPPED,
    )
    with pytest.raises(MatchOver):
        games.roll(over, (1, 2))


def test_beaver_then_take_leaves_the_cube_with_the_beaver() -> None:
    rules = CubeRules(beavers=True)
    game = games.double(games.play(games.start_game(rules, 3, 1), "8/5 6/5"))
    beavered = games.beaver(game)
    assert beavered.phase is Phase.DOUBLE_OFFERED
    taken = games.take(beavered)
    assert taken.cube.value == 4 and taken.cube.owner == 0 and taken.turn == 1


def test_resignation_accepted_ends_the_game() -> None:
    game = games.play(games.start_game(MONEY, 3, 1), "8/5 6/5")
    offered = games.offer_resignation(game, WinKind.GAMMON)
    assert offered.phase is Phase.RESIGN_OFFERED
    over = games.accept_resignation(offered)
    assert over.result is not None
    assert (over.result.winner, over.result.points) == (0, 2)


def test_resignation_rejected_resumes_play_where_it_stopped() -> None:
    game = games.roll(games.play(games.start_game(MONEY, 3, 1), "8/5 6/5"), (6, 4))
    rejected = games.reject_resignation(games.offer_resignation(game, 1))
    assert rejected.phase is Phase.MOVE and rejected.dice == (6, 4)
    assert [a.kind for a in rejected.history[-2:]] == [ActionKind.RESIGN, ActionKind.REJECT]


def test_rule_bearing_off_the_last_checker_wins_with_gammon_and_cube() -> None:
    near_end = make_board({1: 1}, {12: 15})
    game = replace(games.start_game(MONEY, 3, 1), board=near_end)
    over = games.play(game, "1/off")
    assert over.result is not None
    assert (over.result.winner, over.result.kind, over.result.points) == (0, WinKind.GAMMON, 2)


def test_rule_jacoby_single_game_for_a_gammon_with_the_cube_centred() -> None:
    near_end = make_board({1: 1}, {12: 15})
    game = replace(games.start_game(CubeRules(jacoby=True), 3, 1), board=near_end)
    over = games.play(game, "1/off")
    assert over.result is not None and over.result.points == 1


def test_random_games_end_with_all_checkers_accounted_for() -> None:
    rng = random.Random(1)
    for _ in range(5):
        game = random_game(CubeRules(beavers=True), rng)
        assert game.result is not None and game.phase is Phase.OVER
        if game.result.reason is EndReason.BORNE_OFF:
            assert sum(game.board.player) == 0
