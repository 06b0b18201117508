"""The cases' gRPC methods, a mixin of the AntiAbuseService servicer: protobuf <-> use
cases. Compliance role only (declared in the contract, checked by the kit's auth
interceptor); the actor is always the token's subject, never a request field."""

from __future__ import annotations

from typing import Any

import grpc

from services.antiabuse.cases.domain import CaseStatus, SanctionKind, SanctionOrder
from services.antiabuse.cases.service import CASE_STATUSES, SANCTION_KINDS, CaseService
from services.antiabuse.cases.store import CaseQuery
from services.antiabuse.service import DEFAULT_PAGE, MAX_PAGE, checked_id, decode_page_token
from services.kit.auth import acting_account
from services.kit.errors import InvalidArgument
from tavla.antiabuse.v1 import antiabuse_pb2

Context = grpc.aio.ServicerContext[Any, Any]

_OUTCOMES = {number: status for status, number in CASE_STATUSES.items()}
_KINDS = {number: kind for kind, number in SANCTION_KINDS.items()}


def _orders(sanctions: Any) -> list[SanctionOrder]:
    orders = []
    for sanction in sanctions:
        kind = _KINDS.get(sanction.kind)
        if kind is None:
            raise InvalidArgument("each sanction needs a kind (SANCTION_KIND_...)")
        if not sanction.account_id:
            raise InvalidArgument(f"sanction {kind.value} needs an account_id")
        orders.append(SanctionOrder(SanctionKind(kind), sanction.account_id,
                                    sanction.other_account_id))
    return orders


def _case_query(request: antiabuse_pb2.ListCasesRequest) -> CaseQuery:
    status = _OUTCOMES.get(request.status)
    if request.status and status is None:
        raise InvalidArgument("status must be a CASE_STATUS_... value (or unspecified: any)")
    if not 0 <= request.page_size <= MAX_PAGE:
        raise InvalidArgument(f"page_size must be between 1 and {MAX_PAGE} (0: {DEFAULT_PAGE})")
    return CaseQuery(status=status, account_id=checked_id("account_id", request.account_id),
                     alert_id=checked_id("alert_id", request.alert_id),
                     assignee=checked_id("assignee_account_id", request.assignee_account_id),
                     limit=request.page_size or DEFAULT_PAGE,
                     after=decode_page_token(request.page_token))


class CasesApi:
    _cases: CaseService

    async def OpenCase(
        self, request: antiabuse_pb2.OpenCaseRequest, context: Context
    ) -> antiabuse_pb2.Case:
        return await self._cases.open(list(request.alert_ids), request.note,
                                      acting_account(context))

    async def ListCases(
        self, request: antiabuse_pb2.ListCasesRequest, context: Context
    ) -> antiabuse_pb2.ListCasesResponse:
        cases, token = await self._cases.list(_case_query(request))
        return antiabuse_pb2.ListCasesResponse(cases=cases, next_page_token=token)

    async def GetCase(
        self, request: antiabuse_pb2.GetCaseRequest, context: Context
    ) -> antiabuse_pb2.Case:
        return await self._cases.get(request.case_id)

    async def AssignCase(
        self, request: antiabuse_pb2.AssignCaseRequest, context: Context
    ) -> antiabuse_pb2.Case:
        return await self._cases.assign(request.case_id, request.assignee_account_id,
                                        acting_account(context))

    async def AddCaseNote(
        self, request: antiabuse_pb2.AddCaseNoteRequest, context: Context
    ) -> antiabuse_pb2.Case:
        return await self._cases.note(request.case_id, request.note, acting_account(context))

    async def ResolveCase(
        self, request: antiabuse_pb2.ResolveCaseRequest, context: Context
    ) -> antiabuse_pb2.Case:
        outcome = _OUTCOMES.get(request.outcome)
        if outcome is None or outcome is CaseStatus.OPEN:
            raise InvalidArgument("outcome must be CASE_STATUS_CLEARED or CASE_STATUS_SANCTIONED")
        return await self._cases.resolve(request.case_id, outcome, _orders(request.sanctions),
                                         request.note, acting_account(context))

    async def ApproveSanctions(
        self, request: antiabuse_pb2.ApproveSanctionsRequest, context: Context
    ) -> antiabuse_pb2.Case:
        return await self._cases.approve(request.case_id, request.note, acting_account(context))

    async def RejectSanctions(
        self, request: antiabuse_pb2.RejectSanctionsRequest, context: Context
    ) -> antiabuse_pb2.Case:
        return await self._cases.reject(request.case_id, request.note, acting_account(context))
