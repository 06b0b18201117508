"""Channels for calling another service: a service credential and the request id travel with it.

Every call on a :func:`service_channel` carries this service's signed service
token for the called service (``x-tavla-service-token``, see
:mod:`services.kit.service_tokens`; minted once and reused until near its
expiry), so internal methods know which service calls them. A use case that
calls another service (the game asking the wallet whether a player can cover a
double) also passes on the ``x-request-id`` it is serving, so the logs of both
services share one id.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import grpc

from services.kit.interceptors import REQUEST_ID_HEADER
from services.kit.logging import current_request_id
from services.kit.service_tokens import SERVICE_TOKEN_HEADER, ServiceTokenMinter

_REPLACED = (REQUEST_ID_HEADER, SERVICE_TOKEN_HEADER)

# gRPC shares one connection (subchannel) per address among all of a process's channels
# with the same arguments, with its state: a channel made to an address that another
# channel kept failing to reach (a service that stopped, its port now a new service's)
# starts in that connection's reconnect backoff, and its calls fail at once with
# UNAVAILABLE for up to two minutes although the new server answers. Each channel keeps
# its own connections instead; a service makes one channel per service it calls.
OWN_CONNECTIONS = ("grpc.use_local_subchannel_pool", 1)


class _Outgoing:
    """Adds the service token and the request id to each call's metadata."""

    def __init__(self, target: str, credentials: ServiceTokenMinter) -> None:
        self._target = target
        self._credentials = credentials

    def details(self, details: grpc.aio.ClientCallDetails) -> grpc.aio.ClientCallDetails:
        metadata = [(k, v) for k, v in (details.metadata or ()) if k not in _REPLACED]
        metadata.append((SERVICE_TOKEN_HEADER, self._credentials.token(self._target)))
        request_id = current_request_id()
        if request_id is not None:
            metadata.append((REQUEST_ID_HEADER, request_id))
        return grpc.aio.ClientCallDetails(
            method=details.method,
            timeout=details.timeout,
            metadata=grpc.aio.Metadata(*metadata),
            credentials=details.credentials,
            wait_for_ready=details.wait_for_ready,
        )


class _UnaryUnary(grpc.aio.UnaryUnaryClientInterceptor):  # type: ignore[type-arg]
    def __init__(self, outgoing: _Outgoing) -> None:
        self._outgoing = outgoing

    async def intercept_unary_unary(
        self, continuation: Callable[..., Any], details: grpc.aio.ClientCallDetails, request: Any
    ) -> Any:
        return await continuation(self._outgoing.details(details), request)


class _UnaryStream(grpc.aio.UnaryStreamClientInterceptor):  # type: ignore[type-arg]
    def __init__(self, outgoing: _Outgoing) -> None:
        self._outgoing = outgoing

    async def intercept_unary_stream(
        self, continuation: Callable[..., Any], details: grpc.aio.ClientCallDetails, request: Any
    ) -> Any:
        return await continuation(self._outgoing.details(details), request)


def service_channel(
    address: str,
    *,
    target: str,
    credentials: ServiceTokenMinter,
    options: Sequence[tuple[str, Any]] = (),
    tls: grpc.ChannelCredentials | None = None,
) -> grpc.aio.Channel:
    """A channel to service ``target`` at ``address``, calling as ``credentials.service``.

    The hop itself is plaintext inside the cluster (a mesh or network policy may
    encrypt it); what a call is allowed to do rests on the signed token, not on
    where it comes from. ``options`` are gRPC channel arguments (e.g. reconnect backoff);
    the channel's connections are its own (``OWN_CONNECTIONS``).
    ``tls``: a TLS channel instead (the benchmarks' client to a gateway port, presenting
    the gateway's certificate: services/kit/gateway_tls.py).
    """
    outgoing = _Outgoing(target, credentials)
    interceptors: list[Any] = [_UnaryUnary(outgoing), _UnaryStream(outgoing)]
    arguments = [OWN_CONNECTIONS, *options]
    if tls is not None:
        return grpc.aio.secure_channel(address, tls, options=arguments,
                                       interceptors=interceptors)
    return grpc.aio.insecure_channel(address, options=arguments, interceptors=interceptors)
