"""Refresh-token rules: rotation, reuse detection, revocation, expiry (pure)."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

from services.accounts.sessions import (
    RefreshToken,
    Session,
    Verdict,
    judge_refresh,
    refresh_token_hash,
)

NOW = datetime(2026, 6, 1, tzinfo=UTC)
FAMILY = Session("f-1", "a-1", NOW)


def token(**changes: object) -> RefreshToken:
    values: dict[str, object] = {"token_hash": "h", "family_id": "f-1", "issued_at": NOW,
                                 "expires_at": NOW + timedelta(days=30)}
    values.update(changes)
    return RefreshToken(**values)  # type: ignore[arg-type]


def test_an_unspent_token_of_a_live_family_rotates() -> None:
    assert judge_refresh(token(), FAMILY, NOW + timedelta(days=1)) is Verdict.ROTATE


def test_a_spent_token_presented_again_is_reuse() -> None:
    assert judge_refresh(token(spent_at=NOW), FAMILY, NOW) is Verdict.REUSED


def test_a_revoked_family_refuses_even_its_newest_token() -> None:
    revoked = Session("f-1", "a-1", NOW, revoked_at=NOW, revoked_reason="logout")
    assert judge_refresh(token(), revoked, NOW) is Verdict.REVOKED
    assert judge_refresh(token(spent_at=NOW), revoked, NOW) is Verdict.REVOKED


def test_a_token_expires_at_its_expiry() -> None:
    expiring = token(expires_at=NOW + timedelta(hours=1))
    assert judge_refresh(expiring, FAMILY, NOW + timedelta(minutes=59)) is Verdict.ROTATE
    assert judge_refresh(expiring, FAMILY, NOW + timedelta(hours=1)) is Verdict.EXPIRED


def test_the_stored_hash_is_the_hex_sha256_of_the_token() -> None:
    # Independent value: SHA-256 of "abc" from FIPS 180-2, appendix B.1.
    assert refresh_token_hash("abc") == (
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    )
    assert refresh_token_hash("abc") == hashlib.sha256(b"abc").hexdigest()
