"""The outbox relay in a child process (TAVLA_OUTBOX_RELAY_PROCESS): the same promise as
in the service's process: every committed event published, signed by the service's key,
nothing lost when the child dies, and it never outlives its service."""

from __future__ import annotations

import asyncio
import os
import signal
import uuid
from typing import Any

import pytest
from prometheus_client import REGISTRY
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import async_sessionmaker

from services.kit.clock import SystemClock
from services.kit.config import Settings
from services.kit.credentials import load_service_credentials
from services.kit.db import UnitOfWork, make_engine
from services.kit.events.relay_process import RelayProcess
from services.kit.events.tables import event_metadata, outbox_row, parked_metadata
from services.kit.server import build_runtime
from tavla.accounts.v1 import events_pb2
from tests.support.kafka import event_verifier, headers_of, keyed_records
from tests.support.services import fast_settings, new_database

TOPIC = "tavla.accounts.v1"


@pytest.fixture
async def settings(postgres_server: Any, kafka_broker: Any) -> Any:
    url = postgres_server.url(new_database(postgres_server, "relayproc"))
    engine = make_engine(url)
    async with engine.begin() as connection:
        await connection.run_sync(event_metadata.create_all)
        await connection.run_sync(parked_metadata.create_all)
    await engine.dispose()
    # accounts: its key signs, and it owns the topic the events go to.
    yield fast_settings("accounts", url, kafka_broker.bootstrap,
                        TAVLA_OUTBOX_RELAY_PROCESS="true")  # fmt: skip


async def record(settings: Settings, relay: RelayProcess, account_id: str) -> None:
    """An event committed as a service commits it, waking the relay."""
    engine = make_engine(settings.database_url, pool_size=1)
    try:
        sessions = async_sessionmaker(engine, expire_on_commit=False)
        uow = UnitOfWork(sessions, source="accounts", clock=SystemClock(), on_commit=relay.wake)
        async with uow:
            uow.publish(TOPIC, account_id, events_pb2.AccountRegistered(account_id=account_id))
            await uow.commit()
    finally:
        await engine.dispose()


async def unsent(settings: Settings) -> int:
    engine = make_engine(settings.database_url, pool_size=1)
    try:
        async with engine.connect() as connection:
            query = select(func.count()).where(outbox_row.c.sent_at.is_(None))
            return int(await connection.scalar(query) or 0)
    finally:
        await engine.dispose()


def published(topic: str = TOPIC) -> float:
    value = REGISTRY.get_sample_value(
        "tavla_events_published_total", {"service": "accounts", "topic": topic}
    )
    return value or 0.0


def test_the_setting_chooses_the_relay_in_a_child_process(settings: Settings) -> None:
    credentials = load_service_credentials(settings)
    assert isinstance(build_runtime(settings, credentials).relay, RelayProcess)
    url, bootstrap = settings.database_url, settings.kafka_bootstrap
    assert fast_settings("geo", url, bootstrap).outbox_relay_process  # geo's default
    assert not fast_settings("geo", url, bootstrap,
                             TAVLA_OUTBOX_RELAY_PROCESS="false").outbox_relay_process  # fmt: skip
    assert not fast_settings("wallet", url, bootstrap).outbox_relay_process


async def test_the_child_publishes_signed_events_and_stops_with_its_service(
    settings: Settings, kafka_broker: Any
) -> None:
    relay = RelayProcess(settings)
    before = published()
    running = asyncio.create_task(relay.run())
    account_id = str(uuid.uuid4())
    try:
        await record(settings, relay, account_id)
        (delivered,) = await keyed_records(kafka_broker.bootstrap, TOPIC, account_id,
                                           lambda found: len(found) == 1)  # fmt: skip
        producer = event_verifier().producer(
            TOPIC, account_id, delivered.value, headers_of(delivered)
        )
        assert producer == "accounts"
        assert await unsent(settings) == 0
    finally:
        running.cancel()  # as run_service cancels its tasks before stopping the relay
        await asyncio.gather(running, return_exceptions=True)
        child = relay._process
        await relay.stop(drain_seconds=2)
    assert child is not None and child.returncode == 0
    # The child's count reached this process's /metrics.
    assert published() == before + 1


async def test_a_killed_child_is_restarted_and_what_was_committed_meanwhile_goes_out(
    settings: Settings, kafka_broker: Any
) -> None:
    relay = RelayProcess(settings, restart_seconds=0.2)
    running = asyncio.create_task(relay.run())
    try:
        async with asyncio.timeout(30):
            while relay._process is None:
                await asyncio.sleep(0.05)
        first = relay._process
        os.kill(first.pid, signal.SIGKILL)
        await first.wait()
        account_id = str(uuid.uuid4())
        await record(settings, relay, account_id)  # committed while no relay runs
        await keyed_records(kafka_broker.bootstrap, TOPIC, account_id,
                            lambda found: len(found) == 1)  # fmt: skip
        assert relay._process is not first
    finally:
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)
        await relay.stop(drain_seconds=2)


async def test_the_child_exits_when_its_service_dies(settings: Settings) -> None:
    """The service killed outright (its end of stdin closes with it): the child goes too."""
    relay = RelayProcess(settings)
    running = asyncio.create_task(relay.run())
    try:
        async with asyncio.timeout(30):
            while relay._process is None:
                await asyncio.sleep(0.05)
        child = relay._process
        assert child.stdin is not None
        child.stdin.transport.abort()  # what the kernel does to a SIGKILLed service's pipe
        async with asyncio.timeout(20):
            assert await child.wait() == 0
    finally:
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)
        await relay.stop(drain_seconds=1)
