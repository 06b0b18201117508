"""A real Envoy gateway (the dev config) in front of a stand-in accounts service.

The stand-in answers Register, Login, RefreshSession, Logout and GetAccount with what it
received (the identity header, the authorization header), so a test sees exactly
what the gateway let through and forwarded.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import httpx
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from services.kit.devstack.envoy import (
    ACCOUNT_ID_HEADER,
    WEB_ROOT,
    EnvoyGateway,
    render_config,
    write_config,
)
from services.kit.devstack.keys import SigningKeys, ensure_signing_keys
from services.kit.devstack.net import free_port
from services.kit.devstack.supervisor import Supervisor
from tavla.accounts.v1 import accounts_pb2

REPO = Path(__file__).resolve().parents[2]
DESCRIPTOR = REPO / "gen" / "tavla.pb"
ACCOUNTS = "tavla.accounts.v1.AccountsService"

Context = grpc.aio.ServicerContext[Any, Any]


@dataclass
class StandInAccounts:
    """Records each call's method and metadata; answers with default messages."""

    calls: list[tuple[str, dict[str, str]]] = field(default_factory=list)

    def _record(self, method: str, context: Context) -> dict[str, str]:
        metadata = {k: v for k, v in (context.invocation_metadata() or ()) if isinstance(v, str)}
        self.calls.append((method, metadata))
        return metadata

    def handler(self) -> grpc.GenericRpcHandler:
        def unary(method: str, request: Any, response: Any) -> grpc.RpcMethodHandler[Any, Any]:
            async def answer(message: Any, context: Context) -> Any:
                metadata = self._record(method, context)
                if getattr(message, "account_id", "") == "exhausted":
                    # A service's own RESOURCE_EXHAUSTED (e.g. a limit), not the gateway's.
                    await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, "daily limit reached")
                if response is accounts_pb2.Account:
                    return accounts_pb2.Account(account_id=metadata.get(ACCOUNT_ID_HEADER, ""))
                return response()

            return grpc.unary_unary_rpc_method_handler(
                answer, request_deserializer=request.FromString,
                response_serializer=response.SerializeToString,
            )

        return grpc.method_handlers_generic_handler(ACCOUNTS, {
            "Register": unary("Register", accounts_pb2.RegisterRequest, accounts_pb2.Account),
            "Login": unary("Login", accounts_pb2.LoginRequest, accounts_pb2.LoginResponse),
            "RefreshSession": unary("RefreshSession", accounts_pb2.RefreshSessionRequest,
                                    accounts_pb2.LoginResponse),
            "Logout": unary("Logout", accounts_pb2.LogoutRequest, accounts_pb2.LogoutResponse),
            "GetAccount": unary("GetAccount", accounts_pb2.GetAccountRequest,
                                accounts_pb2.Account),
        })


@dataclass
class RunningGateway:
    base_url: str
    listen_port: int
    keys: SigningKeys
    accounts: StandInAccounts


@asynccontextmanager
async def gateway_before_stand_in(
    tmp_path: Path, supervisor: Supervisor, webhooks_port: int | None = None,
    xff_num_trusted_hops: int = 0, web_root: Path | None = WEB_ROOT,
) -> AsyncIterator[RunningGateway]:
    """Envoy with the dev stack's config in front of a SERVING stand-in accounts service
    (and of a payment-webhook listener on `webhooks_port`, if given; with
    `xff_num_trusted_hops` proxies trusted in front of it), serving the web files under
    `web_root` (the checkout's web/ unless told otherwise)."""
    accounts, health_servicer, port = StandInAccounts(), health.aio.HealthServicer(), free_port()
    server = grpc.aio.server()
    server.add_generic_rpc_handlers([accounts.handler()])
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    await health_servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    keys = ensure_signing_keys(tmp_path)
    listen, admin = free_port(), free_port()
    config = render_config(descriptor=DESCRIPTOR, jwks_file=keys.jwks_file,
                           upstreams={"accounts": port}, listen_port=listen,
                           admin_port=admin, health_interval=0.2,
                           webhooks_port=webhooks_port,
                           xff_num_trusted_hops=xff_num_trusted_hops, web_root=web_root)
    path = write_config(tmp_path / "envoy.json", config)
    gateway = EnvoyGateway(path, listen, admin, supervisor)
    gateway.start()
    try:
        async with httpx.AsyncClient(base_url=gateway.base_url, timeout=10) as client:
            for _ in range(200):
                if (await client.get("/healthz")).status_code == 200:
                    break
                await asyncio.sleep(0.1)
            else:
                raise AssertionError("the gateway's /healthz never became 200")
        yield RunningGateway(gateway.base_url, listen, keys, accounts)
    finally:
        gateway.stop()
        await server.stop(0)


@asynccontextmanager
async def envoy_in_front(
    tmp_path: Path, supervisor: Supervisor, upstreams: dict[str, int], **options: Any
) -> AsyncIterator[str]:
    """Envoy with the dev stack's config in front of ``upstreams`` (area -> port), the
    players' JWKS in ``tmp_path`` (the accounts key, copied there before); its base URL
    once /healthz answers. ``options`` go to ``render_config`` (``upstream_tls`` ...)."""
    keys = ensure_signing_keys(tmp_path)
    listen, admin = free_port(), free_port()
    config = render_config(
        descriptor=DESCRIPTOR, jwks_file=keys.jwks_file, upstreams=upstreams,
        listen_port=listen, admin_port=admin, health_interval=0.2, **options,
    )  # fmt: skip
    envoy = EnvoyGateway(write_config(tmp_path / "envoy.json", config), listen, admin, supervisor)
    envoy.start()
    try:
        async with httpx.AsyncClient(base_url=envoy.base_url, timeout=10) as client:
            async with asyncio.timeout(60):
                while (await client.get("/healthz")).status_code != 200:
                    await asyncio.sleep(0.1)
        yield envoy.base_url
    finally:
        envoy.stop()
