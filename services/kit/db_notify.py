"""PostgreSQL LISTEN/NOTIFY: wake-ups that cross replicas without polling.

A transaction that changes something others wait for runs
``SELECT pg_notify('<channel>', '<key>')``: PostgreSQL delivers it at commit, to
every connection listening on that channel (every replica), and never for a
rolled-back transaction. :class:`ChannelListener` is one such connection per
process: it hands each notification's payload to ``on_message`` and reconnects
when the connection is lost. Notifications sent while no connection listened are
gone, so on every (re)connection it calls ``on_connect``: the waiters must look
again once. It also checks the connection every ``check_seconds`` (one cheap
statement), so a silently dead connection is found and replaced.

Waiters still keep a long fallback poll: a notification is a wake-up, never the
data, and losing one (a listener down between two checks) only delays a reader.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

import asyncpg  # type: ignore[import-untyped]

from services.kit.logging import get_logger

log = get_logger(__name__)

# What losing the listening connection looks like; anything else is a bug and surfaces.
_LOST = (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError)


def asyncpg_dsn(database_url: str) -> str:
    """The SQLAlchemy URL (``postgresql+asyncpg://``) as asyncpg takes it."""
    return database_url.replace("postgresql+asyncpg://", "postgresql://", 1)


class ChannelListener:
    """One connection LISTENing on ``channel`` for the life of the process."""

    def __init__(
        self,
        database_url: str,
        channel: str,
        *,
        on_message: Callable[[str], None],
        on_connect: Callable[[], None],
        retry_seconds: float = 1.0,
        check_seconds: float = 30.0,
    ) -> None:
        self._dsn = asyncpg_dsn(database_url)
        self._channel = channel
        self._on_message = on_message
        self._on_connect = on_connect
        self._retry = retry_seconds
        self._check = check_seconds
        self.connections = 0  # how many times it (re)connected, for tests and logs
        self.listening = asyncio.Event()  # set while a connection listens

    async def run(self) -> None:
        """Listen until cancelled, reconnecting after every loss."""
        while True:
            try:
                await self._listen_once()
            except _LOST as error:
                log.warning("notify_listener_lost", channel=self._channel, error=repr(error))
            finally:
                self.listening.clear()
            await asyncio.sleep(self._retry)

    async def _listen_once(self) -> None:
        connection = await asyncpg.connect(self._dsn, timeout=self._check)
        try:
            lost = asyncio.Event()
            connection.add_termination_listener(lambda _connection: lost.set())
            await connection.add_listener(self._channel, self._delivered)
            self.connections += 1
            self.listening.set()
            log.info("notify_listening", channel=self._channel, connections=self.connections)
            self._on_connect()  # anything notified while nobody listened was missed
            while not lost.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(lost.wait(), self._check)
                if not lost.is_set():
                    await connection.fetchval("SELECT 1", timeout=self._check)
            raise ConnectionError("the listening connection was closed")
        finally:
            connection.terminate()

    def _delivered(self, _connection: Any, _pid: int, _channel: str, payload: str) -> None:
        self._on_message(payload)
