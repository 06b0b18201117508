"""The server interceptor every service runs: request id, one log line per RPC,
Prometheus counters and latency, and domain errors turned into gRPC status."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc

from services.kit.errors import DomainError
from services.kit.logging import bind_request_id, current_request_id, get_logger, new_request_id
from services.kit.metrics import RPC_DURATION, RPC_REQUESTS

log = get_logger("rpc")
REQUEST_ID_HEADER = "x-request-id"
# Health and reflection calls come every few seconds: count them, don't log them.
_QUIET_PREFIXES = ("/grpc.health.", "/grpc.reflection.")

Context = grpc.aio.ServicerContext[Any, Any]


class HandlerInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[type-arg]
    """A server interceptor that wraps each method's handler once, not on every call.

    Subclasses say how to wrap a unary and a server-streaming behaviour; methods
    they let through untouched (``_passes``) keep their handler, and a
    client-streaming handler (none in our contracts) goes to ``_client_streaming``.
    Unknown paths are not kept: callers choose them.
    """

    def __init__(self) -> None:
        self._wrapped: dict[str, Any] = {}

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[Any]],
        details: grpc.HandlerCallDetails,
    ) -> Any:
        method: str = details.method
        wrapped = self._wrapped.get(method)
        if wrapped is not None:
            return wrapped
        handler = await continuation(details)
        if handler is None or self._passes(method):
            return handler
        wrapped = self._wrap(method, handler)
        self._wrapped[method] = wrapped
        return wrapped

    def _wrap(self, method: str, handler: Any) -> Any:
        if handler.unary_unary is not None:
            return grpc.unary_unary_rpc_method_handler(
                self._wrap_unary(method, handler.unary_unary),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        if handler.unary_stream is not None:
            return grpc.unary_stream_rpc_method_handler(
                self._wrap_stream(method, handler.unary_stream),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        return self._client_streaming(method, handler)

    def _passes(self, method: str) -> bool:
        return False

    def _client_streaming(self, method: str, handler: Any) -> Any:
        return handler

    def _wrap_unary(
        self, method: str, inner: Callable[[Any, Context], Awaitable[Any]]
    ) -> Callable[[Any, Context], Awaitable[Any]]:
        raise NotImplementedError

    def _wrap_stream(
        self, method: str, inner: Callable[[Any, Context], AsyncIterator[Any]]
    ) -> Callable[[Any, Context], AsyncIterator[Any]]:
        raise NotImplementedError


class ObservabilityInterceptor(HandlerInterceptor):
    def __init__(self, service: str) -> None:
        super().__init__()
        self._service = service

    def _wrap_unary(
        self, method: str, inner: Callable[[Any, Context], Awaitable[Any]]
    ) -> Callable[[Any, Context], Awaitable[Any]]:
        async def call(request: Any, context: Context) -> Any:
            started = self._begin(context)
            code = grpc.StatusCode.OK
            try:
                return await inner(request, context)
            except DomainError as error:
                code = error.code
                await context.abort(code, error.message)
            except Exception as error:
                code = _code_of(context, error)
                if code is grpc.StatusCode.INTERNAL:
                    await _abort_internal(context, error)
                raise
            finally:
                self._finish(method, code, started)

        return call

    def _wrap_stream(
        self, method: str, inner: Callable[[Any, Context], AsyncIterator[Any]]
    ) -> Callable[[Any, Context], AsyncIterator[Any]]:
        async def call(request: Any, context: Context) -> AsyncIterator[Any]:
            started = self._begin(context)
            code = grpc.StatusCode.OK
            try:
                async for item in inner(request, context):
                    yield item
            except DomainError as error:
                code = error.code
                await context.abort(code, error.message)
            except Exception as error:
                code = _code_of(context, error)
                if code is grpc.StatusCode.INTERNAL:
                    await _abort_internal(context, error)
                raise
            finally:
                self._finish(method, code, started)

        return call

    @staticmethod
    def _begin(context: Context) -> float:
        metadata = dict(context.invocation_metadata() or ())
        request_id = metadata.get(REQUEST_ID_HEADER) or new_request_id()
        bind_request_id(request_id if isinstance(request_id, str) else request_id.decode())
        return time.perf_counter()

    def _finish(self, method: str, code: grpc.StatusCode, started: float) -> None:
        elapsed = time.perf_counter() - started
        RPC_REQUESTS.labels(self._service, method, code.name).inc()
        RPC_DURATION.labels(self._service, method).observe(elapsed)
        if not method.startswith(_QUIET_PREFIXES):
            log.info("rpc", method=method, status=code.name, duration_ms=round(elapsed * 1000, 2))


def _code_of(context: Context, error: BaseException) -> grpc.StatusCode:
    """The status an exception stands for: an abort keeps its code, anything else is INTERNAL."""
    if isinstance(error, grpc.aio.AbortError):
        code = context.code()
        return code if isinstance(code, grpc.StatusCode) else grpc.StatusCode.UNKNOWN
    return grpc.StatusCode.INTERNAL


async def _abort_internal(context: Context, error: BaseException) -> None:
    log.error("rpc_internal_error", error=repr(error), exc_info=error)
    await context.abort(
        grpc.StatusCode.INTERNAL,
        f"internal error; quote request id {current_request_id()} to support",
    )
