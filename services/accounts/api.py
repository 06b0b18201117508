"""The AccountsService gRPC servicer: protobuf <-> domain, nothing else (the client's address
and device id come from the gateway's metadata, through services.kit.client_signals)."""

from __future__ import annotations

from datetime import UTC
from typing import Any

import grpc
from google.protobuf.timestamp_pb2 import Timestamp

from services.accounts.domain import Account, AccountStatus
from services.accounts.service import AccountsService, SignedIn
from services.accounts.tokens import TokenIssuer
from services.kit.auth import acting_account
from services.kit.client_signals import client_signals
from services.kit.errors import InvalidArgument
from tavla.accounts.v1 import accounts_pb2, accounts_pb2_grpc

Context = grpc.aio.ServicerContext[Any, Any]

_STATUS = {
    AccountStatus.ACTIVE: accounts_pb2.ACCOUNT_STATUS_ACTIVE,
    AccountStatus.SELF_EXCLUDED: accounts_pb2.ACCOUNT_STATUS_SELF_EXCLUDED,
    AccountStatus.FROZEN: accounts_pb2.ACCOUNT_STATUS_FROZEN,
    AccountStatus.CLOSED: accounts_pb2.ACCOUNT_STATUS_CLOSED,
}


def account_message(account: Account) -> accounts_pb2.Account:
    message = accounts_pb2.Account(
        account_id=account.account_id,
        email=account.email,
        display_name=account.display_name,
        country_code=account.country_code,
        status=_STATUS[account.status],
        residence=account.residence,
        date_of_birth=account.date_of_birth.isoformat() if account.date_of_birth else "",
        screen_name=account.screen_name,
    )
    message.created_at.FromDatetime(account.created_at)
    if account.self_excluded_until is not None:
        message.self_excluded_until.FromDatetime(account.self_excluded_until)
    return message


def signed_in_message(signed_in: SignedIn) -> accounts_pb2.LoginResponse:
    response = accounts_pb2.LoginResponse(
        access_token=signed_in.access.token,
        account_id=signed_in.account.account_id,
        refresh_token=signed_in.refresh_token,
    )
    response.expires_at.FromDatetime(signed_in.access.expires_at)
    response.refresh_expires_at.FromDatetime(signed_in.refresh_expires_at)
    return response


class AccountsApi(accounts_pb2_grpc.AccountsServiceServicer):
    def __init__(self, service: AccountsService, tokens: TokenIssuer) -> None:
        self._service = service
        self._tokens = tokens

    async def Register(
        self, request: accounts_pb2.RegisterRequest, context: Context
    ) -> accounts_pb2.Account:
        account = await self._service.register(
            email=request.email,
            password=request.password,
            display_name=request.display_name,
            residence=request.residence,
            date_of_birth=request.date_of_birth,
            signals=client_signals(context),
        )
        return account_message(account)

    async def Login(
        self, request: accounts_pb2.LoginRequest, context: Context
    ) -> accounts_pb2.LoginResponse:
        signed_in = await self._service.login(
            email=request.email, password=request.password, signals=client_signals(context)
        )
        return signed_in_message(signed_in)

    async def RefreshSession(
        self, request: accounts_pb2.RefreshSessionRequest, context: Context
    ) -> accounts_pb2.LoginResponse:
        if not request.refresh_token:
            raise InvalidArgument("refresh_token is required: the one the last login gave")
        signed_in = await self._service.refresh_session(
            refresh_token=request.refresh_token, signals=client_signals(context)
        )
        return signed_in_message(signed_in)

    async def Logout(
        self, request: accounts_pb2.LogoutRequest, context: Context
    ) -> accounts_pb2.LogoutResponse:
        if not request.refresh_token:
            raise InvalidArgument("refresh_token is required: the session's refresh token")
        await self._service.logout(refresh_token=request.refresh_token)
        return accounts_pb2.LogoutResponse()

    async def GetAccount(
        self, request: accounts_pb2.GetAccountRequest, context: Context
    ) -> accounts_pb2.Account:
        account = await self._service.get_account(
            acting=acting_account(context), account_id=request.account_id
        )
        return account_message(account)

    async def SelfExclude(
        self, request: accounts_pb2.SelfExcludeRequest, context: Context
    ) -> accounts_pb2.Account:
        acting = acting_account(context)
        if not request.HasField("until"):
            raise InvalidArgument("until is required: when the self-exclusion ends")
        account = await self._service.self_exclude(
            acting=acting, account_id=request.account_id, until=_utc(request.until)
        )
        return account_message(account)

    async def SetScreenName(
        self, request: accounts_pb2.SetScreenNameRequest, context: Context
    ) -> accounts_pb2.Account:
        account = await self._service.set_screen_name(
            acting=acting_account(context), account_id=request.account_id,
            screen_name=request.screen_name,
        )
        return account_message(account)

    async def GetScreenNames(
        self, request: accounts_pb2.GetScreenNamesRequest, context: Context
    ) -> accounts_pb2.ScreenNames:
        names = await self._service.screen_names(list(request.account_ids))
        return accounts_pb2.ScreenNames(names=[
            accounts_pb2.ScreenName(account_id=account_id, screen_name=name)
            for account_id, name in sorted(names.items())
        ])

    async def GetJwks(
        self, request: accounts_pb2.GetJwksRequest, context: Context
    ) -> accounts_pb2.Jwks:
        return accounts_pb2.Jwks(keys=[accounts_pb2.Jwk(**jwk) for jwk in self._tokens.jwks()])


def _utc(stamp: Timestamp) -> Any:
    return stamp.ToDatetime(tzinfo=UTC)
