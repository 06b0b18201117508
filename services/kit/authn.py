"""Authentication: a call gets in only with the credential its method declares.

Each RPC declares who may call it in ``protos/`` (``(tavla.common.v1.access)``);
the table is read once from the generated descriptors of the services a process
serves. Per call (checked by the kit's one server interceptor,
:mod:`services.kit.interceptors`, before the handler runs):

- ``ACCESS_ANONYMOUS``: no credential needed;
- ``ACCESS_PLAYER``: ``authorization: Bearer <access token>``, verified here
  (:mod:`services.kit.player_tokens`); its subject becomes the acting account.
  A method that also declares ``roles`` (staff methods: ``"compliance"``) needs
  a token whose ``roles`` claim holds one of them, else PERMISSION_DENIED;
- ``ACCESS_SERVICE``: ``x-tavla-service-token``, verified here
  (:mod:`services.kit.service_tokens`), from a service among the method's
  declared callers. A player's token is refused with PERMISSION_DENIED, no
  credential at all with UNAUTHENTICATED;
- anything else (``ACCESS_UNSPECIFIED``, a method missing from the table): refused.

Health checks and reflection are not Tavla methods and stay open (reflection
is served only when ``TAVLA_GRPC_REFLECTION`` turns it on). Nothing about where
a call comes from, nor any ``x-tavla-account-id`` header, is trusted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from google.protobuf import descriptor_pool

from services.kit.errors import PermissionDenied, Unauthenticated
from services.kit.player_tokens import PlayerTokenVerifier, VerifiedPlayer, bearer_token
from services.kit.service_tokens import SERVICE_TOKEN_HEADER, ServiceTokenVerifier
from tavla.common.v1 import auth_pb2

OPEN_PREFIXES = ("/grpc.health.v1.Health/", "/grpc.reflection.")
AUTHORIZATION = "authorization"


@dataclass(frozen=True)
class Access:
    """One method's declared access: ANONYMOUS, PLAYER or SERVICE (with its callers)."""

    kind: int
    callers: frozenset[str] = frozenset()
    # ACCESS_PLAYER only: the token must carry one of these roles (empty: none needed).
    roles: frozenset[str] = frozenset()


def access_table(service_names: Iterable[str]) -> dict[str, Access]:
    """``/package.Service/Method`` -> declared access, for every method of the named services."""
    pool = descriptor_pool.Default()
    table: dict[str, Access] = {}
    for name in service_names:
        for method in pool.FindServiceByName(name).methods:
            declared = method.GetOptions().Extensions[auth_pb2.access]
            table[f"/{name}/{method.name}"] = Access(
                declared.access, frozenset(declared.callers), frozenset(declared.roles)
            )
    return table


def needs_player_tokens(table: Mapping[str, Access]) -> bool:
    return any(access.kind == auth_pb2.ACCESS_PLAYER for access in table.values())


@dataclass(frozen=True)
class Caller:
    account: str | None = None
    service: str | None = None
    residence: str = ""


class Authenticator:
    """Decides, from a call's metadata, who is calling a method, or refuses it."""

    def __init__(
        self, players: PlayerTokenVerifier | None, services: ServiceTokenVerifier
    ) -> None:
        self._players = players
        self._services = services

    async def caller(self, method: str, access: Access, metadata: Mapping[str, str]) -> Caller:
        if access.kind == auth_pb2.ACCESS_ANONYMOUS:
            return Caller()
        if access.kind == auth_pb2.ACCESS_PLAYER:
            player = await self._player(method, metadata)
            if access.roles and not access.roles & player.roles:
                raise PermissionDenied(
                    f"{method} is for staff with the role {' or '.join(sorted(access.roles))}; "
                    "this account's access token carries no such role"
                )
            return Caller(account=player.account_id, residence=player.residence)
        if access.kind == auth_pb2.ACCESS_SERVICE:
            return Caller(service=self._service(method, access, metadata))
        raise PermissionDenied(f"{method} declares no access in its contract: nobody may call it")

    async def _player(self, method: str, metadata: Mapping[str, str]) -> VerifiedPlayer:
        token = bearer_token(metadata.get(AUTHORIZATION, ""))
        if token is None:
            raise Unauthenticated(
                "this call needs a signed-in player: send `authorization: Bearer <access token>`"
                " with a token from Login"
            )
        if self._players is None:  # never wired so: the server refuses to start without it
            raise Unauthenticated(f"{method} cannot verify access tokens here")
        return await self._players.player(token)

    def _service(self, method: str, access: Access, metadata: Mapping[str, str]) -> str:
        token = metadata.get(SERVICE_TOKEN_HEADER)
        if not token:
            if AUTHORIZATION in metadata:
                raise PermissionDenied(
                    f"{method} is internal: a player's access token cannot call it; it takes a "
                    f"service credential ({SERVICE_TOKEN_HEADER}) from "
                    f"{', '.join(sorted(access.callers))}"
                )
            raise Unauthenticated(
                f"{method} is internal and needs a service credential ({SERVICE_TOKEN_HEADER})"
            )
        service = self._services.caller(token)
        if service not in access.callers:
            raise PermissionDenied(
                f"service {service!r} may not call {method}; its callers are "
                f"{', '.join(sorted(access.callers)) or 'none'}"
            )
        return service


class Admission:
    """Who may call what: the declared access of every method, and the check of a caller.

    The server's interceptor (:class:`services.kit.interceptors.CallInterceptor`) looks
    a method's access up once and asks :meth:`caller` on every call of it.
    """

    def __init__(self, table: Mapping[str, Access], authenticator: Authenticator) -> None:
        self._table = dict(table)
        self._authenticator = authenticator

    def access(self, method: str) -> Access:
        """The method's declared access; a method missing from the table is refused."""
        return self._table.get(method, Access(auth_pb2.ACCESS_UNSPECIFIED))

    async def caller(self, method: str, access: Access, credentials: Mapping[str, str]) -> Caller:
        """The verified caller; DomainError (UNAUTHENTICATED, PERMISSION_DENIED) if refused.

        ``credentials``: the call's ``authorization`` and service-token headers (the
        first value of each), as text.
        """
        return await self._authenticator.caller(method, access, credentials)
