"""Group commit: concurrent commands on different games share one write statement.

A test transaction holds one game's row lock, so the statement carrying that game's
command stays in flight while the commands on other games queue behind it; the
next statement must carry all of them, apply each once and write each game's
action-log row and events, and a write the database refuses fails alone.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable
from typing import Any

import asyncpg  # type: ignore[import-untyped]
import grpc
import pytest
from prometheus_client import REGISTRY

from services.game.domain import Action
from services.kit.clock import ManualClock
from tavla.game.v1 import game_pb2
from tests.support.game import (
    GameHandle,
    as_player,
    create_request,
    start_game_service,
    take_turn,
)
from tests.support.services import new_database, stop_service


@pytest.fixture(scope="module")
def database(postgres_server: Any) -> str:
    url: str = postgres_server.url(new_database(postgres_server, "game_batch"))
    return url


@pytest.fixture(scope="module")
async def handle(database: str, kafka_broker: Any) -> AsyncIterator[GameHandle]:
    running = await start_game_service(database, kafka_broker.bootstrap, ManualClock())
    yield running
    await stop_service(running.running)


def _dsn(url: str) -> str:
    return url.replace("postgresql+asyncpg://", "postgresql://", 1)


def _batches() -> tuple[float, float]:
    count = REGISTRY.get_sample_value("tavla_game_write_batch_size_count") or 0.0
    total = REGISTRY.get_sample_value("tavla_game_write_batch_size_sum") or 0.0
    return count, total


async def _games(handle: GameHandle, count: int) -> list[game_pb2.Game]:
    games = [await handle.stub.CreateGame(create_request()) for _ in range(count)]
    return [await take_turn(handle.stub, game) for game in games]  # each in the cache now


async def _queued(handle: GameHandle, expected: int) -> None:
    async with asyncio.timeout(10):
        while handle.service._fast.queued < expected:
            await asyncio.sleep(0.005)


async def _while_locked(
    database: str, game_id: str, calls: list[Awaitable[Any]], then_queued: int, handle: GameHandle
) -> list[Any]:
    """Run ``calls`` while ``game_id``'s row is locked; release once ``then_queued`` wait."""
    connection = await asyncpg.connect(_dsn(database))
    try:
        transaction = connection.transaction()
        await transaction.start()
        await connection.execute("SELECT 1 FROM games WHERE game_id = $1 FOR UPDATE", game_id)
        running = asyncio.gather(*calls, return_exceptions=True)
        await _queued(handle, then_queued)
        await transaction.rollback()
        return await running
    finally:
        await connection.close()


async def test_queued_commands_share_one_statement_and_apply_once(
    handle: GameHandle, database: str
) -> None:
    games = await _games(handle, 9)
    blocker, others = games[0], games[1:]
    count_before, sum_before = _batches()
    first = take_turn(handle.stub, blocker)
    calls = [first] + [take_turn(handle.stub, g) for g in others]
    calls.append(take_turn(handle.stub, others[0]))  # a concurrent duplicate
    # The blocker is in flight; the 8 others and the duplicate wait for the next statement.
    results = await _while_locked(database, blocker.game_id, calls, len(others) + 1, handle)
    assert not [r for r in results if isinstance(r, BaseException)]
    assert all(r.version == g.version + 1 for r, g in zip(results, games, strict=False))
    assert results[-1] == results[1]  # the duplicate got the first call's answer
    count_after, sum_after = _batches()
    # Three statements: the blocker; the 8 others; the duplicate, whose version no longer
    # matches, so it applied nothing (checked below) and was answered from the log.
    assert (count_after - count_before, sum_after - sum_before) == (3, len(games) + 1)
    connection = await asyncpg.connect(_dsn(database))
    try:
        for before, after in zip(games, results, strict=False):
            logged = await connection.fetchval(
                "SELECT count(*) FROM game_actions WHERE game_id = $1 AND version = $2",
                before.game_id,
                after.version,
            )
            current = await connection.fetchval(
                "SELECT version FROM games WHERE game_id = $1", before.game_id
            )
            assert (logged, current) == (1, after.version)
    finally:
        await connection.close()


async def test_a_write_the_database_refuses_fails_alone(handle: GameHandle, database: str) -> None:
    games = await _games(handle, 5)
    blocker, broken, healthy = games[0], games[1], games[2:]
    connection = await asyncpg.connect(_dsn(database))
    try:  # an action-log row already at the broken game's next version: its insert fails
        await connection.execute(
            "INSERT INTO game_actions (game_id, version, account_id, command, command_hash,"
            " event_type, view, occurred_at) VALUES ($1, $2, '', '{}', '', 'test', '', now())",
            broken.game_id,
            broken.version + 1,
        )
    finally:
        await connection.close()
    calls = [take_turn(handle.stub, g) for g in (blocker, broken, *healthy)]
    results = await _while_locked(database, blocker.game_id, calls, len(healthy) + 1, handle)
    failed = results[1]
    assert isinstance(failed, grpc.aio.AioRpcError)
    assert failed.code() == grpc.StatusCode.INTERNAL
    for before, after in zip((blocker, *healthy), (results[0], *results[2:]), strict=True):
        assert not isinstance(after, BaseException)
        assert after.version == before.version + 1


async def test_a_cancelled_callers_write_is_still_applied_once(
    handle: GameHandle, database: str
) -> None:
    """A caller gone while its write waits (a client that hung up) leaves the write to its
    statement: applied once, and the other writes of that statement answered."""
    games = await _games(handle, 4)
    blocker, gone, others = games[0], games[1], games[2:]
    assert gone.phase == game_pb2.TURN_PHASE_ROLL_OR_DOUBLE
    calls = [take_turn(handle.stub, g) for g in (blocker, *others)]
    connection = await asyncpg.connect(_dsn(database))
    try:
        transaction = connection.transaction()
        await transaction.start()
        await connection.execute(
            "SELECT 1 FROM games WHERE game_id = $1 FOR UPDATE", blocker.game_id
        )
        running = asyncio.gather(*calls, return_exceptions=True)
        await _queued(handle, len(others))  # the blocker's statement waits on the lock
        abandoned = asyncio.create_task(
            handle.service.command(
                gone.game_id, gone.awaiting_account_id, gone.version, Action.ROLL
            )
        )
        await _queued(handle, len(others) + 1)  # the abandoned write queued with the others
        abandoned.cancel()
        await asyncio.sleep(0)
        assert abandoned.cancelled()
        await transaction.rollback()
        results = await running
        assert [r.version for r in results] == [g.version + 1 for g in (blocker, *others)]
        for _ in range(200):  # its statement commits once the lock is gone
            version = await connection.fetchval(
                "SELECT version FROM games WHERE game_id = $1", gone.game_id
            )
            if version == gone.version + 1:
                break
            await asyncio.sleep(0.01)
        logged = await connection.fetchval(
            "SELECT count(*) FROM game_actions WHERE game_id = $1 AND version = $2",
            gone.game_id,
            gone.version + 1,
        )
        assert (version, logged) == (gone.version + 1, 1)
    finally:
        await connection.close()
    after = await handle.stub.GetGame(
        game_pb2.GetGameRequest(game_id=gone.game_id), metadata=as_player(gone.awaiting_account_id)
    )
    assert after.version == gone.version + 1  # the next caller finds the roll applied
