"""What consulting's population line costs to read at production's scale (`make bench`).

A million accounts' paces in ``account_paces`` (real PostgreSQL, the tests' server; 90 %
with 20 think times or more, paces around 8 s), ``pace_buckets`` filled from them by
migration 0017. Prints, for the read from ``pace_buckets`` (:meth:`PlayFacts.paces`) and
the whole-table read it replaced (:meth:`PlayFacts.paces_of_every_account`), the median
wall time of five reads through the store and the rows PostgreSQL read (EXPLAIN ANALYZE),
and the migration's fill time; asserts that both reads give the same population.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg  # type: ignore[import-untyped]
from sqlalchemy.ext.asyncio import async_sessionmaker

from services.antiabuse.domain.consulting_play import PacePopulation
from services.antiabuse.play_store import PlayFacts
from services.kit.db import make_engine
from tests.support.services import migrate_step, new_database

ACCOUNTS = 1_000_000
READS = 5

_FILL = """
SELECT setseed(0.2026);
INSERT INTO account_paces (account_id, think_times, log_seconds)
SELECT 'acct-' || i, t, t * (ln(8) + 0.5 * random_normal())
FROM (SELECT i, CASE WHEN random() < 0.1 THEN 1 + floor(random() * 19)::int
                     ELSE 20 + floor(random() * 2000)::int END AS t
      FROM generate_series(1, $1::int) AS i) AS drawn;
ANALYZE account_paces;
"""
_WHOLE = (
    "SELECT floor(log_seconds / think_times / 0.05) AS bucket, count(*) FROM account_paces "
    "WHERE think_times >= 20 GROUP BY 1"
)
_KEPT = "SELECT bucket, sum(accounts) FROM pace_buckets GROUP BY bucket HAVING sum(accounts) > 0"


async def _median_ms(read: Callable[[], Awaitable[PacePopulation]]) -> tuple[float, PacePopulation]:
    times, got = [], PacePopulation({})
    for _ in range(READS):
        started = time.perf_counter()
        got = await read()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), got


async def _plan(connection: Any, sql: str) -> str:
    rows = await connection.fetch(f"EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) {sql}")
    return "\n    ".join(r[0] for r in rows)


async def test_population_paces_read_at_a_million_accounts(postgres_server: Any) -> None:
    name = new_database(postgres_server, "paces_bench")
    url = postgres_server.url(name)
    await migrate_step("antiabuse", url, "up", "0016")
    connection = await asyncpg.connect(postgres_server.dsn(name))
    engine = make_engine(url)
    try:
        for statement in _FILL.strip().split(";\n"):
            await connection.execute(statement, *([ACCOUNTS] if "$1" in statement else []))
        started = time.perf_counter()
        await migrate_step("antiabuse", url, "up", "0017")
        fill_s = time.perf_counter() - started
        await connection.execute("ANALYZE pace_buckets")
        sessions = async_sessionmaker(engine)
        async with sessions() as session:
            facts = PlayFacts(session)
            whole_ms, whole = await _median_ms(lambda: facts.paces_of_every_account(20))
            kept_ms, kept = await _median_ms(facts.paces)
        assert kept == whole and sum(kept.buckets.values()) > ACCOUNTS // 2
        rows = await connection.fetchval("SELECT count(*) FROM pace_buckets")
        print(
            f"\npopulation paces, {ACCOUNTS:,} accounts ({sum(kept.buckets.values()):,} with a "
            f"pace, {len(kept.buckets)} buckets): whole-table read {whole_ms:.1f} ms, "
            f"pace_buckets read {kept_ms:.2f} ms ({rows} rows), median of {READS}; "
            f"migration 0017's fill {fill_s:.1f} s"
        )
        print(f"  whole-table read:\n    {await _plan(connection, _WHOLE)}")
        print(f"  pace_buckets read:\n    {await _plan(connection, _KEPT)}")
    finally:
        await engine.dispose()
        await connection.close()
