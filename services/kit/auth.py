"""Who is calling: the acting account and the calling service, as verified for this call.

The kit's authentication interceptor (:mod:`services.kit.authn`) verifies the
credential a method's declared access asks for and records the result here,
for the duration of the call. ``acting_account`` returns the subject of the
player's verified access token, never a header a client sent: the
``x-tavla-account-id`` header the gateway adds is ignored by every service.
``acting_residence`` is the declared residence that same token carries (the
accounts service signs it in), for the geo checks of real-money actions.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

import grpc

from services.kit.errors import PermissionDenied, Unauthenticated

# Each gRPC call runs in its own asyncio task, so this holds that call's values: the
# acting account, the calling service and the acting residence, set together (one
# context variable, not three: the interceptor sets it twice on every call).
_CALLER: ContextVar[tuple[str | None, str | None, str]] = ContextVar(
    "caller", default=(None, None, "")
)


def acting_account(context: grpc.aio.ServicerContext[Any, Any]) -> str:
    """The account id of the signed-in player making this call (its verified token's subject)."""
    account = _CALLER.get()[0]
    if not account:
        raise Unauthenticated("this call needs a signed-in player: send an access token from Login")
    return account


def acting_residence(context: grpc.aio.ServicerContext[Any, Any]) -> str:
    """The signed-in player's declared residence (ISO 3166 code), "" if their token has none."""
    acting_account(context)
    return _CALLER.get()[2]


def calling_service(context: grpc.aio.ServicerContext[Any, Any]) -> str:
    """The service whose verified service token made this (internal) call."""
    service = _CALLER.get()[1]
    if not service:
        raise Unauthenticated("this call needs a service credential")
    return service


def set_caller(*, account: str | None, service: str | None, residence: str = "") -> None:
    """Record the verified caller of the current call (the interceptor does this)."""
    _CALLER.set((account, service, residence))


def require_self(acting: str, owner: str) -> None:
    """A player acts only on their own account, games and money."""
    if acting != owner:
        raise PermissionDenied("you can only act on your own account")
