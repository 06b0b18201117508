"""Access tokens: ES256 JWTs that the gateway verifies against our public key."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from services.kit.config import ConfigError

ISSUER = "tavla"


@dataclass(frozen=True)
class AccessToken:
    token: str
    expires_at: datetime


class TokenIssuer:
    def __init__(self, private_key_pem: bytes, ttl: timedelta, key_id: str = "tavla-1") -> None:
        key = serialization.load_pem_private_key(private_key_pem, password=None)
        if not isinstance(key, ec.EllipticCurvePrivateKey):
            raise ConfigError("the JWT signing key must be an EC P-256 private key (ES256)")
        self._key = key
        self._ttl = ttl
        self._key_id = key_id

    @classmethod
    def from_file(cls, path: str, ttl: timedelta) -> TokenIssuer:
        try:
            pem = Path(path).read_bytes()
        except OSError as error:
            raise ConfigError(f"TAVLA_JWT_PRIVATE_KEY_FILE={path!r}: {error.strerror}") from None
        return cls(pem, ttl)

    def issue(self, account_id: str, now: datetime) -> AccessToken:
        expires_at = now + self._ttl
        claims = {"iss": ISSUER, "sub": account_id, "iat": now, "exp": expires_at}
        token = jwt.encode(claims, self._key, algorithm="ES256", headers={"kid": self._key_id})
        return AccessToken(token=token, expires_at=expires_at)

    def public_key(self) -> ec.EllipticCurvePublicKey:
        return self._key.public_key()
