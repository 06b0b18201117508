"""A game service killed between a command's commit and its events' publication loses nothing.

A real ``tavla serve game`` process, armed with the fail point
``game.command.after_commit``, dies by SIGKILL right after the seventh player
command was committed with its outbox events and before the relay published
them (and before the player got an answer). A new process publishes them, answers
the player's retry from the action log, and the game plays on to its end: every
event the game recorded is on ``tavla.game.v1``, and the game ended once.
"""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg  # type: ignore[import-untyped]
import grpc
import pytest

from tavla.game.v1 import events_pb2, game_pb2, game_pb2_grpc
from tests.support.game import as_player, create_request, play_out, take_turn
from tests.support.kafka import headers_of, read_events
from tests.support.processes import ServeProcesses, service_environment
from tests.support.services import new_database

COMMANDS_BEFORE_THE_KILL = 6
GAME_TOPIC = "tavla.game.v1"
GAME_ENDED = events_pb2.GameEnded.DESCRIPTOR.full_name


async def outbox(url: str, game_id: str) -> dict[str, bool]:
    """The game's recorded events: ce_id -> sent."""
    connection = await asyncpg.connect(url.replace("postgresql+asyncpg", "postgresql"))
    try:
        rows = await connection.fetch(
            "SELECT event_id, sent_at IS NOT NULL AS sent FROM outbox WHERE key = $1", game_id
        )
    finally:
        await connection.close()
    return {row["event_id"]: row["sent"] for row in rows}


async def wait_all_sent(url: str, game_id: str) -> None:
    async with asyncio.timeout(60):
        while not all((await outbox(url, game_id)).values()):
            await asyncio.sleep(0.1)


async def test_a_game_service_killed_between_a_commit_and_its_events_loses_none(
    postgres_server: Any, kafka_broker: Any, serve: ServeProcesses, accounts_service: Any
) -> None:
    url = postgres_server.url(new_database(postgres_server, "game_crash"))
    # No player counts as gone however slow the machine: nothing but the test's commands
    # may change the game (or wake the relay).
    environment = service_environment(
        "game",
        url,
        kafka_broker.bootstrap,
        accounts_address=accounts_service.address,
        TAVLA_GAME_PRESENCE_SILENCE_SECONDS="600",
    )
    # The relay publishes only when a commit wakes it (no poll within the test), so the
    # killed command's events can leave only through the relay of the next process.
    armed = await serve.start(
        "game",
        {
            **environment,
            "TAVLA_OUTBOX_POLL_SECONDS": "60",
            "TAVLA_FAILPOINTS": f"game.command.after_commit={COMMANDS_BEFORE_THE_KILL}*off->kill",
        },
    )
    channel = armed.channel()
    stub = game_pb2_grpc.GameServiceStub(channel)
    game = await stub.CreateGame(create_request())
    for _ in range(COMMANDS_BEFORE_THE_KILL):
        game = await take_turn(stub, game)
    await wait_all_sent(url, game.game_id)  # the relay is idle: nothing else is in flight

    with pytest.raises(grpc.aio.AioRpcError) as lost:
        await take_turn(stub, game)
    assert lost.value.code() == grpc.StatusCode.UNAVAILABLE  # the player got no answer
    await channel.close()
    await armed.wait_killed()
    unsent = {event for event, sent in (await outbox(url, game.game_id)).items() if not sent}
    assert unsent, "the kill came after the relay published the command's events"

    restarted = await serve.start("game", environment)
    channel = restarted.channel()
    stub = game_pb2_grpc.GameServiceStub(channel)
    # The player retries the call it got no answer to: the committed command, not a new one.
    answered = await take_turn(stub, game)
    assert answered.version == game.version + 1
    again = await stub.GetGame(
        game_pb2.GetGameRequest(game_id=game.game_id),
        metadata=as_player(answered.players[0].account_id),
    )
    assert again.version == answered.version
    final = await play_out(stub, answered)
    assert final.status == game_pb2.GAME_STATUS_FINISHED
    await channel.close()
    await wait_all_sent(url, game.game_id)

    recorded = await outbox(url, game.game_id)
    records = await read_events(kafka_broker.bootstrap, GAME_TOPIC, set(recorded))
    published = [headers_of(r) for r in records if r.key == game.game_id.encode()]
    assert {h["ce_id"] for h in published} == set(recorded)  # the killed command's among them
    ended = {h["ce_id"] for h in published if h["ce_type"] == GAME_ENDED}
    assert len(ended) == 1  # one game, one result
