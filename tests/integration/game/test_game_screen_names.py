"""The game names its seats by screen name: it keeps the accounts service's screen names
(AccountRegistered from the real accounts service, ScreenNameChosen as accounts publishes
it, through the broker), and a game created without names shows each player's screen
name in its view and table chat, or the start of the id of a player it knows no name of."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

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


@pytest.fixture(scope="module")
async def game(postgres_server: Any, kafka_broker: Any) -> AsyncIterator[tuple[GameHandle, str]]:
    url: str = postgres_server.url(new_database(postgres_server, "game_screen_names"))
    handle = await start_game_service(url, kafka_broker.bootstrap)
    yield handle, url
    await stop_service(handle.running)


async def known_as(game_database: str, account_id: str, name: str) -> None:
    """Waits until the game's copy names ``account_id`` ``name``."""
    engine = create_async_engine(game_database)
    query = text("SELECT screen_name FROM screen_names WHERE account_id = :a")
    try:
        async with asyncio.timeout(60):
            while True:
                async with engine.connect() as connection:
                    if (await connection.execute(query, {"a": account_id})).scalar() == name:
                        return
                await asyncio.sleep(0.1)
    finally:
        await engine.dispose()


def chosen(account_id: str, name: str, at: datetime, key: str = "") -> Envelope:
    """ScreenNameChosen as the accounts service's outbox publishes it (keyed by the
    account, unless ``key`` puts it in another account's order)."""
    fact = account_events.ScreenNameChosen(account_id=account_id, screen_name=name)
    fact.occurred_at.FromDatetime(at)
    return Envelope.wrap(
        topic="tavla.accounts.v1", key=key or account_id, message=fact, source="accounts",
        now=at,
    )


async def test_seats_are_named_by_screen_name(
    game: tuple[GameHandle, str], accounts_service: RunningService, kafka_broker: Any
) -> None:
    handle, url = game
    stub = accounts_pb2_grpc.AccountsServiceStub(accounts_service.channel)
    name = f"Ann_{uuid.uuid4().hex[:8]}"
    ann = await stub.Register(
        accounts_pb2.RegisterRequest(
            email=f"{name}@example.com", password="correct horse battery",
            display_name=name, residence="MT", date_of_birth="1990-04-21",
        )
    )  # fmt: skip
    await known_as(url, ann.account_id, name)

    request = create_request()
    request.players[0].account_id = ann.account_id
    for player in request.players:
        player.display_name = ""  # as matchmaking asks: no names
    stranger = request.players[1].account_id  # an account the game knows no name of
    created = await handle.stub.CreateGame(request)
    assert [p.display_name for p in created.players] == [name, stranger[:8]]
    said = await handle.stub.PostChatMessage(
        game_pb2.PostChatMessageRequest(game_id=created.game_id, text="good luck"),
        metadata=as_player(ann.account_id),
    )
    assert said.display_name == name

    # A name chosen later names the next game; an older event replayed changes nothing.
    # The three share a key, so they are applied in this order: once the last is, the
    # older second has been applied too.
    now, sentinel = datetime.now(UTC), str(uuid.uuid4())
    await publish(kafka_broker.bootstrap, [
        chosen(stranger, "Bob_the_Bold", now),
        chosen(stranger, "Old_name", now - timedelta(days=1)),
        chosen(sentinel, "Sentinel", now, key=stranger),
    ])  # fmt: skip
    await known_as(url, sentinel, "Sentinel")
    request = create_request()
    request.players[0].account_id = stranger
    request.players[0].display_name = ""
    request.players[1].display_name = "Given"  # a name the caller gives is kept
    later = await handle.stub.CreateGame(request)
    assert [p.display_name for p in later.players] == ["Bob_the_Bold", "Given"]
