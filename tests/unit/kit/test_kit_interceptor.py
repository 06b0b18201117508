"""The server interceptor: domain errors keep their message, other failures leak nothing;
only failed and slow calls are logged at info level."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
import structlog
from structlog.testing import LogCapture

from services.kit import interceptors
from services.kit.authn import Access, Admission, Authenticator
from services.kit.errors import NotFound
from services.kit.interceptors import CallInterceptor
from services.kit.rate_limits import DirectCallLimiter
from services.kit.service_tokens import ServiceTokenVerifier
from tavla.common.v1 import auth_pb2

METHODS = ("NotFound", "Crash", "Echo", "Stream")


async def not_found(request: bytes, context: Any) -> bytes:
    raise NotFound("no game g-42")


async def crash(request: bytes, context: Any) -> bytes:
    raise KeyError("secret internal detail")


async def echo(request: bytes, context: Any) -> bytes:
    return request


async def stream_then_fail(request: bytes, context: Any) -> AsyncIterator[bytes]:
    yield b"first"
    raise NotFound("the game ended")


def interceptor(slow_rpc_ms: float = 250.0) -> CallInterceptor:
    """The kit's interceptor with every test method open to anonymous callers."""
    table = {f"/t.T/{name}": Access(auth_pb2.ACCESS_ANONYMOUS) for name in METHODS}
    admission = Admission(table, Authenticator(None, ServiceTokenVerifier("test", {})))
    return CallInterceptor("test", admission, DirectCallLimiter({}), slow_rpc_ms=slow_rpc_ms)


@pytest.fixture(params=[250.0])
async def channel(request: Any) -> AsyncIterator[grpc.aio.Channel]:
    server = grpc.aio.server(interceptors=[interceptor(request.param)])
    handlers = {
        "NotFound": grpc.unary_unary_rpc_method_handler(not_found),
        "Crash": grpc.unary_unary_rpc_method_handler(crash),
        "Echo": grpc.unary_unary_rpc_method_handler(echo),
        "Stream": grpc.unary_stream_rpc_method_handler(stream_then_fail),
    }
    server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler("t.T", handlers)])
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        yield channel
    await server.stop(None)


async def test_a_domain_error_becomes_its_status_with_its_message(channel: Any) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as error:
        await channel.unary_unary("/t.T/NotFound")(b"")
    assert error.value.code() is grpc.StatusCode.NOT_FOUND
    assert error.value.details() == "no game g-42"


async def test_an_unexpected_error_is_internal_and_quotes_only_the_request_id(
    channel: Any,
) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as error:
        await channel.unary_unary("/t.T/Crash")(b"", metadata=[("x-request-id", "req-9")])
    assert error.value.code() is grpc.StatusCode.INTERNAL
    assert error.value.details() == "internal error; quote request id req-9 to support"


async def test_a_normal_call_passes_through(channel: Any) -> None:
    assert await channel.unary_unary("/t.T/Echo")(b"hello") == b"hello"


async def test_a_stream_ends_with_the_domain_error_status(channel: Any) -> None:
    call = channel.unary_stream("/t.T/Stream")(b"")
    received = []
    with pytest.raises(grpc.aio.AioRpcError) as error:
        async for item in call:
            received.append(item)
    assert received == [b"first"]
    assert error.value.code() is grpc.StatusCode.NOT_FOUND


@pytest.fixture
def logs(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """What the interceptor logs, at every level (whatever a service configured before)."""
    capture = LogCapture()
    every_level = structlog.make_filtering_bound_logger(logging.DEBUG)
    logger = structlog.wrap_logger(None, processors=[capture], wrapper_class=every_level)
    monkeypatch.setattr(interceptors, "log", logger)
    return capture.entries


def _rpc_lines(logs: list[Any], level: str) -> list[dict[str, Any]]:
    return [line for line in logs if line["event"] == "rpc" and line["log_level"] == level]


async def _logged(logs: list[Any]) -> None:
    """Until the call's line is written: the server logs it once the status has gone out,
    so a loaded machine can answer the client first."""
    async with asyncio.timeout(5):
        while not any(line["event"] == "rpc" for line in logs):
            await asyncio.sleep(0.01)


async def test_a_fast_successful_call_is_logged_only_at_debug_level(
    channel: Any, logs: list[Any]
) -> None:
    await channel.unary_unary("/t.T/Echo")(b"hello")
    await _logged(logs)
    assert _rpc_lines(logs, "info") == []
    assert [line["method"] for line in _rpc_lines(logs, "debug")] == ["/t.T/Echo"]


async def test_a_failed_call_is_logged_at_info_level_with_its_status(
    channel: Any, logs: list[Any]
) -> None:
    with pytest.raises(grpc.aio.AioRpcError):
        await channel.unary_unary("/t.T/NotFound")(b"")
    await _logged(logs)
    (line,) = _rpc_lines(logs, "info")
    assert (line["method"], line["status"]) == ("/t.T/NotFound", "NOT_FOUND")


@pytest.mark.parametrize("channel", [0.0], indirect=True)
async def test_a_call_slower_than_the_threshold_is_logged_at_info_level(
    channel: Any, logs: list[Any]
) -> None:
    await channel.unary_unary("/t.T/Echo")(b"hello")
    await _logged(logs)
    (line,) = _rpc_lines(logs, "info")
    assert (line["method"], line["status"], line["slow"]) == ("/t.T/Echo", "OK", True)


async def test_a_call_without_a_request_id_gets_a_fresh_one(channel: Any) -> None:
    quoted = []
    for _ in range(2):
        with pytest.raises(grpc.aio.AioRpcError) as error:
            await channel.unary_unary("/t.T/Crash")(b"")
        quoted.append(str(error.value.details()).split()[5])
    assert quoted[0] != quoted[1]
    assert all(len(id_) == 32 and int(id_, 16) >= 0 for id_ in quoted)
