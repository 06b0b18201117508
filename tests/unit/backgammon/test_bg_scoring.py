"""Results: single, gammon, backgammon, times the cube, Jacoby, dropped doubles, resignations."""

from __future__ import annotations

import pytest

from services.backgammon import resign
from services.backgammon.errors import InvalidPosition, ResignationError
from services.backgammon.scoring import (
    EndReason,
    WinKind,
    points_for,
    result_of_bear_off,
    win_kind,
)
from tests.unit.backgammon.bg_testdata import make_board


def test_rule_single_game_when_the_loser_bore_off_a_checker() -> None:
    assert win_kind(make_board({}, {6: 14})) is WinKind.SINGLE


def test_rule_gammon_when_the_loser_bore_off_none() -> None:
    assert win_kind(make_board({}, {6: 10, 12: 5})) is WinKind.GAMMON


def test_rule_backgammon_with_a_checker_in_the_winners_home_board() -> None:
    assert win_kind(make_board({}, {6: 14, 19: 1})) is WinKind.BACKGAMMON


def test_rule_backgammon_with_a_checker_on_the_bar() -> None:
    assert win_kind(make_board({}, {6: 14, 25: 1})) is WinKind.BACKGAMMON


def test_rule_checker_just_outside_the_winners_home_is_a_gammon() -> None:
    assert win_kind(make_board({}, {6: 14, 18: 1})) is WinKind.GAMMON


def test_a_game_in_progress_has_no_winner() -> None:
    with pytest.raises(InvalidPosition, match="not over"):
        win_kind(make_board({1: 1}, {6: 15}))


def test_rule_points_are_the_kind_times_the_cube() -> None:
    assert points_for(WinKind.GAMMON, 4, jacoby=False, cube_turned=True) == 8
    assert points_for(WinKind.BACKGAMMON, 2, jacoby=False, cube_turned=True) == 6


def test_rule_jacoby_gammons_count_single_until_the_cube_is_turned() -> None:
    assert points_for(WinKind.GAMMON, 1, jacoby=True, cube_turned=False) == 1
    assert points_for(WinKind.BACKGAMMON, 1, jacoby=True, cube_turned=False) == 1
    assert points_for(WinKind.GAMMON, 2, jacoby=True, cube_turned=True) == 4


def test_bear_off_result_names_the_winner_and_reason() -> None:
    result = result_of_bear_off(make_board({}, {12: 15}), 1, 2, jacoby=False, cube_turned=True)
    assert (result.winner, result.kind, result.points, result.reason) == (
        1,
        WinKind.GAMMON,
        4,
        EndReason.BORNE_OFF,
    )


@pytest.mark.parametrize(("level", "points"), [(1, 2), (2, 4), (3, 6)])
def test_rule_accepted_resignation_scores_its_level_times_the_cube(level: int, points: int) -> None:
    offer = resign.offer(0, level)
    result = resign.accept(offer, 1, 2, jacoby=False, cube_turned=True)
    assert (result.winner, result.points, result.reason) == (1, points, EndReason.RESIGNED)


def test_rule_jacoby_applies_to_resigned_gammons() -> None:
    result = resign.accept(resign.offer(0, 2), 1, 1, jacoby=True, cube_turned=False)
    assert result.points == 1


def test_rule_resigner_cannot_answer_his_own_offer() -> None:
    offer = resign.offer(1, 1)
    with pytest.raises(ResignationError):
        resign.accept(offer, 1, 1, jacoby=False, cube_turned=False)
    with pytest.raises(ResignationError):
        resign.reject(offer, 1)


def test_rule_resignation_levels_are_single_gammon_backgammon() -> None:
    with pytest.raises(ResignationError, match="1 \\(single\\)"):
        resign.offer(0, 4)
