"""The hand-written migrations create exactly the tables the store declares."""

from __future__ import annotations

from typing import Any

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import create_async_engine

import services.game.lobby_store  # noqa: F401  (the lobby chat table too)
from services.game.chat_store import metadata  # the chat tables too
from tests.support.services import migrated_database


def _differences(connection: Connection) -> list[Any]:
    return list(compare_metadata(MigrationContext.configure(connection), metadata))


async def test_migrations_match_the_store(postgres_server: Any) -> None:
    url = postgres_server.url(await migrated_database(postgres_server, "game_schema", "game"))
    engine = create_async_engine(url)
    try:
        async with engine.connect() as connection:
            diff = await connection.run_sync(_differences)
    finally:
        await engine.dispose()
    ours = {table.name for table in metadata.sorted_tables}
    # The kit's outbox, inbox and Alembic's own table are not the store's to declare.
    relevant = [d for d in diff if _table_of(d) in ours]
    assert relevant == []


def _table_of(difference: Any) -> str:
    if isinstance(difference, list):  # column changes: [(kind, schema, table, column, ...)]
        return str(difference[0][2])
    kind, subject = difference[0], difference[1]
    if kind.endswith("_table"):
        return str(subject.name)
    if kind.endswith("_index"):
        return str(subject.table.name)
    return str(difference[2]) if len(difference) > 2 else ""
