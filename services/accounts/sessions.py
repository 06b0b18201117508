"""Login sessions: refresh tokens, their rotation and reuse detection. Pure: no I/O, no clock.

A login opens a session (a token family). Its refresh token is opaque and random;
only its SHA-256 is stored, so a copy of the database opens no session. Spending
a refresh token (RefreshSession) marks it spent and issues the next one in the
same family. A spent token presented again means two parties hold the family (a
stolen token, or a client replaying one): the whole family is revoked, for the
thief and the owner alike, and the owner logs in again. Logout revokes the family.
Access tokens are stateless and not revoked: they live until their short expiry.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from enum import Enum

from services.kit.errors import Unauthenticated


def refresh_token_hash(token: str) -> str:
    """What is stored and looked up instead of the token itself (hex SHA-256)."""
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True)
class Session:
    """One token family: every refresh token rotated from one login."""

    family_id: str
    account_id: str
    created_at: datetime
    revoked_at: datetime | None = None
    revoked_reason: str | None = None


@dataclass(frozen=True)
class RefreshToken:
    token_hash: str
    family_id: str
    issued_at: datetime
    expires_at: datetime
    spent_at: datetime | None = None


class Verdict(Enum):
    ROTATE = "rotate"  # valid: spend it and issue the next one
    REUSED = "reused"  # spent before: revoke the family, refuse
    REVOKED = "revoked"  # the family was logged out or revoked: refuse
    EXPIRED = "expired"  # too old: refuse


def judge_refresh(token: RefreshToken, session: Session, now: datetime) -> Verdict:
    """What presenting `token` at `now` means. A revoked family wins over everything."""
    if session.revoked_at is not None:
        return Verdict.REVOKED
    if token.spent_at is not None:
        return Verdict.REUSED
    if now >= token.expires_at:
        return Verdict.EXPIRED
    return Verdict.ROTATE


_REFUSALS = {
    Verdict.REUSED: "this refresh token was already used, so the session has been ended "
                    "for safety; log in again",
    Verdict.REVOKED: "this session has ended (logged out or revoked); log in again",
    Verdict.EXPIRED: "this refresh token has expired; log in again",
}
UNKNOWN_REFRESH_TOKEN = "this refresh token is not valid; log in again"


def refusal(verdict: Verdict) -> Unauthenticated:
    return Unauthenticated(_REFUSALS[verdict])
