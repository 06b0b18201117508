"""Login, registration and refresh limited per client on a service's own port too.

The gateway limits these methods per client address (``services/kit/gateway``:
10 logins, 5 registrations, 30 refreshes a minute by default). A caller who
reaches a service's plain port directly must meet the same limits, or guessing
passwords there would be free. :class:`DirectCallLimiter` counts each such call
by the caller's own network address (the TCP peer: a header would be the
caller's choice) in a token bucket of the gateway's size, and refuses one over
the limit with RESOURCE_EXHAUSTED.

Calls proven to come from the gateway (its certificate on the gateway port,
:mod:`services.kit.gateway_tls`) are not counted again: the gateway has already
counted them by the same client address, and its peer address is the gateway's
own, shared by every player. Buckets are per process (as the gateway's are per
Envoy) and the least recently used are forgotten beyond ``MAX_CLIENTS``.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import grpc

from services.kit.errors import ResourceExhausted
from services.kit.gateway.settings import DEFAULT_RATE_LIMITS, RATE_LIMITED_METHODS
from services.kit.gateway_tls import from_gateway

Context = grpc.aio.ServicerContext[Any, Any]
MAX_CLIENTS = 100_000


@dataclass
class _Bucket:
    tokens: float
    updated: float


class TokenBuckets:
    """At most ``requests`` per ``per_seconds`` for each key, refilled continuously."""

    def __init__(self, requests: int, per_seconds: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._capacity = float(requests)
        self._rate = requests / per_seconds
        self._clock = clock
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()

    def take(self, key: str) -> bool:
        """Spend one token of ``key``'s bucket; False when it has none."""
        now = self._clock()
        bucket = self._buckets.pop(key, None) or _Bucket(self._capacity, now)
        bucket.tokens = min(self._capacity, bucket.tokens + (now - bucket.updated) * self._rate)
        bucket.updated = now
        self._buckets[key] = bucket
        if len(self._buckets) > MAX_CLIENTS:
            self._buckets.popitem(last=False)
        if bucket.tokens < 1.0:
            return False
        bucket.tokens -= 1.0
        return True


def default_limits() -> dict[str, tuple[int, int]]:
    """Method path -> (requests, per seconds): the gateway's defaults."""
    return {RATE_LIMITED_METHODS[name]: (limit.requests, limit.per_seconds)
            for name, limit in DEFAULT_RATE_LIMITS.items()}


def peer_host(peer: str) -> str:
    """The address part of a gRPC peer string (``ipv4:10.0.0.7:5123``, ``ipv6:[::1]:80``)."""
    kind, _, rest = peer.partition(":")
    if kind == "ipv4":
        return rest.rpartition(":")[0]
    if kind == "ipv6":
        return rest.rpartition(":")[0].strip("[]")
    return peer


class DirectCallLimiter:
    """The limits on direct callers of login, registration and refresh (module docstring).

    The kit's server interceptor (:mod:`services.kit.interceptors`) takes a method's
    bucket once (:meth:`bucket`) and, for a limited method, calls :meth:`admit` on
    every call before the caller's credential is checked.
    """

    def __init__(self, limits: Mapping[str, tuple[int, int]] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        limits = default_limits() if limits is None else limits
        self._buckets = {method: TokenBuckets(requests, seconds, clock)
                         for method, (requests, seconds) in limits.items()}

    def bucket(self, method: str) -> TokenBuckets | None:
        """The method's buckets, or None for a method without a limit."""
        return self._buckets.get(method)

    def admit(self, method: str, bucket: TokenBuckets, context: Context) -> None:
        """ResourceExhausted when a direct caller is over the method's limit."""
        if from_gateway(context):
            return
        if not bucket.take(peer_host(context.peer())):
            name = method.rpartition("/")[2]
            raise ResourceExhausted(
                f"too many {name} calls from this address; wait a minute and try again"
            )
