"""The AntiAbuseService gRPC servicer: protobuf <-> use cases. Every method is for the
compliance role (declared in the contract, checked by the kit's auth interceptor).
The cases' methods are the ``CasesApi`` mixin (``cases/api.py``)."""

from __future__ import annotations

from typing import Any

import grpc

from services.antiabuse.cases.api import CasesApi
from services.antiabuse.cases.service import CaseService
from services.antiabuse.service import AlertFilter, AntiAbuseService
from services.kit.auth import acting_account
from tavla.antiabuse.v1 import antiabuse_pb2, antiabuse_pb2_grpc, events_pb2

Context = grpc.aio.ServicerContext[Any, Any]


class AntiAbuseApi(CasesApi, antiabuse_pb2_grpc.AntiAbuseServiceServicer):
    def __init__(self, service: AntiAbuseService, cases: CaseService) -> None:
        self._service = service
        self._cases = cases

    async def ListAlerts(
        self, request: antiabuse_pb2.ListAlertsRequest, context: Context
    ) -> antiabuse_pb2.ListAlertsResponse:
        alerts, token = await self._service.list_alerts(
            AlertFilter(
                account_id=request.account_id,
                kind=request.kind,
                min_severity=request.min_severity,
                status=request.status,
                page_size=request.page_size,
                page_token=request.page_token,
            )
        )
        return antiabuse_pb2.ListAlertsResponse(alerts=alerts, next_page_token=token)

    async def GetAlert(
        self, request: antiabuse_pb2.GetAlertRequest, context: Context
    ) -> events_pb2.ComplianceAlert:
        return await self._service.get_alert(request.alert_id)

    async def GetRiskProfile(
        self, request: antiabuse_pb2.GetRiskProfileRequest, context: Context
    ) -> antiabuse_pb2.RiskProfile:
        profile = await self._service.risk_profile(request.account_id)
        message = antiabuse_pb2.RiskProfile(
            account_id=profile.account_id,
            risk_score=profile.risk_score,
            linked_account_ids=profile.linked_account_ids,
            open_alerts=profile.open_alerts,
            recent_disconnects=profile.recent_disconnects,
            recent_losing_disconnects=profile.recent_losing_disconnects,
        )
        message.updated_at.FromDatetime(profile.updated_at)
        return message

    async def ResolveAlert(
        self, request: antiabuse_pb2.ResolveAlertRequest, context: Context
    ) -> events_pb2.ComplianceAlert:
        return await self._service.resolve(
            alert_id=request.alert_id,
            status=request.status,
            note=request.note,
            officer=acting_account(context),
        )
