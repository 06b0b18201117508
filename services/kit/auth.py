"""Who is calling: the acting account from request metadata.

The gateway verifies the bearer token and forwards its subject as
``x-tavla-account-id`` (stripping any value a client sent). Services behind it
trust that header; a public call without it is refused as unauthenticated.
"""

from __future__ import annotations

import grpc

from services.kit.errors import PermissionDenied, Unauthenticated

ACCOUNT_HEADER = "x-tavla-account-id"


def acting_account(context: grpc.aio.ServicerContext[object, object]) -> str:
    for key, value in context.invocation_metadata() or ():
        if key == ACCOUNT_HEADER and value:
            return value if isinstance(value, str) else value.decode()
    raise Unauthenticated("this call needs a signed-in player: send an access token from Login")


def require_self(acting: str, owner: str) -> None:
    """A player acts only on their own account, games and money."""
    if acting != owner:
        raise PermissionDenied("you can only act on your own account")
