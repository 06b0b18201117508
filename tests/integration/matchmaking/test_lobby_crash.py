"""A matchmaking process SIGKILLed in the middle of seating: after both holds were placed,
or after the game was created. A new process's recovery carries the attempt on: the
table plays one game, and each player's stake is held once."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import pytest

from tavla.game.v1 import game_pb2
from tavla.matchmaking.v1 import matchmaking_pb2, matchmaking_pb2_grpc
from tests.integration.matchmaking.conftest import Lobby
from tests.support.identity import as_player
from tests.support.matchmaking import join_request, new_player, table_request
from tests.support.processes import ServeProcesses, service_environment
from tests.support.services import RunningService, new_database
from tests.support.wallet import balance, fund

PLAYING = matchmaking_pb2.TABLE_STATUS_PLAYING


@pytest.mark.parametrize("point", ["after_holds", "after_game"])
async def test_a_seating_killed_midway_is_carried_on_by_the_next_process(
    point: str,
    lobby: Lobby,
    postgres_server: Any,
    kafka_broker: Any,
    accounts_service: RunningService,
    geo_service: RunningService,
    serve: ServeProcesses,
) -> None:
    url = postgres_server.url(new_database(postgres_server, "mm_crash"))
    environment = service_environment(
        "matchmaking",
        url,
        kafka_broker.bootstrap,
        accounts_address=accounts_service.address,
        TAVLA_WALLET_ADDRESS=lobby.wallet_address,
        TAVLA_GAME_ADDRESS=lobby.game_address,
        TAVLA_GEO_ADDRESS=geo_service.address,
        # The killed attempt is resumed once this long has passed since its claim.
        TAVLA_MATCHMAKING_CLAIM_SECONDS="3",
        TAVLA_MATCHMAKING_RECOVERY_SECONDS="0.2",
    )
    owner, joiner = new_player(), new_player()
    await asyncio.gather(fund(lobby.wallet, owner, 2_000), fund(lobby.wallet, joiner, 2_000))
    armed = await serve.start(
        "matchmaking",
        {**environment, "TAVLA_FAILPOINTS": f"matchmaking.seating.{point}=kill"},
    )
    channel = armed.channel()
    stub = matchmaking_pb2_grpc.MatchmakingServiceStub(channel)
    table = await stub.CreateTable(table_request(stake=500), metadata=as_player(owner))
    with pytest.raises(grpc.aio.AioRpcError) as lost:
        await stub.JoinTable(join_request(table.table_id), metadata=as_player(joiner))
    assert lost.value.code() == grpc.StatusCode.UNAVAILABLE
    await armed.wait_killed()
    await channel.close()
    # Both stakes were held before the kill; nobody has told the table.
    for player in (owner, joiner):
        assert await balance(lobby.wallet, player) == (500, 1_500)

    restarted = await serve.start("matchmaking", environment)
    channel = restarted.channel()
    stub = matchmaking_pb2_grpc.MatchmakingServiceStub(channel)
    try:
        request = matchmaking_pb2.GetTableRequest(table_id=table.table_id)
        async with asyncio.timeout(60):
            while (found := await stub.GetTable(request, metadata=as_player(owner))).status != (
                PLAYING
            ):
                await asyncio.sleep(0.2)
        assert found.game_id
        for player in (owner, joiner):
            assert await balance(lobby.wallet, player) == (500, 1_500)  # held once
        games = await lobby.games.ListGames(
            game_pb2.ListGamesRequest(), metadata=as_player(owner)
        )
        assert [g.game_id for g in games.games] == [found.game_id]  # one game, not two
        again = await stub.JoinTable(join_request(table.table_id), metadata=as_player(joiner))
        assert again.game_id == found.game_id
    finally:
        await channel.close()
