"""Service credentials: short-lived ES256 JWTs a service signs to call another.

Every service has its own key pair. Calling ``wallet``, the game service sends
``x-tavla-service-token: <jwt>`` with header ``kid`` (its key's thumbprint)
and claims ``iss`` = ``sub`` = ``"game"``, ``aud`` = ``"wallet"``, ``iat``,
``exp`` (five minutes later) and ``jti``. The wallet holds the public keys of
the services allowed to call it (``TAVLA_SERVICE_PUBLIC_KEYS_DIR``: files
``<service>.pem``, or ``<service>.<label>.pem`` while a key is being rotated),
checks the signature with the key of the service the token names, its audience
and expiry, and then whether that service is among the method's declared
callers. A player's access token is never one: its issuer is ``tavla``, which
names no service.

The header is not ``authorization``: that one carries a player's token, and
keeping the two apart means neither can be mistaken for the other.
"""

from __future__ import annotations

import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt

from services.kit.config import ConfigError
from services.kit.errors import Unauthenticated
from services.kit.keys import PrivateKey, PublicKey, key_id, load_public_key

SERVICE_TOKEN_HEADER = "x-tavla-service-token"
ALGORITHM = "ES256"
TTL_SECONDS = 300
# A token minted for longer than this is refused, whoever signed it: a leaked
# service token must not outlive the window it was meant for.
MAX_LIFETIME_SECONDS = 600
# A cached token is renewed this long before it expires.
RENEW_BEFORE_SECONDS = 60
LEEWAY_SECONDS = 10
PUBLIC_KEYS_VARIABLE = "TAVLA_SERVICE_PUBLIC_KEYS_DIR"


class ServiceTokenMinter:
    """Signs this service's tokens, one per called service, reused until near expiry."""

    def __init__(
        self, service: str, key: PrivateKey, *, now: Callable[[], float] = time.time
    ) -> None:
        self.service = service
        self._key = key
        self._kid = key_id(key.public_key())
        self._now = now
        self._tokens: dict[str, tuple[str, float]] = {}

    def token(self, audience: str) -> str:
        now = self._now()
        cached = self._tokens.get(audience)
        if cached is not None and cached[1] - RENEW_BEFORE_SECONDS > now:
            return cached[0]
        issued = int(now)
        claims = {
            "iss": self.service,
            "sub": self.service,
            "aud": audience,
            "iat": issued,
            "exp": issued + TTL_SECONDS,
            "jti": uuid.uuid4().hex,
        }
        token = jwt.encode(claims, self._key, algorithm=ALGORITHM, headers={"kid": self._kid})
        self._tokens[audience] = (token, issued + TTL_SECONDS)
        return token


@dataclass(frozen=True)
class _Verified:
    caller: str
    expires: float


class ServiceTokenVerifier:
    """Checks tokens addressed to ``service`` against the public keys of known callers."""

    def __init__(
        self,
        service: str,
        keys: Mapping[str, Mapping[str, PublicKey]],
        *,
        cache_size: int = 1_000,
        now: Callable[[], float] = time.time,
    ) -> None:
        self.service = service
        self._keys = {name: dict(by_kid) for name, by_kid in keys.items()}
        self._cache: OrderedDict[str, _Verified] = OrderedDict()
        self._cache_size = cache_size
        self._now = now

    @property
    def known_services(self) -> list[str]:
        return sorted(self._keys)

    def caller(self, token: str) -> str:
        """The service that signed ``token``; Unauthenticated, saying why, if it is not valid."""
        remembered = self._cache.get(token)
        if remembered is not None and remembered.expires > self._now():
            return remembered.caller
        claims = self._verify(token)
        self._cache[token] = _Verified(claims["iss"], float(claims["exp"]))
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return str(claims["iss"])

    def _verify(self, token: str) -> dict[str, Any]:
        try:
            header = jwt.get_unverified_header(token)
            unverified = jwt.decode(token, options={"verify_signature": False})
        except jwt.InvalidTokenError:
            raise Unauthenticated("the service token is not a JWT") from None
        if header.get("alg") != ALGORITHM:
            raise Unauthenticated(f"the service token must be signed with {ALGORITHM}")
        issuer = str(unverified.get("iss", ""))
        keys = self._keys.get(issuer)
        if not keys:
            raise Unauthenticated(
                f"the service token's issuer {issuer[:40]!r} is not a service "
                f"{self.service} knows (known: {', '.join(self.known_services) or 'none'})"
            )
        key = keys.get(str(header.get("kid")))
        if key is None:
            raise Unauthenticated(f"the service token is signed by an unknown key of {issuer}")
        claims = self._decode(token, key, issuer)
        if claims["sub"] != issuer:
            raise Unauthenticated("the service token's sub must equal its iss")
        if claims["exp"] - claims["iat"] > MAX_LIFETIME_SECONDS:
            raise Unauthenticated(
                f"the service token lives longer than {MAX_LIFETIME_SECONDS} seconds"
            )
        return claims

    def _decode(self, token: str, key: PublicKey, issuer: str) -> dict[str, Any]:
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key,
                algorithms=[ALGORITHM],
                audience=self.service,
                issuer=issuer,
                leeway=LEEWAY_SECONDS,
                options={"require": ["iss", "sub", "aud", "iat", "exp"]},
            )
        except jwt.ExpiredSignatureError:
            raise Unauthenticated("the service token has expired") from None
        except jwt.InvalidAudienceError:
            raise Unauthenticated(
                f"the service token is addressed to another service, not {self.service}"
            ) from None
        except jwt.InvalidTokenError as error:
            raise Unauthenticated(f"the service token is not valid ({error})") from None
        return claims


def load_public_keys(directory: Path) -> dict[str, dict[str, PublicKey]]:
    """``<service>.pem`` and ``<service>.<label>.pem`` files: service -> kid -> key."""
    if not directory.is_dir():
        raise ConfigError(f"{PUBLIC_KEYS_VARIABLE}={str(directory)!r} is not a directory")
    keys: dict[str, dict[str, PublicKey]] = {}
    for path in sorted(directory.glob("*.pem")):
        service = path.name.split(".", 1)[0]
        key = load_public_key(path, PUBLIC_KEYS_VARIABLE)
        keys.setdefault(service, {})[key_id(key)] = key
    return keys
