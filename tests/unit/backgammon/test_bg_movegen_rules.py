"""Legal plays, one rule per test, on hand-built positions (points in each side's own numbering)."""

from __future__ import annotations

from services.backgammon.board import BAR, STARTING_BOARD
from services.backgammon.movegen import legal_plays as reference_plays
from services.backgammon.plays import legal_plays
from tests.unit.backgammon.bg_testdata import make_board, notations, results

CLOSED_HOME = {1: 2, 2: 2, 3: 2, 4: 2, 5: 2, 6: 2}  # the opponent's whole home board made


def test_rule_checker_on_the_bar_enters_before_any_other_move() -> None:
    board = make_board({25: 1, 13: 14}, {6: 5})
    plays = legal_plays(board, (6, 2))
    assert plays
    assert all(play.steps[0][0] == 25 for play in plays)


def test_rule_two_checkers_on_the_bar_both_enter_first() -> None:
    board = make_board({25: 2, 13: 13}, {6: 5})
    assert notations(board, (4, 3)) == {"bar/22 bar/21"}


def test_rule_closed_board_means_no_play_for_a_checker_on_the_bar() -> None:
    board = make_board({25: 1, 13: 14}, CLOSED_HOME)
    for dice in [(6, 6), (6, 1), (3, 2), (1, 1)]:
        assert legal_plays(board, dice) == []


def test_rule_blocked_entry_forbids_moving_other_checkers() -> None:
    home_but_five = {1: 2, 2: 2, 3: 2, 4: 2, 6: 2}  # only the 5 point is open (my 20 point)
    board = make_board({25: 1, 13: 14}, home_but_five)
    assert legal_plays(board, (6, 4)) == []
    assert notations(board, (5, 4)) == {"bar/20 13/9", "bar/16"}


def test_rule_hitting_a_blot_sends_it_to_the_bar() -> None:
    board = make_board({13: 2, 6: 13}, {17: 1, 1: 14})  # opponent's blot on my 8 point
    hit = next(p for p in legal_plays(board, (5, 1)) if p.notation == "13/8* 6/5")
    assert hit.result.opponent[BAR] == 1
    assert hit.result.opponent[16] == 0


def test_rule_no_landing_on_a_point_held_by_two_opponent_checkers() -> None:
    board = make_board({13: 1, 6: 14}, {18: 2, 1: 13})  # opponent holds my 7 point
    assert all((13, 7) not in play.steps for play in legal_plays(board, (6, 6)))


def test_rule_both_dice_must_be_played_when_possible() -> None:
    for play in legal_plays(STARTING_BOARD, (6, 5)):
        assert play.dice_used == 2


def test_rule_if_only_one_die_can_be_played_it_is_the_higher_one() -> None:
    # One checker on 10; my 3 point is blocked so 6 and 1 cannot both be played.
    board = make_board({10: 1}, {22: 2, 1: 13})
    assert notations(board, (6, 1)) == {"10/4"}


def test_rule_if_the_higher_die_cannot_be_played_the_lower_one_must_be() -> None:
    board = make_board({10: 1}, {21: 2, 22: 2, 1: 11})  # my 4 and 3 points blocked
    assert notations(board, (6, 1)) == {"10/9"}


def test_rule_doubles_play_as_many_of_the_four_as_possible() -> None:
    board = make_board({20: 1, 5: 1}, {17: 2, 1: 13})  # my 8 point blocked, no bearing off
    plays = legal_plays(board, (4, 4))
    assert notations(board, (4, 4)) == {"20/12 5/1"}
    assert all(play.dice_used == 3 for play in plays)


def test_rule_no_legal_play_passes_the_turn() -> None:
    board = make_board({7: 1, 3: 14}, {24: 2, 23: 2, 1: 11})  # 7 cannot come home with 6 or 5
    assert legal_plays(board, (6, 5)) == []


def test_rule_bear_off_with_the_exact_die() -> None:
    board = make_board({5: 1, 2: 1}, {1: 15})
    assert "5/off 2/off" in notations(board, (5, 2))


def test_rule_bear_off_with_a_higher_die_from_the_highest_point() -> None:
    board = make_board({3: 1, 2: 1}, {1: 15})
    assert notations(board, (6, 5)) == {"3/off 2/off"}


def test_rule_no_higher_die_bear_off_while_a_higher_point_is_occupied() -> None:
    board = make_board({5: 1, 2: 1}, {1: 15})
    plays = legal_plays(board, (6, 1))
    assert plays
    assert all((2, 0) not in play.steps for play in plays)


def test_rule_a_checker_hit_in_the_bear_off_comes_home_before_bearing_off_resumes() -> None:
    board = make_board({25: 1, 4: 3}, {1: 14})
    plays = legal_plays(board, (6, 3))
    assert plays
    assert all(to != 0 for play in plays for _, to in play.steps)


def test_rule_plays_are_deduplicated_by_resulting_position() -> None:
    plays = legal_plays(STARTING_BOARD, (3, 1))
    assert len(plays) == 16
    assert len({play.result for play in plays}) == 16


def test_play_results_stay_on_the_movers_side() -> None:
    play = next(p for p in legal_plays(STARTING_BOARD, (3, 1)) if p.notation == "8/5 6/5")
    assert play.result.player[4] == 2 and play.result.player[7] == 2
    assert play.result.opponent == STARTING_BOARD.opponent


def test_reference_and_fast_path_agree_on_these_rule_positions() -> None:
    board = make_board({25: 1, 13: 14}, {1: 2, 2: 2, 3: 2, 4: 2, 6: 2})
    for dice in [(5, 4), (6, 4), (5, 5)]:
        assert results(board, dice) == {p.result for p in reference_plays(board, dice)}
