"""Calls to other services carry the request id being served."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest

from services.kit.client import insecure_channel
from services.kit.logging import bind_request_id


async def echo_request_id(request: bytes, context: Any) -> bytes:
    metadata = dict(context.invocation_metadata() or ())
    return str(metadata.get("x-request-id", "")).encode()


async def stream_request_id(request: bytes, context: Any) -> AsyncIterator[bytes]:
    yield await echo_request_id(request, context)


@pytest.fixture
async def address() -> AsyncIterator[str]:
    server = grpc.aio.server()
    handlers = {
        "Echo": grpc.unary_unary_rpc_method_handler(echo_request_id),
        "Stream": grpc.unary_stream_rpc_method_handler(stream_request_id),
    }
    server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler("t.T", handlers)])
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    yield f"127.0.0.1:{port}"
    await server.stop(None)


async def test_the_request_id_being_served_travels_with_outgoing_calls(address: str) -> None:
    bind_request_id("req-outgoing-1")
    async with insecure_channel(address) as channel:
        assert await channel.unary_unary("/t.T/Echo")(b"") == b"req-outgoing-1"
        replies = [item async for item in channel.unary_stream("/t.T/Stream")(b"")]
        assert replies == [b"req-outgoing-1"]
        # A caller's own id for the call is replaced, not duplicated.
        echoed = await channel.unary_unary("/t.T/Echo")(
            b"", metadata=(("x-request-id", "stale"),)
        )
        assert echoed == b"req-outgoing-1"
