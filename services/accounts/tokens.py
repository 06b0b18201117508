"""Access tokens: ES256 JWTs that the gateway and every service verify with our public keys.

Claims: ``iss="tavla"``, ``aud="tavla-api"``, ``sub`` (the account id), ``iat``,
``exp``, ``jti`` and ``residence``: the player's declared residence as an ISO
3166 code (``"MT"``, ``"US-NJ"``), signed in at every login and refresh from the
account's record, so that services asking the geo service for a real-money
action read it with ``services.kit.auth.acting_residence`` instead of asking
accounts. It is absent for an account with no residence on record (opened
before it was asked), which real-money geo checks refuse. ``roles``: the
account's staff roles (``["compliance"]``, ``services/accounts/roles.py``),
present only when it holds one; read at every login and refresh. ``screen_name``: the
name other players see (``services/accounts/screen_names.py``), so that a client shows
its player's own name without a lookup; absent until one is chosen. Header ``kid``, the
signing key's RFC 7638 thumbprint. The
JWKS (``GetJwks``, ``/.well-known/jwks.json``) publishes the signing key and any
others in ``TAVLA_JWT_PUBLISHED_KEYS_DIR``: the previous key while tokens it
signed still live, or the next one ahead of a switch. That is how a key rotates
without refusing a valid token.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import jwt

from services.kit.config import ConfigError
from services.kit.keys import PrivateKey, PublicKey, key_id, load_private_key, load_public_key
from services.kit.keys import public_jwk as jwk_of
from services.kit.player_tokens import AUDIENCE, ISSUER, StaticKeys

PRIVATE_KEY_VARIABLE = "TAVLA_JWT_PRIVATE_KEY_FILE"
PUBLISHED_KEYS_VARIABLE = "TAVLA_JWT_PUBLISHED_KEYS_DIR"


@dataclass(frozen=True)
class AccessToken:
    token: str
    expires_at: datetime


class TokenIssuer:
    def __init__(
        self, key: PrivateKey, ttl: timedelta, published: Sequence[PublicKey] = ()
    ) -> None:
        self._key = key
        self._ttl = ttl
        self.key_id = key_id(key.public_key())
        self._public = {self.key_id: key.public_key()}
        self._public.update((key_id(other), other) for other in published)

    @classmethod
    def from_files(
        cls, private_key_file: str, ttl: timedelta, published_dir: str | None = None
    ) -> TokenIssuer:
        key = load_private_key(Path(private_key_file), PRIVATE_KEY_VARIABLE)
        return cls(key, ttl, _published_keys(published_dir) if published_dir else ())

    def issue(
        self, account_id: str, now: datetime, residence: str = "", roles: Sequence[str] = (),
        screen_name: str = "",
    ) -> AccessToken:
        """A token for ``account_id`` carrying its declared ``residence`` (none if empty),
        its staff ``roles`` (no claim if none) and its ``screen_name`` (none if empty)."""
        expires_at = now + self._ttl
        claims: dict[str, object] = {
            "iss": ISSUER,
            "aud": AUDIENCE,
            "sub": account_id,
            "iat": now,
            "exp": expires_at,
            "jti": uuid.uuid4().hex,
        }
        if residence:
            claims["residence"] = residence
        if roles:
            claims["roles"] = sorted(roles)
        if screen_name:
            claims["screen_name"] = screen_name
        token = jwt.encode(claims, self._key, algorithm="ES256", headers={"kid": self.key_id})
        return AccessToken(token=token, expires_at=expires_at)

    def public_key(self) -> PublicKey:
        return self._key.public_key()

    def jwks(self) -> list[dict[str, str]]:
        """The published public keys as JWKs, the signing key first."""
        return [jwk_of(key, kid) for kid, key in self._public.items()]

    def verification_keys(self) -> StaticKeys:
        """What this service verifies its own tokens with: the keys it publishes."""
        return StaticKeys(self._public)


def _published_keys(directory: str) -> list[PublicKey]:
    path = Path(directory)
    if not path.is_dir():
        raise ConfigError(f"{PUBLISHED_KEYS_VARIABLE}={directory!r} is not a directory")
    return [load_public_key(p, PUBLISHED_KEYS_VARIABLE) for p in sorted(path.glob("*.pem"))]
