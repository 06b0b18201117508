"""Running a service in-process on the real PostgreSQL and broker, for integration tests."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from services.accounts import main as accounts_main
from services.kit.config import Settings
from services.kit.server import run_service


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


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
    def metrics_url(self) -> str:
        return f"http://127.0.0.1:{self.settings.metrics_port}/metrics"


async def start_accounts(
    database_url: str, bootstrap: str, key_file: Path, monkeypatch: pytest.MonkeyPatch
) -> RunningService:
    monkeypatch.setenv("TAVLA_JWT_PRIVATE_KEY_FILE", str(key_file))
    settings = Settings.from_env(
        "accounts",
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
    tokens = accounts_main.build_tokens()
    stop = asyncio.Event()
    task = asyncio.create_task(
        run_service(settings, lambda runtime: accounts_main.wiring(runtime, tokens), stop=stop)
    )
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{settings.grpc_port}")
    try:
        await asyncio.wait_for(channel.channel_ready(), timeout=60)
    except TimeoutError:
        task.cancel()
        raise
    return RunningService(settings=settings, channel=channel, stop=stop, task=task)


async def stop_service(service: RunningService) -> None:
    service.stop.set()
    await asyncio.wait_for(service.task, timeout=30)
    await service.channel.close()
