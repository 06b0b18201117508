"""The game service end to end over gRPC on real PostgreSQL and the broker."""

from __future__ import annotations

import asyncio
import hashlib
import urllib.request
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import asyncpg  # type: ignore[import-untyped]
import grpc
import pytest

from services.backgammon import dice
from services.kit.clock import ManualClock
from tavla.game.v1 import events_pb2, game_pb2
from tests.support.game import (
    GameHandle,
    as_player,
    create_request,
    play_out,
    start_game_service,
    take_turn,
)
from tests.support.kafka import headers_of, keyed_records
from tests.support.services import new_database, stop_service

CLOCK = ManualClock()


@pytest.fixture(scope="module")
def game_database(postgres_server: Any) -> str:
    url: str = postgres_server.url(new_database(postgres_server, "game"))
    return url


@pytest.fixture(scope="module")
async def game_service(game_database: str, kafka_broker: Any) -> AsyncIterator[GameHandle]:
    handle = await start_game_service(game_database, kafka_broker.bootstrap, CLOCK)
    yield handle
    await stop_service(handle.running)


async def create(handle: GameHandle, **options: Any) -> game_pb2.Game:
    return await handle.stub.CreateGame(create_request(**options))


def read_url(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:
        text: str = response.read().decode()
        return text


async def events_of(bootstrap: str, game_id: str, until: str) -> list[tuple[str, bytes]]:
    """(ce_type, payload) of a game's events on tavla.game.v1, up to the first ``until``."""
    records = await keyed_records(
        bootstrap, "tavla.game.v1", game_id,
        lambda found: headers_of(found[-1])["ce_type"] == until, timeout=90,
    )  # fmt: skip
    return [(headers_of(record)["ce_type"], record.value) for record in records]


async def test_money_game_plays_to_the_end_and_publishes_game_ended(
    game_service: GameHandle, kafka_broker: Any
) -> None:
    game = await create(game_service)
    assert game.status == game_pb2.GAME_STATUS_IN_PROGRESS
    assert game.phase == game_pb2.TURN_PHASE_MOVE  # the opening roll is made at the start
    assert len(game.dice) == 2 and game.dice[0] != game.dice[1]
    assert game.legal_plays and len(game.dice_seed_commitment) == 64
    commitment = game.dice_seed_commitment

    final = await play_out(game_service.stub, game)

    assert final.status == game_pb2.GAME_STATUS_FINISHED
    assert final.last_outcome.reason == game_pb2.END_REASON_BORNE_OFF
    assert final.winner_account_id == final.last_outcome.winner_account_id
    events = await events_of(kafka_broker.bootstrap, game.game_id, "tavla.game.v1.GameEnded")
    types = [ce_type for ce_type, _ in events]
    assert types[:2] == ["tavla.game.v1.GameStarted", "tavla.game.v1.DiceRolled"]
    assert "tavla.game.v1.MovePlayed" in types
    ended = events_pb2.GameEnded.FromString(events[-1][1])
    assert ended.winner_account_id == final.winner_account_id
    assert ended.kind == game_pb2.PLAY_KIND_MONEY_GAME
    assert ended.stake.minor_units == 500 and ended.points >= 1

    metrics = await asyncio.to_thread(read_url, game_service.running.metrics_url)
    assert 'tavla_game_commands_total{action="move"}' in metrics
    assert 'tavla_game_events_total{type="GameEnded"}' in metrics

    record = await game_service.stub.GetMatchRecord(
        game_pb2.GetMatchRecordRequest(game_id=game.game_id),
        metadata=as_player(final.winner_account_id),
    )
    assert " 0 point match" in record.mat_text and "Wins" in record.mat_text
    seed = record.dice_seeds[0]
    assert seed.commitment == commitment
    assert hashlib.sha256(bytes.fromhex(seed.server_seed)).hexdigest() == commitment
    rolled = [events_pb2.DiceRolled.FromString(v) for t, v in events if t.endswith("DiceRolled")]
    assert rolled and rolled[-1].roll_number < seed.roll_count
    for event in rolled:  # every roll follows from the revealed seed: provably fair
        expected = dice.roll(bytes.fromhex(seed.server_seed), seed.client_seed, event.roll_number)
        assert sorted(event.dice) == sorted(expected)


async def test_the_seed_stays_secret_until_the_end(game_service: GameHandle) -> None:
    game = await create(game_service)
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await game_service.stub.GetMatchRecord(
            game_pb2.GetMatchRecordRequest(game_id=game.game_id),
            metadata=as_player(game.awaiting_account_id),
        )
    assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION


async def test_no_view_of_a_game_in_progress_carries_its_dice_seed(
    game_service: GameHandle, game_database: str
) -> None:
    """What the opponent or anyone else reads of a game being played: the commitment to
    the current game's seed, never the seed (the rolls would follow from it)."""
    game = await create(game_service, match_length=3)
    for _ in range(4):
        game = await take_turn(game_service.stub, game)
    assert game.status == game_pb2.GAME_STATUS_IN_PROGRESS
    connection = await asyncpg.connect(game_database.replace("postgresql+asyncpg", "postgresql"))
    try:
        seed = await connection.fetchval("SELECT seed FROM games WHERE game_id = $1", game.game_id)
    finally:
        await connection.close()
    assert hashlib.sha256(seed).hexdigest() == game.dice_seed_commitment
    onlooker = str(uuid.uuid4())
    for viewer in (*(p.account_id for p in game.players), onlooker):
        who = as_player(viewer)
        request = game_pb2.GetGameRequest(game_id=game.game_id)
        seen = [await game_service.stub.GetGame(request, metadata=who)]
        stream = game_service.stub.WatchGame(
            game_pb2.WatchGameRequest(game_id=game.game_id), metadata=who
        )
        seen.append(await anext(aiter(stream)))
        stream.cancel()
        seen.append(await game_service.stub.ListGames(game_pb2.ListGamesRequest(), metadata=who))
        for message in seen:
            wire = message.SerializeToString()
            assert seed not in wire and seed.hex().encode() not in wire, (viewer, message)
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await game_service.stub.GetMatchRecord(
                game_pb2.GetMatchRecordRequest(game_id=game.game_id), metadata=who
            )
        assert refused.value.code() in (
            grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.PERMISSION_DENIED
        )


async def test_match_with_cube_plays_to_the_end_with_a_record(
    game_service: GameHandle, kafka_broker: Any
) -> None:
    game = await create(game_service, match_length=3)
    stub = game_service.stub
    doubled = False
    while game.status == game_pb2.GAME_STATUS_IN_PROGRESS:
        can_double = (
            game.phase == game_pb2.TURN_PHASE_ROLL_OR_DOUBLE
            and not game.crawford_game
            and not game.cube_owner_account_id
            and not doubled
        )
        if can_double:
            doubled = True
            game = await stub.Double(
                game_pb2.DoubleRequest(game_id=game.game_id, expected_version=game.version),
                metadata=as_player(game.awaiting_account_id),
            )
            assert game.phase == game_pb2.TURN_PHASE_CUBE_RESPONSE
            continue
        game = await take_turn(stub, game)
    assert max(p.score for p in game.players) >= 3
    events = await events_of(kafka_broker.bootstrap, game.game_id, "tavla.game.v1.MatchEnded")
    types = {ce_type for ce_type, _ in events}
    assert {"tavla.game.v1.CubeOffered", "tavla.game.v1.CubeTaken"} <= types
    ended = events_pb2.MatchEnded.FromString(events[-1][1])
    assert ended.winner_account_id == game.winner_account_id
    assert max(ended.final_score) >= 3 and ended.record_id == game.game_id
    record = await stub.GetMatchRecord(
        game_pb2.GetMatchRecordRequest(game_id=game.game_id),
        metadata=as_player(game.winner_account_id),
    )
    assert " 3 point match" in record.mat_text and "Doubles => 2" in record.mat_text
    assert len(record.dice_seeds) == ended.games_played


async def expect_error(call: Any, code: grpc.StatusCode, words: str) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await call
    assert refused.value.code() == code
    assert words in (refused.value.details() or "")


async def test_illegal_out_of_turn_late_double_and_stale_calls_get_clear_errors(
    game_service: GameHandle,
) -> None:
    stub = game_service.stub
    game = await create(game_service)
    mover = game.awaiting_account_id
    other = next(p.account_id for p in game.players if p.account_id != mover)
    await expect_error(
        stub.Move(
            game_pb2.MoveRequest(
                game_id=game.game_id, expected_version=game.version, notation="6/5(2)"
            ),
            metadata=as_player(mover),
        ),
        grpc.StatusCode.INVALID_ARGUMENT,
        "not a legal play",
    )
    await expect_error(
        stub.Move(
            game_pb2.MoveRequest(
                game_id=game.game_id,
                expected_version=game.version,
                notation=game.legal_plays[0].notation,
            ),
            metadata=as_player(other),
        ),
        grpc.StatusCode.FAILED_PRECONDITION,
        "not your turn",
    )
    await expect_error(
        stub.Double(
            game_pb2.DoubleRequest(game_id=game.game_id, expected_version=game.version),
            metadata=as_player(mover),
        ),
        grpc.StatusCode.FAILED_PRECONDITION,
        "not allowed now",
    )
    await expect_error(
        stub.Roll(
            game_pb2.RollRequest(game_id=game.game_id, expected_version=game.version),
            metadata=as_player("stranger"),
        ),
        grpc.StatusCode.PERMISSION_DENIED,
        "not a player",
    )
    after = await take_turn(stub, game)
    await expect_error(
        stub.Roll(
            game_pb2.RollRequest(game_id=game.game_id, expected_version=game.version),
            metadata=as_player(after.awaiting_account_id),
        ),
        grpc.StatusCode.ABORTED,
        f"version {after.version}",
    )


@pytest.mark.parametrize("crawford", ["unset", "true"])
async def test_doubling_in_the_crawford_game_is_refused(
    game_service: GameHandle, crawford: str
) -> None:
    """A match uses the Crawford rule unless the table says otherwise."""
    stub = game_service.stub
    request = create_request(match_length=2)
    if crawford == "unset":
        request.rules.ClearField("crawford")
    game = await stub.CreateGame(request)
    while game.phase != game_pb2.TURN_PHASE_ROLL_OR_DOUBLE:
        game = await take_turn(stub, game)
    resigner = game.awaiting_account_id
    game = await stub.Resign(
        game_pb2.ResignRequest(
            game_id=game.game_id, expected_version=game.version, level=game_pb2.RESULT_TYPE_SINGLE
        ),
        metadata=as_player(resigner),
    )
    game = await stub.AcceptResign(
        game_pb2.AcceptResignRequest(game_id=game.game_id, expected_version=game.version),
        metadata=as_player(game.awaiting_account_id),
    )
    assert game.game_number == 2 and game.crawford_game
    assert game.last_outcome.reason == game_pb2.END_REASON_RESIGNED
    while game.phase != game_pb2.TURN_PHASE_ROLL_OR_DOUBLE:
        game = await take_turn(stub, game)
    await expect_error(
        stub.Double(
            game_pb2.DoubleRequest(game_id=game.game_id, expected_version=game.version),
            metadata=as_player(game.awaiting_account_id),
        ),
        grpc.StatusCode.FAILED_PRECONDITION,
        "Crawford",
    )


async def test_retries_and_concurrent_duplicates_apply_once(game_service: GameHandle) -> None:
    stub = game_service.stub
    game = await create(game_service)
    request = game_pb2.MoveRequest(
        game_id=game.game_id, expected_version=game.version, notation=game.legal_plays[0].notation
    )
    who = as_player(game.awaiting_account_id)
    results = await asyncio.gather(*(stub.Move(request, metadata=who) for _ in range(5)))
    assert {r.version for r in results} == {game.version + 1}
    assert len({r.SerializeToString() for r in results}) == 1
    again = await stub.Move(request, metadata=who)  # a late retry gets the same answer
    assert again == results[0]
    current = await stub.GetGame(game_pb2.GetGameRequest(game_id=game.game_id), metadata=who)
    assert current.version == game.version + 1


async def test_create_game_is_idempotent_on_its_key(game_service: GameHandle) -> None:
    request = create_request(idempotency_key=f"k-{uuid.uuid4()}")
    first, second = await asyncio.gather(
        game_service.stub.CreateGame(request), game_service.stub.CreateGame(request)
    )
    assert first.game_id == second.game_id
    other = create_request(idempotency_key=request.idempotency_key)
    await expect_error(
        game_service.stub.CreateGame(other), grpc.StatusCode.ABORTED, "another table"
    )


async def test_racing_creates_of_one_key_write_one_game_once(
    game_service: GameHandle, game_database: str
) -> None:
    """The losers of the race write nothing: one games row, one action, its events once."""
    request = create_request(idempotency_key=f"k-{uuid.uuid4()}")
    answers = await asyncio.gather(*(game_service.stub.CreateGame(request) for _ in range(6)))
    game_id = answers[0].game_id
    assert {answer.game_id for answer in answers} == {game_id}
    assert {answer.version for answer in answers} == {1}
    connection = await asyncpg.connect(game_database.replace("+asyncpg", ""))
    try:
        games = await connection.fetchval(
            "SELECT count(*) FROM games WHERE idempotency_key = $1", request.idempotency_key
        )
        actions = await connection.fetch(
            "SELECT version, command->>'action' AS action FROM game_actions WHERE game_id = $1",
            game_id,
        )
        events = await connection.fetch(
            "SELECT ce_type FROM outbox WHERE key = $1 ORDER BY seq", game_id
        )
        timers = await connection.fetch("SELECT kind FROM timers WHERE game_id = $1", game_id)
    finally:
        await connection.close()
    assert games == 1
    assert [(a["version"], a["action"]) for a in actions] == [(1, "create")]
    opening = [events_pb2.GameStarted, events_pb2.DiceRolled]
    assert [e["ce_type"] for e in events] == [m.DESCRIPTOR.full_name for m in opening]
    assert [t["kind"] for t in timers] == ["clock"]


async def test_running_out_of_reserve_loses_the_game(game_service: GameHandle) -> None:
    game = await create(game_service, move_delay=12, reserve=60)
    slow = game.awaiting_account_id
    CLOCK.advance(timedelta(seconds=71))
    assert await game_service.service.fire_due_timers() == 0  # 1 s of reserve left
    CLOCK.advance(timedelta(seconds=2))
    assert await game_service.service.fire_due_timers() >= 1
    over = await game_service.stub.GetGame(
        game_pb2.GetGameRequest(game_id=game.game_id), metadata=as_player(slow)
    )
    assert over.status == game_pb2.GAME_STATUS_FINISHED
    assert over.last_outcome.reason == game_pb2.END_REASON_TIMEOUT
    assert over.winner_account_id != slow


async def test_disconnection_reconnect_and_settlement_after_five_minutes(
    game_service: GameHandle,
) -> None:
    stub, service = game_service.stub, game_service.service
    game = await take_turn(stub, await create(game_service, reserve=3600))
    mover = game.awaiting_account_id  # the opening move is played: this is a real game
    other = next(p.account_id for p in game.players if p.account_id != mover)
    CLOCK.advance(timedelta(seconds=10))
    await stub.Heartbeat(game_pb2.HeartbeatRequest(game_id=game.game_id), metadata=as_player(mover))
    CLOCK.advance(timedelta(seconds=10))
    await stub.Heartbeat(game_pb2.HeartbeatRequest(game_id=game.game_id), metadata=as_player(mover))
    await service.sweep_presence()
    seen = await stub.GetGame(
        game_pb2.GetGameRequest(game_id=game.game_id), metadata=as_player(mover)
    )
    connected = {p.account_id: p.connected for p in seen.players}
    assert connected == {mover: True, other: False}
    assert seen.players[[p.account_id for p in seen.players].index(other)].HasField(
        "reconnect_deadline"
    )

    back = await stub.Reconnect(
        game_pb2.ReconnectRequest(game_id=game.game_id), metadata=as_player(other)
    )
    assert all(p.connected for p in back.players)

    CLOCK.advance(timedelta(seconds=20))
    await stub.Heartbeat(game_pb2.HeartbeatRequest(game_id=game.game_id), metadata=as_player(mover))
    await service.sweep_presence()
    CLOCK.advance(timedelta(minutes=4, seconds=50))
    await stub.Heartbeat(game_pb2.HeartbeatRequest(game_id=game.game_id), metadata=as_player(mover))
    await service.fire_due_timers()
    still = await stub.GetGame(
        game_pb2.GetGameRequest(game_id=game.game_id), metadata=as_player(mover)
    )
    assert still.status == game_pb2.GAME_STATUS_IN_PROGRESS
    CLOCK.advance(timedelta(seconds=11))
    await stub.Heartbeat(game_pb2.HeartbeatRequest(game_id=game.game_id), metadata=as_player(mover))
    await service.fire_due_timers()
    settled = await stub.GetGame(
        game_pb2.GetGameRequest(game_id=game.game_id), metadata=as_player(mover)
    )
    assert settled.status == game_pb2.GAME_STATUS_FINISHED
    assert settled.last_outcome.reason == game_pb2.END_REASON_DISCONNECTION
    assert settled.winner_account_id == mover


async def test_watch_streams_a_snapshot_then_every_change(game_service: GameHandle) -> None:
    stub = game_service.stub
    game = await create(game_service)
    who = as_player(game.awaiting_account_id)
    stream = stub.WatchGame(game_pb2.WatchGameRequest(game_id=game.game_id), metadata=who)
    first = await stream.read()
    assert first.event_type == "" and first.game.version == game.version
    after = await take_turn(stub, game)
    update = await asyncio.wait_for(stream.read(), timeout=10)
    assert update.game.version == after.version
    assert update.event_type == "tavla.game.v1.MovePlayed"
    stream.cancel()


async def test_real_money_tables_need_the_wallet(game_service: GameHandle) -> None:
    await expect_error(
        game_service.stub.CreateGame(create_request(currency="EUR")),
        grpc.StatusCode.FAILED_PRECONDITION,
        "TAVLA_WALLET_ADDRESS",
    )


async def wait_until_seen(database_url: str, game_id: str, player: int) -> None:
    """Until the player's presence was refreshed at the manual clock's current time."""
    connection = await asyncpg.connect(database_url.replace("postgresql+asyncpg", "postgresql"))
    try:
        async with asyncio.timeout(30):
            while True:
                seen = await connection.fetchval(
                    f"SELECT seen{player} FROM games WHERE game_id = $1", game_id
                )
                if seen >= CLOCK.now():
                    return
                await asyncio.sleep(0.1)
    finally:
        await connection.close()


async def test_an_open_watch_stream_keeps_its_player_connected(
    game_service: GameHandle, game_database: str
) -> None:
    stub = game_service.stub
    game = await create(game_service, reserve=3600)
    watcher = game.players[0].account_id
    silent = game.players[1].account_id
    stream = stub.WatchGame(
        game_pb2.WatchGameRequest(game_id=game.game_id), metadata=as_player(watcher)
    )
    await stream.read()
    CLOCK.advance(timedelta(seconds=20))
    await wait_until_seen(game_database, game.game_id, 0)  # the stream's next poll refreshes it
    await game_service.service.sweep_presence()
    update = await asyncio.wait_for(stream.read(), timeout=10)
    assert update.event_type == "tavla.game.v1.PlayerDisconnected"
    connected = {p.account_id: p.connected for p in update.game.players}
    assert connected == {watcher: True, silent: False}
    stream.cancel()


async def test_two_replicas_share_games_and_fire_each_timer_once(
    game_database: str, kafka_broker: Any, game_service: GameHandle
) -> None:
    other = await start_game_service(game_database, kafka_broker.bootstrap, CLOCK)
    try:
        game = await create(game_service)
        replicas = [game_service.stub, other.stub]
        for turn in range(8):  # alternate replicas: neither may act on a stale cached state
            game = await take_turn(replicas[turn % 2], game)
        games = [await create(game_service, reserve=30) for _ in range(6)]
        CLOCK.advance(timedelta(seconds=43))
        fired = await asyncio.gather(
            game_service.service.fire_due_timers(), other.service.fire_due_timers()
        )
        assert sum(fired) >= len(games)
        for created in games:
            over = await other.stub.GetGame(
                game_pb2.GetGameRequest(game_id=created.game_id),
                metadata=as_player(created.awaiting_account_id),
            )
            assert over.status == game_pb2.GAME_STATUS_FINISHED
            assert over.version == created.version + 1  # the timeout applied exactly once
            assert over.last_outcome.reason == game_pb2.END_REASON_TIMEOUT
    finally:
        await stop_service(other.running)


async def test_a_game_nobody_played_is_cancelled_after_the_window(
    game_service: GameHandle,
) -> None:
    stub, service = game_service.stub, game_service.service
    game = await create(game_service, reserve=3600)
    CLOCK.advance(timedelta(seconds=20))
    await service.sweep_presence()
    CLOCK.advance(timedelta(minutes=5))
    await service.fire_due_timers()
    cancelled = await stub.GetGame(
        game_pb2.GetGameRequest(game_id=game.game_id), metadata=as_player(game.awaiting_account_id)
    )
    assert cancelled.status == game_pb2.GAME_STATUS_CANCELLED
    assert not cancelled.HasField("last_outcome") and not cancelled.winner_account_id
