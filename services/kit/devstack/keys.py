"""Local ES256 keys, made once and kept in the run dir (`.tavla/`, git-ignored).

- The key pair that signs access tokens: the private key PEM goes to the
  accounts service, the public half as a JWKS file to the gateway. The JWK
  carries no `kid` on purpose: Envoy then tries it whatever `kid` the signer
  puts in its tokens, and there is only one local key. `thumbprint` (RFC 7638)
  names the key in logs.
- One key pair per service for service tokens: `service-keys/<name>.key.pem`
  (that service's `TAVLA_SERVICE_KEY_FILE`) and `service-keys/public/<name>.pem`
  (the directory every service gets as `TAVLA_SERVICE_PUBLIC_KEYS_DIR`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from services.kit.keys import private_pem, public_pem, thumbprint
from services.kit.keys import public_jwk as _public_jwk

PRIVATE_KEY_FILE = "jwt-private.pem"
JWKS_FILE = "jwks.json"
SERVICE_KEYS_DIR = "service-keys"


@dataclass(frozen=True)
class SigningKeys:
    private_key_file: Path
    jwks_file: Path
    thumbprint: str


@dataclass(frozen=True)
class ServiceKeys:
    directory: Path

    def private_key_file(self, service: str) -> Path:
        return self.directory / f"{service}.key.pem"

    @property
    def public_keys_dir(self) -> Path:
        return self.directory / "public"


def public_jwk(private_key: ec.EllipticCurvePrivateKey) -> dict[str, str]:
    """The public JWK (with `alg` and `use`, no `kid`) for a P-256 private key."""
    return _public_jwk(private_key.public_key())


def ensure_signing_keys(run_dir: Path) -> SigningKeys:
    """Load the key pair from `run_dir`, generating it on first use."""
    run_dir.mkdir(parents=True, exist_ok=True)
    private_path = run_dir / PRIVATE_KEY_FILE
    jwks_path = run_dir / JWKS_FILE
    private_key = ensure_private_key(private_path)
    jwk = public_jwk(private_key)
    # Always rewritten from the private key, so the two can never disagree.
    jwks_path.write_text(json.dumps({"keys": [jwk]}, indent=2) + "\n")
    return SigningKeys(private_path, jwks_path, thumbprint(jwk))


def ensure_service_keys(run_dir: Path, services: Iterable[str]) -> ServiceKeys:
    """A key pair per service under `run_dir/service-keys`, generated on first use."""
    keys = ServiceKeys(run_dir / SERVICE_KEYS_DIR)
    keys.public_keys_dir.mkdir(parents=True, exist_ok=True)
    for service in services:
        private_key = ensure_private_key(keys.private_key_file(service))
        # Always rewritten from the private key, so the two can never disagree.
        (keys.public_keys_dir / f"{service}.pem").write_bytes(
            public_pem(private_key.public_key())
        )
    return keys


def ensure_private_key(path: Path) -> ec.EllipticCurvePrivateKey:
    if not path.exists():
        _write_private_key(path, ec.generate_private_key(ec.SECP256R1()))
    return load_private_key(path)


def load_private_key(path: Path) -> ec.EllipticCurvePrivateKey:
    key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise ValueError(f"{path} does not hold an EC private key")
    return key


def _write_private_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    # Created 0600 from the start: the key is never world-readable, even briefly.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(private_pem(key))
