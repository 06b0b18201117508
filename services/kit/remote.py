"""Calling another service's internal methods: refusals as kit errors, and the game
service's CreateGame, which matchmaking and tournaments both call.

A refusal the caller can act on (INVALID_ARGUMENT; FAILED_PRECONDITION or NOT_FOUND)
keeps its message; anything else means the other service could not answer, which is
``Unavailable`` with a retry hint, never a 500, and a warning in this service's log with
gRPC's own reason (a refused connection, a deadline), which the caller is not shown.
"""

from __future__ import annotations

from collections.abc import Sequence

import grpc

from services.kit.client import service_channel
from services.kit.errors import DomainError, FailedPrecondition, InvalidArgument, Unavailable
from services.kit.logging import get_logger
from services.kit.service_tokens import ServiceTokenMinter
from tavla.game.v1 import game_pb2, game_pb2_grpc

log = get_logger(__name__)


def refusal(error: grpc.aio.AioRpcError, who: str) -> DomainError:
    """A refusal the caller can act on, or Unavailable when ``who`` did not answer."""
    details = error.details() or error.code().name
    if error.code() == grpc.StatusCode.INVALID_ARGUMENT:
        return InvalidArgument(details)
    if error.code() in (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.NOT_FOUND):
        return FailedPrecondition(details)
    return unanswered(error, who)


def unanswered(error: grpc.aio.AioRpcError, who: str) -> Unavailable:
    """``who`` did not answer: Unavailable for the caller, gRPC's reason in the log."""
    log.warning("remote_unavailable", remote=who, code=error.code().name,
                reason=error.debug_error_string())
    return Unavailable(f"the {who} cannot be asked now ({error.code().name}); retry")


class GrpcGames:
    """The game service's internal CreateGame (``TAVLA_GAME_ADDRESS``), as the caller."""

    def __init__(
        self, address: str, credentials: ServiceTokenMinter, timeout_seconds: float = 5.0
    ) -> None:
        self._channel = service_channel(address, target="game", credentials=credentials)
        self._stub = game_pb2_grpc.GameServiceStub(self._channel)
        self._timeout = timeout_seconds

    async def create_game(
        self,
        table_id: str,
        players: Sequence[game_pb2.Player],
        rules: game_pb2.TableRules,
        key: str,
    ) -> str:
        """The new game's id (idempotent on ``key``)."""
        request = game_pb2.CreateGameRequest(
            table_id=table_id, players=list(players), rules=rules, idempotency_key=key
        )
        try:
            game = await self._stub.CreateGame(request, timeout=self._timeout)
        except grpc.aio.AioRpcError as error:
            raise refusal(error, "game service") from None
        return str(game.game_id)

    async def close(self) -> None:
        await self._channel.close(None)
