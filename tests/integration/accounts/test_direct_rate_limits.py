"""Login and registration straight to the accounts port meet the gateway's limits.

A caller on the plain port is counted by its own network address (here 127.0.0.1),
10 logins and 5 registrations a minute as at the gateway; calls proven to come from
the gateway (its certificate on the gateway port) were counted there and are not
counted again.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable

import grpc
import pytest

from tavla.accounts.v1 import accounts_pb2, accounts_pb2_grpc
from tests.support.identity import bare_channel
from tests.support.services import RunningService

PASSWORD = "correct horse battery"


async def at_once(calls: list[Awaitable[object]]) -> list[object]:
    """Each call's answer or error, the calls sent together: the bucket refills a token every
    6 s (logins) or 12 s (registrations), and sent one after the other on a loaded machine
    the calls could outlast that, so that a refilled token let one more through."""
    return list(await asyncio.gather(*calls, return_exceptions=True))


def registration() -> accounts_pb2.RegisterRequest:
    name = f"p{uuid.uuid4().hex[:10]}"
    return accounts_pb2.RegisterRequest(email=f"{name}@example.com", password=PASSWORD,
                                        display_name=name, residence="MT",
                                        date_of_birth="1990-04-21")


def refused(outcomes: list[object]) -> list[grpc.aio.AioRpcError]:
    return [
        outcome for outcome in outcomes
        if isinstance(outcome, grpc.aio.AioRpcError)
        and outcome.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
    ]


async def test_the_eleventh_direct_login_in_a_minute_is_resource_exhausted(
    accounts_service: RunningService,
) -> None:
    guess = accounts_pb2.LoginRequest(email="nobody@example.com", password="a guess, again")
    async with bare_channel(accounts_service.address) as channel:
        direct = accounts_pb2_grpc.AccountsServiceStub(channel)
        outcomes = await at_once([direct.Login(guess) for _ in range(11)])
    [limited] = refused(outcomes)
    assert "too many Login calls" in (limited.details() or "")
    others = [outcome for outcome in outcomes if outcome is not limited]
    assert all(
        isinstance(outcome, grpc.aio.AioRpcError)
        and outcome.code() is grpc.StatusCode.UNAUTHENTICATED
        for outcome in others
    )
    # The gateway's own calls were counted at the gateway: still answered.
    through_gateway = accounts_pb2_grpc.AccountsServiceStub(accounts_service.channel)
    with pytest.raises(grpc.aio.AioRpcError) as answered:
        await through_gateway.Login(guess)
    assert answered.value.code() is grpc.StatusCode.UNAUTHENTICATED


async def test_the_sixth_direct_registration_in_a_minute_is_resource_exhausted(
    accounts_service: RunningService,
) -> None:
    async with bare_channel(accounts_service.address) as channel:
        direct = accounts_pb2_grpc.AccountsServiceStub(channel)
        requests = [registration() for _ in range(6)]
        outcomes = await at_once([direct.Register(request) for request in requests])
    [limited] = refused(outcomes)
    assert "too many Register calls" in (limited.details() or "")
    refused_request = requests[outcomes.index(limited)]
    assert all(
        isinstance(outcome, accounts_pb2.Account) and outcome.account_id
        for outcome in outcomes if outcome is not limited
    )
    # Nothing was written for the refused one: its name is still free.
    through_gateway = accounts_pb2_grpc.AccountsServiceStub(accounts_service.channel)
    assert (
        await through_gateway.Register(refused_request)
    ).display_name == refused_request.display_name
