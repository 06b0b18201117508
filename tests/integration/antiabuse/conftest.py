"""The anti-abuse service each detector module runs against: its own database, the
module's broker, the real consumers."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from services.antiabuse.main import wiring
from tavla.antiabuse.v1 import antiabuse_pb2_grpc
from tests.support.services import (
    RunningService,
    fast_settings,
    new_database,
    start_service,
    stop_service,
)


@pytest.fixture(scope="module")
async def antiabuse(postgres_server: Any, kafka_broker: Any) -> AsyncIterator[RunningService]:
    database = new_database(postgres_server, "antiabuse")
    service = await start_service(
        fast_settings("antiabuse", postgres_server.url(database), kafka_broker.bootstrap), wiring
    )
    yield service
    await stop_service(service)


@pytest.fixture
def stub(antiabuse: RunningService) -> antiabuse_pb2_grpc.AntiAbuseServiceStub:
    return antiabuse_pb2_grpc.AntiAbuseServiceStub(antiabuse.channel)
