"""Match play: scores to N, the Crawford game and post-Crawford play, money sessions."""

from __future__ import annotations

import pytest

from services.backgammon.errors import MatchOver, RulesError
from services.backgammon.match import MatchRules, new_match, record_game
from services.backgammon.scoring import EndReason, GameResult, WinKind


def win(player: int, points: int) -> GameResult:
    return GameResult(player, WinKind.SINGLE, points, points, EndReason.BORNE_OFF)


def test_rule_points_accumulate_and_the_first_to_n_wins() -> None:
    match = new_match(MatchRules(length=5))
    match = record_game(match, win(0, 2))
    match = record_game(match, win(1, 1))
    assert match.score == (2, 1) and match.winner is None
    match = record_game(match, win(0, 4))
    assert match.winner == 0 and match.is_over
    with pytest.raises(MatchOver):
        record_game(match, win(1, 1))


def test_rule_crawford_game_follows_the_first_reaching_of_match_point() -> None:
    match = record_game(new_match(MatchRules(length=5)), win(0, 4))
    assert match.crawford_game
    assert match.cube_rules().crawford_game


def test_rule_doubling_allowed_again_after_the_crawford_game() -> None:
    match = record_game(new_match(MatchRules(length=5)), win(0, 4))
    match = record_game(match, win(1, 1))  # the Crawford game
    assert not match.crawford_game and match.post_crawford
    assert not match.cube_rules().crawford_game
    match = record_game(match, win(1, 2))
    assert not match.crawford_game  # never a second Crawford game


def test_rule_crawford_only_when_a_player_first_reaches_match_point() -> None:
    match = record_game(new_match(MatchRules(length=7)), win(1, 2))
    assert not match.crawford_game
    match = record_game(match, win(1, 4))  # 6 of 7 points: match point
    assert match.crawford_game


def test_rule_crawford_can_be_switched_off() -> None:
    match = record_game(new_match(MatchRules(length=5, crawford=False)), win(0, 4))
    assert not match.crawford_game


def test_rule_one_point_match_has_no_crawford_game() -> None:
    match = record_game(new_match(MatchRules(length=1)), win(1, 1))
    assert match.winner == 1 and not match.crawford_game


def test_money_sessions_never_end_and_carry_jacoby_and_beavers() -> None:
    rules = MatchRules(length=0, jacoby=True, beavers=True)
    match = record_game(new_match(rules), win(0, 64))
    assert match.winner is None and match.score == (64, 0)
    cube_rules = match.cube_rules()
    assert cube_rules.jacoby and cube_rules.beavers and not cube_rules.crawford_game


def test_rule_jacoby_and_beavers_are_money_play_only() -> None:
    with pytest.raises(RulesError, match="money play only"):
        MatchRules(length=5, jacoby=True)
    with pytest.raises(RulesError, match="money play only"):
        MatchRules(length=5, beavers=True)
