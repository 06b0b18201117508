"""No game starts with a self-excluded player, play money included: the game service keeps
the accounts service's AccountSelfExcluded (real accounts service, outbox, broker) and
CreateGame refuses a seat of a self-excluded player, whoever asks for the game."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import grpc
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from tavla.accounts.v1 import accounts_pb2, accounts_pb2_grpc
from tavla.game.v1 import game_pb2
from tests.support.game import GameHandle, create_request, start_game_service
from tests.support.identity import as_player
from tests.support.services import RunningService, new_database, stop_service

UNTIL = datetime(2027, 6, 30, 12, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
async def game(postgres_server: Any, kafka_broker: Any) -> AsyncIterator[tuple[GameHandle, str]]:
    url: str = postgres_server.url(new_database(postgres_server, "game_exclusion"))
    handle = await start_game_service(url, kafka_broker.bootstrap)
    yield handle, url
    await stop_service(handle.running)


async def excluded_player(accounts: RunningService, game_database: str) -> str:
    """A player who self-excluded through accounts, once the game service's copy has it."""
    stub = accounts_pb2_grpc.AccountsServiceStub(accounts.channel)
    name = f"x{uuid.uuid4().hex[:10]}"
    account = await stub.Register(
        accounts_pb2.RegisterRequest(
            email=f"{name}@example.com", password="correct horse battery",
            display_name=name, residence="MT", date_of_birth="1990-04-21",
        )
    )  # fmt: skip
    request = accounts_pb2.SelfExcludeRequest(account_id=account.account_id)
    request.until.FromDatetime(UNTIL)
    await stub.SelfExclude(request, metadata=as_player(account.account_id))
    engine = create_async_engine(game_database)
    held = text("SELECT count(*) FROM self_exclusions WHERE account_id = :a")
    try:
        async with asyncio.timeout(60):
            while True:
                async with engine.connect() as connection:
                    if (await connection.execute(held, {"a": account.account_id})).scalar():
                        return account.account_id
                await asyncio.sleep(0.1)
    finally:
        await engine.dispose()


async def test_no_game_starts_with_a_self_excluded_player(
    game: tuple[GameHandle, str], accounts_service: RunningService
) -> None:
    handle, url = game
    player = await excluded_player(accounts_service, url)
    request = create_request(currency="PLAY")
    request.players[1].account_id = player
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await handle.stub.CreateGame(request)
    assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert (
        f"the player in seat 1 ({player}) is self-excluded until 2027-06-30T12:00:00+00:00"
        in (caught.value.details() or "")
    )
    # Nothing was created, and two other players still get their game.
    refused_key = create_request(currency="PLAY", idempotency_key=uuid.uuid4().hex)
    refused_key.players[0].account_id = player
    with pytest.raises(grpc.aio.AioRpcError):
        await handle.stub.CreateGame(refused_key)
    listed = await handle.stub.ListGames(
        game_pb2.ListGamesRequest(), metadata=as_player(player)
    )
    assert list(listed.games) == []
    created = await handle.stub.CreateGame(create_request(currency="PLAY"))
    assert created.game_id
