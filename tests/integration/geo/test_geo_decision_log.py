"""Geo records decisions in group commits on real PostgreSQL: none answered unrecorded.

Calls that arrive while a commit is in flight share the next transaction; each
call returns only once the transaction holding its events committed, and when
that transaction fails every call in it fails. The writer keeps one connection of
its own, and opens a new one when the database dropped it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from typing import Any

import asyncpg  # type: ignore[import-untyped]
import pytest
from prometheus_client import REGISTRY
from sqlalchemy import text

from services.geo.events import DecisionLog, connector, write_group
from services.kit.clock import SystemClock
from services.kit.db import make_engine
from services.kit.events.envelope import Envelope
from services.kit.events.tables import outbox_row
from tavla.geo.v1 import geo_pb2
from tests.support.services import migrated_database

CALLS = 60


def _decision(index: int, outcome: int) -> tuple[geo_pb2.LocationDecision, Any]:
    decision = geo_pb2.LocationDecision(
        check_id=str(uuid.uuid4()),
        decision=outcome,  # type: ignore[arg-type]
        evidence=geo_pb2.Evidence(ip_address=f"192.0.2.{index}"),
        rules_version="tavla-2026-12",
    )
    request = geo_pb2.CheckLocationRequest(
        ip_address=f"192.0.2.{index}", purpose=geo_pb2.PURPOSE_DEPOSIT, account_id=f"a-{index}"
    )
    return decision, request


def _timed_commits() -> float:
    return REGISTRY.get_sample_value("tavla_group_commit_seconds_count", {"service": "geo"}) or 0


def _log(url: str, connect: Any = None) -> tuple[DecisionLog, Any]:
    engine = make_engine(url, pool_size=2)
    return DecisionLog(connect or connector(url), source="geo", clock=SystemClock()), engine


async def test_concurrent_decisions_share_commits_and_each_is_recorded(
    postgres_server: Any,
) -> None:
    url = postgres_server.url(await migrated_database(postgres_server, "geo_log", "geo"))
    log, engine = _log(url)
    try:
        decisions = [
            _decision(i, geo_pb2.DECISION_BLOCK if i % 3 == 0 else geo_pb2.DECISION_ALLOW)
            for i in range(CALLS)
        ]
        timed_before = _timed_commits()
        await asyncio.gather(*(log.record(d, r) for d, r in decisions))
        assert 1 <= log.commits < CALLS  # grouped: fewer transactions than calls
        assert _timed_commits() - timed_before == log.commits  # each one's time on /metrics
        async with engine.connect() as connection:
            rows = (
                await connection.execute(text("SELECT key, ce_type FROM outbox ORDER BY seq"))
            ).all()
        checked = sorted(key for key, kind in rows if kind == "tavla.geo.v1.LocationChecked")
        blocked = sorted(key for key, kind in rows if kind == "tavla.geo.v1.LocationBlocked")
        assert checked == sorted(f"a-{i}" for i in range(CALLS))
        assert blocked == sorted(f"a-{i}" for i in range(0, CALLS, 3))
    finally:
        await log.close()
        await engine.dispose()


async def test_a_failed_commit_fails_every_call_in_it(postgres_server: Any) -> None:
    # A database without the geo tables: the outbox insert fails, as a real outage would.
    url = postgres_server.url(await migrated_database(postgres_server, "geo_log", "geo"))
    log, engine = _log(url)
    try:
        async with engine.begin() as connection:
            await connection.execute(text("DROP TABLE outbox"))
        calls = [log.record(*_decision(i, geo_pb2.DECISION_ALLOW)) for i in range(10)]
        results = await asyncio.gather(*calls, return_exceptions=True)
        assert all(isinstance(result, Exception) for result in results), results
        # The log stays usable: once the table is back, the next call is recorded.
        async with engine.begin() as connection:
            await connection.run_sync(outbox_row.create)
        await log.record(*_decision(99, geo_pb2.DECISION_ALLOW))
        async with engine.connect() as connection:
            keys = (await connection.execute(text("SELECT key FROM outbox"))).scalars().all()
        assert keys == ["a-99"]
    finally:
        await log.close()
        await engine.dispose()


@pytest.mark.parametrize("cancelled", [0, 3])
async def test_a_caller_that_gives_up_does_not_cancel_the_others(
    postgres_server: Any, cancelled: int
) -> None:
    url = postgres_server.url(await migrated_database(postgres_server, "geo_log", "geo"))
    log, engine = _log(url)
    try:
        tasks = [asyncio.create_task(log.record(*_decision(i, geo_pb2.DECISION_ALLOW)))
                 for i in range(12)]  # fmt: skip
        await asyncio.sleep(0)
        for task in tasks[:cancelled]:
            task.cancel()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        assert all(result is None for result in results[cancelled:]), results
        async with engine.connect() as connection:
            count = await connection.scalar(text("SELECT count(*) FROM outbox"))
        assert count == 12  # even the calls that gave up were recorded, never half of them
    finally:
        await log.close()
        await engine.dispose()


async def test_a_group_is_one_statement_without_begin_or_commit(postgres_server: Any) -> None:
    url = postgres_server.url(await migrated_database(postgres_server, "geo_log", "geo"))
    sent: list[str] = []
    opened = 0

    async def connect() -> Any:
        nonlocal opened
        opened += 1
        connection = await connector(url)()
        connection.add_query_logger(lambda record: sent.append(record.query))
        return connection

    log, engine = _log(url, connect)
    try:
        for burst in range(3):  # three bursts, so several groups one after another
            await asyncio.gather(*(log.record(*_decision(10 * burst + i, geo_pb2.DECISION_ALLOW))
                                   for i in range(5)))  # fmt: skip
        async with engine.connect() as connection:
            count = await connection.scalar(text("SELECT count(*) FROM outbox"))
        assert count == 15
        assert log.commits >= 3
        assert opened == 1  # the writer's one connection, kept from group to group
        inserts = [q for q in sent if q.lstrip().upper().startswith("INSERT INTO OUTBOX")]
        assert len(inserts) == log.commits  # one statement per group
        # and no transaction around it (what else was sent is asyncpg's type introspection,
        # once per connection)
        assert [q for q in sent if q.strip(" ;").upper() in ("BEGIN", "COMMIT")] == []
    finally:
        await log.close()
        await engine.dispose()


async def test_a_lost_connection_fails_its_group_and_the_next_group_reconnects(
    postgres_server: Any,
) -> None:
    url = postgres_server.url(await migrated_database(postgres_server, "geo_log", "geo"))
    log, engine = _log(url)
    try:
        await log.record(*_decision(1, geo_pb2.DECISION_ALLOW))
        async with engine.connect() as connection:  # the database drops the writer's connection
            await connection.execute(text(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            ))  # fmt: skip
            await connection.commit()
        outcome = await asyncio.gather(log.record(*_decision(2, geo_pb2.DECISION_ALLOW)),
                                       return_exceptions=True)  # fmt: skip
        await log.record(*_decision(3, geo_pb2.DECISION_ALLOW))  # on a new connection
        async with engine.connect() as connection:
            keys = (await connection.execute(text("SELECT key FROM outbox"))).scalars().all()
        # The call whose statement met the dropped connection either failed unrecorded
        # or (had the drop not reached it yet) was recorded: never answered unrecorded.
        expected = ["a-1", "a-3"] if isinstance(outcome[0], Exception) else ["a-1", "a-2", "a-3"]
        assert sorted(keys) == expected
    finally:
        await log.close()
        await engine.dispose()


async def test_a_group_is_recorded_whole_or_not_at_all(postgres_server: Any) -> None:
    url = postgres_server.url(await migrated_database(postgres_server, "geo_log", "geo"))
    engine = make_engine(url, pool_size=2)
    clock = SystemClock()
    try:
        async with engine.begin() as connection:  # an event id the group will clash with
            await connection.execute(text(
                "INSERT INTO outbox (event_id, topic, key, ce_type, payload, headers, created_at)"
                " VALUES ('taken', 't', 'k', 'x', '', '{}', now())"
            ))  # fmt: skip
        group = [
            Envelope.wrap(topic="tavla.geo.v1", key=f"a-{i}", source="geo", now=clock.now(),
                          message=geo_pb2.LocationDecision(check_id=f"c-{i}"))
            for i in range(4)
        ]  # fmt: skip
        group[2] = dataclasses.replace(group[2], event_id="taken")
        connection = await connector(url)()
        try:
            with pytest.raises(asyncpg.UniqueViolationError):
                await write_group(connection, group)
        finally:
            await connection.close()
        async with engine.connect() as connection:
            keys = (await connection.execute(text("SELECT key FROM outbox"))).scalars().all()
        assert keys == ["k"]  # none of the group's rows, not even those before the clash
    finally:
        await engine.dispose()
