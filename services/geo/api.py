"""The GeoService gRPC servicer: protobuf <-> domain; decisions are recorded, then answered."""

from __future__ import annotations

from typing import Any

import grpc

from services.geo.domain.decision import FLAG_NAMES, Outcome
from services.geo.domain.purposes import REAL_MONEY, Purpose
from services.geo.domain.rules import Jurisdiction
from services.geo.events import DecisionLog
from services.geo.service import Checked, GeoService
from services.kit.errors import InvalidArgument
from tavla.geo.v1 import geo_pb2, geo_pb2_grpc

Context = grpc.aio.ServicerContext[Any, Any]

PURPOSES = {
    geo_pb2.PURPOSE_REGISTER: Purpose.REGISTER,
    geo_pb2.PURPOSE_LOGIN: Purpose.LOGIN,
    geo_pb2.PURPOSE_DEPOSIT: Purpose.DEPOSIT,
    geo_pb2.PURPOSE_WITHDRAW: Purpose.WITHDRAW,
    geo_pb2.PURPOSE_PLAY_REAL_MONEY: Purpose.PLAY_REAL,
    geo_pb2.PURPOSE_PLAY_MONEY: Purpose.PLAY_MONEY,
}
PURPOSE_MESSAGES = {purpose: number for number, purpose in PURPOSES.items()}
OUTCOMES = {
    Outcome.ALLOW: geo_pb2.DECISION_ALLOW,
    Outcome.BLOCK: geo_pb2.DECISION_BLOCK,
    Outcome.REVIEW: geo_pb2.DECISION_REVIEW,
}


def decision_message(
    checked: Checked, request: geo_pb2.CheckLocationRequest
) -> geo_pb2.LocationDecision:
    decision = checked.decision
    evidence = geo_pb2.Evidence(
        ip_address=checked.ip_address,
        declared_residence=(checked.declared.region or checked.declared.country)
        if checked.declared
        else "",
        anonymous_network_checked=checked.network is not None,
        **{name: getattr(checked.network, name) for name in FLAG_NAMES if checked.network},
    )
    if request.HasField("device_location"):
        evidence.device_location.CopyFrom(request.device_location)
    return geo_pb2.LocationDecision(
        check_id=checked.check_id,
        decision=OUTCOMES[decision.outcome],
        reasons=[geo_pb2.Reason(code=r.code.value, message=r.message) for r in decision.reasons],
        country_code=decision.country,
        region_code=decision.region,
        evidence=evidence,
        rules_version=decision.rules_version,
    )


def jurisdiction_message(entry: Jurisdiction) -> geo_pb2.Jurisdiction:
    return geo_pb2.Jurisdiction(
        code=entry.code,
        name=entry.name,
        real_money_allowed=not (REAL_MONEY & entry.purposes),
        play_money_allowed=Purpose.PLAY_MONEY not in entry.purposes,
        note=entry.note,
        blocked_purposes=[PURPOSE_MESSAGES[p] for p in Purpose if p in entry.purposes],
    )


class GeoApi(geo_pb2_grpc.GeoServiceServicer):
    def __init__(self, service: GeoService, log: DecisionLog) -> None:
        self._service = service
        self._log = log

    async def CheckLocation(
        self, request: geo_pb2.CheckLocationRequest, context: Context
    ) -> geo_pb2.LocationDecision:
        purpose = PURPOSES.get(request.purpose)
        if purpose is None:
            names = ", ".join(geo_pb2.Purpose.Name(number) for number in PURPOSES)
            raise InvalidArgument(f"purpose is required: one of {names}")
        checked = self._service.check_location(
            ip_address=request.ip_address, purpose=purpose, declared=request.declared_residence
        )
        decision = decision_message(checked, request)
        # Recorded before it is answered: an answer the compliance team cannot see is not given.
        await self._log.record(decision, request)
        return decision

    async def ListJurisdictions(
        self, request: geo_pb2.ListJurisdictionsRequest, context: Context
    ) -> geo_pb2.ListJurisdictionsResponse:
        version, entries = self._service.jurisdictions()
        return geo_pb2.ListJurisdictionsResponse(
            jurisdictions=[jurisdiction_message(entry) for entry in entries],
            rules_version=version,
        )
