"""Integration fixtures: services running in-process on the real PostgreSQL and broker."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.identity import PLAYER_KEY_FILE
from tests.support.processes import ServeProcesses, serve_processes
from tests.support.services import (
    RunningService,
    new_database,
    start_accounts,
    start_geo,
    stop_service,
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
    # The key `tests.support.identity.as_player` signs with, so its tokens are good here too.
    service = await start_accounts(
        postgres_server.url(database), kafka_broker.bootstrap, PLAYER_KEY_FILE, module_monkeypatch
    )
    yield service
    await stop_service(service)


@pytest.fixture(scope="module")
async def geo_service(
    postgres_server: Any, kafka_broker: Any, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[RunningService]:
    """The geo service on the dev databases (which address is where: services/geo/devdata.py)."""
    database = new_database(postgres_server, "geo")
    service, close = await start_geo(
        postgres_server.url(database), kafka_broker.bootstrap, tmp_path_factory.mktemp("geo-dbs")
    )
    yield service
    await stop_service(service)
    close()


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[ServeProcesses]:
    """Real `tavla serve <service>` processes for one test; all ended after it."""
    with serve_processes(tmp_path) as processes:
        yield processes
