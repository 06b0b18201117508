"""A game process killed while a settlement waits on analysis settles it once after restart.

A real ``tavla serve game`` process with a one-second reconnect window (the tests-only
``TAVLA_GAME_RECONNECT_SECONDS_UNSAFE``) points at an analysis address nothing listens
on. Both players fall silent after the opening move; when the window closes, the
reconnect timer finds analysis unreachable, commits the settlement's next try (the timer
row) and the fail point ``game.settlement.awaiting_analysis`` SIGKILLs the process. The
analysis service then comes up on that address and a new process, finding the timer row,
settles the game: analysed, one GameEnded, one settle command in the action log.
"""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg  # type: ignore[import-untyped]

from tavla.game.v1 import events_pb2, game_pb2, game_pb2_grpc
from tests.support.analysis import start_analysis
from tests.support.game import create_request, take_turn
from tests.support.processes import ServeProcesses, service_environment
from tests.support.services import free_port, new_database

GAME_ENDED = events_pb2.GameEnded.DESCRIPTOR.full_name


async def count(url: str, statement: str, *arguments: Any) -> int:
    connection = await asyncpg.connect(url.replace("postgresql+asyncpg", "postgresql"))
    try:
        return int(await connection.fetchval(statement, *arguments))
    finally:
        await connection.close()


async def ended_events(url: str, game_id: str) -> list[events_pb2.GameEnded]:
    connection = await asyncpg.connect(url.replace("postgresql+asyncpg", "postgresql"))
    try:
        rows = await connection.fetch(
            "SELECT payload FROM outbox WHERE key = $1 AND ce_type = $2", game_id, GAME_ENDED
        )
    finally:
        await connection.close()
    events = []
    for row in rows:
        event = events_pb2.GameEnded()
        event.ParseFromString(row["payload"])
        events.append(event)
    return events


async def test_a_settlement_waiting_on_analysis_survives_sigkill_and_settles_once(
    postgres_server: Any, kafka_broker: Any, serve: ServeProcesses, accounts_service: Any
) -> None:
    url = postgres_server.url(new_database(postgres_server, "game_settle_crash"))
    port = free_port()
    environment = service_environment(
        "game",
        url,
        kafka_broker.bootstrap,
        accounts_address=accounts_service.address,
        TAVLA_ANALYSIS_ADDRESS=f"127.0.0.1:{port}",
        TAVLA_GAME_ANALYSIS_WAIT_SECONDS="600",  # long: the restart must settle by analysis
        TAVLA_GAME_RECONNECT_SECONDS_UNSAFE="1",
        TAVLA_GAME_PRESENCE_SILENCE_SECONDS="1",
        TAVLA_GAME_PRESENCE_SWEEP_SECONDS="0.2",
        TAVLA_GAME_TIMER_SECONDS="0.2",
    )
    armed = await serve.start(
        "game", {**environment, "TAVLA_FAILPOINTS": "game.settlement.awaiting_analysis=kill"}
    )
    channel = armed.channel()
    stub = game_pb2_grpc.GameServiceStub(channel)
    game = await stub.CreateGame(create_request())
    game = await take_turn(stub, game)  # a move made: there is something to settle
    await channel.close()
    await armed.wait_killed()  # both players silent, the window closed, analysis unreachable

    waiting = "SELECT count(*) FROM timers WHERE game_id = $1 AND kind LIKE 'reconnect%'"
    assert await count(url, waiting, game.game_id) >= 1  # the settlement is still due
    assert await ended_events(url, game.game_id) == []

    analysis = await start_analysis(postgres_server, kafka_broker, port=port)
    try:
        restarted = await serve.start("game", environment)
        async with asyncio.timeout(60):
            while not await ended_events(url, game.game_id):
                await asyncio.sleep(0.2)
        await asyncio.sleep(2)  # the other reconnect timer, and any retry, fire meanwhile
        restarted.stop()
    finally:
        await analysis.stop()

    (event,) = await ended_events(url, game.game_id)  # settled exactly once
    assert event.reason == game_pb2.END_REASON_DISCONNECTION
    assert event.analysed and event.settlement.method == "neural_net"
    settles = "SELECT count(*) FROM game_actions WHERE game_id = $1 AND command->>'action' = $2"
    assert await count(url, settles, game.game_id, "settle") == 1
    assert await count(url, waiting, game.game_id) == 0
