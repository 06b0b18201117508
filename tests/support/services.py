"""Running a service in-process on the real PostgreSQL and broker, for integration tests."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from services.kit.clock import Clock
from services.kit.config import Settings
from services.kit.devstack.net import free_port
from services.kit.migrate import upgrade_async
from services.kit.server import Wire, run_service


def new_database(postgres_server: Any, prefix: str) -> str:
    """A database of its own on the tests' server, for one test or module: its name."""
    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    postgres_server.create_database(name)
    return name


async def migrated_database(postgres_server: Any, prefix: str, service: str) -> str:
    """:func:`new_database` with ``service``'s migrations applied: its name."""
    name = new_database(postgres_server, prefix)
    await upgrade_async(service, postgres_server.url(name))
    return name


def write_signing_key(directory: Path) -> Path:
    key = ec.generate_private_key(ec.SECP256R1())
    path = directory / "jwt-signing.pem"
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return path


@dataclass
class RunningService:
    settings: Settings
    channel: grpc.aio.Channel
    stop: asyncio.Event
    task: asyncio.Task[None]

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.settings.grpc_port}"

    @property
    def metrics_url(self) -> str:
        return f"http://127.0.0.1:{self.settings.metrics_port}/metrics"


def fast_settings(service: str, database_url: str, bootstrap: str) -> Settings:
    """Settings with fast readiness and outbox polling, on free ports."""
    return Settings.from_env(
        service,
        {
            "TAVLA_DATABASE_URL": database_url,
            "TAVLA_KAFKA_BOOTSTRAP": bootstrap,
            "TAVLA_GRPC_PORT": str(free_port()),
            "TAVLA_METRICS_PORT": str(free_port()),
            "TAVLA_READINESS_INTERVAL_SECONDS": "0.2",
            "TAVLA_OUTBOX_POLL_SECONDS": "0.2",
            "TAVLA_SHUTDOWN_GRACE_SECONDS": "2",
        },
    )


async def start_service(
    settings: Settings, wire: Wire, clock: Clock | None = None
) -> RunningService:
    """Migrate, serve, and return once the gRPC port answers (stop with :func:`stop_service`)."""
    stop = asyncio.Event()
    task = asyncio.create_task(run_service(settings, wire, clock=clock, stop=stop))
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{settings.grpc_port}")
    try:
        async with asyncio.timeout(60):
            while not task.done():
                try:
                    await asyncio.wait_for(channel.channel_ready(), timeout=0.5)
                    break
                except TimeoutError:
                    continue
        if task.done():
            task.result()  # the service died while starting: raise its error here
    except BaseException:
        task.cancel()
        await channel.close()
        raise
    return RunningService(settings=settings, channel=channel, stop=stop, task=task)


async def start_accounts(
    database_url: str, bootstrap: str, key_file: Path, monkeypatch: pytest.MonkeyPatch
) -> RunningService:
    from services.accounts import main as accounts_main

    monkeypatch.setenv("TAVLA_JWT_PRIVATE_KEY_FILE", str(key_file))
    tokens = accounts_main.build_tokens()
    return await start_service(
        fast_settings("accounts", database_url, bootstrap),
        lambda runtime: accounts_main.wiring(runtime, tokens),
    )


async def stop_service(service: RunningService) -> None:
    service.stop.set()
    await asyncio.wait_for(service.task, timeout=30)
    await service.channel.close()
