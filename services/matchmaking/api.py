"""The MatchmakingService gRPC servicer's lobby methods: protobuf <-> domain, nothing else.

The acting player is the verified access token's subject; their declared
residence comes from the same token and their address and device id from the
gateway (:mod:`services.kit.client_signals`): what seating asks the geo service
about. Listing passes the player's own ``authorization`` on to the wallet's
QuoteCommission (a player method: the quote is theirs).
"""

from __future__ import annotations

from typing import Any

import grpc

from services.kit.auth import acting_account, acting_residence
from services.kit.client_signals import client_signals
from services.kit.errors import InvalidArgument
from services.matchmaking import messages
from services.matchmaking.domain.tables import MAX_MATCH_LENGTH, RatingRange, Sitter
from services.matchmaking.service import LobbyService
from services.matchmaking.store import TableFilter
from tavla.game.v1 import game_pb2
from tavla.matchmaking.v1 import matchmaking_pb2, matchmaking_pb2_grpc

Context = grpc.aio.ServicerContext[Any, Any]


def sitter(context: Context) -> Sitter:
    """The signed-in player with what the gateway and their token say about them."""
    signals = client_signals(context)
    return Sitter(
        account_id=acting_account(context),
        residence=acting_residence(context),
        address=signals.address,
        device_id=signals.device_id,
    )


def authorization(context: Context) -> str:
    for key, value in context.invocation_metadata() or ():
        if key == "authorization":
            return value if isinstance(value, str) else value.decode()
    return ""


def table_filter(request: matchmaking_pb2.ListTablesRequest, viewer: str) -> TableFilter:
    kind = None
    if request.kind != game_pb2.PLAY_KIND_UNSPECIFIED:
        kind = messages.kind_from(request.kind)
        if kind is None:
            raise InvalidArgument("kind must be PLAY_KIND_MONEY_GAME, PLAY_KIND_MATCH or unset")
    if request.min_stake_minor_units < 0 or request.max_stake_minor_units < 0:
        raise InvalidArgument("stake bounds are minor units >= 0 (0 = no bound)")
    if request.match_length > MAX_MATCH_LENGTH:
        raise InvalidArgument(
            f"match_length filters matches of 1..{MAX_MATCH_LENGTH} points; got "
            f"{request.match_length}"
        )
    owner_rating = RatingRange()
    if request.HasField("owner_rating"):
        owner_rating = messages.rating_range_from(request.owner_rating)
    return TableFilter(
        viewer_id=viewer,
        currency=request.currency,
        kind=kind,
        include_playing=request.include_playing,
        min_stake=request.min_stake_minor_units,
        max_stake=request.max_stake_minor_units,
        match_length=request.match_length,
        owner_rating=owner_rating,
    )


class LobbyApi(matchmaking_pb2_grpc.MatchmakingServiceServicer):
    def __init__(self, lobby: LobbyService) -> None:
        self._lobby = lobby

    async def CreateTable(
        self, request: matchmaking_pb2.CreateTableRequest, context: Context
    ) -> matchmaking_pb2.Table:
        owner = sitter(context)
        if not request.HasField("rules"):
            raise InvalidArgument("rules are required: kind, stake, length and options")
        table = await self._lobby.create_table(
            owner=owner,
            rules=messages.rules_from(request.rules),
            idempotency_key=request.idempotency_key,
            rating_range=messages.rating_range_from(request.rating_range),
            invited_account_id=request.invited_account_id,
        )
        return messages.table_message(table, owner.account_id)

    async def ListTables(
        self, request: matchmaking_pb2.ListTablesRequest, context: Context
    ) -> matchmaking_pb2.ListTablesResponse:
        viewer = acting_account(context)
        page = await self._lobby.list_tables(
            table_filter(request, viewer),
            request.page_size,
            request.page_token,
            authorization(context),
        )
        response = matchmaking_pb2.ListTablesResponse(next_page_token=page.next_token)
        for listed in page.tables:
            message = messages.table_message(listed.table, viewer)
            if listed.commission is not None:
                message.commission.CopyFrom(listed.commission)
            response.tables.append(message)
        return response

    async def GetTable(
        self, request: matchmaking_pb2.GetTableRequest, context: Context
    ) -> matchmaking_pb2.Table:
        viewer = acting_account(context)
        table = await self._lobby.get_table(request.table_id, viewer)
        return messages.table_message(table, viewer)

    async def JoinTable(
        self, request: matchmaking_pb2.JoinTableRequest, context: Context
    ) -> matchmaking_pb2.Table:
        joiner = sitter(context)
        table = await self._lobby.join_table(table_id=request.table_id, joiner=joiner)
        return messages.table_message(table, joiner.account_id)

    async def LeaveTable(
        self, request: matchmaking_pb2.LeaveTableRequest, context: Context
    ) -> matchmaking_pb2.Table:
        viewer = acting_account(context)
        table = await self._lobby.leave_table(table_id=request.table_id, account_id=viewer)
        return messages.table_message(table, viewer)

    async def CloseTable(
        self, request: matchmaking_pb2.CloseTableRequest, context: Context
    ) -> matchmaking_pb2.Table:
        viewer = acting_account(context)
        table = await self._lobby.close_table(table_id=request.table_id, account_id=viewer)
        return messages.table_message(table, viewer)

