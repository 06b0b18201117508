"""The gateway as generated for `tavla dev`, running on the real Envoy, in front of a stand-in
accounts service: which tokens open the API, which calls need none, the per-address
rate limits on login, registration and refresh, and the client address and device id
it passes on."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import grpc
import httpx
import jwt
import pytest
from aiohttp import web
from cryptography.hazmat.primitives.asymmetric import ec

from services.kit.client_signals import CLIENT_ADDRESS_HEADER, DEVICE_ID_HEADER
from services.kit.devstack.envoy import ACCOUNT_ID_HEADER
from services.kit.devstack.keys import load_private_key
from services.kit.devstack.net import free_port
from services.kit.devstack.supervisor import Supervisor
from services.kit.gateway.config import RATE_LIMITED_BODY, WEBHOOK_PATH
from tavla.accounts.v1 import accounts_pb2
from tests.support.gateway import ACCOUNTS, RunningGateway, gateway_before_stand_in


@pytest.fixture
def supervisor(tmp_path: Path) -> Iterator[Supervisor]:
    with Supervisor(tmp_path / "logs", stop_timeout=3) as owner:
        yield owner


@pytest.fixture
async def gateway(tmp_path: Path, supervisor: Supervisor) -> AsyncIterator[RunningGateway]:
    async with gateway_before_stand_in(tmp_path, supervisor) as running:
        yield running


def signed(key: ec.EllipticCurvePrivateKey, **claims: Any) -> str:
    now = int(time.time())
    payload = {"iss": "tavla", "aud": "tavla-api", "sub": "p1", "iat": now, "exp": now + 300,
               "jti": "j1", **claims}
    payload = {k: v for k, v in payload.items() if v is not None}
    return str(jwt.encode(payload, key, algorithm="ES256", headers={"kid": "tavla-1"}))


def unsigned(**claims: Any) -> str:
    """An `alg: none` token: header and claims, no signature."""
    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    now = int(time.time())
    body = {"iss": "tavla", "aud": "tavla-api", "sub": "p1", "exp": now + 300, **claims}
    return f"{part({'alg': 'none', 'typ': 'JWT'})}.{part(body)}."


async def get_account(gateway: RunningGateway, token: str | None) -> httpx.Response:
    headers = {ACCOUNT_ID_HEADER: "someone-else"}
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    async with httpx.AsyncClient(base_url=gateway.base_url, timeout=10) as client:
        return await client.get("/v1/accounts/p1", headers=headers)


async def test_only_a_valid_token_for_this_api_opens_a_player_method(
    gateway: RunningGateway,
) -> None:
    key = load_private_key(gateway.keys.private_key_file)
    other_key = ec.generate_private_key(ec.SECP256R1())
    hour_ago = int(time.time()) - 3600  # well past Envoy's 60 s clock-skew allowance
    refused = {
        "no token": None,
        "expired": signed(key, exp=hour_ago, iat=hour_ago - 900),
        "without expiry": signed(key, exp=None),
        "unsigned (alg none)": unsigned(),
        "signed by another key": signed(other_key),
        "for another audience": signed(key, aud="tavla-internal"),
        "from another issuer": signed(key, iss="elsewhere"),
        "garbage": "not.a.token",
    }
    for case, token in refused.items():
        reply = await get_account(gateway, token)
        # Envoy says 403 for a valid token meant for another audience, 401 for the rest.
        wanted = 403 if case == "for another audience" else 401
        assert reply.status_code == wanted, f"{case}: {reply.status_code} {reply.text}"
    assert gateway.accounts.calls == [], "a refused call reached the service"

    good = signed(key)
    reply = await get_account(gateway, good)
    assert reply.status_code == 200, reply.text
    assert reply.json()["accountId"] == "p1", "the identity must come from the verified sub"
    (method, metadata), = gateway.accounts.calls
    assert method == "GetAccount"
    # Forwarded: services verify the token again themselves.
    assert metadata["authorization"] == f"Bearer {good}"


async def test_anonymous_methods_need_no_token_and_internal_ones_are_not_routed(
    gateway: RunningGateway,
) -> None:
    async with httpx.AsyncClient(base_url=gateway.base_url, timeout=10) as client:
        for path in ("/v1/accounts", "/v1/sessions", "/v1/sessions:refresh",
                     "/v1/sessions:logout"):
            reply = await client.post(path, json={}, headers={ACCOUNT_ID_HEADER: "forged"})
            assert reply.status_code == 200, (path, reply.text)
        # The stand-in has no GetJwks: the gateway let it through, the service had no answer.
        assert (await client.get("/.well-known/jwks.json")).status_code != 401
        # A player method with the same verb on a nearby path still needs a token.
        assert (await client.post("/v1/accounts/p1:selfExclude", json={})).status_code == 401
    assert [m for m, _ in gateway.accounts.calls] == [
        "Register", "Login", "RefreshSession", "Logout"]
    assert all(ACCOUNT_ID_HEADER not in md for _, md in gateway.accounts.calls)

    key = load_private_key(gateway.keys.private_key_file)
    async with grpc.aio.insecure_channel(f"127.0.0.1:{gateway.listen_port}") as channel:
        hold = channel.unary_unary("/tavla.wallet.v1.WalletService/PlaceHold",
                                   request_serializer=bytes, response_deserializer=bytes)
        with pytest.raises(grpc.aio.AioRpcError) as error:
            await hold(b"", metadata=[("authorization", f"Bearer {signed(key)}")])
        assert error.value.code() is grpc.StatusCode.UNIMPLEMENTED


async def test_logins_are_rate_limited_per_client_address(gateway: RunningGateway) -> None:
    # The dev settings allow 10 logins a minute from one address (GatewaySettings).
    async with httpx.AsyncClient(base_url=gateway.base_url, timeout=10) as client:
        for attempt in range(10):
            reply = await client.post("/v1/sessions", json={"email": "a@b.cd"})
            assert reply.status_code == 200, (attempt, reply.text)
        limited = await client.post("/v1/sessions", json={"email": "a@b.cd"})
        assert limited.status_code == 429
        assert limited.json() == {"code": 8, "message": RATE_LIMITED_BODY, "details": []}
        # Other methods from the same address are not limited by the login bucket.
        assert (await client.post("/v1/sessions:logout", json={})).status_code == 200
    assert [m for m, _ in gateway.accounts.calls].count("Login") == 10

    # The same limit for native gRPC calls, which share the route.
    async with grpc.aio.insecure_channel(f"127.0.0.1:{gateway.listen_port}") as channel:
        login = channel.unary_unary(
            f"/{ACCOUNTS}/Login",
            request_serializer=accounts_pb2.LoginRequest.SerializeToString,
            response_deserializer=accounts_pb2.LoginResponse.FromString,
        )
        with pytest.raises(grpc.aio.AioRpcError) as error:
            await login(accounts_pb2.LoginRequest())
        assert error.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED

    # Another client address has its own bucket.
    transport = httpx.AsyncHTTPTransport(local_address="127.0.0.2")
    async with httpx.AsyncClient(base_url=gateway.base_url, transport=transport) as other:
        assert (await other.post("/v1/sessions", json={})).status_code == 200


async def test_registrations_are_rate_limited_per_client_address(
    gateway: RunningGateway,
) -> None:
    async with httpx.AsyncClient(base_url=gateway.base_url, timeout=10) as client:
        statuses = [(await client.post("/v1/accounts", json={})).status_code for _ in range(6)]
    assert statuses == [200] * 5 + [429]


async def test_a_services_own_resource_exhausted_keeps_its_message(
    gateway: RunningGateway,
) -> None:
    key = load_private_key(gateway.keys.private_key_file)
    async with httpx.AsyncClient(base_url=gateway.base_url, timeout=10) as client:
        reply = await client.get("/v1/accounts/exhausted",
                                 headers={"authorization": f"Bearer {signed(key)}"})
    assert reply.status_code == 429
    assert reply.json()["message"] == "daily limit reached", "the rate-limit text replaced it"


async def test_provider_webhooks_reach_the_wallet_listener_untouched_and_without_a_token(
    tmp_path: Path, supervisor: Supervisor
) -> None:
    """The HMAC is over the raw body: the gateway must pass it byte for byte, untranscoded."""
    received: list[tuple[bytes, str]] = []

    async def listener(request: web.Request) -> web.Response:
        received.append((await request.read(), request.headers.get("Tavla-Signature", "")))
        return web.json_response({"outcome": "applied"})

    app = web.Application()
    app.router.add_post(WEBHOOK_PATH, listener)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        async with gateway_before_stand_in(tmp_path, supervisor, webhooks_port=port) as gateway:
            body = b'{"event_id":"evt_1", "type": "payment.settled"}\n'
            async with httpx.AsyncClient(base_url=gateway.base_url, timeout=10) as client:
                reply = await client.post(
                    WEBHOOK_PATH, content=body,
                    headers={"content-type": "application/json", "Tavla-Signature": "t=1,v1=ab"},
                )
                assert reply.status_code == 200, reply.text
                assert reply.json() == {"outcome": "applied"}
                assert received == [(body, "t=1,v1=ab")]
                # Only the one path, only POST: a GET is no API method (404), and the rest
                # of /v1/payments still needs a token.
                assert (await client.get(WEBHOOK_PATH)).status_code == 404
                assert (await client.post("/v1/payments/other", content=body)).status_code == 401
            assert len(received) == 1, "only the POST reached the listener"
    finally:
        await runner.cleanup()


async def test_the_service_sees_the_address_envoy_saw_whatever_the_client_sends(
    gateway: RunningGateway,
) -> None:
    """No proxy is trusted (the dev gateway): the peer's address, never a client's claim."""
    forged = {CLIENT_ADDRESS_HEADER: "198.51.100.7", "x-forwarded-for": "198.51.100.8",
              DEVICE_ID_HEADER: "phone-1"}
    transport = httpx.AsyncHTTPTransport(local_address="127.0.0.2")
    async with httpx.AsyncClient(base_url=gateway.base_url, transport=transport) as client:
        assert (await client.post("/v1/sessions", json={}, headers=forged)).status_code == 200
        assert (await client.post("/v1/sessions", json={})).status_code == 200
    async with grpc.aio.insecure_channel(f"127.0.0.1:{gateway.listen_port}") as channel:
        login = channel.unary_unary(
            f"/{ACCOUNTS}/Login",
            request_serializer=accounts_pb2.LoginRequest.SerializeToString,
            response_deserializer=accounts_pb2.LoginResponse.FromString,
        )
        await login(accounts_pb2.LoginRequest(), metadata=list(forged.items()))
    seen = [(md.get(CLIENT_ADDRESS_HEADER), md.get(DEVICE_ID_HEADER))
            for _, md in gateway.accounts.calls]
    assert seen == [("127.0.0.2", "phone-1"), ("127.0.0.2", None), ("127.0.0.1", "phone-1")]


async def test_behind_one_trusted_proxy_the_address_it_appended_is_used(
    tmp_path: Path, supervisor: Supervisor
) -> None:
    """With one trusted hop, the last X-Forwarded-For entry (the proxy's) names the client;
    entries a client put before it, and a client-sent address header, are ignored."""
    async with gateway_before_stand_in(tmp_path, supervisor, xff_num_trusted_hops=1) as gateway:
        async with httpx.AsyncClient(base_url=gateway.base_url, timeout=10) as client:
            headers = {"x-forwarded-for": "192.0.2.10, 203.0.113.10",
                       CLIENT_ADDRESS_HEADER: "192.0.2.10"}
            assert (await client.post("/v1/sessions", json={}, headers=headers)).status_code \
                == 200
            ipv6 = {"x-forwarded-for": "2001:db8:1::5"}
            assert (await client.post("/v1/sessions", json={}, headers=ipv6)).status_code == 200
        seen = [md.get(CLIENT_ADDRESS_HEADER) for _, md in gateway.accounts.calls]
        assert seen == ["203.0.113.10", "2001:db8:1::5"]
