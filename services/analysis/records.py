"""The game service's match records, fetched over its internal ``FetchMatchRecord``.

``TAVLA_GAME_ADDRESS`` says where the game service is (set by ``tavla dev`` and the
chart for every service); the analysis service is a declared caller of that method.
"""

from __future__ import annotations

from typing import Protocol

import grpc

from services.kit.client import service_channel
from services.kit.errors import FailedPrecondition, NotFound, Unavailable
from services.kit.service_tokens import ServiceTokenMinter
from tavla.game.v1 import game_pb2, game_pb2_grpc


class MatchRecords(Protocol):
    async def mat_text(self, game_id: str) -> str:
        """The session's Jellyfish text; NotFound / FailedPrecondition (no such finished
        session: retrying will not help), Unavailable (try again)."""
        ...


class GrpcMatchRecords:
    def __init__(
        self, address: str, credentials: ServiceTokenMinter, timeout_seconds: float = 10.0
    ) -> None:
        self._channel = service_channel(address, target="game", credentials=credentials)
        self._stub = game_pb2_grpc.GameServiceStub(self._channel)
        self._timeout = timeout_seconds

    async def mat_text(self, game_id: str) -> str:
        request = game_pb2.GetMatchRecordRequest(game_id=game_id)
        try:
            record = await self._stub.FetchMatchRecord(request, timeout=self._timeout)
        except grpc.aio.AioRpcError as error:
            if error.code() is grpc.StatusCode.NOT_FOUND:
                raise NotFound(f"game service: {error.details()}") from None
            if error.code() is grpc.StatusCode.FAILED_PRECONDITION:  # not over, or no replay
                raise FailedPrecondition(f"game service: {error.details()}") from None
            raise Unavailable(
                f"game service FetchMatchRecord {game_id}: {error.code().name} {error.details()}"
            ) from None
        return str(record.mat_text)

    async def close(self) -> None:
        await self._channel.close(None)
