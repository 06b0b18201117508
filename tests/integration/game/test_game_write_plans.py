"""The game's write finds its rows by key, even when it was planned on empty tables.

The command pool prepares its statements once per connection, and PostgreSQL
soon runs them with a generic plan. A plan made on a fresh deployment's empty
tables would scan ``games`` on every write until the next ANALYZE. The test
plans the write on empty tables with the pool's session settings, grows the
tables, and reads the plan the next write ran with (auto_explain).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import asyncpg  # type: ignore[import-untyped]

from services.game.fastpath import POOL_SETTINGS, WRITE
from tests.support.plans import reported_plans, sequential_scans, tables_touched
from tests.support.services import migrated_database

_AT = datetime(2026, 11, 29, tzinfo=UTC)
_SAMPLES: dict[str, Any] = {
    "text": "no-such-game", "bigint": 1, "int": 1, "bool": False, "jsonb": "{}",
    "bytea": b"x", "timestamptz": _AT,
}  # fmt: skip


def _one_write_for_a_missing_game() -> list[list[Any]]:
    """WRITE's arguments: one row in every array, naming a game that does not exist."""
    types = dict(re.findall(r"\$(\d+)::(\w+)\[\]", WRITE))
    return [[_SAMPLES[types[str(n)]]] for n in range(1, len(types) + 1)]


async def _grow_tables(connection: asyncpg.Connection, rows: int) -> None:
    await connection.execute(
        f"""
        INSERT INTO games (game_id, table_id, version, status, account0, account1, state, seed,
                           seen0, seen1, away0, away1, created_at, updated_at)
        SELECT 'g' || i, 't' || i, 1, 'in_progress', 'a' || i, 'b' || i, '{{}}', 'x',
               now(), now(), false, false, now(), now()
        FROM generate_series(1, {rows}) AS i;
        INSERT INTO timers (game_id, kind, due_at)
        SELECT 'g' || i, 'turn', now() FROM generate_series(1, {rows}) AS i;
        """
    )


async def test_the_write_keeps_index_lookups_as_the_tables_grow(postgres_server: Any) -> None:
    name = await migrated_database(postgres_server, "game_plans", "game")
    connection = await asyncpg.connect(postgres_server.dsn(name), server_settings=POOL_SETTINGS)
    arguments = _one_write_for_a_missing_game()
    try:
        for _ in range(8):  # past the custom plans PostgreSQL tries first
            assert await connection.fetch(WRITE, *arguments) == []
        await _grow_tables(connection, 20_000)
        async with reported_plans(connection) as plans:
            assert await connection.fetch(WRITE, *arguments) == []
    finally:
        await connection.close()
    assert tables_touched(plans, ("games", "timers")) == ["games", "timers"]
    assert sequential_scans(plans) == [], "\n".join(plans)
