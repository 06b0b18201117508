"""Verifying a player's access token where it is used: in every service, not only the gateway.

An access token is an ES256 JWT issued by the accounts service: header ``kid``
(the signing key's RFC 7638 thumbprint), claims ``iss="tavla"``,
``aud="tavla-api"``, ``sub`` (the account id), ``iat``, ``exp`` and ``jti``,
and ``residence``: the player's declared residence as an ISO 3166 code
(``"MT"``, ``"US-NJ"``; empty or absent if unknown), so that services asking
the geo service need not ask accounts where a player lives; and ``roles``, an
optional list of staff roles (``["compliance"]``) that methods declaring
``roles`` in their access option require (:mod:`services.kit.authn`).
The signature is checked with the key the ``kid`` names, taken from a
:class:`KeySource` (the accounts service's JWKS, cached: see
:mod:`services.kit.jwks`; the accounts service itself uses its own keys).

Times are checked against the system clock, not the service's injectable
clock: a token is a wall-clock credential that crosses processes.

A verified token is remembered until its ``exp`` (a bounded LRU), because
ES256 verification costs a fraction of a millisecond of CPU per call and the
game service is CPU-bound; a change in the key set forgets everything
remembered, so a key withdrawn from the JWKS stops its tokens at once.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import jwt

from services.kit.errors import Unauthenticated
from services.kit.keys import PublicKey

ISSUER = "tavla"
AUDIENCE = "tavla-api"
ALGORITHM = "ES256"
# Tolerated clock difference between the accounts service and this one.
LEEWAY_SECONDS = 10
REQUIRED_CLAIMS = ["iss", "aud", "sub", "iat", "exp"]


class KeySource(Protocol):
    """The public keys that verify access tokens, by ``kid``."""

    @property
    def version(self) -> int:
        """Changes whenever the set of keys changes."""
        ...

    async def key(self, kid: str) -> PublicKey | None:
        """The key named ``kid``, or None if it is not (or no longer) published."""
        ...


class StaticKeys:
    """A fixed set of keys: the accounts service's own, or a test's."""

    def __init__(self, keys: Mapping[str, PublicKey]) -> None:
        self._keys = dict(keys)

    @property
    def version(self) -> int:
        return 0

    async def key(self, kid: str) -> PublicKey | None:
        return self._keys.get(kid)


@dataclass(frozen=True, slots=True)
class VerifiedPlayer:
    """What a valid access token says of its player."""

    account_id: str
    residence: str = ""
    roles: frozenset[str] = frozenset()


@dataclass(frozen=True)
class _Verified:
    player: VerifiedPlayer
    expires: float
    version: int


class PlayerTokenVerifier:
    def __init__(
        self,
        keys: KeySource,
        *,
        cache_size: int = 10_000,
        now: Callable[[], float] = time.time,
    ) -> None:
        self._keys = keys
        self._cache: OrderedDict[str, _Verified] = OrderedDict()
        self._cache_size = cache_size
        self._now = now

    async def subject(self, token: str) -> str:
        """The account id the token names; Unauthenticated, saying why, if it is not valid."""
        return (await self.player(token)).account_id

    async def player(self, token: str) -> VerifiedPlayer:
        """The player the token names; Unauthenticated, saying why, if it is not valid."""
        remembered = self._cache.get(token)
        if remembered is not None:
            if remembered.expires > self._now() and remembered.version == self._keys.version:
                self._cache.move_to_end(token)
                return remembered.player
            del self._cache[token]
        version = self._keys.version
        claims = await self._verify(token)
        residence = claims.get("residence")
        player = VerifiedPlayer(
            str(claims["sub"]),
            residence if isinstance(residence, str) else "",
            _roles(claims.get("roles")),
        )
        self._remember(token, _Verified(player, float(claims["exp"]), version))
        return player

    async def _verify(self, token: str) -> dict[str, Any]:
        try:
            header = jwt.get_unverified_header(token)
        except jwt.InvalidTokenError:
            raise Unauthenticated("the access token is not a JWT; log in again") from None
        if header.get("alg") != ALGORITHM:
            raise Unauthenticated(f"the access token must be signed with {ALGORITHM}")
        kid = header.get("kid")
        if not isinstance(kid, str) or not kid:
            raise Unauthenticated("the access token names no signing key (kid)")
        key = await self._keys.key(kid)
        if key is None:
            raise Unauthenticated("the access token is signed by an unknown key; log in again")
        claims = decode(token, key)
        if not isinstance(claims.get("sub"), str) or not claims["sub"]:
            raise Unauthenticated("the access token names no account (sub)")
        return claims

    def _remember(self, token: str, verified: _Verified) -> None:
        self._cache[token] = verified
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)


def decode(token: str, key: PublicKey) -> dict[str, Any]:
    """The claims of a valid access token signed by ``key``; Unauthenticated otherwise."""
    try:
        claims: dict[str, Any] = jwt.decode(
            token,
            key,
            algorithms=[ALGORITHM],
            audience=AUDIENCE,
            issuer=ISSUER,
            leeway=LEEWAY_SECONDS,
            options={"require": REQUIRED_CLAIMS},
        )
    except jwt.ExpiredSignatureError:
        raise Unauthenticated("the access token has expired; log in again") from None
    except jwt.InvalidTokenError as error:
        raise Unauthenticated(f"the access token is not valid ({error}); log in again") from None
    return claims


def _roles(claim: Any) -> frozenset[str]:
    """The token's staff roles: a list of strings; anything else grants none."""
    if not isinstance(claim, list):
        return frozenset()
    return frozenset(role for role in claim if isinstance(role, str) and role)


def bearer_token(value: str) -> str | None:
    """The token in an ``authorization`` value ``Bearer <token>``, or None."""
    scheme, _, token = value.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()
