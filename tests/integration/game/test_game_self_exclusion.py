"""No game starts with a self-excluded player, play money included: the game service keeps
the accounts service's AccountSelfExcluded (real accounts service, outbox, broker) and
CreateGame refuses a seat of a self-excluded player, whoever asks for the game. The lobby
chat refuses a self-excluded player too, and one whose account anti-abuse had suspended
or closed (the game's copy of AccountSuspended / AccountTerminated)."""

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

from services.kit.events.envelope import Envelope
from tavla.accounts.v1 import accounts_pb2, accounts_pb2_grpc
from tavla.accounts.v1 import events_pb2 as account_events
from tavla.game.v1 import game_pb2
from tests.support.game import GameHandle, create_request, start_game_service
from tests.support.identity import as_player
from tests.support.kafka import publish
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


async def lobby_post(handle: GameHandle, player: str, text: str) -> game_pb2.LobbyMessage:
    posted: game_pb2.LobbyMessage = await handle.stub.PostLobbyMessage(
        game_pb2.PostLobbyMessageRequest(room="PLAY", text=text), metadata=as_player(player)
    )
    return posted


async def lobby_rows(url: str, player: str) -> int:
    engine = create_async_engine(url)
    try:
        async with engine.connect() as connection:
            found = await connection.execute(
                text("SELECT count(*) FROM lobby_messages WHERE account_id = :a"), {"a": player}
            )
            return int(found.scalar() or 0)
    finally:
        await engine.dispose()


async def test_a_self_excluded_player_cannot_chat_in_the_lobby(
    game: tuple[GameHandle, str], accounts_service: RunningService
) -> None:
    handle, url = game
    player = await excluded_player(accounts_service, url)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await lobby_post(handle, player, "good luck everyone")
    assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert (
        "you are self-excluded until 2027-06-30T12:00:00+00:00: the lobby chat is closed"
        in (caught.value.details() or "")
    )
    assert await lobby_rows(url, player) == 0  # nothing recorded, nothing published
    other = str(uuid.uuid4())
    posted = await lobby_post(handle, other, "good luck everyone")
    assert posted.status == game_pb2.CHAT_STATUS_DELIVERED


async def test_a_suspended_or_closed_account_cannot_chat_in_the_lobby(
    game: tuple[GameHandle, str], kafka_broker: Any
) -> None:
    """Anti-abuse's sanction reaches accounts, whose AccountSuspended / AccountTerminated
    the game keeps: the player's access token is still valid, the lobby refuses them."""
    handle, url = game
    suspended, closed = str(uuid.uuid4()), str(uuid.uuid4())
    for player in (suspended, closed):
        assert (await lobby_post(handle, player, f"hello from {player[:6]}")).seq
    now = datetime.now(UTC)
    facts = [
        account_events.AccountSuspended(account_id=suspended, sanction_id="s-1", case_id="c-1"),
        account_events.AccountTerminated(account_id=closed, sanction_id="s-2", case_id="c-2"),
        # A late suspension after the termination leaves the account closed.
        account_events.AccountSuspended(account_id=closed, sanction_id="s-3", case_id="c-3"),
    ]
    for fact in facts:
        fact.occurred_at.FromDatetime(now)
    await publish(kafka_broker.bootstrap, [
        Envelope.wrap(topic="tavla.accounts.v1", key=fact.account_id, message=fact,
                      source="accounts", now=now)
        for fact in facts
    ])  # fmt: skip
    for player, state in ((suspended, "suspended"), (closed, "closed")):
        refused = None
        async with asyncio.timeout(60):
            while refused is None:
                try:
                    await lobby_post(handle, player, f"still here {uuid.uuid4().hex[:6]}")
                except grpc.aio.AioRpcError as error:
                    refused = error
                await asyncio.sleep(0.1)
        assert refused.code() == grpc.StatusCode.PERMISSION_DENIED
        assert f"your account is {state}: the lobby chat is closed to you" in (
            refused.details() or ""
        )
        before = await lobby_rows(url, player)
        with pytest.raises(grpc.aio.AioRpcError):
            await lobby_post(handle, player, "one more try")
        assert await lobby_rows(url, player) == before
