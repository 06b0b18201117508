"""The database going away mid-game: calls are refused as UNAVAILABLE, retries then apply once."""

from __future__ import annotations

from typing import Any

import grpc
import pytest

from tavla.game.v1 import game_pb2
from tests.support.game import as_player, create_request, start_game_service, take_turn
from tests.support.services import new_database, stop_service


async def test_a_database_restart_mid_game_loses_nothing(
    postgres_server: Any, kafka_broker: Any
) -> None:
    name = new_database(postgres_server, "game_outage")
    handle = await start_game_service(postgres_server.url(name), kafka_broker.bootstrap)
    try:
        game = await take_turn(handle.stub, await handle.stub.CreateGame(create_request()))
        request = game_pb2.RollRequest(game_id=game.game_id, expected_version=game.version)
        who = as_player(game.awaiting_account_id)
        postgres_server.stop()
        try:
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await handle.stub.Roll(request, metadata=who)
            assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await handle.stub.GetGame(
                    game_pb2.GetGameRequest(game_id=game.game_id), metadata=who
                )
            assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
        finally:
            postgres_server.start()
        rolled = None
        for _ in range(5):  # pooled connections died with the server: the first try may fail
            try:
                rolled = await handle.stub.Roll(request, metadata=who)
                break
            except grpc.aio.AioRpcError as error:
                assert error.code() == grpc.StatusCode.UNAVAILABLE
        assert rolled is not None and rolled.version == game.version + 1
        again = await handle.stub.Roll(request, metadata=who)  # a retry of an applied call
        assert again.version == rolled.version and list(again.dice) == list(rolled.dice)
    finally:
        await stop_service(handle.running)
