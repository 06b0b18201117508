"""A stop valuation waiting on analysis survives SIGKILL: published once after restart.

A real ``tavla serve game`` process points at an analysis address nothing listens on. A
player resigns after the opening move and the other accepts: the game ends and is
settled by the rules at once (its ``GameEnded``), and the ``value`` timer row written
with the end fires, finds analysis unreachable, commits its next try and the fail point
``game.settlement.awaiting_analysis`` SIGKILLs the process. The analysis service then
comes up on that address and a new process, finding the row, values the position:
one ``StopValued``, analysed, and one ``GameEnded``, untouched.
"""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg  # type: ignore[import-untyped]

from tavla.game.v1 import events_pb2, game_pb2, game_pb2_grpc
from tests.support.analysis import start_analysis
from tests.support.game import create_request, take_turn
from tests.support.identity import as_player
from tests.support.processes import ServeProcesses, service_environment
from tests.support.services import free_port, new_database

GAME_ENDED = events_pb2.GameEnded.DESCRIPTOR.full_name
STOP_VALUED = events_pb2.StopValued.DESCRIPTOR.full_name


async def fetch(url: str, statement: str, *arguments: Any) -> list[Any]:
    connection = await asyncpg.connect(url.replace("postgresql+asyncpg", "postgresql"))
    try:
        return list(await connection.fetch(statement, *arguments))
    finally:
        await connection.close()


async def published(url: str, game_id: str, ce_type: str) -> list[bytes]:
    statement = "SELECT payload FROM outbox WHERE key = $1 AND ce_type = $2"
    return [bytes(row["payload"]) for row in await fetch(url, statement, game_id, ce_type)]


async def resigned_game(stub: game_pb2_grpc.GameServiceStub) -> tuple[game_pb2.Game, str]:
    game = await take_turn(stub, await stub.CreateGame(create_request()))
    resigner = game.awaiting_account_id
    winner = next(p.account_id for p in game.players if p.account_id != resigner)
    offered = await stub.Resign(
        game_pb2.ResignRequest(
            game_id=game.game_id, expected_version=game.version, level=game_pb2.RESULT_TYPE_SINGLE
        ),
        metadata=as_player(resigner),
    )
    await stub.AcceptResign(
        game_pb2.AcceptResignRequest(game_id=game.game_id, expected_version=offered.version),
        metadata=as_player(winner),
    )
    return game, resigner


async def test_a_valuation_waiting_on_analysis_survives_sigkill_and_is_published_once(
    postgres_server: Any, kafka_broker: Any, serve: ServeProcesses, accounts_service: Any
) -> None:
    url = postgres_server.url(new_database(postgres_server, "game_stop_crash"))
    port = free_port()
    environment = service_environment(
        "game",
        url,
        kafka_broker.bootstrap,
        accounts_address=accounts_service.address,
        TAVLA_ANALYSIS_ADDRESS=f"127.0.0.1:{port}",
        TAVLA_GAME_ANALYSIS_WAIT_SECONDS="600",  # long: the restart must value by analysis
        TAVLA_GAME_TIMER_SECONDS="0.2",
    )
    armed = await serve.start(
        "game", {**environment, "TAVLA_FAILPOINTS": "game.settlement.awaiting_analysis=kill"}
    )
    channel = armed.channel()
    game, resigner = await resigned_game(game_pb2_grpc.GameServiceStub(channel))
    await channel.close()
    await armed.wait_killed()  # the valuation found analysis unreachable

    due = "SELECT count(*) AS n FROM timers WHERE game_id = $1 AND kind = 'value'"
    assert (await fetch(url, due, game.game_id))[0]["n"] == 1  # still due
    assert len(await published(url, game.game_id, GAME_ENDED)) == 1  # settled already
    assert await published(url, game.game_id, STOP_VALUED) == []

    analysis = await start_analysis(postgres_server, kafka_broker, port=port)
    try:
        restarted = await serve.start("game", environment)
        async with asyncio.timeout(60):
            while not await published(url, game.game_id, STOP_VALUED):
                await asyncio.sleep(0.2)
        await asyncio.sleep(2)  # any retry would fire meanwhile
        restarted.stop()
    finally:
        await analysis.stop()

    (payload,) = await published(url, game.game_id, STOP_VALUED)  # exactly once
    valued = events_pb2.StopValued.FromString(payload)
    assert valued.reason == game_pb2.END_REASON_RESIGNED and valued.account_id == resigner
    assert valued.analysed and valued.settlement.method == "neural_net"
    (ended,) = await published(url, game.game_id, GAME_ENDED)
    assert events_pb2.GameEnded.FromString(ended).reason == game_pb2.END_REASON_RESIGNED
    assert (await fetch(url, due, game.game_id))[0]["n"] == 0
