"""EC P-256 keys for ES256 tokens: loading PEM files, JWKs and their thumbprints.

Access tokens (signed by the accounts service) and service tokens (signed by
each calling service) are both ES256 JWTs. A key's ``kid`` is its RFC 7638
thumbprint, so it is derived from the key itself and needs no configuration.
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from jwt.algorithms import ECAlgorithm

from services.kit.config import ConfigError

PrivateKey = ec.EllipticCurvePrivateKey
PublicKey = ec.EllipticCurvePublicKey


def load_private_key(path: Path, variable: str) -> PrivateKey:
    """The P-256 private key in a PEM file; a ConfigError naming ``variable`` otherwise."""
    try:
        pem = path.read_bytes()
    except OSError as error:
        raise ConfigError(f"{variable}={str(path)!r}: {error.strerror}") from None
    try:
        key = serialization.load_pem_private_key(pem, password=None)
    except (ValueError, TypeError):
        raise ConfigError(f"{variable}={str(path)!r} is not a PEM private key") from None
    if not isinstance(key, ec.EllipticCurvePrivateKey) or key.curve.name != "secp256r1":
        raise ConfigError(f"{variable}={str(path)!r} must hold an EC P-256 key (ES256)")
    return key


def load_public_key(path: Path, variable: str) -> PublicKey:
    """The P-256 public key in a PEM file; a ConfigError naming ``variable`` otherwise."""
    try:
        key = serialization.load_pem_public_key(path.read_bytes())
    except OSError as error:
        raise ConfigError(f"{variable}: {str(path)!r}: {error.strerror}") from None
    except (ValueError, TypeError):
        raise ConfigError(f"{variable}: {str(path)!r} is not a PEM public key") from None
    if not isinstance(key, ec.EllipticCurvePublicKey) or key.curve.name != "secp256r1":
        raise ConfigError(f"{variable}: {str(path)!r} must hold an EC P-256 key (ES256)")
    return key


def public_jwk(key: PublicKey, kid: str | None = None) -> dict[str, str]:
    """The public JWK (RFC 7517) of a P-256 key, with ``alg``, ``use`` and, if given, ``kid``."""
    jwk: dict[str, str] = ECAlgorithm.to_jwk(key, as_dict=True)
    jwk["alg"] = "ES256"
    jwk["use"] = "sig"
    if kid is not None:
        jwk["kid"] = kid
    return jwk


def thumbprint(jwk: dict[str, str]) -> str:
    """RFC 7638 thumbprint (SHA-256, base64url) of an EC public JWK."""
    canonical = json.dumps(
        {k: jwk[k] for k in ("crv", "kty", "x", "y")}, separators=(",", ":"), sort_keys=True
    )
    digest = hashlib.sha256(canonical.encode()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def key_id(key: PublicKey) -> str:
    """The ``kid`` a key signs with: its RFC 7638 thumbprint."""
    return thumbprint(public_jwk(key))


def key_from_jwk(jwk: dict[str, str]) -> PublicKey:
    """A P-256 public key from its JWK; ValueError for anything else."""
    if jwk.get("kty") != "EC" or jwk.get("crv") != "P-256":
        raise ValueError(f"not an EC P-256 JWK: kty={jwk.get('kty')!r} crv={jwk.get('crv')!r}")
    key = ECAlgorithm.from_jwk(json.dumps({k: jwk[k] for k in ("kty", "crv", "x", "y")}))
    if not isinstance(key, ec.EllipticCurvePublicKey):
        raise ValueError("a JWKS must publish public keys only")
    return key


def private_pem(key: PrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def public_pem(key: PublicKey) -> bytes:
    return key.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
