"""The GameService gRPC servicer: protobuf <-> domain, identity from metadata, nothing else.

A player's call carries, besides the acting account, where it comes from (the
declared residence in the access token, the client address the gateway saw):
the service locates real-money seats with it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import grpc
from google.protobuf.duration_pb2 import Duration

from services.game.domain import Action, ClockPreset, Kind, Penalty, Seat, TableRules
from services.game.facts import timestamp
from services.game.service import GameService, Origin
from services.kit.auth import acting_account, acting_residence
from services.kit.client_signals import client_signals
from services.kit.errors import InvalidArgument
from tavla.game.v1 import game_pb2, game_pb2_grpc

Context = grpc.aio.ServicerContext[Any, Any]

_KIND = {game_pb2.PLAY_KIND_MONEY_GAME: Kind.MONEY, game_pb2.PLAY_KIND_MATCH: Kind.MATCH}
_PENALTY = {
    game_pb2.TIMEOUT_PENALTY_LOSE_GAME: Penalty.LOSE_GAME,
    game_pb2.TIMEOUT_PENALTY_LOSE_MATCH: Penalty.LOSE_MATCH,
}
# The site's presets; a request naming one may leave its durations out.
PRESETS = {
    "standard": ClockPreset(
        "standard",
        timedelta(seconds=12),
        timedelta(minutes=2),
        timedelta(minutes=5),
        Penalty.LOSE_GAME,
    ),
    "blitz": ClockPreset(
        "blitz",
        timedelta(seconds=6),
        timedelta(minutes=1),
        timedelta(minutes=2),
        Penalty.LOSE_GAME,
    ),
}
DEFAULT_CLOCK = PRESETS["standard"]


def _span(value: Duration, default: timedelta) -> timedelta:
    return value.ToTimedelta() if value.seconds or value.nanos else default


def _clock(message: game_pb2.ClockPreset) -> ClockPreset:
    """The request's clock: a named preset's values, overridden by any duration it sends."""
    base = PRESETS.get(message.name, DEFAULT_CLOCK)
    penalty = base.penalty
    if message.timeout_penalty != game_pb2.TIMEOUT_PENALTY_UNSPECIFIED:
        penalty = _PENALTY[message.timeout_penalty]
    return ClockPreset(
        name=message.name or base.name,
        move_delay=_span(message.move_delay, base.move_delay),
        reserve_per_point=_span(message.reserve_per_point, base.reserve_per_point),
        reserve_per_game=_span(message.reserve_per_game, base.reserve_per_game),
        penalty=penalty,
    )


def table_rules(message: game_pb2.TableRules) -> TableRules:
    if message.kind not in _KIND:
        raise InvalidArgument("rules.kind must be PLAY_KIND_MONEY_GAME or PLAY_KIND_MATCH")
    return TableRules(
        kind=_KIND[message.kind],
        match_length=message.match_length,
        stake_minor=message.stake.minor_units,
        currency=message.stake.currency,
        cube_cap=message.cube_cap or 64,
        beaver=message.beaver,
        jacoby=message.jacoby,
        # Unset means the Crawford rule: a match plays it unless the table says otherwise.
        crawford=message.crawford if message.HasField("crawford") else True,
        clock=_clock(message.clock),
        table_stakes_minor=message.table_stakes_minor_units,
        at_risk_minor=message.table_stakes_at_risk_minor_units,
        rated=message.rated,
    )


def _seats(players: Any) -> tuple[Seat, Seat]:
    if len(players) != 2 or not all(p.account_id for p in players):
        raise InvalidArgument("a game needs exactly two players, each with an account_id")
    first, second = (
        Seat(p.account_id, p.display_name, p.rating, p.hold_id) for p in players
    )
    return first, second


def _origin(context: Context) -> Origin:
    return Origin(acting_residence(context), read=lambda: client_signals(context))


def _steps_text(steps: game_pb2.CheckerSteps) -> str:
    """Checker steps as gnubg notation (25 = bar, 0 = off), which the library parses."""
    names = {25: "bar", 0: "off"}
    return " ".join(
        f"{names.get(s.from_point, s.from_point)}/{names.get(s.to_point, s.to_point)}"
        for s in steps.steps
    )


class GameApi(game_pb2_grpc.GameServiceServicer):
    def __init__(self, service: GameService) -> None:
        self._service = service

    async def CreateGame(
        self, request: game_pb2.CreateGameRequest, context: Context
    ) -> game_pb2.Game:
        return await self._service.create_game(
            table_id=request.table_id or "direct",
            seats=_seats(request.players),
            rules=table_rules(request.rules),
            idempotency_key=request.idempotency_key,
            client_seed=request.client_seed,
        )

    async def GetGame(self, request: game_pb2.GetGameRequest, context: Context) -> game_pb2.Game:
        acting_account(context)
        return await self._service.get_game(request.game_id)

    async def ListGames(
        self, request: game_pb2.ListGamesRequest, context: Context
    ) -> game_pb2.ListGamesResponse:
        games, token = await self._service.list_games(
            acting_account(context),
            in_progress_only=request.in_progress_only,
            page_size=request.page_size,
            page_token=request.page_token,
        )
        return game_pb2.ListGamesResponse(games=games, next_page_token=token)

    async def WatchGame(
        self, request: game_pb2.WatchGameRequest, context: Context
    ) -> AsyncIterator[game_pb2.GameUpdate]:
        account = acting_account(context)
        updates = self._service.watch(
            request.game_id,
            account,
            request.since_version,
            _origin(context),
            since_chat_seq=request.since_chat_seq,
        )
        async for update in updates:
            yield game_pb2.GameUpdate(
                game=update.view, event_type=update.event_type, chat=update.chat
            )

    async def Heartbeat(
        self, request: game_pb2.HeartbeatRequest, context: Context
    ) -> game_pb2.HeartbeatResponse:
        now, version = await self._service.heartbeat(
            request.game_id, acting_account(context), _origin(context)
        )
        return game_pb2.HeartbeatResponse(server_time=timestamp(now), version=version)

    async def _act(
        self, request: Any, context: Context, action: Action, text: str = ""
    ) -> game_pb2.Game:
        return await self._service.command(
            request.game_id,
            acting_account(context),
            request.expected_version,
            action,
            text,
            _origin(context),
        )

    async def Roll(self, request: game_pb2.RollRequest, context: Context) -> game_pb2.Game:
        return await self._act(request, context, Action.ROLL)

    async def Move(self, request: game_pb2.MoveRequest, context: Context) -> game_pb2.Game:
        which = request.WhichOneof("play")
        text = _steps_text(request.steps) if which == "steps" else request.notation
        return await self._act(request, context, Action.MOVE, text)

    async def Double(self, request: game_pb2.DoubleRequest, context: Context) -> game_pb2.Game:
        return await self._act(request, context, Action.DOUBLE)

    async def Take(self, request: game_pb2.TakeRequest, context: Context) -> game_pb2.Game:
        return await self._act(request, context, Action.TAKE)

    async def Drop(self, request: game_pb2.DropRequest, context: Context) -> game_pb2.Game:
        return await self._act(request, context, Action.DROP)

    async def Beaver(self, request: game_pb2.BeaverRequest, context: Context) -> game_pb2.Game:
        return await self._act(request, context, Action.BEAVER)

    async def Resign(self, request: game_pb2.ResignRequest, context: Context) -> game_pb2.Game:
        return await self._act(request, context, Action.RESIGN, str(int(request.level)))

    async def AcceptResign(
        self, request: game_pb2.AcceptResignRequest, context: Context
    ) -> game_pb2.Game:
        return await self._act(request, context, Action.ACCEPT_RESIGN)

    async def RejectResign(
        self, request: game_pb2.RejectResignRequest, context: Context
    ) -> game_pb2.Game:
        return await self._act(request, context, Action.REJECT_RESIGN)

    async def Leave(self, request: game_pb2.LeaveRequest, context: Context) -> game_pb2.Game:
        return await self._act(request, context, Action.LEAVE)

    async def Reconnect(
        self, request: game_pb2.ReconnectRequest, context: Context
    ) -> game_pb2.Game:
        return await self._service.reconnect(
            request.game_id, acting_account(context), _origin(context)
        )

    async def GetMatchRecord(
        self, request: game_pb2.GetMatchRecordRequest, context: Context
    ) -> game_pb2.MatchRecord:
        acting_account(context)
        return await self._service.match_record(request.game_id)

    async def FetchMatchRecord(
        self, request: game_pb2.GetMatchRecordRequest, context: Context
    ) -> game_pb2.MatchRecord:
        # The analysis service's way in (the caller is checked against the proto's callers).
        return await self._service.match_record(request.game_id)

    async def PostChatMessage(
        self, request: game_pb2.PostChatMessageRequest, context: Context
    ) -> game_pb2.ChatMessage:
        return await self._service.chat.post(request.game_id, acting_account(context), request.text)

    async def MuteChat(
        self, request: game_pb2.MuteChatRequest, context: Context
    ) -> game_pb2.MuteChatResponse:
        muted = await self._service.chat.mute(
            request.game_id, acting_account(context), request.muted
        )
        return game_pb2.MuteChatResponse(game_id=request.game_id, muted=muted)

    async def ListLobbyRooms(
        self, request: game_pb2.ListLobbyRoomsRequest, context: Context
    ) -> game_pb2.ListLobbyRoomsResponse:
        acting_account(context)
        return game_pb2.ListLobbyRoomsResponse(rooms=self._service.lobby.rooms())

    async def PostLobbyMessage(
        self, request: game_pb2.PostLobbyMessageRequest, context: Context
    ) -> game_pb2.LobbyMessage:
        return await self._service.lobby.post(request.room, acting_account(context), request.text)

    async def ListLobbyMessages(
        self, request: game_pb2.ListLobbyMessagesRequest, context: Context
    ) -> game_pb2.ListLobbyMessagesResponse:
        messages, next_before = await self._service.lobby.page(
            request.room, request.before_seq, request.page_size, acting_account(context)
        )
        return game_pb2.ListLobbyMessagesResponse(messages=messages, next_before_seq=next_before)

    async def WatchLobbyChat(
        self, request: game_pb2.WatchLobbyChatRequest, context: Context
    ) -> AsyncIterator[game_pb2.LobbyMessage]:
        messages = self._service.lobby.watch(
            request.room, request.since_seq, acting_account(context)
        )
        # Headers now, not with the first message: a quiet room must not look like a hung
        # call (a REST client through the gateway waits for the response's headers).
        await context.send_initial_metadata(())
        async for message in messages:
            yield message

    async def MuteLobbyPlayer(
        self, request: game_pb2.MuteLobbyPlayerRequest, context: Context
    ) -> game_pb2.LobbyMute:
        return await self._service.lobby.mute(
            acting_account(context), request.account_id, request.screen_name, request.muted
        )

    async def ListLobbyMutes(
        self, request: game_pb2.ListLobbyMutesRequest, context: Context
    ) -> game_pb2.ListLobbyMutesResponse:
        mutes = await self._service.lobby.mutes(acting_account(context))
        return game_pb2.ListLobbyMutesResponse(mutes=mutes)
