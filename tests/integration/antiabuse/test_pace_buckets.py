"""The population's paces read from ``pace_buckets`` (migration 0017) are the ones read from
every account's pace (real PostgreSQL):

- an account enters its bucket at its 20th counted think time, moves when its pace leaves
  the bucket (the bucket it left no longer counts it), and a forced move or a missing or
  non-finite think time changes nothing;
- after 600 analyses of 80 accounts at paces drawn at random, applied by four concurrent
  transactions, the buckets read are those counted here from the same think times, and
  those of the whole-table read;
- the migration fills the buckets from the paces kept before it, and downgrading drops them.
"""

from __future__ import annotations

import asyncio
import math
import random
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime
from typing import Any

import asyncpg  # type: ignore[import-untyped]
import pytest
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from services.antiabuse.domain.assistance import Move
from services.antiabuse.play_store import PlayFacts
from tests.support.services import migrate_step, migrated_sessions, new_database

Sessions = async_sessionmaker[AsyncSession]
AT = datetime(2026, 12, 6, 12, tzinfo=UTC)
WORKERS = 4


@pytest.fixture
async def sessions(postgres_server: Any) -> AsyncIterator[Sessions]:
    async with migrated_sessions(postgres_server, "paces", "antiabuse") as sessions:
        yield sessions


def moves(seconds: Sequence[float | None], counted: bool = True) -> list[Move]:
    return [Move("", 1, "checker", counted, 0.0, s) for s in seconds]


async def analysed(sessions: Sessions, account: str, played: list[Move]) -> None:
    async with sessions() as session, session.begin():
        assert await PlayFacts(session).analysed(uuid.uuid4().hex, account, played, AT)


async def both_reads(sessions: Sessions) -> tuple[dict[int, int], dict[int, int]]:
    async with sessions() as session:
        facts = PlayFacts(session)
        kept = await facts.paces()
        scanned = await facts.paces_of_every_account(20)
    return dict(kept.buckets), dict(scanned.buckets)


async def test_an_account_enters_and_moves_between_buckets(sessions: Sessions) -> None:
    await analysed(sessions, "x", moves([6.0] * 19))
    await analysed(sessions, "x", moves([None, float("nan"), float("inf")]))
    await analysed(sessions, "x", moves([1.0] * 5, counted=False))  # forced: not a pace
    assert await both_reads(sessions) == ({}, {})  # 19 think times: no pace yet
    await analysed(sessions, "x", moves([6.0]))
    # ln 6 / 0.05 = 35.8: bucket 35
    assert await both_reads(sessions) == ({35: 1}, {35: 1})
    await analysed(sessions, "x", moves([30.0] * 20))
    # (20 ln 6 + 20 ln 30) / 40 = ln 180 / 2 = 2.596; / 0.05 = 51.9: bucket 51, 35 left
    assert await both_reads(sessions) == ({51: 1}, {51: 1})
    await analysed(sessions, "y", moves([0.05] * 25))  # instant: 0.1 s, ln 0.1 / 0.05 = -46.05
    assert await both_reads(sessions) == ({51: 1, -47: 1}, {51: 1, -47: 1})


async def test_buckets_kept_are_those_of_every_pace(sessions: Sessions) -> None:
    rng = random.Random(20261206)
    accounts = [f"acct-{i}" for i in range(80)]
    paces = {a: rng.uniform(0.5, 3.5) for a in accounts}  # each account's mean log think time
    logs: dict[str, list[float]] = {a: [] for a in accounts}
    plans: list[list[tuple[str, list[float]]]] = [[] for _ in range(WORKERS)]
    for _ in range(600):
        account = rng.choice(accounts)
        times = [math.exp(rng.gauss(paces[account], 0.6)) for _ in range(rng.randint(1, 8))]
        plans[accounts.index(account) % WORKERS].append((account, times))
        logs[account] += [math.log(max(t, 0.1)) for t in times]

    async def worker(plan: list[tuple[str, list[float]]]) -> None:
        for account, times in plan:
            await analysed(sessions, account, moves(times))

    # Accounts of one bucket row on different workers at once, as the consumer applies
    # analyses of different players (each account on one worker: its lock, in the service)
    await asyncio.gather(*(worker(plan) for plan in plans))
    expected = Counter(
        math.floor(sum(x) / len(x) / 0.05) for x in logs.values() if len(x) >= 20
    )
    kept, scanned = await both_reads(sessions)
    assert sum(expected.values()) >= 40 and len(expected) >= 20  # many accounts, many buckets
    assert kept == dict(expected)
    assert scanned == kept


_PACES = """
INSERT INTO account_paces (account_id, think_times, log_seconds) VALUES
    ('a', 20, 20 * ln(6)), ('b', 40, 40 * ln(6)), ('c', 19, 19 * ln(6)), ('d', 25, 25 * ln(30));
"""


async def test_the_migration_fills_the_buckets(postgres_server: Any) -> None:
    name = new_database(postgres_server, "antiabuse_buckets")
    url = postgres_server.url(name)
    await migrate_step("antiabuse", url, "up", "0016")
    connection = await asyncpg.connect(postgres_server.dsn(name))
    try:
        await connection.execute(_PACES)
        await migrate_step("antiabuse", url, "up", "0017")
        rows = await connection.fetch(
            "SELECT bucket, sum(accounts) AS n, min(row_id) AS low, max(row_id) AS high "
            "FROM pace_buckets GROUP BY bucket ORDER BY bucket"
        )
        # a and b at 6 s (bucket 35), d at 30 s (ln 30 / 0.05 = 68.0), c under 20: left out
        assert [(r["bucket"], r["n"]) for r in rows] == [(35, 2), (68, 1)]
        assert all(1 <= r["low"] <= r["high"] <= 32 for r in rows)
        await migrate_step("antiabuse", url, "down", "0016")
        with pytest.raises(asyncpg.UndefinedTableError):
            await connection.fetch("SELECT * FROM pace_buckets")
    finally:
        await connection.close()
