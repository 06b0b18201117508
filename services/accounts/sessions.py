"""Login sessions: refresh tokens, their rotation and reuse detection. Pure: no I/O, no clock.

A login opens a session (a token family). Its refresh token is opaque and random;
only its SHA-256 is stored, so a copy of the database opens no session. Spending
a refresh token (RefreshSession) marks it spent and issues the next one in the
same family. A spent token presented again means two parties hold the family (a
stolen token, or a client replaying one): the whole family is revoked, for the
thief and the owner alike, and the owner logs in again. Logout revokes the family.
Access tokens are stateless and not revoked: they live until their short expiry.

Signals: a login records on its session the client address the
gateway saw, the device id and the time, and publishes ``LoggedIn``. A refresh
is the same session going on, not a new login: it records its own address and
device id on the refresh token it is given (so a session's moves are kept for
anti-abuse) but publishes no event and does not ask geo. Geo is asked where the
player enters (register, login) and where money moves (deposit, withdraw, a
real-money table), which checks the address of that very call.
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
    """One token family: every refresh token rotated from one login, and where it came from."""

    family_id: str
    account_id: str
    created_at: datetime
    revoked_at: datetime | None = None
    revoked_reason: str | None = None
    # The login's client address (as the gateway saw it) and device id; "" if unknown.
    client_address: str = ""
    device_id: str = ""


@dataclass(frozen=True)
class RefreshToken:
    token_hash: str
    family_id: str
    issued_at: datetime
    expires_at: datetime
    spent_at: datetime | None = None
    # Where the call that was given this token came from (the login's, or the refresh's).
    client_address: str = ""
    device_id: str = ""


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
