"""Calls to other services carry a service token for the called service and the request id."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest

from services.kit.client import service_channel
from services.kit.devstack.net import free_port
from services.kit.errors import Unauthenticated
from services.kit.logging import bind_request_id
from services.kit.service_tokens import ServiceTokenVerifier, load_public_keys
from tests.support.identity import SERVICE_KEYS, minter


async def echo_request_id(request: bytes, context: Any) -> bytes:
    metadata = dict(context.invocation_metadata() or ())
    return str(metadata.get("x-request-id", "")).encode()


async def echo_service_token(request: bytes, context: Any) -> bytes:
    metadata = dict(context.invocation_metadata() or ())
    return str(metadata.get("x-tavla-service-token", "")).encode()


async def stream_request_id(request: bytes, context: Any) -> AsyncIterator[bytes]:
    yield await echo_request_id(request, context)


def echo_server() -> grpc.aio.Server:
    server = grpc.aio.server()
    handlers = {
        "Echo": grpc.unary_unary_rpc_method_handler(echo_request_id),
        "Token": grpc.unary_unary_rpc_method_handler(echo_service_token),
        "Stream": grpc.unary_stream_rpc_method_handler(stream_request_id),
    }
    server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler("t.T", handlers)])
    return server


@pytest.fixture
async def address() -> AsyncIterator[str]:
    server = echo_server()
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    yield f"127.0.0.1:{port}"
    await server.stop(None)


async def test_the_request_id_being_served_travels_with_outgoing_calls(address: str) -> None:
    bind_request_id("req-outgoing-1")
    async with service_channel(address, target="wallet", credentials=minter("game")) as channel:
        assert await channel.unary_unary("/t.T/Echo")(b"") == b"req-outgoing-1"
        replies = [item async for item in channel.unary_stream("/t.T/Stream")(b"")]
        assert replies == [b"req-outgoing-1"]
        # A caller's own id for the call is replaced, not duplicated.
        echoed = await channel.unary_unary("/t.T/Echo")(
            b"", metadata=(("x-request-id", "stale"),)
        )
        assert echoed == b"req-outgoing-1"


async def test_every_call_carries_a_service_token_the_called_service_accepts(
    address: str,
) -> None:
    async with service_channel(address, target="wallet", credentials=minter("game")) as channel:
        forged = (("x-tavla-service-token", "made-up"),)
        sent = (await channel.unary_unary("/t.T/Token")(b"", metadata=forged)).decode()
    wallet = ServiceTokenVerifier("wallet", load_public_keys(SERVICE_KEYS.public_keys_dir))
    assert wallet.caller(sent) == "game"  # the channel's own token replaced the caller's
    analysis = ServiceTokenVerifier("analysis", load_public_keys(SERVICE_KEYS.public_keys_dir))
    with pytest.raises(Unauthenticated, match="addressed to another service"):
        analysis.caller(sent)


async def test_a_new_channel_does_not_inherit_another_channels_failures_to_connect() -> None:
    """A channel that kept failing to reach an address (its service stopped) leaves that
    address's connection in reconnect backoff. A service started later on the same port must
    be reachable at once by a new channel: with gRPC's process-wide connection sharing, the
    new channel's calls failed with UNAVAILABLE for seconds (the in-process tests' flake)."""
    port = free_port()
    address = f"127.0.0.1:{port}"
    async with service_channel(address, target="wallet", credentials=minter("game")) as old:
        for _ in range(5):  # nothing listens: each attempt fails and the backoff grows
            with pytest.raises(grpc.aio.AioRpcError) as failed:
                await old.unary_unary("/t.T/Echo")(b"", timeout=2)
            assert failed.value.code() == grpc.StatusCode.UNAVAILABLE
            await asyncio.sleep(0.3)
        server = echo_server()
        assert server.add_insecure_port(address) == port
        await server.start()
        try:
            bind_request_id("req-after-restart")
            async with service_channel(
                address, target="wallet", credentials=minter("game")
            ) as new:
                echoed = await new.unary_unary("/t.T/Echo")(b"", timeout=2)
                assert echoed == b"req-after-restart"
        finally:
            await server.stop(None)
