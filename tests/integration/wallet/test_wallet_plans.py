"""The wallet's statements find rows by key however much the tables grew.

Grouped settlement plans its statements once per connection (generic plans); every
other statement of the platform is planned for its values (the kit's engine). A
generic plan made on an empty table would scan it sequentially, and the
connection would keep that plan as the table grows to millions of rows. The
tests read the plans statements ran with (auto_explain), after the tables grew
under a connection that had run them while empty.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import asyncpg  # type: ignore[import-untyped]
from sqlalchemy.ext.asyncio import AsyncSession

from services.kit.db import make_engine
from services.wallet import grouped_sql as sql
from services.wallet.store.ledger import LedgerRepository
from tests.support.plans import reported_plans, sequential_scans, tables_touched
from tests.support.services import migrated_database

# The statements' parameters: WRITE's are arrays but for the shard number.
_WRITE_PARAMETERS = max(int(n) for n in re.findall(r"\$(\d+)", sql.WRITE))
_SHARD = int(re.findall(r"\$(\d+)::smallint(?!\[)", sql.WRITE)[0]) - 1
_AT = datetime(2026, 11, 29, tzinfo=UTC)


def _lock_arguments(n: int) -> list[Any]:
    events = [f"event-{i}" for i in range(n)]
    players = [f"player:p{i}:USD" for i in range(n)]
    return [
        events, "wallet.settlement", ["tavla.game.v1.GameEnded"] * n, [_AT] * n,
        [f"hold-{i}" for i in range(n)], players, ["house_commission:USD"], players,
        ["USD"] * n, [f"p{i}" for i in range(n)], [f"settlement-{i}" for i in range(n)],
    ]  # fmt: skip


def _empty_write_arguments() -> list[Any]:
    arguments: list[Any] = [[] for _ in range(_WRITE_PARAMETERS)]
    arguments[_SHARD] = 0
    return arguments


async def _run_group(connection: asyncpg.Connection) -> None:
    await connection.execute(sql.BEGIN)
    await connection.fetchrow(sql.LOCK_GROUP, *_lock_arguments(3))
    await connection.execute(sql.WRITE, *_empty_write_arguments())
    await connection.execute("ROLLBACK")


async def _grow_tables(connection: asyncpg.Connection, rows: int) -> None:
    await connection.execute(
        """
        INSERT INTO ledger_accounts (id, kind, currency, owner)
        SELECT 'player:g' || i || ':USD', 'player', 'USD', 'g' || i FROM generate_series(1, $1) i;
        INSERT INTO holds (id, player_id, table_id, currency, amount, status,
                           idempotency_key, created_at, updated_at)
        SELECT 'hold-g' || i, 'g' || i, 't' || i, 'USD', 100, 'open', 'k', now(), now()
        FROM generate_series(1, $1) i;
        INSERT INTO settlements (id, game_id, game_number, table_id, kind, currency, win_sum,
                                 commission_total, rate, schedule_version, disconnection,
                                 status, source_event_id, settled_at)
        SELECT 'settlement-g' || i, 'game-' || i, 1, 't' || i, 'single', 'USD', 100, 8,
               '0.049', 'v1', false, 'settled', 'e' || i, now()
        FROM generate_series(1, $1) i;
        INSERT INTO inbox (event_id, consumer, ce_type, processed_at)
        SELECT 'event-g' || i, 'wallet.settlement', 'x', now() FROM generate_series(1, $1) i;
        """.replace("$1", str(rows))
    )


async def test_group_statements_keep_index_lookups_as_tables_grow(postgres_server: Any) -> None:
    name = await migrated_database(postgres_server, "wallet_plans", "wallet")
    connection = await asyncpg.connect(postgres_server.dsn(name))
    try:
        await _run_group(connection)  # plans made while every table is empty
        await _grow_tables(connection, 20_000)
        async with reported_plans(connection) as plans:
            await _run_group(connection)
    finally:
        await connection.close()
    tables = ("settlements", "ledger_accounts", "holds", "inbox")
    assert tables_touched(plans, tables) == list(tables)
    assert sequential_scans(plans) == [], "\n".join(plans)


async def test_the_one_by_one_path_is_planned_for_its_values(postgres_server: Any) -> None:
    """The reference path's account lock, through the kit's engine, as a use case runs it."""
    name = await migrated_database(postgres_server, "wallet_plans", "wallet")
    engine = make_engine(postgres_server.url(name), pool_size=1)
    accounts = [f"player:p{i}:USD" for i in range(3)] + ["house_commission:USD"]
    try:
        async with engine.connect() as connection:
            ledger = LedgerRepository(AsyncSession(bind=connection))
            for _ in range(8):  # past the custom plans PostgreSQL tries before a generic one
                await ledger.load(accounts)
            driver = (await connection.get_raw_connection()).driver_connection
            await _grow_tables(driver, 20_000)
            async with reported_plans(driver) as plans:
                await ledger.load(accounts)
            await connection.rollback()
    finally:
        await engine.dispose()
    assert tables_touched(plans, ("ledger_accounts",)) == ["ledger_accounts"]
    # system_balance_shards is bounded (a fixed number of shards per system account, a
    # few hundred rows): scanning it whole is the planner's right choice, not a miss.
    scanned = [t for t in sequential_scans(plans) if t != "system_balance_shards"]
    assert scanned == [], "\n".join(plans)
