"""WatchGame across replicas on real PostgreSQL: a change committed through one replica
wakes the streams open on another by NOTIFY, not by their (here one-minute) fallback poll,
and a lost listening connection is replaced."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import asyncpg  # type: ignore[import-untyped]
import pytest

from services.game.main import GameSettings
from services.kit.clock import ManualClock
from tavla.game.v1 import game_pb2
from tests.support.game import (
    GameHandle,
    as_player,
    create_request,
    start_game_service,
    take_turn,
    unreachable_analysis,
)
from tests.support.services import new_database, stop_service

CLOCK = ManualClock()
FALLBACK_SECONDS = 60.0  # far beyond every wait below: only a notification explains a wake-up
WAKE_WITHIN = 10.0  # generous for a busy 2-core machine, still well under the fallback
SETTINGS = GameSettings(
    analysis_address=unreachable_analysis(),
    analysis_wait_seconds=0.0,
    watch_fallback_seconds=FALLBACK_SECONDS,
)
LISTENERS = (
    "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN %'"
)


@pytest.fixture(scope="module")
def game_database(postgres_server: Any) -> str:
    url: str = postgres_server.url(new_database(postgres_server, "game"))
    return url


@pytest.fixture(scope="module")
async def replicas(
    game_database: str, kafka_broker: Any
) -> AsyncIterator[tuple[GameHandle, GameHandle]]:
    first = await start_game_service(
        game_database, kafka_broker.bootstrap, CLOCK, settings=SETTINGS
    )
    second = await start_game_service(
        game_database, kafka_broker.bootstrap, CLOCK, settings=SETTINGS
    )
    await listening_pids(game_database, at_least=2)
    yield first, second
    await stop_service(second.running)
    await stop_service(first.running)


async def listening_pids(
    database_url: str, *, at_least: int, other_than: frozenset[int] = frozenset()
) -> set[int]:
    """The backends LISTENing in the game's database, once there are ``at_least`` new ones."""
    connection = await asyncpg.connect(database_url.replace("postgresql+asyncpg", "postgresql"))
    try:
        async with asyncio.timeout(30):
            while True:
                pids = {row["pid"] for row in await connection.fetch(LISTENERS)} - other_than
                if len(pids) >= at_least:
                    return pids
                await asyncio.sleep(0.05)
    finally:
        await connection.close()


async def watch_from(handle: GameHandle, game: game_pb2.Game) -> Any:
    stream = handle.stub.WatchGame(
        game_pb2.WatchGameRequest(game_id=game.game_id),
        metadata=as_player(game.players[0].account_id),
    )
    first = await stream.read()
    assert first.game.version == game.version
    return stream


async def test_a_move_through_one_replica_wakes_a_stream_on_the_other(
    replicas: tuple[GameHandle, GameHandle],
) -> None:
    here, there = replicas
    game = await here.stub.CreateGame(create_request(reserve=3600))
    stream = await watch_from(here, game)
    for _ in range(3):
        game = await take_turn(there.stub, game)
        update = await asyncio.wait_for(stream.read(), timeout=WAKE_WITHIN)
        assert update.game.version == game.version
    stream.cancel()


async def test_table_chat_through_one_replica_reaches_a_stream_on_the_other(
    replicas: tuple[GameHandle, GameHandle],
) -> None:
    here, there = replicas
    game = await here.stub.CreateGame(create_request(reserve=3600))
    stream = await watch_from(here, game)
    sender = game.players[1].account_id
    await there.stub.PostChatMessage(
        game_pb2.PostChatMessageRequest(game_id=game.game_id, text="good luck"),
        metadata=as_player(sender),
    )
    update = await asyncio.wait_for(stream.read(), timeout=WAKE_WITHIN)
    assert update.event_type == "tavla.game.v1.ChatMessagePosted"
    assert update.chat.text == "good luck" and update.chat.account_id == sender
    stream.cancel()


async def test_a_killed_listener_reconnects_and_the_stream_gets_the_next_change(
    replicas: tuple[GameHandle, GameHandle], game_database: str
) -> None:
    here, there = replicas
    game = await here.stub.CreateGame(create_request(reserve=3600))
    stream = await watch_from(here, game)
    killed = await listening_pids(game_database, at_least=2)
    admin = await asyncpg.connect(game_database.replace("postgresql+asyncpg", "postgresql"))
    try:
        for pid in killed:
            assert await admin.fetchval("SELECT pg_terminate_backend($1)", pid)
    finally:
        await admin.close()
    await listening_pids(game_database, at_least=2, other_than=frozenset(killed))
    game = await take_turn(there.stub, game)
    update = await asyncio.wait_for(stream.read(), timeout=WAKE_WITHIN)
    assert update.game.version == game.version
    stream.cancel()
