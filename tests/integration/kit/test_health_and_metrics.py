"""Readiness follows the database, and every RPC is counted on /metrics."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from services.kit.devstack.postgres import PostgresServer
from services.kit.devstack.supervisor import Supervisor
from tavla.accounts.v1 import accounts_pb2, accounts_pb2_grpc
from tests.support.identity import as_player
from tests.support.services import (
    RunningService,
    free_port,
    start_accounts,
    stop_service,
    write_signing_key,
)

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


async def health_status(channel: grpc.aio.Channel, service: str = "") -> int:
    response = await health_pb2_grpc.HealthStub(channel).Check(
        health_pb2.HealthCheckRequest(service=service), timeout=5
    )
    return int(response.status)


async def wait_for_status(channel: grpc.aio.Channel, wanted: int, timeout: float = 30) -> None:
    async with asyncio.timeout(timeout):
        while await health_status(channel) != wanted:
            await asyncio.sleep(0.1)


async def test_health_turns_not_serving_without_the_database_and_back_when_it_returns(
    tmp_path: Path, kafka_broker: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A database of its own: taking the shared one away would disturb other tests.
    supervisor = Supervisor(tmp_path / "logs")
    database = PostgresServer(tmp_path / "pg", free_port(), supervisor, name="health-pg")
    database.start()
    try:
        database.create_database("tavla_accounts")
        service = await start_accounts(
            database.url("tavla_accounts"),
            kafka_broker.bootstrap,
            write_signing_key(tmp_path),
            monkeypatch,
        )
        try:
            await wait_for_status(service.channel, SERVING)
            assert await health_status(service.channel, "tavla.accounts.v1.AccountsService") == (
                SERVING
            )

            database.stop()
            await wait_for_status(service.channel, NOT_SERVING)
            assert await health_status(service.channel, "tavla.accounts.v1.AccountsService") == (
                NOT_SERVING
            )
            # Liveness stays up: restarting the pod would not bring the database back.
            assert await health_status(service.channel, "tavla.liveness") == SERVING

            database.start()
            await wait_for_status(service.channel, SERVING)
        finally:
            await stop_service(service)
    finally:
        supervisor.stop_all()


def rpc_count(metrics: str, method: str, code: str) -> float:
    prefix = f'tavla_rpc_requests_total{{code="{code}",method="{method}",service="accounts"}}'
    for line in metrics.splitlines():
        if line.startswith(prefix):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


async def test_metrics_count_each_call_by_method_and_status(
    accounts_service: RunningService,
) -> None:
    stub = accounts_pb2_grpc.AccountsServiceStub(accounts_service.channel)
    method = "/tavla.accounts.v1.AccountsService/GetAccount"
    async with httpx.AsyncClient() as http:
        before = (await http.get(accounts_service.metrics_url)).text

        for _ in range(3):
            with pytest.raises(grpc.aio.AioRpcError):
                await stub.GetAccount(accounts_pb2.GetAccountRequest(account_id="nobody"))
        with pytest.raises(grpc.aio.AioRpcError) as denied:
            await stub.GetAccount(
                accounts_pb2.GetAccountRequest(account_id="nobody"),
                metadata=as_player("someone-else"),
            )
        assert denied.value.code() is grpc.StatusCode.PERMISSION_DENIED

        after = (await http.get(accounts_service.metrics_url)).text

    assert rpc_count(after, method, "UNAUTHENTICATED") - rpc_count(
        before, method, "UNAUTHENTICATED"
    ) == 3
    assert rpc_count(after, method, "PERMISSION_DENIED") - rpc_count(
        before, method, "PERMISSION_DENIED"
    ) == 1
    assert "tavla_rpc_duration_seconds_bucket" in after
    assert f'method="{method}"' in after
