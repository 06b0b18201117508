"""Integration fixtures: services running in-process on the real PostgreSQL and broker."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.processes import ServeProcesses, serve_processes
from tests.support.services import (
    RunningService,
    new_database,
    start_accounts,
    stop_service,
    write_signing_key,
)


@pytest.fixture(scope="module")
def module_monkeypatch() -> Iterator[pytest.MonkeyPatch]:
    with pytest.MonkeyPatch.context() as patch:
        yield patch


@pytest.fixture(scope="module")
async def accounts_service(
    postgres_server: Any,
    kafka_broker: Any,
    tmp_path_factory: pytest.TempPathFactory,
    module_monkeypatch: pytest.MonkeyPatch,
) -> AsyncIterator[RunningService]:
    database = new_database(postgres_server, "accounts")
    key_file = write_signing_key(tmp_path_factory.mktemp("keys"))
    service = await start_accounts(
        postgres_server.url(database), kafka_broker.bootstrap, key_file, module_monkeypatch
    )
    yield service
    await stop_service(service)


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[ServeProcesses]:
    """Real `tavla serve <service>` processes for one test; all ended after it."""
    with serve_processes(tmp_path) as processes:
        yield processes
