"""Ids derived from a caller's idempotency key, and the checks on ids and keys."""

from __future__ import annotations

import uuid

from services.kit.errors import InvalidArgument
from services.wallet.domain.holds import HOUSE_HOLDER

# Ids derived from (caller, idempotency key): a retry finds the first request's row.
_ID_NAMESPACE = uuid.UUID("3c1f8a52-8f0e-4d8e-9a5e-5b7f0a9f2c41")
_MAX_KEY = 200


def derived_id(*parts: str) -> str:
    return str(uuid.uuid5(_ID_NAMESPACE, "\x1f".join(parts)))


def require_key(key: str) -> str:
    if not key or len(key) > _MAX_KEY:
        raise InvalidArgument(
            f"idempotency_key is required (1 to {_MAX_KEY} characters): send a new random "
            "key per operation and the same key when you retry it"
        )
    return key


def require_id(value: str, what: str) -> str:
    if not value or len(value) > 100:
        raise InvalidArgument(f"{what} is required (1 to 100 characters)")
    return value


def require_account_id(value: str, what: str) -> str:
    """A player's account id: as ``require_id``, and never the house's holder name, so no
    call can make a player hold (or pay a player) out of the house's prize fund."""
    require_id(value, what)
    if value == HOUSE_HOLDER:
        raise InvalidArgument(f"{what} {value!r} names the house, not a player's account")
    return value
