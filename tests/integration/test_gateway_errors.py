"""One error shape on every route of the real Envoy gateway (the dev config, in front of a
stand-in accounts service), and the OpenAPI document it serves.

Whoever refuses a REST call, a service (its gRPC status, converted by the transcoder) or
Envoy itself (token, unknown path, bad JSON, rate limit, no upstream), the client gets
`{"code": <gRPC status code>, "message": "...", "details": [...]}`: the codes below are
the gRPC ones from grpc/status.h, written out by hand.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest

from services.kit.devstack.keys import load_private_key
from services.kit.devstack.supervisor import Supervisor
from services.kit.gateway.config import MAX_REQUEST_BODY_BYTES
from services.kit.gateway.openapi import openapi_document
from tests.integration.test_gateway import signed
from tests.support.gateway import ACCOUNTS, DESCRIPTOR, RunningGateway, gateway_before_stand_in

UNKNOWN, INVALID_ARGUMENT, NOT_FOUND, RESOURCE_EXHAUSTED, UNAUTHENTICATED = 2, 3, 5, 8, 16


@pytest.fixture
def supervisor(tmp_path: Path) -> Iterator[Supervisor]:
    with Supervisor(tmp_path / "logs", stop_timeout=3) as owner:
        yield owner


@pytest.fixture
async def gateway(tmp_path: Path, supervisor: Supervisor) -> AsyncIterator[RunningGateway]:
    async with gateway_before_stand_in(tmp_path, supervisor) as running:
        yield running


def error_of(reply: httpx.Response) -> dict[str, Any]:
    assert reply.headers["content-type"].startswith("application/json"), reply.headers
    body: dict[str, Any] = reply.json()
    assert set(body) == {"code", "message", "details"}, body
    assert isinstance(body["message"], str) and body["message"], body
    assert body["details"] == [], body
    return body


async def test_envoys_own_refusals_and_a_services_errors_share_one_json_shape(
    gateway: RunningGateway,
) -> None:
    token = {"authorization": f"Bearer {signed(load_private_key(gateway.keys.private_key_file))}"}
    async with httpx.AsyncClient(base_url=gateway.base_url, timeout=10) as client:
        no_token = await client.get("/v1/accounts/p1")
        forged = await client.get("/v1/accounts/p1", headers={"authorization": "Bearer x.y.z"})
        unknown_path = await client.get("/v1/no-such-thing", headers=token)
        # Found by schemathesis: this was passed on untranscoded, to no service (503).
        unknown_query = await client.get("/v1/accounts/p1?noSuchFilter=1", headers=token)
        bad_json = await client.post("/v1/sessions", content=b"{not json",
                                     headers={"content-type": "application/json"})
        wrong_type = await client.post("/v1/sessions", json={"email": 42})
        for _ in range(10):  # the dev gateway allows 10 logins a minute from one address
            await client.post("/v1/sessions", json={})
        limited = await client.post("/v1/sessions", json={})
    expected = {
        "no token": (no_token, 401, UNAUTHENTICATED),
        "forged token": (forged, 401, UNAUTHENTICATED),
        "unknown path": (unknown_path, 404, NOT_FOUND),
        "unknown query parameter": (unknown_query, 400, INVALID_ARGUMENT),
        "bad JSON": (bad_json, 400, INVALID_ARGUMENT),
        "wrong type": (wrong_type, 400, INVALID_ARGUMENT),
        "rate limited": (limited, 429, RESOURCE_EXHAUSTED),
    }
    for what, (reply, status, code) in expected.items():
        assert reply.status_code == status, (what, reply.status_code, reply.text)
        assert error_of(reply)["code"] == code, (what, reply.text)
    assert error_of(no_token)["message"] == "Jwt is missing"


async def test_a_services_grpc_status_arrives_in_the_same_shape(gateway: RunningGateway) -> None:
    token = signed(load_private_key(gateway.keys.private_key_file))
    async with httpx.AsyncClient(base_url=gateway.base_url, timeout=10) as client:
        reply = await client.get("/v1/accounts/exhausted",
                                 headers={"authorization": f"Bearer {token}"})
    assert reply.status_code == 429
    assert error_of(reply) == {"code": RESOURCE_EXHAUSTED, "message": "daily limit reached",
                               "details": []}


async def test_grpc_clients_keep_their_status_not_a_json_body(gateway: RunningGateway) -> None:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{gateway.listen_port}") as channel:
        account = channel.unary_unary(f"/{ACCOUNTS}/GetAccount",
                                      request_serializer=bytes, response_deserializer=bytes)
        with pytest.raises(grpc.aio.AioRpcError) as error:
            await account(b"")
    assert error.value.code() is grpc.StatusCode.UNAUTHENTICATED
    assert error.value.details() == "Jwt is missing"


async def test_the_gateway_serves_the_generated_openapi_document_without_a_token(
    gateway: RunningGateway,
) -> None:
    async with httpx.AsyncClient(base_url=gateway.base_url, timeout=10) as client:
        reply = await client.get("/openapi.json")
        posted = await client.post("/openapi.json", json={})
    assert reply.status_code == 200, reply.text
    assert reply.headers["content-type"] == "application/json"
    # The stand-in gateway routes accounts only: the document lists just its methods.
    assert reply.json() == openapi_document(DESCRIPTOR, areas={"accounts"})
    assert "/v1/sessions" in reply.json()["paths"]
    assert not any(p.startswith("/v1/games") for p in reply.json()["paths"])
    assert posted.status_code == 404 and error_of(posted)["code"] == NOT_FOUND


async def post_streaming(base_url: str, path: str, size: int) -> httpx.Response:
    """POST a JSON body of ``size`` bytes, reading the answer while it is still being sent.

    The gateway answers 413 as soon as a body passes its limit and closes the
    connection; httpx sends the whole body before it reads, so on a loaded machine it
    can meet the reset of that close before the answer (``ReadError``). A client that
    reads as it sends, as this one does, gets the answer.
    """
    url = httpx.URL(base_url)
    reader, writer = await asyncio.open_connection(url.host, url.port)
    prefix, suffix = b'{"displayName": "', b'"}'
    body = prefix + b"x" * (size - len(prefix) - len(suffix)) + suffix
    writer.write(
        f"POST {path} HTTP/1.1\r\nHost: {url.host}:{url.port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode()
    )
    received = bytearray()

    def complete() -> bool:
        head, found, content = bytes(received).partition(b"\r\n\r\n")
        length = re.search(rb"(?im)^content-length: *(\d+)", head)
        return bool(found and length and len(content) >= int(length[1]))

    async def read_answer() -> None:  # until the answer is whole (or the connection closes)
        with contextlib.suppress(ConnectionError):
            while not complete() and (chunk := await reader.read(65536)):
                received.extend(chunk)

    answer = asyncio.create_task(read_answer())
    with contextlib.suppress(ConnectionError):
        for start in range(0, len(body), 16384):
            if answer.done() or b"\r\n\r\n" in received:
                break
            writer.write(body[start : start + 16384])
            await writer.drain()
    await asyncio.wait_for(answer, 30)
    writer.close()
    head, _, content = bytes(received).partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode().split("\r\n")
    headers = [tuple(line.split(": ", 1)) for line in header_lines]
    return httpx.Response(int(status_line.split()[1]), headers=headers, content=content)


async def test_an_oversized_body_is_413_in_the_one_shape_before_any_service(
    gateway: RunningGateway,
) -> None:
    # Over the gateway's limit but under gRPC's 4 MiB (which a service would refuse with
    # RESOURCE_EXHAUSTED, 429 and gRPC's own text), and far over it.
    replies = [
        await post_streaming(gateway.base_url, "/v1/accounts", size)
        for size in (MAX_REQUEST_BODY_BYTES + 1, 5 * 1024 * 1024)
    ]
    async with httpx.AsyncClient(base_url=gateway.base_url, timeout=30) as client:
        fitting = await client.post("/v1/accounts", json={"displayName": "x" * 1000})
    for reply in replies:
        assert reply.status_code == 413, (reply.status_code, reply.text[:300])
        assert error_of(reply) == {
            "code": INVALID_ARGUMENT,
            "message": f"the request body is larger than the {MAX_REQUEST_BODY_BYTES} bytes "
                       "the API accepts",
            "details": [],
        }
    assert fitting.status_code == 200, fitting.text
