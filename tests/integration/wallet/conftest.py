"""Wallet fixtures: one database and one in-process wallet service per test module."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from services.kit.clock import ManualClock
from tavla.wallet.v1 import wallet_pb2_grpc
from tests.support.services import RunningService, new_database, stop_service
from tests.support.wallet import GAME_STARTED_AT, Wallet, direct_consumer, start_wallet


@pytest.fixture(scope="module")
async def wallet(
    postgres_server: Any, kafka_broker: Any, geo_service: RunningService
) -> AsyncIterator[Wallet]:
    """The wallet asking the real geo service (test players call from Malta by default)."""
    database = new_database(postgres_server, "wallet")
    url = postgres_server.url(database)
    clock = ManualClock(GAME_STARTED_AT)
    service = await start_wallet(
        url, kafka_broker.bootstrap, clock=clock, geo_address=geo_service.address
    )
    consumer = direct_consumer(url, clock, pool=40)
    yield Wallet(
        service, wallet_pb2_grpc.WalletServiceStub(service.channel), clock, database, url, consumer
    )
    await consumer.close()
    await stop_service(service)
