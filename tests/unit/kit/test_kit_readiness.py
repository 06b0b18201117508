"""Readiness's broker check: the consumers' answered fetches first, a connection only
without them.

A listening socket on this machine stands for the broker's port, so what is counted is
real connections; the database check is the kit's and needs a database, so it is taken
as answering here (tests/integration/kit/test_health_and_metrics.py takes it away).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from types import SimpleNamespace
from typing import Any, cast

import pytest

from services.kit import server
from services.kit.server import Readiness


class Health:
    """The health servicer's part readiness uses: the status it last set per name."""

    def __init__(self) -> None:
        self.statuses: dict[str, int] = {}

    async def set(self, name: str, status: int) -> None:
        self.statuses[name] = status


@asynccontextmanager
async def listening() -> AsyncIterator[tuple[str, list[int]]]:
    """A port that accepts connections, and the connections it accepted."""
    accepted: list[int] = []

    def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(1)
        writer.close()

    listener = await asyncio.start_server(accept, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    try:
        yield f"127.0.0.1:{port}", accepted
    finally:
        listener.close()
        await listener.wait_closed()


def readiness(bootstrap: str, answered: Any) -> tuple[Readiness, Health]:
    runtime: Any = SimpleNamespace(
        engine=None,
        settings=SimpleNamespace(
            readiness_interval_seconds=2.0, kafka_bootstrap=bootstrap, service="test"
        ),
    )
    health = Health()
    return Readiness(runtime, cast(Any, health), [], broker_answered=answered), health


@pytest.fixture(autouse=True)
def database_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    async def reachable(engine: Any) -> bool:
        return True

    monkeypatch.setattr(server, "database_reachable", reachable)


async def test_a_fetch_answered_within_the_interval_spares_the_connection() -> None:
    asked: list[float] = []

    def answered(seconds: float) -> bool:
        asked.append(seconds)
        return True

    async with listening() as (bootstrap, accepted):
        check, health = readiness(bootstrap, answered)
        assert await check.check_once()
        await asyncio.sleep(0.05)
        assert accepted == [], "no connection of its own while the consumers prove the broker"
    assert asked == [2.0], "asked for an answer within the readiness interval"
    assert health.statuses[""] == server.SERVING


async def test_without_an_answered_fetch_readiness_connects_to_the_broker() -> None:
    async with listening() as (bootstrap, accepted):
        check, health = readiness(bootstrap, lambda seconds: False)
        assert await check.check_once()
        async with asyncio.timeout(2):
            while not accepted:
                await asyncio.sleep(0.01)
        assert accepted == [1]
        assert health.statuses[""] == server.SERVING
    # The port closed, no consumer proof: the broker is away, and the process not ready.
    assert not await check.check_once()
    assert health.statuses[""] == server.NOT_SERVING
