"""The local ES256 key pair that signs access tokens (accounts) and verifies them (Envoy).

Made once and kept in the run dir (`.tavla/`, git-ignored): the private key PEM
goes to the accounts service, the public half as a JWKS to the gateway. The JWK
carries no `kid` on purpose: Envoy then tries it whatever `kid` the signer puts
in its tokens, and there is only one local key. `thumbprint` (RFC 7638) names
the key in logs.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from jwt.algorithms import ECAlgorithm

PRIVATE_KEY_FILE = "jwt-private.pem"
JWKS_FILE = "jwks.json"


@dataclass(frozen=True)
class SigningKeys:
    private_key_file: Path
    jwks_file: Path
    thumbprint: str


def public_jwk(private_key: ec.EllipticCurvePrivateKey) -> dict[str, str]:
    """The public JWK (with `alg` and `use`, no `kid`) for a P-256 private key."""
    jwk: dict[str, str] = ECAlgorithm.to_jwk(private_key.public_key(), as_dict=True)
    jwk["alg"] = "ES256"
    jwk["use"] = "sig"
    return jwk


def thumbprint(jwk: dict[str, str]) -> str:
    """RFC 7638 thumbprint (SHA-256, base64url) of an EC public JWK."""
    canonical = json.dumps(
        {k: jwk[k] for k in ("crv", "kty", "x", "y")}, separators=(",", ":"), sort_keys=True
    )
    digest = hashlib.sha256(canonical.encode()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def ensure_signing_keys(run_dir: Path) -> SigningKeys:
    """Load the key pair from `run_dir`, generating it on first use."""
    run_dir.mkdir(parents=True, exist_ok=True)
    private_path = run_dir / PRIVATE_KEY_FILE
    jwks_path = run_dir / JWKS_FILE
    if not private_path.exists():
        _write_private_key(private_path, ec.generate_private_key(ec.SECP256R1()))
    private_key = load_private_key(private_path)
    jwk = public_jwk(private_key)
    # Always rewritten from the private key, so the two can never disagree.
    jwks_path.write_text(json.dumps({"keys": [jwk]}, indent=2) + "\n")
    return SigningKeys(private_path, jwks_path, thumbprint(jwk))


def load_private_key(path: Path) -> ec.EllipticCurvePrivateKey:
    key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise ValueError(f"{path} does not hold an EC private key")
    return key


def _write_private_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    # Created 0600 from the start: the key is never world-readable, even briefly.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(pem)
