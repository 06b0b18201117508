"""The one server interceptor every service runs: the whole kit part of a call, in one layer.

Per call, in this order:

1. observability: the request id (``x-request-id``, or a new one) bound for logs,
   outgoing calls and events; Prometheus counters and latency; a log line for
   every call that failed or was slow (``TAVLA_LOG_SLOW_RPC_MS``), and for the
   others only at ``debug`` level; domain errors turned into gRPC status;
2. the direct-port rate limits of login, registration and refresh
   (:mod:`services.kit.rate_limits`);
3. authentication: the credential the method declares (:mod:`services.kit.authn`);
4. the request's texts (:mod:`services.kit.request_text`).

Each method's plan (its access, its bucket, its metric series, whether it is a
quiet health or reflection call) is worked out on its first call and kept, and
the handler is wrapped once per method, not per call. One layer instead of one
interceptor per concern: grpc.aio awaits every layer's wrapper on every call,
and each layer read the call's metadata again.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import grpc

from services.kit.auth import set_caller
from services.kit.authn import AUTHORIZATION, OPEN_PREFIXES, Access, Admission
from services.kit.errors import DomainError
from services.kit.logging import bind_request_id, current_request_id, get_logger, new_request_id
from services.kit.metrics import RPC_DURATION, RPC_REQUESTS
from services.kit.rate_limits import DirectCallLimiter, TokenBuckets
from services.kit.request_text import refuse_bad_text
from services.kit.service_tokens import SERVICE_TOKEN_HEADER

log = get_logger("rpc")
REQUEST_ID_HEADER = "x-request-id"
# Health and reflection calls come every few seconds: count them, don't log them.
_QUIET_PREFIXES = ("/grpc.health.", "/grpc.reflection.")
# A successful call slower than this is logged at info level (the default of
# TAVLA_LOG_SLOW_RPC_MS); faster ones only at debug level.
DEFAULT_SLOW_RPC_MS = 250.0
_OK = grpc.StatusCode.OK
_CREDENTIAL_HEADERS = (AUTHORIZATION, SERVICE_TOKEN_HEADER)

Context = grpc.aio.ServicerContext[Any, Any]


@dataclass(frozen=True, slots=True)
class MethodPlan:
    """What the kit does for every call of one method, worked out once."""

    method: str
    # None: health and reflection, open to every caller (not Tavla methods).
    access: Access | None
    bucket: TokenBuckets | None  # the direct-port limit of login, registration, refresh
    quiet: bool
    succeeded: Any  # the method's OK counter series
    duration: Any  # its latency histogram series


class CallInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[type-arg]
    """The kit's part of every call (module docstring), wrapped once per method."""

    def __init__(
        self,
        service: str,
        admission: Admission,
        limiter: DirectCallLimiter,
        *,
        slow_rpc_ms: float = DEFAULT_SLOW_RPC_MS,
    ) -> None:
        self._service = service
        self._admission = admission
        self._limiter = limiter
        self._slow_seconds = slow_rpc_ms / 1000
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
        if handler is None:  # unknown paths are not kept: callers choose them
            return None
        wrapped = self._wrap(self._plan(method), handler)
        self._wrapped[method] = wrapped
        return wrapped

    def _plan(self, method: str) -> MethodPlan:
        return MethodPlan(
            method=method,
            access=None if method.startswith(OPEN_PREFIXES) else self._admission.access(method),
            bucket=self._limiter.bucket(method),
            quiet=method.startswith(_QUIET_PREFIXES),
            succeeded=RPC_REQUESTS.labels(self._service, method, _OK.name),
            duration=RPC_DURATION.labels(self._service, method),
        )

    def _wrap(self, plan: MethodPlan, handler: Any) -> Any:
        if handler.unary_unary is not None:
            return grpc.unary_unary_rpc_method_handler(
                self._wrap_unary(plan, handler.unary_unary),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        if handler.unary_stream is not None:
            return grpc.unary_stream_rpc_method_handler(
                self._wrap_stream(plan, handler.unary_stream),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        if plan.access is None:
            return handler
        # Client streaming: none in our contracts; refused rather than let through.
        refuse = _refuse_unsupported(plan.method)
        if handler.stream_unary is not None:
            return grpc.stream_unary_rpc_method_handler(refuse)
        return grpc.stream_stream_rpc_method_handler(refuse)

    def _wrap_unary(
        self, plan: MethodPlan, inner: Callable[[Any, Context], Awaitable[Any]]
    ) -> Callable[[Any, Context], Awaitable[Any]]:
        async def call(request: Any, context: Context) -> Any:
            started = time.perf_counter()
            code = _OK
            try:
                await self._admit(plan, request, context)
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
                set_caller(account=None, service=None)
                self._finish(plan, code, started)

        return call

    def _wrap_stream(
        self, plan: MethodPlan, inner: Callable[[Any, Context], AsyncIterator[Any]]
    ) -> Callable[[Any, Context], AsyncIterator[Any]]:
        async def call(request: Any, context: Context) -> AsyncIterator[Any]:
            started = time.perf_counter()
            code = _OK
            try:
                await self._admit(plan, request, context)
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
                self._finish(plan, code, started)

        return call

    async def _admit(self, plan: MethodPlan, request: Any, context: Context) -> None:
        """Request id, then rate limit, caller and texts: DomainError when refused."""
        credentials: dict[str, str] = {}
        request_id = ""
        for key, value in context.invocation_metadata() or ():
            if key == REQUEST_ID_HEADER and not request_id:
                request_id = value if isinstance(value, str) else value.decode()
            elif key in _CREDENTIAL_HEADERS and key not in credentials:
                credentials[key] = value if isinstance(value, str) else value.decode()
        bind_request_id(request_id or new_request_id())
        if plan.access is None:
            return
        set_caller(account=None, service=None)
        if plan.bucket is not None:
            self._limiter.admit(plan.method, plan.bucket, context)
        caller = await self._admission.caller(plan.method, plan.access, credentials)
        set_caller(account=caller.account, service=caller.service, residence=caller.residence)
        refuse_bad_text(request)

    def _finish(self, plan: MethodPlan, code: grpc.StatusCode, started: float) -> None:
        elapsed = time.perf_counter() - started
        plan.duration.observe(elapsed)
        if code is _OK:
            plan.succeeded.inc()
            if elapsed < self._slow_seconds:
                if not plan.quiet:
                    log.debug("rpc", method=plan.method, status=code.name,
                              duration_ms=round(elapsed * 1000, 2))  # fmt: skip
                return
        else:
            RPC_REQUESTS.labels(self._service, plan.method, code.name).inc()
        if not plan.quiet:
            log.info("rpc", method=plan.method, status=code.name,
                     duration_ms=round(elapsed * 1000, 2), slow=elapsed >= self._slow_seconds)


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


def _refuse_unsupported(method: str) -> Callable[[Any, Context], Awaitable[Any]]:
    async def refuse(request: Any, context: Context) -> Any:
        await context.abort(
            grpc.StatusCode.UNIMPLEMENTED, f"{method}: streaming requests are not served"
        )

    return refuse
