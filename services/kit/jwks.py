"""The accounts service's JWKS, cached: the keys that verify players' access tokens.

Fetched over gRPC (``AccountsService.GetJwks`` at ``TAVLA_ACCOUNTS_ADDRESS``) on
first use, again every ``TAVLA_JWKS_REFRESH_SECONDS``, and at once when a token
names a ``kid`` the cache does not hold, which is how a rotated key is picked up.
That last kind of refresh happens at most once per
``TAVLA_JWKS_MIN_REFRESH_SECONDS``, so a flood of tokens with made-up ``kid``
values costs the accounts service one call per interval, not one per token.
After a failed fetch (the accounts service starting after this one, or away)
the next attempt comes after a second instead, one at a time. Until the first
fetch succeeds the service reports itself not ready (``services.kit.server``), so
no load balancer sends it players it would refuse.
The accounts service serves its current and previous keys side by side while
tokens signed by the previous one live, so rotation never refuses a valid token.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence

import grpc
from google.protobuf.json_format import MessageToDict

from services.kit.errors import Unavailable
from services.kit.keys import PublicKey, key_from_jwk
from services.kit.logging import get_logger
from tavla.accounts.v1 import accounts_pb2, accounts_pb2_grpc

log = get_logger(__name__)

Fetch = Callable[[], Awaitable[Sequence[dict[str, str]]]]
RETRY_AFTER_FAILURE_SECONDS = 1.0


class JwksCache:
    def __init__(
        self,
        fetch: Fetch,
        *,
        refresh_seconds: float = 300.0,
        min_refresh_seconds: float = 10.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._fetch = fetch
        self._refresh_seconds = refresh_seconds
        self._min_refresh_seconds = min_refresh_seconds
        self._monotonic = monotonic
        self._keys: dict[str, PublicKey] = {}
        self._fetched_ok = False
        self._last_failed = False
        self._last_attempt: float | None = None
        self._lock = asyncio.Lock()
        self._version = 0
        self.fetches = 0

    @property
    def version(self) -> int:
        return self._version

    @property
    def ready(self) -> bool:
        """A JWKS was fetched at least once (it is kept while the accounts service is away)."""
        return self._fetched_ok

    async def key(self, kid: str) -> PublicKey | None:
        key = self._keys.get(kid)
        if key is not None:
            return key
        await self.refresh()
        if not self._fetched_ok:
            raise Unavailable(
                "the keys that verify access tokens cannot be fetched from the accounts "
                "service now; retry"
            )
        return self._keys.get(kid)

    async def refresh(self, *, scheduled: bool = False) -> None:
        """Fetch the JWKS, unless one was fetched less than the minimum interval ago."""
        async with self._lock:
            if not scheduled and self._too_soon():
                return
            self._last_attempt = self._monotonic()
            self.fetches += 1
            try:
                jwks = await self._fetch()
            except Exception as error:  # accounts away: keep what we have, retry soon
                log.warning("jwks_fetch_failed", error=repr(error))
                self._last_failed = True
                return
            self._replace(_parse(jwks))
            self._fetched_ok = True
            self._last_failed = False

    async def run(self) -> None:
        """Refresh every ``refresh_seconds`` (a background task of the server)."""
        while True:
            await self.refresh(scheduled=True)
            await asyncio.sleep(self.next_delay())

    def next_delay(self) -> float:
        """Seconds until the next scheduled refresh: soon after a failure (the accounts
        service starting later than us), the regular interval otherwise."""
        if self._last_failed:
            return min(self._refresh_seconds, RETRY_AFTER_FAILURE_SECONDS)
        return self._refresh_seconds

    def _too_soon(self) -> bool:
        if self._last_attempt is None:
            return False
        return self._monotonic() - self._last_attempt < self._interval()

    def _interval(self) -> float:
        if self._last_failed:
            return min(self._min_refresh_seconds, RETRY_AFTER_FAILURE_SECONDS)
        return self._min_refresh_seconds

    def _replace(self, keys: dict[str, PublicKey]) -> None:
        if _numbers(keys) != _numbers(self._keys):
            self._version += 1
            log.info("jwks_changed", kids=sorted(keys))
        self._keys = keys


def _parse(jwks: Sequence[dict[str, str]]) -> dict[str, PublicKey]:
    keys: dict[str, PublicKey] = {}
    for jwk in jwks:
        kid = jwk.get("kid")
        if not kid or jwk.get("alg", "ES256") != "ES256":
            log.warning("jwks_key_skipped", kid=kid, alg=jwk.get("alg"))
            continue
        try:
            keys[kid] = key_from_jwk(jwk)
        except (ValueError, KeyError) as error:
            log.warning("jwks_key_skipped", kid=kid, error=repr(error))
    return keys


def _numbers(keys: dict[str, PublicKey]) -> dict[str, tuple[int, int]]:
    return {kid: (k.public_numbers().x, k.public_numbers().y) for kid, k in keys.items()}


def grpc_fetch(channel: grpc.aio.Channel, timeout_seconds: float = 5.0) -> Fetch:
    """A :data:`Fetch` that calls ``AccountsService.GetJwks`` over ``channel``."""
    stub = accounts_pb2_grpc.AccountsServiceStub(channel)

    async def fetch() -> Sequence[dict[str, str]]:
        response = await stub.GetJwks(accounts_pb2.GetJwksRequest(), timeout=timeout_seconds)
        return [
            MessageToDict(jwk, preserving_proto_field_name=True) for jwk in response.keys
        ]

    return fetch
