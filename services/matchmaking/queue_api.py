"""The queue's gRPC handlers, a mixin of matchmaking's servicer: EnterQueue, LeaveQueue,
GetQueueTicket and WatchQueueTicket (server streaming).

The ticket records the player as the lobby's ``sitter`` does (token residence,
gateway client signals). A paired ticket carries the commission this player
would pay at its table: the wallet's quote with both ratings, asked with the
player's own token, as ListTables does. The servicer sets ``queue`` before
serving (``services/matchmaking/main.py``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import grpc

from services.kit.auth import acting_account
from services.kit.errors import InvalidArgument
from services.matchmaking import messages
from services.matchmaking.api import authorization, sitter
from services.matchmaking.domain.queue import QueueTicket, TicketStatus, accepted_difference
from services.matchmaking.queue import QueueService
from tavla.matchmaking.v1 import matchmaking_pb2

Context = grpc.aio.ServicerContext[Any, Any]

_STATUS = {
    TicketStatus.WAITING: matchmaking_pb2.TICKET_STATUS_WAITING,
    TicketStatus.SEATING: matchmaking_pb2.TICKET_STATUS_SEATING,
    TicketStatus.MATCHED: matchmaking_pb2.TICKET_STATUS_MATCHED,
    TicketStatus.CANCELLED: matchmaking_pb2.TICKET_STATUS_CANCELLED,
    TicketStatus.REFUSED: matchmaking_pb2.TICKET_STATUS_REFUSED,
}


class QueueApi:
    queue: QueueService

    async def EnterQueue(
        self, request: matchmaking_pb2.EnterQueueRequest, context: Context
    ) -> matchmaking_pb2.QueueTicket:
        if not request.HasField("rules"):
            raise InvalidArgument("rules are required: kind, stake, length and options")
        ticket = await self.queue.enter(
            player=sitter(context),
            rules=messages.rules_from(request.rules),
            max_rating_difference=accepted_difference(request.max_rating_difference),
            key=request.idempotency_key,
        )
        return await self._message(ticket, context)

    async def LeaveQueue(
        self, request: matchmaking_pb2.LeaveQueueRequest, context: Context
    ) -> matchmaking_pb2.QueueTicket:
        ticket = await self.queue.leave(request.ticket_id, acting_account(context))
        return await self._message(ticket, context)

    async def GetQueueTicket(
        self, request: matchmaking_pb2.GetQueueTicketRequest, context: Context
    ) -> matchmaking_pb2.QueueTicket:
        ticket = await self.queue.get(request.ticket_id, acting_account(context))
        return await self._message(ticket, context)

    async def WatchQueueTicket(
        self, request: matchmaking_pb2.GetQueueTicketRequest, context: Context
    ) -> AsyncIterator[matchmaking_pb2.QueueTicket]:
        async for ticket in self.queue.watch(request.ticket_id, acting_account(context)):
            yield await self._message(ticket, context)

    async def _message(
        self, ticket: QueueTicket, context: Context
    ) -> matchmaking_pb2.QueueTicket:
        message = ticket_message(ticket)
        quote = await self.queue.quote(ticket, authorization(context))
        if quote is not None:
            message.commission.CopyFrom(quote)
        return message


def ticket_message(ticket: QueueTicket) -> matchmaking_pb2.QueueTicket:
    message = matchmaking_pb2.QueueTicket(
        ticket_id=ticket.ticket_id,
        status=_STATUS[ticket.status],
        rules=messages.rules_message(ticket.rules),
        entered_at=messages.timestamp(ticket.entered_at),
        game_id=ticket.game_id,
        reason=ticket.reason,
        max_rating_difference=round(ticket.max_rating_difference),
    )
    if ticket.pairing is not None:
        message.table_id = ticket.pairing.table_id
        message.opponent_account_id = ticket.pairing.opponent_account_id
        message.rating = ticket.pairing.rating
        message.opponent_rating = ticket.pairing.opponent_rating
    return message
