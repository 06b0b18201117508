"""Webhook signatures: HMAC-SHA256 over "<t>." + raw body, a replay window, every refusal named.

Expected signatures are computed here with hmac directly (an independent
program from the wallet's signing helper), on the documented scheme.
"""

from __future__ import annotations

import hashlib
import hmac
from datetime import UTC, datetime, timedelta

import pytest

from services.wallet.webhook_signature import SignatureRefused, signature_header, verify

SECRET = b"whsec-unit"
BODY = b'{"event_id":"evt_1","type":"payment.settled"}'
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
T = int(NOW.timestamp())


def by_hand(secret: bytes, timestamp: int, body: bytes) -> str:
    mac = hmac.new(secret, f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={mac}"


def test_the_header_is_the_documented_hmac() -> None:
    assert signature_header(SECRET, T, BODY) == by_hand(SECRET, T, BODY)
    assert verify(by_hand(SECRET, T, BODY), BODY, SECRET, NOW) == T


def test_a_rotated_secret_may_send_two_signatures() -> None:
    old = by_hand(b"old-secret", T, BODY).split(",")[1]
    header = f"{by_hand(SECRET, T, BODY)},{old}"
    assert verify(header, BODY, SECRET, NOW) == T
    assert verify(header, BODY, b"old-secret", NOW) == T


@pytest.mark.parametrize(
    ("header", "body", "words"),
    [
        (None, BODY, "no Tavla-Signature header"),
        ("", BODY, "no Tavla-Signature header"),
        ("v1=abc", BODY, "t=<unix seconds>"),
        (f"t={T}", BODY, "t=<unix seconds>"),
        ("t=soon,v1=abc", BODY, "bad timestamp"),
        (by_hand(b"other", T, BODY), BODY, "does not match"),
        (by_hand(SECRET, T, BODY), BODY + b" ", "does not match"),
        (by_hand(SECRET, T + 1, BODY).replace(f"t={T + 1}", f"t={T}"), BODY, "does not match"),
    ],
)
def test_bad_signatures_are_refused(header: str | None, body: bytes, words: str) -> None:
    with pytest.raises(SignatureRefused, match=words):
        verify(header, body, SECRET, NOW)


@pytest.mark.parametrize(
    "skew", [timedelta(minutes=5, seconds=1), -timedelta(minutes=5, seconds=1)]
)
def test_outside_the_window_is_a_replay(skew: timedelta) -> None:
    signed_at = int((NOW - skew).timestamp())
    with pytest.raises(SignatureRefused, match="replay window"):
        verify(by_hand(SECRET, signed_at, BODY), BODY, SECRET, NOW)


def test_inside_the_window_is_accepted() -> None:
    signed_at = int((NOW - timedelta(minutes=5)).timestamp())
    assert verify(by_hand(SECRET, signed_at, BODY), BODY, SECRET, NOW) == signed_at
