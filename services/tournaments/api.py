"""The TournamentsService gRPC servicer: protobuf <-> domain, nothing else.

The acting player is the verified access token's subject; their declared residence
comes from the same token and their address and device id from the gateway
(:mod:`services.kit.client_signals`): what registration asks the geo service about.
CreateTournament is internal: the kit's interceptor admits only its declared callers.
"""

from __future__ import annotations

from typing import Any

import grpc

from services.kit.auth import acting_account, acting_residence
from services.kit.client_signals import client_signals
from services.kit.errors import InvalidArgument
from services.tournaments import messages
from services.tournaments.domain.lobby import Status
from services.tournaments.service import Registrant, Tournaments
from services.tournaments.shown import Shown
from tavla.tournaments.v1 import tournaments_pb2, tournaments_pb2_grpc

Context = grpc.aio.ServicerContext[Any, Any]

# Each status a listing may ask for, and the stored statuses it stands for.
_LISTED = {
    tournaments_pb2.STATUS_REGISTERING: [Status.REGISTERING.value],
    tournaments_pb2.STATUS_RUNNING: [Status.SEATED.value, Status.RUNNING.value],
    tournaments_pb2.STATUS_FINISHED: [Status.FINISHED.value],
    tournaments_pb2.STATUS_CANCELLED: [Status.CANCELLING.value, Status.CANCELLED.value],
}


def registrant(context: Context) -> Registrant:
    signals = client_signals(context)
    return Registrant(
        account_id=acting_account(context),
        residence=acting_residence(context),
        address=signals.address,
        device_id=signals.device_id,
    )


class TournamentsApi(tournaments_pb2_grpc.TournamentsServiceServicer):
    def __init__(self, tournaments: Tournaments) -> None:
        self._tournaments = tournaments
        self._shown = Shown()

    async def ListTournaments(
        self, request: tournaments_pb2.ListTournamentsRequest, context: Context
    ) -> tournaments_pb2.ListTournamentsResponse:
        acting_account(context)
        statuses: list[str] = []
        if request.status != tournaments_pb2.STATUS_UNSPECIFIED:
            if request.status not in _LISTED:
                raise InvalidArgument("status is one of the Status values, or unset for all")
            statuses = _LISTED[request.status]
        found = await self._tournaments.list(
            statuses, request.currency.upper(), request.page_size
        )
        return tournaments_pb2.ListTournamentsResponse(
            tournaments=[self._shown.message(t) for t in found]
        )

    async def GetTournament(
        self, request: tournaments_pb2.GetTournamentRequest, context: Context
    ) -> tournaments_pb2.Tournament:
        acting_account(context)
        tournament, prizes = await self._tournaments.get(request.tournament_id)
        return self._shown.message(tournament, prizes)

    async def Register(
        self, request: tournaments_pb2.RegisterRequest, context: Context
    ) -> tournaments_pb2.Tournament:
        tournament = await self._tournaments.register(request.tournament_id, registrant(context))
        return messages.tournament_message(tournament)

    async def Unregister(
        self, request: tournaments_pb2.UnregisterRequest, context: Context
    ) -> tournaments_pb2.Tournament:
        tournament = await self._tournaments.unregister(
            request.tournament_id, acting_account(context)
        )
        return messages.tournament_message(tournament)

    async def CreateTournament(
        self, request: tournaments_pb2.CreateTournamentRequest, context: Context
    ) -> tournaments_pb2.Tournament:
        if not request.HasField("rules"):
            raise InvalidArgument("rules are required: start, lengths, clock, money, prizes")
        tournament = await self._tournaments.create(
            request.name, messages.rules_from(request.rules), request.idempotency_key
        )
        return messages.tournament_message(tournament)
