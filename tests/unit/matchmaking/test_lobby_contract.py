"""The lobby's contract: its REST routes reach the gateway, rules map to the game's
TableRules both ways, and lobby tables take clock presets by name only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from services.kit.errors import InvalidArgument
from services.kit.gateway.config import render
from services.kit.gateway.methods import Exposure, api_methods
from services.kit.gateway.settings import GatewaySettings
from services.matchmaking import messages
from services.matchmaking.domain.tables import Kind
from tavla.common.v1 import money_pb2
from tavla.game.v1 import game_pb2
from tests.unit.matchmaking.test_lobby_tables import rules

DESCRIPTOR = Path(__file__).resolve().parents[3] / "gen" / "tavla.pb"
SERVICE = "tavla.matchmaking.v1.MatchmakingService"
LOBBY_ROUTES = {
    "ListTables": ("GET", "/v1/tables"),
    "GetTable": ("GET", "/v1/tables/{table_id}"),
    "CreateTable": ("POST", "/v1/tables"),
    "JoinTable": ("POST", "/v1/tables/{table_id}:join"),
    "LeaveTable": ("POST", "/v1/tables/{table_id}:leave"),
    "CloseTable": ("POST", "/v1/tables/{table_id}:close"),
}


def test_every_lobby_call_is_a_player_route_of_the_gateway() -> None:
    methods = {m.name: m for m in api_methods(DESCRIPTOR) if m.service == SERVICE}
    for name, (verb, path) in LOBBY_ROUTES.items():
        method = methods[name]
        assert method.exposure is Exposure.PLAYER, name
        assert [(b.verb, b.template) for b in method.rest] == [(verb, path)], name
    settings = GatewaySettings.from_mapping(
        {
            "upstreams": {"matchmaking": {"host": "127.0.0.1", "port": 50053}},
            "jwks_file": "/j.json",
            "descriptor_file": "/d.pb",
        }
    )
    config = json.dumps(render(settings, api_methods(DESCRIPTOR)))
    for name in LOBBY_ROUTES:
        assert f"/{SERVICE}/{name}" in config, name


def test_rules_travel_to_the_game_as_the_table_says() -> None:
    match = rules(kind=Kind.MATCH, match_length=5, stake_minor=1000, clock="blitz")
    message = messages.rules_message(match)
    assert message.kind == game_pb2.PLAY_KIND_MATCH and message.match_length == 5
    assert message.stake == money_pb2.Money(minor_units=1000, currency="USD")
    assert message.HasField("crawford") and message.crawford is True
    assert message.clock.name == "blitz" and message.cube_cap == 64
    assert messages.rules_from(message) == match
    money = messages.rules_message(rules(beaver=True, jacoby=True))
    assert not money.HasField("crawford") and money.beaver and money.jacoby


def test_crawford_unset_means_on_and_clock_durations_are_refused() -> None:
    request = game_pb2.TableRules(
        kind=game_pb2.PLAY_KIND_MATCH,
        match_length=3,
        stake=money_pb2.Money(minor_units=100, currency="PLAY"),
    )
    assert messages.rules_from(request).crawford is True
    request.clock.move_delay.seconds = 3
    with pytest.raises(InvalidArgument, match="by name only"):
        messages.rules_from(request)
