"""Migration 0016 fills ``account_paces`` from the decisions kept before it, as the store
adds to it after: per account, its counted decisions with a think time and the sum of their
natural logs (0.1 s at least); forced moves and decisions without a time are left out.
Downgrading drops the table."""

from __future__ import annotations

import math
from typing import Any

import asyncpg  # type: ignore[import-untyped]
import pytest

from tests.support.services import migrate_step, new_database

_DECISIONS = """
INSERT INTO analysed_decisions (game_id, account_id, seq, game_number, kind, counted, error,
                                seconds, analysed_at) VALUES
    ('g1', 'a', 0, 1, 'checker', true, 0.0, 2.0, now()),
    ('g1', 'a', 1, 1, 'checker', true, 0.02, 8.0, now()),
    ('g1', 'a', 2, 1, 'checker', false, 0.0, 0.5, now()),
    ('g2', 'a', 0, 1, 'take', true, 0.0, 0.0, now()),
    ('g2', 'b', 0, 1, 'checker', true, 0.0, NULL, now()),
    ('g2', 'b', 1, 1, 'checker', false, 0.0, 1.0, now());
"""


async def test_paces_are_filled_from_the_decisions_kept(postgres_server: Any) -> None:
    name = new_database(postgres_server, "antiabuse_paces")
    url = postgres_server.url(name)
    await migrate_step("antiabuse", url, "up", "0015")
    connection = await asyncpg.connect(postgres_server.dsn(name))
    try:
        await connection.execute(_DECISIONS)
        await migrate_step("antiabuse", url, "up", "0016")
        rows = await connection.fetch("SELECT * FROM account_paces ORDER BY account_id")
        # 'a': 2 s, 8 s and an instant take (0.1 s): ln 2 + ln 8 + ln 0.1 = -0.6094; its
        # forced move left out. 'b': no counted decision with a time, no row.
        assert [(r["account_id"], r["think_times"]) for r in rows] == [("a", 3)]
        assert rows[0]["log_seconds"] == pytest.approx(
            math.log(2) + math.log(8) + math.log(0.1), abs=1e-9
        )
        await migrate_step("antiabuse", url, "down", "0015")
        with pytest.raises(asyncpg.UndefinedTableError):
            await connection.fetch("SELECT * FROM account_paces")
    finally:
        await connection.close()
