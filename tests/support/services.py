"""Running a service in-process on the real PostgreSQL and broker, for integration tests."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from alembic import command
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from services.kit.clock import Clock
from services.kit.config import Settings
from services.kit.db import make_engine
from services.kit.devstack.net import free_port
from services.kit.migrate import alembic_config, upgrade_async
from services.kit.player_tokens import KeySource
from services.kit.server import Runtime, Wire, Wiring, run_service
from tests.support.identity import caller_channel, gateway_port_env, player_keys, service_env


async def migrate_step(service: str, url: str, step: str, revision: str) -> None:
    """Moves ``service``'s schema at ``url`` "up" or "down" to ``revision`` (a migration's
    test: the rows written between two revisions)."""
    move = command.upgrade if step == "up" else command.downgrade
    await asyncio.to_thread(move, alembic_config(service, url), revision)


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


@asynccontextmanager
async def migrated_sessions(postgres_server: Any, prefix: str, service: str
                            ) -> AsyncIterator[async_sessionmaker[AsyncSession]]:
    """Sessions on a fresh database migrated for ``service`` (its engine disposed after)."""
    url = postgres_server.url(await migrated_database(postgres_server, prefix, service))
    engine = make_engine(url)
    try:
        yield async_sessionmaker(engine, expire_on_commit=False)
    finally:
        await engine.dispose()


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
    def gateway_port(self) -> int:
        """The gateway port (mutual TLS): calls there with the gateway's certificate are
        believed about the client's address (what :attr:`channel` does, and an Envoy in
        front given ``tests.support.identity.CERTIFICATES.upstream_tls()``)."""
        assert self.settings.gateway_port is not None
        return self.settings.gateway_port.port

    @property
    def gateway_address(self) -> str:
        return f"127.0.0.1:{self.gateway_port}"

    @property
    def metrics_url(self) -> str:
        return f"http://127.0.0.1:{self.settings.metrics_port}/metrics"


def fast_settings(
    service: str, database_url: str, bootstrap: str, **extra: str
) -> Settings:
    """Settings with readiness checked each second and fast outbox polling, on free ports
    of 127.0.0.1, with a gateway port (mutual TLS with the test CA,
    :mod:`tests.support.identity`).

    ``extra`` adds or overrides variables (``TAVLA_ACCOUNTS_ADDRESS="..."``).
    """
    return Settings.from_env(
        service,
        {
            **service_env(service),
            **gateway_port_env(service),
            "TAVLA_GRPC_BIND": "127.0.0.1",
            "TAVLA_METRICS_BIND": "127.0.0.1",
            "TAVLA_DATABASE_URL": database_url,
            "TAVLA_KAFKA_BOOTSTRAP": bootstrap,
            "TAVLA_GRPC_PORT": str(free_port()),
            "TAVLA_METRICS_PORT": str(free_port()),
            # Readiness is checked once a second, not every 0.2 s: each check may open a broker
            # connection and queries the database, which kept an idle service's process, its
            # PostgreSQL backend and the broker busy for nothing (docs/testing.md).
            "TAVLA_READINESS_INTERVAL_SECONDS": "1",
            "TAVLA_OUTBOX_POLL_SECONDS": "0.2",
            "TAVLA_SHUTDOWN_GRACE_SECONDS": "2",
            # Tansu answers a new group member's JoinGroup after half its session timeout:
            # 1 s here instead of 5 s with the default 10 s, for every consumer a test starts.
            "TAVLA_KAFKA_SESSION_TIMEOUT_MS": "2000",
            **extra,
        },
    )


def with_player_keys(wire: Wire, keys: KeySource) -> Wire:
    """``wire``, verifying access tokens with ``keys`` unless the service has its own."""

    def wired(runtime: Runtime) -> Wiring:
        wiring = wire(runtime)
        if wiring.player_keys is not None:
            return wiring
        return dataclasses.replace(wiring, player_keys=keys)

    return wired


async def start_service(
    settings: Settings, wire: Wire, clock: Clock | None = None, *, jwks: bool = False
) -> RunningService:
    """Migrate, serve, and return once the gRPC port answers (stop with :func:`stop_service`).

    Access tokens are verified with the test signing key (``as_player``), unless
    ``jwks`` asks for the real path: the JWKS of the accounts service at
    ``TAVLA_ACCOUNTS_ADDRESS``. The channel calls internal methods as a declared caller,
    and player methods as the gateway does (its certificate on the gateway port, when the
    service has one), so that the client address a test sends is believed.
    """
    stop = asyncio.Event()
    if not jwks:
        wire = with_player_keys(wire, player_keys())
    task = asyncio.create_task(run_service(settings, wire, clock=clock, stop=stop))
    channel = _test_channel(settings)
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


def _test_channel(settings: Settings) -> grpc.aio.Channel:
    if settings.gateway_port is None:
        return caller_channel(f"127.0.0.1:{settings.grpc_port}", settings.service)
    return caller_channel(f"127.0.0.1:{settings.gateway_port.port}", settings.service,
                          gateway=True)


async def start_accounts(
    database_url: str,
    bootstrap: str,
    key_file: Path,
    monkeypatch: pytest.MonkeyPatch,
    *,
    published_keys_dir: Path | None = None,
    settings: Settings | None = None,
) -> RunningService:
    """The accounts service signing access tokens with ``key_file`` (PEM)."""
    from services.accounts import main as accounts_main

    monkeypatch.setenv("TAVLA_JWT_PRIVATE_KEY_FILE", str(key_file))
    if published_keys_dir is None:
        monkeypatch.delenv("TAVLA_JWT_PUBLISHED_KEYS_DIR", raising=False)
    else:
        monkeypatch.setenv("TAVLA_JWT_PUBLISHED_KEYS_DIR", str(published_keys_dir))
    tokens = accounts_main.build_tokens()
    return await start_service(
        settings or fast_settings("accounts", database_url, bootstrap),
        lambda runtime: accounts_main.wiring(runtime, tokens),
    )


async def start_geo(
    database_url: str,
    bootstrap: str,
    databases_dir: Path,
    rules: Path | None = None,
    *,
    relay_process: bool = False,
) -> tuple[RunningService, Callable[[], None]]:
    """The geo service on the dev databases (services/geo/devdata.py) written to ``databases_dir``
    (and the rule file ``rules``, as an operator's ``TAVLA_GEO_RULES``; None: the shipped rules).

    Its outbox relay runs in the test's own event loop unless ``relay_process`` asks for
    production's setting, a child process (``TAVLA_OUTBOX_RELAY_PROCESS``): the modules
    that start geo as the location check of the service they test (about fifty in a run)
    each paid the child's start, a Python process importing the kit (1.0-1.6 s of CPU), for
    the same :class:`~services.kit.events.relay.OutboxRelay` publishing the same events.
    Geo's own tests (tests/integration/geo), the relay process's (test_relay_process.py),
    every ``tavla serve geo`` and every ``tavla dev`` run the child (docs/testing.md).

    Returns the running service and what closes its databases after
    :func:`stop_service`.
    """
    from services.geo.config import GeoSettings
    from services.geo.devdata import write_dev_databases
    from services.geo.main import build_service, wiring

    city, anonymous = write_dev_databases(databases_dir)
    service = build_service(GeoSettings(city_db=city, anonymous_db=anonymous, rules=rules))
    settings = fast_settings(
        "geo", database_url, bootstrap,
        TAVLA_OUTBOX_RELAY_PROCESS="true" if relay_process else "false",
    )  # fmt: skip
    running = await start_service(settings, lambda runtime: wiring(runtime, service))
    return running, service.close


async def stop_service(service: RunningService) -> None:
    service.stop.set()
    await asyncio.wait_for(service.task, timeout=30)
    await service.channel.close()
