"""The kit's engine: a checkout costs no round trip, and a connection the database closed
is replaced before anyone uses it."""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg
from sqlalchemy import text

from services.kit.db import make_engine
from tests.support.services import new_database


async def _statements_sent(engine: Any, transactions: int) -> list[str]:
    """The plain statements (asyncpg's query log: not the prepared ones) the pooled
    connection sent over ``transactions`` transactions."""
    sent: list[str] = []
    async with engine.connect() as connection:
        raw = await connection.get_raw_connection()
        raw.driver_connection.add_query_logger(lambda record: sent.append(record.query))
    for _ in range(transactions):
        async with engine.begin() as connection:
            await connection.execute(text("SELECT 1"))
    return sent


async def test_a_checkout_sends_nothing_to_the_database(postgres_server: Any) -> None:
    url = postgres_server.url(new_database(postgres_server, "engine_pool"))
    engine = make_engine(url, pool_size=1)
    try:
        sent = await _statements_sent(engine, 3)
    finally:
        await engine.dispose()
    # Each transaction is its own BEGIN and COMMIT: no ping (BEGIN, ";", ROLLBACK) before it.
    assert sent == ["BEGIN;", "COMMIT;"] * 3


async def test_a_connection_the_database_closed_is_replaced_at_checkout(
    postgres_server: Any,
) -> None:
    name = new_database(postgres_server, "engine_pool")
    engine = make_engine(postgres_server.url(name), pool_size=1)
    try:
        async with engine.connect() as connection:
            pid = await connection.scalar(text("SELECT pg_backend_pid()"))
        # The pooled connection is ended by the server (a restart, an administrator).
        admin = await asyncpg.connect(postgres_server.dsn(name))
        try:
            assert await admin.fetchval("SELECT pg_terminate_backend($1)", pid) is True
        finally:
            await admin.close()
        await asyncio.sleep(0.5)  # the server's goodbye reaches the pooled connection
        async with engine.connect() as connection:
            assert await connection.scalar(text("SELECT 1")) == 1
            assert await connection.scalar(text("SELECT pg_backend_pid()")) != pid
    finally:
        await engine.dispose()
