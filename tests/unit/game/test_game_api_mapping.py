"""Request mapping of the gRPC servicer: table rules, clock presets, moves as checker steps."""

from __future__ import annotations

from datetime import timedelta

import pytest

from services.game.api import PRESETS, _steps_text, table_rules
from services.game.domain import Kind, Penalty
from services.kit.errors import InvalidArgument
from tavla.common.v1 import money_pb2
from tavla.game.v1 import game_pb2
from tests.support.game import seconds


def rules_message(clock: game_pb2.ClockPreset) -> game_pb2.TableRules:
    return game_pb2.TableRules(
        kind=game_pb2.PLAY_KIND_MATCH,
        match_length=5,
        stake=money_pb2.Money(minor_units=1000, currency="EUR"),
        crawford=True,
        clock=clock,
    )


def test_a_named_preset_fills_the_durations_left_out() -> None:
    rules = table_rules(rules_message(game_pb2.ClockPreset(name="blitz")))
    assert rules.clock == PRESETS["blitz"]
    assert rules.kind is Kind.MATCH and rules.cube_cap == 64 and rules.stake_minor == 1000
    assert rules.reserve() == timedelta(minutes=5)


def test_sent_durations_and_penalty_override_the_preset() -> None:
    clock = game_pb2.ClockPreset(
        name="standard",
        move_delay=seconds(8),
        timeout_penalty=game_pb2.TIMEOUT_PENALTY_LOSE_MATCH,
    )
    rules = table_rules(rules_message(clock))
    assert rules.clock.move_delay == timedelta(seconds=8)
    assert rules.clock.reserve_per_point == timedelta(minutes=2)
    assert rules.clock.penalty is Penalty.LOSE_MATCH


def test_an_unknown_kind_is_refused() -> None:
    message = rules_message(game_pb2.ClockPreset())
    message.kind = game_pb2.PLAY_KIND_UNSPECIFIED
    with pytest.raises(InvalidArgument, match=r"rules\.kind"):
        table_rules(message)


def test_checker_steps_become_gnubg_notation() -> None:
    steps = game_pb2.CheckerSteps(
        steps=[
            game_pb2.CheckerStep(from_point=25, to_point=22),
            game_pb2.CheckerStep(from_point=6, to_point=0),
        ]
    )
    assert _steps_text(steps) == "bar/22 6/off"


def test_a_match_uses_the_crawford_rule_unless_the_table_says_otherwise() -> None:
    message = rules_message(game_pb2.ClockPreset(name="standard"))
    message.ClearField("crawford")
    assert not message.HasField("crawford")
    assert table_rules(message).crawford is True
    assert table_rules(message).match_rules().crawford is True
    message.crawford = False
    assert table_rules(message).crawford is False


def test_a_cube_cap_of_zero_means_64_and_one_past_it_is_refused() -> None:
    message = rules_message(game_pb2.ClockPreset(name="standard"))
    assert table_rules(message).cube_cap == 64
    message.cube_cap = 128
    with pytest.raises(InvalidArgument, match="never goes past 64"):
        table_rules(message).validate()
