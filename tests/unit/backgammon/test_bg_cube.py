"""Doubling cube rules: who may double, take, drop, redouble, beavers, cap, Crawford game."""

from __future__ import annotations

import pytest

from services.backgammon import cube
from services.backgammon.cube import Cube, CubeRules
from services.backgammon.errors import CubeNotAvailable

MONEY = CubeRules()


def test_rule_either_player_may_double_a_centred_cube() -> None:
    assert cube.may_double(Cube(), 0, MONEY)
    assert cube.may_double(Cube(), 1, MONEY)


def test_rule_take_doubles_the_value_and_gives_the_taker_the_cube() -> None:
    taken = cube.take(cube.offer_double(Cube(), 0, MONEY), 1)
    assert taken == Cube(value=2, owner=1)


def test_rule_only_the_owner_may_redouble() -> None:
    owned_by_1 = Cube(value=2, owner=1)
    with pytest.raises(CubeNotAvailable, match="owned by player 1"):
        cube.offer_double(owned_by_1, 0, MONEY)
    redoubled = cube.take(cube.offer_double(owned_by_1, 1, MONEY), 0)
    assert redoubled == Cube(value=4, owner=0)


def test_rule_drop_loses_the_value_before_the_double() -> None:
    offered = cube.offer_double(Cube(value=4, owner=0), 0, MONEY)
    assert cube.drop(offered, 1) == 4


def test_rule_the_doubler_cannot_answer_his_own_double() -> None:
    offered = cube.offer_double(Cube(), 0, MONEY)
    with pytest.raises(CubeNotAvailable, match="cannot answer"):
        cube.take(offered, 0)
    with pytest.raises(CubeNotAvailable, match="cannot answer"):
        cube.drop(offered, 0)


def test_rule_no_second_offer_while_one_is_pending() -> None:
    offered = cube.offer_double(Cube(), 0, MONEY)
    with pytest.raises(CubeNotAvailable, match="already waiting"):
        cube.offer_double(offered, 0, MONEY)


def test_rule_take_or_drop_needs_an_offer() -> None:
    with pytest.raises(CubeNotAvailable, match="no double"):
        cube.take(Cube(), 1)


def test_rule_cube_cap_default_64() -> None:
    assert cube.may_double(Cube(value=32, owner=0), 0, MONEY)
    with pytest.raises(CubeNotAvailable, match="cap is 64"):
        cube.offer_double(Cube(value=64, owner=0), 0, MONEY)


def test_rule_cube_cap_is_configurable() -> None:
    with pytest.raises(CubeNotAvailable, match="cap is 8"):
        cube.offer_double(Cube(value=8, owner=1), 1, CubeRules(cap=8))
    with pytest.raises(CubeNotAvailable, match="power of two"):
        CubeRules(cap=10)


def test_rule_crawford_game_forbids_doubling() -> None:
    with pytest.raises(CubeNotAvailable, match="Crawford"):
        cube.offer_double(Cube(), 0, CubeRules(crawford_game=True))


def test_rule_beaver_redoubles_at_once_and_the_beaver_keeps_the_cube() -> None:
    rules = CubeRules(beavers=True)
    beavered = cube.beaver(cube.offer_double(Cube(), 0, rules), 1, rules)
    assert beavered.offered_by == 1 and beavered.value == 2
    accepted = cube.take(beavered, 0)
    assert accepted == Cube(value=4, owner=1)


def test_rule_the_original_doubler_may_refuse_a_beaver_losing_the_doubled_value() -> None:
    rules = CubeRules(beavers=True)
    beavered = cube.beaver(cube.offer_double(Cube(), 0, rules), 1, rules)
    assert cube.drop(beavered, 0) == 2


def test_rule_beavers_only_when_allowed() -> None:
    offered = cube.offer_double(Cube(), 0, MONEY)
    with pytest.raises(CubeNotAvailable, match="beavers are not allowed"):
        cube.beaver(offered, 1, MONEY)


def test_rule_no_beaver_of_a_beaver_and_none_past_the_cap() -> None:
    rules = CubeRules(beavers=True, cap=4)
    beavered = cube.beaver(cube.offer_double(Cube(), 0, rules), 1, rules)
    with pytest.raises(CubeNotAvailable, match="cannot be beavered"):
        cube.beaver(beavered, 0, rules)
    offered = cube.offer_double(Cube(value=2, owner=0), 0, rules)
    with pytest.raises(CubeNotAvailable, match="past the cap"):
        cube.beaver(offered, 1, rules)


def test_cube_turned_only_after_a_taken_double() -> None:
    assert not Cube().turned
    assert not cube.offer_double(Cube(), 0, MONEY).turned
    assert cube.take(cube.offer_double(Cube(), 0, MONEY), 1).turned
