"""Two players find each other through the queue via the real Envoy gateway (REST/JSON), and
WatchQueueTicket streams over REST and over gRPC-Web, in front of the real matchmaking, game,
wallet and geo services. The gateway is configured as in production (native gRPC refused)
but trusts one proxy hop (as behind a load balancer), so the tests say where the players
are with X-Forwarded-For: a Malta address, allowed real money."""

from __future__ import annotations

import asyncio
import json
import struct
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from services.geo.devdata import MALTA_IP
from services.kit.devstack.envoy import EnvoyGateway, local_settings, write_config
from services.kit.devstack.net import free_port
from services.kit.devstack.supervisor import Supervisor
from services.kit.gateway.config import render
from services.kit.gateway.methods import api_methods
from services.kit.keys import public_jwk
from tavla.matchmaking.v1 import matchmaking_pb2
from tests.integration.matchmaking.conftest import Lobby
from tests.support.identity import CERTIFICATES, PLAYER_KEY, PLAYER_KID, player_token
from tests.support.matchmaking import new_player
from tests.support.wallet import balance, fund

DESCRIPTOR = Path(__file__).resolve().parents[3] / "gen" / "tavla.pb"
STAKE = 900
WATCH = "/tavla.matchmaking.v1.MatchmakingService/WatchQueueTicket"


@pytest.fixture
def supervisor(tmp_path: Path) -> Iterator[Supervisor]:
    with Supervisor(tmp_path / "logs", stop_timeout=3) as owner:
        yield owner


@pytest.fixture
async def client(
    lobby: Lobby, tmp_path: Path, supervisor: Supervisor
) -> AsyncIterator[httpx.AsyncClient]:
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps({"keys": [public_jwk(PLAYER_KEY.public_key(), PLAYER_KID)]}))
    listen, admin = free_port(), free_port()
    settings = local_settings(
        descriptor=DESCRIPTOR,
        jwks_file=jwks,
        upstreams={"matchmaking": lobby.matchmaking.gateway_port},
        listen_port=listen,
        admin_port=admin,
        health_interval=0.2,
        xff_num_trusted_hops=1,
        upstream_tls=CERTIFICATES.upstream_tls(),  # as deployed: the gateway's certificate
    )
    # As production: native gRPC from outside is refused (the dev stack allows it).
    config = render(replace(settings, allow_native_grpc=False), api_methods(DESCRIPTOR))
    gateway = EnvoyGateway(write_config(tmp_path / "envoy.json", config), listen, admin, supervisor)
    gateway.start()
    try:
        async with httpx.AsyncClient(base_url=gateway.base_url, timeout=30) as http:
            async with asyncio.timeout(30):
                while (await http.get("/healthz")).status_code != 200:
                    await asyncio.sleep(0.1)
            yield http
    finally:
        gateway.stop()


def headers(account: str) -> dict[str, str]:
    return {
        "authorization": f"Bearer {player_token(account, residence='MT')}",
        "x-forwarded-for": MALTA_IP,
    }


def enter_body(key: str) -> dict[str, object]:
    return {
        "rules": {
            "kind": "PLAY_KIND_MONEY_GAME",
            "stake": {"minorUnits": str(STAKE), "currency": "USD"},
        },
        "idempotencyKey": key,
    }


async def test_two_players_meet_through_the_queue_and_watch_it_over_rest(
    lobby: Lobby, client: httpx.AsyncClient
) -> None:
    first, second = new_player(), new_player()
    await asyncio.gather(fund(lobby.wallet, first, 5_000), fund(lobby.wallet, second, 5_000))
    anonymous = await client.post("/v1/queue", json=enter_body("anon"))
    assert anonymous.status_code == 401
    entered = await client.post("/v1/queue", json=enter_body("q1"), headers=headers(first))
    assert entered.status_code == 200, entered.text
    ticket = entered.json()
    assert ticket["status"] == "TICKET_STATUS_WAITING"

    async def watch() -> list[dict[str, object]]:
        # The transcoder streams a JSON array, one element per message, closed at the end.
        async with client.stream(
            "GET", f"/v1/queue/{ticket['ticketId']}:watch", headers=headers(first)
        ) as response:
            assert response.status_code == 200
            body = b"".join([chunk async for chunk in response.aiter_bytes()])
        updates: list[dict[str, object]] = json.loads(body)
        return updates

    watching = asyncio.create_task(watch())
    await asyncio.sleep(0.5)  # the stream has sent WAITING by now
    other = await client.post("/v1/queue", json=enter_body("q2"), headers=headers(second))
    assert other.status_code == 200, other.text
    async with asyncio.timeout(60):
        updates = await watching
    statuses = [u["status"] for u in updates]
    assert statuses[0] == "TICKET_STATUS_WAITING" and statuses[-1] == "TICKET_STATUS_MATCHED"
    matched = updates[-1]
    assert matched["opponentAccountId"] == second and matched["gameId"]
    polled = await client.get(f"/v1/queue/{other.json()['ticketId']}", headers=headers(second))
    assert polled.status_code == 200, polled.text
    assert polled.json()["gameId"] == matched["gameId"]
    for player in (first, second):  # 3 x $9 held for each
        assert await balance(lobby.wallet, player) == (5_000 - 3 * STAKE, 3 * STAKE)
    left = await client.delete(f"/v1/queue/{ticket['ticketId']}", headers=headers(first))
    assert left.status_code == 200 and left.json()["status"] == "TICKET_STATUS_MATCHED"


def grpc_web_frame(message: bytes) -> bytes:
    return b"\x00" + struct.pack(">I", len(message)) + message


def grpc_web_frames(body: bytes) -> tuple[list[bytes], bytes]:
    """The data frames' messages and the trailers frame of a gRPC-Web response body."""
    messages, trailers, at = [], b"", 0
    while at < len(body):
        flag, size = body[at], struct.unpack(">I", body[at + 1 : at + 5])[0]
        payload = body[at + 5 : at + 5 + size]
        if flag & 0x80:
            trailers = payload
        else:
            messages.append(payload)
        at += 5 + size
    return messages, trailers


async def test_the_watch_stream_works_over_grpc_web_and_native_grpc_stays_refused(
    lobby: Lobby, client: httpx.AsyncClient
) -> None:
    first, second = new_player(), new_player()
    await asyncio.gather(fund(lobby.wallet, first, 5_000), fund(lobby.wallet, second, 5_000))
    entered = await client.post("/v1/queue", json=enter_body("w1"), headers=headers(first))
    assert entered.status_code == 200, entered.text
    request = matchmaking_pb2.GetQueueTicketRequest(ticket_id=entered.json()["ticketId"])
    body = grpc_web_frame(request.SerializeToString())
    native = await client.post(
        WATCH, content=body, headers={**headers(first), "content-type": "application/grpc"}
    )
    # The gateway's RBAC: native gRPC is not for clients. Envoy answers a gRPC request in
    # gRPC form: HTTP 200, grpc-status 7 PERMISSION_DENIED.
    assert native.headers.get("grpc-status") == "7", (native.status_code, native.headers)
    web = {**headers(first), "content-type": "application/grpc-web+proto", "x-grpc-web": "1"}

    async def watch() -> tuple[list[bytes], bytes]:
        async with client.stream("POST", WATCH, content=body, headers=web) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("application/grpc-web")
            return grpc_web_frames(b"".join([chunk async for chunk in response.aiter_bytes()]))

    watching = asyncio.create_task(watch())
    await asyncio.sleep(0.5)
    other = await client.post("/v1/queue", json=enter_body("w2"), headers=headers(second))
    assert other.status_code == 200, other.text
    async with asyncio.timeout(60):
        frames, trailers = await watching
    updates = [matchmaking_pb2.QueueTicket.FromString(frame) for frame in frames]
    assert updates[0].status == matchmaking_pb2.TICKET_STATUS_WAITING
    assert updates[-1].status == matchmaking_pb2.TICKET_STATUS_MATCHED
    assert updates[-1].opponent_account_id == second and updates[-1].game_id
    assert b"grpc-status:0" in trailers.replace(b" ", b"")
