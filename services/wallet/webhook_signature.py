"""Signed provider webhooks: an HMAC-SHA256 over the timestamp and the raw body.

The provider sends ``Tavla-Signature: t=<unix seconds>,v1=<hex>`` where the hex is
``HMAC-SHA256(secret, "<t>." + raw body)`` (Stripe's scheme). Signing the raw
bytes, not a parsed form, means nothing between the provider and the check can
change what was signed. The timestamp is inside the signature, so a captured
webhook replayed after the window (5 minutes by default, either side of the
wallet's clock) is refused; within the window the provider's event id makes a
replay harmless (it applies once). Several ``v1`` entries may be sent while a
secret is rotated; one match is enough. Comparisons are constant-time.

Pure: the caller passes the time, so tests move it with the injectable clock.
"""

from __future__ import annotations

import hashlib
import hmac
from datetime import datetime, timedelta

SIGNATURE_HEADER = "Tavla-Signature"
DEFAULT_TOLERANCE = timedelta(minutes=5)


class SignatureRefused(Exception):
    """A webhook whose signature header is missing, malformed, wrong or outside the window."""


def signature(secret: bytes, timestamp: int, body: bytes) -> str:
    """The hex HMAC-SHA256 of ``"<timestamp>." + body`` under ``secret``."""
    return hmac.new(secret, f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()


def signature_header(secret: bytes, timestamp: int, body: bytes) -> str:
    return f"t={timestamp},v1={signature(secret, timestamp, body)}"


def _parse(header: str) -> tuple[int, list[str]]:
    timestamp: int | None = None
    candidates: list[str] = []
    for part in header.split(","):
        key, _, value = part.strip().partition("=")
        if key == "t":
            try:
                timestamp = int(value)
            except ValueError:
                raise SignatureRefused(
                    f"{SIGNATURE_HEADER} has a bad timestamp t={value!r}"
                ) from None
        elif key == "v1" and value:
            candidates.append(value)
    if timestamp is None or not candidates:
        raise SignatureRefused(
            f"{SIGNATURE_HEADER} must be 't=<unix seconds>,v1=<hex HMAC-SHA256>'"
        )
    return timestamp, candidates


def verify(
    header: str | None,
    body: bytes,
    secret: bytes,
    now: datetime,
    tolerance: timedelta = DEFAULT_TOLERANCE,
) -> int:
    """Check a webhook's signature and freshness; its timestamp, or :class:`SignatureRefused`."""
    if not header:
        raise SignatureRefused(f"the webhook has no {SIGNATURE_HEADER} header")
    timestamp, candidates = _parse(header)
    expected = signature(secret, timestamp, body)
    # Compare every candidate (no early exit) so timing reveals nothing about which matched.
    matched = False
    for candidate in candidates:
        matched |= hmac.compare_digest(expected, candidate)
    if not matched:
        raise SignatureRefused("the webhook's signature does not match its body and timestamp")
    skew = abs(now.timestamp() - timestamp)
    if skew > tolerance.total_seconds():
        raise SignatureRefused(
            f"the webhook was signed {skew:.0f}s away from now, outside the "
            f"{tolerance.total_seconds():.0f}s replay window: refused as a replay"
        )
    return timestamp
