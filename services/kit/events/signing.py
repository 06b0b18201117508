"""Signed events: who wrote an event is proven by its producer's service key, not by a header.

Every event a relay publishes carries a Kafka header ``ce_signature``: a compact
JWS (ES256, detached payload, RFC 7515 appendix F) made with the producing
service's own key, the one it signs service tokens with (``TAVLA_SERVICE_KEY_FILE``).
Its protected header names the key (``kid``, the key's RFC 7638 thumbprint) and
the service (``iss``). The signed payload, never sent, is the canonical JSON of::

    {"ce_id", "ce_source", "ce_type", "digest": sha256(value) in hex, "key", "topic"}

so a signature cannot be moved to another value, event id, type, topic or key.

A consumer verifies before applying (:class:`EventVerifier`): the ``kid`` must be
a key of a known service (``TAVLA_SERVICE_PUBLIC_KEYS_DIR``, the same directory
that verifies service tokens), ``iss`` must be that service, the signature must
hold, and that service must be a declared owner of the topic (:data:`TOPIC_OWNERS`).
Anything else is refused with a reason, and the consumer parks the event
(reason ``signature``) instead of applying it.

The relay signs when it publishes, not when the event is recorded: the outbox
row is never changed after its commit (topic, key, value and headers are fixed),
so the relay signs exactly what the service recorded, and the business
transaction does not pay for a signature.
"""

from __future__ import annotations

import binascii
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import jwt
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from jwt.api_jws import PyJWS
from jwt.utils import base64url_decode, base64url_encode

from services.kit.json_text import encoder
from services.kit.keys import PrivateKey, PublicKey, key_id

SIGNATURE_HEADER = "ce_signature"
ALGORITHM = "ES256"
SIGNED_HEADERS = ("ce_id", "ce_type", "ce_source")

# The services allowed to write each topic: a consumer applies an event only when its
# signer is one of them. A topic missing here has no owner, so none of its events is applied.
TOPIC_OWNERS: Mapping[str, frozenset[str]] = {
    "tavla.accounts.v1": frozenset({"accounts"}),
    "tavla.game.v1": frozenset({"game"}),
    "tavla.matchmaking.v1": frozenset({"matchmaking"}),
    "tavla.wallet.v1": frozenset({"wallet"}),
    "tavla.geo.v1": frozenset({"geo"}),
    "tavla.analysis.v1": frozenset({"analysis"}),
    "tavla.antiabuse.v1": frozenset({"antiabuse"}),
    "tavla.tournaments.v1": frozenset({"tournaments"}),
    "tavla.compliance.alerts.v1": frozenset({"antiabuse"}),
}

_jws = PyJWS(algorithms=[ALGORITHM])
_ES256 = ec.ECDSA(hashes.SHA256())
_canonical = encoder(sort_keys=True, separators=(",", ":"))


class SignatureRefused(Exception):
    """An event whose producer is not proven: unsigned, forged, or not the topic's owner."""


def signed_content(topic: str, key: str, value: bytes, headers: Mapping[str, str]) -> bytes:
    """The bytes a signature covers (the detached JWS payload)."""
    content = {name: headers.get(name, "") for name in SIGNED_HEADERS}
    content.update(topic=topic, key=key, digest=hashlib.sha256(value).hexdigest())
    return _canonical(content).encode()


class EventSigner:
    """Signs the events ``service`` publishes with its service key."""

    def __init__(self, service: str, key: PrivateKey) -> None:
        self.service = service
        self._key = key
        self._protected = {"kid": key_id(key.public_key()), "iss": service}
        # The protected header is the same for every event: PyJWT encodes it once here,
        # and each event pays only for its payload's signature (the relay signs every
        # event it publishes).
        self._header = _jws.encode(
            b"", key, algorithm=ALGORITHM, headers=self._protected, is_payload_detached=True
        ).partition(".")[0]
        self._signing_prefix = f"{self._header}.".encode()

    def sign(self, topic: str, key: str, value: bytes, headers: Mapping[str, str]) -> str:
        """The ``ce_signature`` header's value: ``<protected>..<signature>``.

        As PyJWT's ``encode(..., is_payload_detached=True)`` makes it: the signing
        input is the protected header's segment, a dot and the payload unencoded
        (RFC 7797 ``b64: false``, which the header declares critical).
        """
        payload = signed_content(topic, key, value, headers)
        # ES256 as PyJWT makes it (its ECAlgorithm.sign), without its per-call objects:
        # the DER signature's r and s as 32 big-endian bytes each (RFC 7518 3.4).
        r, s = decode_dss_signature(self._key.sign(self._signing_prefix + payload, _ES256))
        signature = r.to_bytes(32, "big") + s.to_bytes(32, "big")
        return f"{self._header}..{base64url_encode(signature).decode()}"


@dataclass(frozen=True)
class _Signer:
    service: str
    key: Any  # the public key as the algorithm prepared it


# Distinct protected headers a verifier keeps checked: one per producing key in practice.
MAX_CHECKED_HEADERS = 256


class EventVerifier:
    """Checks ``ce_signature`` against the producers' public keys and the topics' owners.

    A producer's protected header is the same on every event it signs, so the header's
    checks (a JWS header PyJWT accepts, ES256, ``b64: false`` declared critical, a known
    ``kid``, its service as ``iss``) are made once per distinct header and remembered;
    each event then pays for its own signature only: the ES256 verification of
    ``<protected>.<signed content>``, as PyJWT's ``decode_complete`` with a detached
    payload verifies it.
    """

    def __init__(
        self,
        keys: Mapping[str, Mapping[str, PublicKey]],
        owners: Mapping[str, frozenset[str]] = TOPIC_OWNERS,
    ) -> None:
        self._algorithm = _jws.get_algorithm_by_name(ALGORITHM)
        self._signers = {
            kid: _Signer(service, self._algorithm.prepare_key(key))
            for service, by_kid in keys.items()
            for kid, key in by_kid.items()
        }
        self._owners = owners
        self._checked: dict[str, _Signer] = {}

    def producer(self, topic: str, key: str, value: bytes, headers: Mapping[str, str]) -> str:
        """The service that signed this event; :class:`SignatureRefused` saying why otherwise."""
        token = headers.get(SIGNATURE_HEADER)
        if not token:
            raise SignatureRefused(f"unsigned: no {SIGNATURE_HEADER} header")
        protected, payload, encoded_signature = _segments(token)
        signer = self._checked.get(protected) or self._check_header(token, protected)
        if payload:
            raise SignatureRefused(f"{SIGNATURE_HEADER} carries a payload: it must be detached")
        try:
            signature = base64url_decode(encoded_signature)
        except (binascii.Error, ValueError):
            raise SignatureRefused(f"{SIGNATURE_HEADER}'s signature is not base64url") from None
        signing_input = f"{protected}.".encode() + signed_content(topic, key, value, headers)
        if not self._algorithm.verify(signing_input, signer.key, signature):
            raise SignatureRefused(f"the signature of {signer.service} does not match this event")
        owners = self._owners.get(topic, frozenset())
        if signer.service not in owners:
            raise SignatureRefused(
                f"{signer.service} does not own {topic} "
                f"(its owners: {', '.join(sorted(owners)) or 'none declared'})"
            )
        return signer.service

    def _check_header(self, token: str, protected: str) -> _Signer:
        """The signer a protected header names, once every check of it holds."""
        try:
            header = _jws.get_unverified_header(token)
        except jwt.InvalidTokenError as error:
            raise SignatureRefused(f"{SIGNATURE_HEADER} is not a JWS ({error})") from None
        if header.get("alg") != ALGORITHM:
            raise SignatureRefused(f"{SIGNATURE_HEADER} is not signed with {ALGORITHM}")
        crit = header.get("crit")
        if header.get("b64", True) is not False or not isinstance(crit, list) or "b64" not in crit:
            raise SignatureRefused(
                f"{SIGNATURE_HEADER} must sign a detached, unencoded payload (b64 false, critical)"
            )
        signer = self._signers.get(str(header.get("kid")))
        if signer is None:
            raise SignatureRefused("signed with a key of no known service")
        if header.get("iss") != signer.service:
            raise SignatureRefused(
                f"names {str(header.get('iss'))[:40]!r} but is signed by {signer.service}'s key"
            )
        if len(self._checked) < MAX_CHECKED_HEADERS:
            self._checked[protected] = signer
        return signer


def _segments(token: str) -> tuple[str, str, str]:
    parts = token.split(".")
    if len(parts) != 3:
        raise SignatureRefused(f"{SIGNATURE_HEADER} is not a compact JWS (three segments)")
    return parts[0], parts[1], parts[2]
