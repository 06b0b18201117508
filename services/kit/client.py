"""Channels for calling another service: the request id travels with the call.

A use case that calls another service (the game asking the wallet whether a
player can cover a double) passes on the ``x-request-id`` it is serving, so
the logs of both services share one id.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc

from services.kit.interceptors import REQUEST_ID_HEADER
from services.kit.logging import current_request_id


def _with_request_id(details: grpc.aio.ClientCallDetails) -> grpc.aio.ClientCallDetails:
    request_id = current_request_id()
    if request_id is None:
        return details
    metadata = [
        (key, value)
        for key, value in (details.metadata or ())
        if key != REQUEST_ID_HEADER
    ]
    metadata.append((REQUEST_ID_HEADER, request_id))
    return grpc.aio.ClientCallDetails(
        method=details.method,
        timeout=details.timeout,
        metadata=grpc.aio.Metadata(*metadata),
        credentials=details.credentials,
        wait_for_ready=details.wait_for_ready,
    )


class _UnaryUnary(grpc.aio.UnaryUnaryClientInterceptor):  # type: ignore[type-arg]
    async def intercept_unary_unary(
        self, continuation: Callable[..., Any], details: grpc.aio.ClientCallDetails, request: Any
    ) -> Any:
        return await continuation(_with_request_id(details), request)


class _UnaryStream(grpc.aio.UnaryStreamClientInterceptor):  # type: ignore[type-arg]
    async def intercept_unary_stream(
        self, continuation: Callable[..., Any], details: grpc.aio.ClientCallDetails, request: Any
    ) -> Any:
        return await continuation(_with_request_id(details), request)


def insecure_channel(address: str) -> grpc.aio.Channel:
    """A channel inside the cluster (the mesh or network policy secures the hop)."""
    interceptors: list[Any] = [_UnaryUnary(), _UnaryStream()]
    return grpc.aio.insecure_channel(address, interceptors=interceptors)
