"""The LobbyChatService gRPC servicer: protobuf <-> lobby chat, the caller from metadata."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import grpc

from services.game.lobby_chat import LobbyChat
from services.kit.auth import acting_account
from tavla.game.v1 import lobby_pb2, lobby_pb2_grpc

Context = grpc.aio.ServicerContext[Any, Any]


class LobbyChatApi(lobby_pb2_grpc.LobbyChatServiceServicer):
    def __init__(self, lobby: LobbyChat) -> None:
        self._lobby = lobby

    async def ListLobbyRooms(
        self, request: lobby_pb2.ListLobbyRoomsRequest, context: Context
    ) -> lobby_pb2.ListLobbyRoomsResponse:
        acting_account(context)
        return lobby_pb2.ListLobbyRoomsResponse(rooms=self._lobby.rooms())

    async def PostLobbyMessage(
        self, request: lobby_pb2.PostLobbyMessageRequest, context: Context
    ) -> lobby_pb2.LobbyMessage:
        return await self._lobby.post(request.room, acting_account(context), request.text)

    async def ListLobbyMessages(
        self, request: lobby_pb2.ListLobbyMessagesRequest, context: Context
    ) -> lobby_pb2.ListLobbyMessagesResponse:
        acting_account(context)
        messages, next_before = await self._lobby.page(
            request.room, request.before_seq, request.page_size
        )
        return lobby_pb2.ListLobbyMessagesResponse(
            messages=messages, next_before_seq=next_before
        )

    async def WatchLobbyChat(
        self, request: lobby_pb2.WatchLobbyChatRequest, context: Context
    ) -> AsyncIterator[lobby_pb2.LobbyMessage]:
        acting_account(context)
        messages = self._lobby.watch(request.room, request.since_seq)
        # Headers now, not with the first message: a quiet room must not look like a hung
        # call (a REST client through the gateway waits for the response's headers).
        await context.send_initial_metadata(())
        async for message in messages:
            yield message
