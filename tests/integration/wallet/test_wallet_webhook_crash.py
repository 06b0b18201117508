"""A wallet process SIGKILLed while webhooks pour in applies each of them exactly once.

The real `tavla serve wallet` runs as a subprocess with the HTTP provider settings
(TAVLA_WALLET_PAYMENT_PROVIDER=http and its variables, secrets in files). Twenty
deposits wait for the provider; their signed webhooks are sent all at once and the
process is killed (SIGKILL, no goodbye) as soon as the first has been applied.
A new process starts on the same database and the provider redelivers every
webhook, as providers do when they got no 2xx: each payment is credited once, each
event id is recorded once, and the audit is clean. The event id and the effect
commit in one transaction, so there is no moment at which one is kept without the other.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import grpc
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from services.kit.devstack.net import free_port
from services.wallet.audit_cli import audit_database
from tavla.wallet.v1 import wallet_pb2, wallet_pb2_grpc
from tests.support.identity import caller_channel
from tests.support.payment_provider import API_KEY, SECRET, Delivery, FakeProvider
from tests.support.processes import service_environment
from tests.support.services import new_database
from tests.support.wallet import as_player, balance, money, new_id

PAYMENTS = 20


def serve_env(
    url: str,
    bootstrap: str,
    accounts_address: str,
    provider: FakeProvider,
    secrets: Path,
    geo_address: str,
) -> dict[str, str]:
    (secrets / "api-key").write_text(API_KEY)
    (secrets / "webhook-secret").write_bytes(SECRET)
    env = service_environment(
        "wallet",
        url,
        bootstrap,
        accounts_address=accounts_address,
        TAVLA_GEO_ADDRESS=geo_address,
    )
    for sandbox_only in [name for name in env if name.startswith("TAVLA_WALLET_SANDBOX")]:
        del env[sandbox_only]
    return {
        **env,
        "TAVLA_METRICS_PORT": "0",
        "TAVLA_SHUTDOWN_GRACE_SECONDS": "1",
        "TAVLA_WALLET_PAYMENT_PROVIDER": "http",
        "TAVLA_WALLET_PROVIDER_URL": provider.base_url,
        "TAVLA_WALLET_PROVIDER_API_KEY_FILE": str(secrets / "api-key"),
        "TAVLA_WALLET_WEBHOOK_SECRET_FILE": str(secrets / "webhook-secret"),
        "TAVLA_WALLET_WEBHOOK_PORT": provider.webhook_url.split(":")[2].split("/")[0],
    }


@asynccontextmanager
async def wallet_process(env: dict[str, str]) -> AsyncIterator[asyncio.subprocess.Process]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "services.cli", "serve", "wallet", env=env,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    try:
        yield process
    finally:
        if process.returncode is None:
            process.kill()
        await process.wait()


async def ready(env: dict[str, str], process: asyncio.subprocess.Process) -> None:
    """Until the gRPC port and the webhook listener both answer."""
    port = int(env["TAVLA_WALLET_WEBHOOK_PORT"])
    async with asyncio.timeout(90):
        while True:
            assert process.returncode is None, "the wallet exited while starting"
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.close()
                return
            except OSError:
                await asyncio.sleep(0.1)


async def count(url: str, sql: str) -> int:
    engine = create_async_engine(url)
    try:
        async with engine.connect() as connection:
            return int(await connection.scalar(text(sql)) or 0)
    finally:
        await engine.dispose()


async def send(provider: FakeProvider, delivery: Delivery) -> int | None:
    try:
        status, _ = await provider.deliver(delivery)
        return status
    except (aiohttp.ClientError, OSError, ValueError):
        return None  # the process died under it: the provider will retry


async def test_webhooks_apply_exactly_once_across_a_sigkill(
    postgres_server: Any,
    kafka_broker: Any,
    tmp_path: Path,
    accounts_service: Any,
    geo_service: Any,
) -> None:
    url = postgres_server.url(new_database(postgres_server, "wallet_crash"))
    provider = FakeProvider(API_KEY, SECRET)
    await provider.start()
    provider.webhook_url = f"http://127.0.0.1:{free_port()}/v1/payments/webhooks/provider"
    env = serve_env(
        url,
        kafka_broker.bootstrap,
        accounts_service.address,
        provider,
        tmp_path,
        geo_service.address,
    )
    player = new_id()
    try:
        async with wallet_process(env) as first:
            await ready(env, first)
            # As the gateway calls it, so that the players' Malta address is believed.
            channel = caller_channel(f"127.0.0.1:{env['TAVLA_GATEWAY_PORT']}", target="wallet",
                                     gateway=True)
            stub = wallet_pb2_grpc.WalletServiceStub(channel)
            ids = []
            for index in range(PAYMENTS):
                operation = await stub.Deposit(
                    wallet_pb2.DepositRequest(
                        amount=money(100 + index), idempotency_key=f"k{index}",
                        payment_method="card-4242",
                    ),
                    metadata=as_player(player),
                )  # fmt: skip
                ids.append(operation.operation_id)
            await channel.close()
            now = datetime.now(UTC)
            deliveries = [provider.signed(provider.event(i, "settled", now), now) for i in ids]
            engine = create_async_engine(url, pool_size=1)
            try:
                async with engine.connect() as watch:
                    sending = [asyncio.create_task(send(provider, d)) for d in deliveries]
                    async with asyncio.timeout(60):
                        query = text("SELECT count(*) FROM provider_events")
                        while not await watch.scalar(query):
                            await watch.rollback()  # a fresh snapshot each time
                            await asyncio.sleep(0.002)
                    first.send_signal(signal.SIGKILL)
            finally:
                await engine.dispose()
            await first.wait()
            await asyncio.gather(*sending)
        applied_before = await count(url, "SELECT count(*) FROM provider_events")
        print(f"applied before the kill: {applied_before} of {PAYMENTS}")
        assert 1 <= applied_before <= PAYMENTS

        async with wallet_process(env) as second:
            await ready(env, second)
            answers = [await send(provider, delivery) for delivery in deliveries]
            assert answers == [200] * PAYMENTS
            channel = caller_channel(f"127.0.0.1:{env['TAVLA_GRPC_PORT']}", target="wallet")
            try:
                stub = wallet_pb2_grpc.WalletServiceStub(channel)
                expected = sum(100 + index for index in range(PAYMENTS))  # 2190 cents
                assert await balance(stub, player) == (expected, 0)
            except grpc.aio.AioRpcError as error:
                raise AssertionError(f"the restarted wallet did not answer: {error}") from None
            finally:
                await channel.close()
    finally:
        await provider.stop()
    assert await count(url, "SELECT count(*) FROM provider_events") == PAYMENTS
    assert await count(url, "SELECT count(*) FROM transfers") == PAYMENTS
    assert await count(url, "SELECT count(*) FROM payments WHERE status = 'confirmed'") == PAYMENTS
    assert await audit_database(url) == ()
