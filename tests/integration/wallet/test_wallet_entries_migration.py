"""Migration 0006 turns the entries table into a view of the transfers, and back.

The upgrade refuses a ledger whose entries say something their transfers do not:
dropping the table would otherwise lose the only trace of the damage.
"""

from __future__ import annotations

from typing import Any

import asyncpg  # type: ignore[import-untyped]
import pytest
from sqlalchemy.exc import DBAPIError

from tests.support.services import migrate_step, new_database

_LEDGER = """
INSERT INTO ledger_accounts (id, kind, currency, owner)
    VALUES ('player:p:USD', 'player', 'USD', 'p');
INSERT INTO transfers VALUES
    ('deposit', 'provider_clearing:USD', 'player:p:USD', 500, 'USD', 1, 'r', 'h', now()),
    ('fee', 'player:p:USD', 'house_commission:USD', 20, 'USD', 2, 'r', 'h', now());
INSERT INTO entries VALUES
    ('deposit', 'provider_clearing:USD', -500, 'USD'), ('deposit', 'player:p:USD', 500, 'USD'),
    ('fee', 'player:p:USD', -20, 'USD'), ('fee', 'house_commission:USD', 20, 'USD');
"""
_ENTRIES = "SELECT transfer_id, account_id, amount, currency FROM entries ORDER BY 1, 2"


async def test_entries_become_a_view_of_the_transfers_and_back(postgres_server: Any) -> None:
    name = new_database(postgres_server, "wallet_entries")
    url = postgres_server.url(name)
    await migrate_step("wallet", url, "up", "0005")
    connection = await asyncpg.connect(postgres_server.dsn(name))
    try:
        await connection.execute(_LEDGER)
        written = await connection.fetch(_ENTRIES)
        await migrate_step("wallet", url, "up", "0006")
        assert await connection.fetch(_ENTRIES) == written
        kind = "SELECT relkind::text FROM pg_class WHERE relname = 'entries'"
        assert await connection.fetchval(kind) == "v"
        with pytest.raises(asyncpg.PostgresError):  # derived: nothing to write to
            await connection.execute("INSERT INTO entries VALUES ('fee', 'x', 1, 'USD')")

        await migrate_step("wallet", url, "down", "0005")
        assert await connection.fetchval(kind) == "r"
        assert await connection.fetch(_ENTRIES) == written
        await connection.execute(
            "ALTER TABLE entries DISABLE TRIGGER entries_immutable;"
            "UPDATE entries SET amount = -21 WHERE transfer_id = 'fee' AND amount < 0"
        )
        with pytest.raises(DBAPIError, match="entries differ from their transfers in 2 rows"):
            await migrate_step("wallet", url, "up", "0006")
        assert await connection.fetchval(kind) == "r"  # nothing dropped
    finally:
        await connection.close()
