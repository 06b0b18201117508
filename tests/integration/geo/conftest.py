"""Geo's own tests run it as production does: its outbox relay in a child process."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.support.services import RunningService, new_database, start_geo, stop_service


@pytest.fixture(scope="module")
async def geo_service(
    postgres_server: Any, kafka_broker: Any, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[RunningService]:
    """The geo service on the dev databases, its relay in a child process
    (``TAVLA_OUTBOX_RELAY_PROCESS``, geo's production default)."""
    database = new_database(postgres_server, "geo")
    service, close = await start_geo(
        postgres_server.url(database), kafka_broker.bootstrap,
        tmp_path_factory.mktemp("geo-dbs"), relay_process=True,
    )  # fmt: skip
    yield service
    await stop_service(service)
    close()
