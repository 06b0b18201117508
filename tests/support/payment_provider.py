"""A small real payment provider of our own, on loopback, for the wallet's HTTP adapter.

It serves the provider API the wallet's adapter speaks (``services/wallet/http_provider``):
it records submitted payments, answers status queries from what a test decided,
answers payout-destination checks from what a test verified, and refuses calls
without the API key. It sends webhooks to the wallet's listener, signed the way
the wallet's README documents: ``Tavla-Signature: t=<unix>,v1=<hex>`` with
HMAC-SHA256 over ``"<t>." + raw body``. The signing here is written out
independently of the wallet's code, so a mistake there cannot hide in both.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import aiohttp
from aiohttp import web

from services.kit.clock import ManualClock
from services.kit.devstack.net import free_port
from services.wallet.http_provider import HttpProviderConfig
from services.wallet.provider_config import PaymentSettings
from tavla.wallet.v1 import wallet_pb2, wallet_pb2_grpc
from tests.support.services import RunningService, new_database, stop_service
from tests.support.wallet import GAME_STARTED_AT, as_player, money, new_id, start_wallet

API_KEY = "test-api-key-7f3a"
SECRET = b"whsec-test-5d1e9c"


def sign(secret: bytes, timestamp: int, body: bytes) -> str:
    digest = hmac.new(secret, str(timestamp).encode() + b"." + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={digest}"


@dataclass
class Delivery:
    """A webhook as sent: its exact bytes and headers (a test may replay them later)."""

    body: bytes
    headers: dict[str, str]


@dataclass
class FakeProvider:
    api_key: str
    secret: bytes
    webhook_url: str = ""
    submissions: dict[str, dict[str, Any]] = field(default_factory=dict)
    # payment id -> {"status": "settled"|"failed"|"pending", "failure_reason": ...}
    decided: dict[str, dict[str, str]] = field(default_factory=dict)
    verified: set[tuple[str, str]] = field(default_factory=set)
    # Every call the wallet made, as (method path, player id or payment id), in order.
    calls: list[tuple[str, str]] = field(default_factory=list)
    port: int = 0
    _runner: web.AppRunner | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/v1/payments", self._submit)
        app.router.add_get("/v1/payments/{payment_id}", self._status)
        app.router.add_post("/v1/payout-destinations:verify", self._verify)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        self.port = free_port()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def _authorised(self, request: web.Request) -> bool:
        return request.headers.get("Authorization") == f"Bearer {self.api_key}"

    async def _submit(self, request: web.Request) -> web.Response:
        if not self._authorised(request):
            return web.json_response({"error": "bad API key"}, status=401)
        body = await request.json()
        self.calls.append(("submit", body["player_id"]))
        assert request.headers.get("Idempotency-Key") == body["payment_id"]
        if "refused" in body["method"]:
            return web.json_response({"error": "this card is not accepted"}, status=422)
        self.submissions.setdefault(body["payment_id"], body)
        reference = f"prov-{body['payment_id'][:8]}"
        return web.json_response({"reference": reference, "redirect_url": ""}, status=201)

    async def _status(self, request: web.Request) -> web.Response:
        if not self._authorised(request):
            return web.json_response({"error": "bad API key"}, status=401)
        payment_id = request.match_info["payment_id"]
        if payment_id not in self.submissions:
            return web.json_response({"error": "no such payment"}, status=404)
        decided = self.decided.get(payment_id, {"status": "pending"})
        return web.json_response(
            {"payment_id": payment_id, "reference": f"prov-{payment_id[:8]}", **decided}
        )

    async def _verify(self, request: web.Request) -> web.Response:
        if not self._authorised(request):
            return web.json_response({"error": "bad API key"}, status=401)
        body = await request.json()
        self.calls.append(("verify", body["player_id"]))
        return web.json_response({"verified": (body["player_id"], body["method"]) in self.verified})

    def event(
        self,
        payment_id: str,
        kind: str,
        occurred_at: datetime,
        *,
        event_id: str | None = None,
        failure_reason: str = "",
    ) -> dict[str, str]:
        return {
            "event_id": event_id or f"evt-{uuid.uuid4().hex[:12]}",
            "type": f"payment.{kind}",
            "payment_id": payment_id,
            "reference": f"prov-{payment_id[:8]}",
            "failure_reason": failure_reason,
            "occurred_at": occurred_at.isoformat(),
        }

    def signed(
        self, event: dict[str, str], signed_at: datetime, secret: bytes | None = None
    ) -> Delivery:
        body = json.dumps(event).encode()
        header = sign(secret or self.secret, int(signed_at.timestamp()), body)
        return Delivery(body, {"Tavla-Signature": header, "Content-Type": "application/json"})

    async def deliver(self, delivery: Delivery) -> tuple[int, dict[str, Any]]:
        """POST a webhook to the wallet; its status and JSON answer."""
        async with (
            aiohttp.ClientSession() as session,
            session.post(self.webhook_url, data=delivery.body, headers=delivery.headers) as reply,
        ):
            return reply.status, await reply.json()


@dataclass
class PaidWallet:
    """A wallet on the real HTTP provider adapter, with the provider it talks to."""

    service: RunningService
    stub: wallet_pb2_grpc.WalletServiceStub
    clock: ManualClock
    url: str
    provider: FakeProvider
    config: HttpProviderConfig


async def _listening(port: int) -> None:
    async with asyncio.timeout(30):
        while True:
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.close()
                return
            except OSError:
                await asyncio.sleep(0.05)


@asynccontextmanager
async def paid_wallet(
    postgres_server: Any, kafka_broker: Any, geo_address: str
) -> AsyncIterator[PaidWallet]:
    """A wallet with its own database, ``TAVLA_WALLET_PAYMENT_PROVIDER=http`` settings
    pointing at a :class:`FakeProvider`, its webhook listener answering, and the geo
    service at ``geo_address`` asked before each payment."""
    url = postgres_server.url(new_database(postgres_server, "wallet_http"))
    provider = FakeProvider(API_KEY, SECRET)
    await provider.start()
    config = HttpProviderConfig(
        base_url=provider.base_url,
        api_key=API_KEY.encode(),
        webhook_secret=SECRET,
        webhook_port=free_port(),
    )
    provider.webhook_url = f"http://127.0.0.1:{config.webhook_port}/v1/payments/webhooks/provider"
    clock = ManualClock(GAME_STARTED_AT)
    service = await start_wallet(
        url,
        kafka_broker.bootstrap,
        clock=clock,
        payments=PaymentSettings.over_http(config),
        geo_address=geo_address,
    )
    try:
        await _listening(config.webhook_port)
        stub = wallet_pb2_grpc.WalletServiceStub(service.channel)
        yield PaidWallet(service, stub, clock, url, provider, config)
    finally:
        await stop_service(service)
        await provider.stop()


async def deposit(paid: PaidWallet, player: str, cents: int) -> str:
    """Start a USD deposit through the provider; its operation id (pending)."""
    operation = await paid.stub.Deposit(
        wallet_pb2.DepositRequest(
            amount=money(cents), idempotency_key=new_id("k"), payment_method="card-4242"
        ),
        metadata=as_player(player),
    )
    assert operation.status == wallet_pb2.PAYMENT_STATUS_PENDING
    return str(operation.operation_id)


async def settle(paid: PaidWallet, payment_id: str, kind: str = "settled") -> None:
    """The provider's signed webhook settling (or failing) a payment, applied."""
    now = paid.clock.now()
    status, answer = await paid.provider.deliver(
        paid.provider.signed(paid.provider.event(payment_id, kind, now), now)
    )
    assert (status, answer["status"]) == (200, "applied"), answer
