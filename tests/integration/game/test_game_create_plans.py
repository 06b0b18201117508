"""``CreateGame``'s two statements find their rows by key however much the tables grew.

They run on the command path's pool, prepared once per connection and soon run with a
generic plan. The test plans both on empty tables with the pool's session settings,
grows the tables, and reads the plans the next runs used (auto_explain).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import asyncpg  # type: ignore[import-untyped]

from services.game.creation import (
    BEFORE_CREATE,
    CREATE,
    NewGame,
    before_create_arguments,
    create_arguments,
)
from services.game.fastpath import POOL_SETTINGS
from tests.support.plans import reported_plans, sequential_scans, tables_touched
from tests.support.services import migrated_database

_AT = datetime(2026, 12, 5, tzinfo=UTC)


def _new_game(number: int) -> NewGame:
    return NewGame(
        game_id=f"new-{number}", table_id="t", version=1, status="in_progress",
        accounts=("a", "b"), state={}, seed=b"s", at=_AT, away=(False, False),
        idempotency_key=f"key-{number}", command={"action": "create"}, command_hash="h",
        event_type="tavla.game.v1.GameStarted", view=b"v",
        events=[(f"e-{number}", "tavla.game.v1", "tavla.game.v1.GameStarted", b"p", {})],
        timers=[("clock", _AT)],
    )  # fmt: skip


async def _grow_tables(connection: asyncpg.Connection, rows: int) -> None:
    await connection.execute(
        f"""
        INSERT INTO games (game_id, table_id, version, status, account0, account1, state, seed,
                           seen0, seen1, away0, away1, idempotency_key, created_at, updated_at)
        SELECT 'g' || i, 't' || i, 1, 'in_progress', 'a' || i, 'b' || i, '{{}}', 'x',
               now(), now(), false, false, 'k' || i, now(), now()
        FROM generate_series(1, {rows}) AS i;
        INSERT INTO self_exclusions (account_id, excluded_until, updated_at)
        SELECT 'a' || i, now(), now() FROM generate_series(1, {rows}) AS i;
        INSERT INTO screen_names (account_id, screen_name, said_at)
        SELECT 'a' || i, 'name' || i, now() FROM generate_series(1, {rows}) AS i;
        ANALYZE games; ANALYZE self_exclusions; ANALYZE screen_names;
        """
    )


async def test_creating_a_game_keeps_index_lookups_as_the_tables_grow(
    postgres_server: Any,
) -> None:
    name = await migrated_database(postgres_server, "game_create_plans", "game")
    connection = await asyncpg.connect(postgres_server.dsn(name), server_settings=POOL_SETTINGS)
    read = before_create_arguments("key-x", ["a1", "b1"], _AT, ["a1", "b1"])
    try:
        for number in range(8):  # past the custom plans PostgreSQL tries first
            await connection.fetch(BEFORE_CREATE, *read)
            assert len(await connection.fetch(CREATE, *create_arguments(_new_game(number)))) == 1
        await _grow_tables(connection, 20_000)
        async with reported_plans(connection) as plans:
            await connection.fetch(BEFORE_CREATE, *read)
            assert len(await connection.fetch(CREATE, *create_arguments(_new_game(99)))) == 1
            # The same key again: nothing is written, the caller reads the key's game.
            assert await connection.fetch(CREATE, *create_arguments(_new_game(99))) == []
    finally:
        await connection.close()
    assert tables_touched(plans, ("games", "self_exclusions", "screen_names")) == [
        "games", "self_exclusions", "screen_names",
    ]  # fmt: skip
    assert sequential_scans(plans) == [], "\n".join(plans)
