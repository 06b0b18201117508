"""A real `tavla serve matchmaking` SIGKILLed while it seats a queue pair: after both holds
were placed, or after the game was created. The next process's recovery carries the table
on, and the tickets follow it: both MATCHED with one game, each stake held once."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tavla.game.v1 import game_pb2
from tavla.matchmaking.v1 import matchmaking_pb2, matchmaking_pb2_grpc
from tests.integration.matchmaking.conftest import Lobby
from tests.support.identity import as_player
from tests.support.matchmaking import new_player, queue_request, ticket_reaching
from tests.support.processes import ServeProcesses, service_environment
from tests.support.services import RunningService, new_database
from tests.support.wallet import balance, fund

STAKE = 700  # $21 held of $30


@pytest.mark.parametrize("point", ["after_holds", "after_game"])
async def test_a_queue_pair_killed_mid_seating_is_matched_by_the_next_process(
    point: str,
    lobby: Lobby,
    postgres_server: Any,
    kafka_broker: Any,
    accounts_service: RunningService,
    geo_service: RunningService,
    serve: ServeProcesses,
) -> None:
    url = postgres_server.url(new_database(postgres_server, "mm_qcrash"))
    environment = service_environment(
        "matchmaking",
        url,
        kafka_broker.bootstrap,
        accounts_address=accounts_service.address,
        TAVLA_WALLET_ADDRESS=lobby.wallet_address,
        TAVLA_GAME_ADDRESS=lobby.game_address,
        TAVLA_GEO_ADDRESS=geo_service.address,
        TAVLA_MATCHMAKING_CLAIM_SECONDS="3",
        TAVLA_MATCHMAKING_RECOVERY_SECONDS="0.2",
        TAVLA_MATCHMAKING_WAVE_SECONDS="0.2",
    )
    first, second = new_player(), new_player()
    await asyncio.gather(fund(lobby.wallet, first, 3_000), fund(lobby.wallet, second, 3_000))
    armed = await serve.start(
        "matchmaking",
        {**environment, "TAVLA_FAILPOINTS": f"matchmaking.seating.{point}=kill"},
    )
    channel = armed.channel()
    stub = matchmaking_pb2_grpc.MatchmakingServiceStub(channel)
    tickets = {}
    for player in (first, second):
        entered = await stub.EnterQueue(queue_request(stake=STAKE), metadata=as_player(player))
        tickets[player] = entered.ticket_id
    await armed.wait_killed()  # the wave paired them and the seating died midway
    await channel.close()
    for player in (first, second):
        assert await balance(lobby.wallet, player) == (900, 2_100)

    restarted = await serve.start("matchmaking", environment)
    channel = restarted.channel()
    stub = matchmaking_pb2_grpc.MatchmakingServiceStub(channel)
    try:
        matched = [
            await ticket_reaching(
                stub, tickets[p], p, matchmaking_pb2.TICKET_STATUS_MATCHED, timeout=60
            )
            for p in (first, second)
        ]
        assert matched[0].game_id and matched[0].game_id == matched[1].game_id
        assert matched[0].table_id == matched[1].table_id
        for player in (first, second):
            assert await balance(lobby.wallet, player) == (900, 2_100)  # held once
        games = await lobby.games.ListGames(
            game_pb2.ListGamesRequest(), metadata=as_player(first)
        )
        assert [g.game_id for g in games.games] == [matched[0].game_id]  # one game
    finally:
        await channel.close()
