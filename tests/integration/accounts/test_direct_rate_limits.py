"""Login and registration straight to the accounts port meet the gateway's limits.

A caller on the plain port is counted by its own network address (here 127.0.0.1),
10 logins and 5 registrations a minute as at the gateway; calls proven to come from
the gateway (its certificate on the gateway port) were counted there and are not
counted again.
"""

from __future__ import annotations

import uuid

import grpc
import pytest

from tavla.accounts.v1 import accounts_pb2, accounts_pb2_grpc
from tests.support.identity import bare_channel
from tests.support.services import RunningService

PASSWORD = "correct horse battery"


def registration() -> accounts_pb2.RegisterRequest:
    name = f"p{uuid.uuid4().hex[:10]}"
    return accounts_pb2.RegisterRequest(email=f"{name}@example.com", password=PASSWORD,
                                        display_name=name, residence="MT",
                                        date_of_birth="1990-04-21")


async def test_the_eleventh_direct_login_in_a_minute_is_resource_exhausted(
    accounts_service: RunningService,
) -> None:
    guess = accounts_pb2.LoginRequest(email="nobody@example.com", password="a guess, again")
    async with bare_channel(accounts_service.address) as channel:
        direct = accounts_pb2_grpc.AccountsServiceStub(channel)
        for _ in range(10):
            with pytest.raises(grpc.aio.AioRpcError) as answered:
                await direct.Login(guess)
            assert answered.value.code() is grpc.StatusCode.UNAUTHENTICATED
        with pytest.raises(grpc.aio.AioRpcError) as limited:
            await direct.Login(guess)
        assert limited.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "too many Login calls" in (limited.value.details() or "")
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
        for _ in range(5):
            assert (await direct.Register(registration())).account_id
        refused = registration()
        with pytest.raises(grpc.aio.AioRpcError) as limited:
            await direct.Register(refused)
        assert limited.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
    # Nothing was written for the refused one: its name is still free.
    through_gateway = accounts_pb2_grpc.AccountsServiceStub(accounts_service.channel)
    assert (await through_gateway.Register(refused)).display_name == refused.display_name
