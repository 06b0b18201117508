"""A suspension from anti-abuse (AccountSanctioned on the real broker) applied by the real
accounts service: sessions ended, logins refused, nothing blocked at registration (a
suspension is not a termination), the same sanction again changes nothing."""

from __future__ import annotations

import uuid
from typing import Any

import grpc
import pytest

from services.kit.events.envelope import Envelope
from tavla.accounts.v1 import accounts_pb2, accounts_pb2_grpc
from tavla.antiabuse.v1 import events_pb2
from tests.support.compliance import VERDICTS, sanctions_consumed
from tests.support.kafka import publish
from tests.support.ratings import query
from tests.support.services import RunningService

PASSWORD = "correct horse battery"


async def test_a_suspended_account_cannot_log_in_or_refresh(
    accounts_service: RunningService, kafka_broker: Any
) -> None:
    stub = accounts_pb2_grpc.AccountsServiceStub(accounts_service.channel)
    email = f"sus-{uuid.uuid4().hex[:8]}@example.com"
    device = [("x-tavla-device-id", f"dev-{uuid.uuid4().hex[:8]}")]
    account = await stub.Register(accounts_pb2.RegisterRequest(
        email=email, password=PASSWORD, display_name=f"p{uuid.uuid4().hex[:10]}",
        residence="MT", date_of_birth="1990-04-21"), metadata=device)
    signed_in = await stub.Login(accounts_pb2.LoginRequest(email=email, password=PASSWORD),
                                 metadata=device)

    sanction = events_pb2.AccountSanctioned(
        sanction_id=str(uuid.uuid4()), case_id=str(uuid.uuid4()), account_id=account.account_id,
        kind=events_pb2.SANCTION_KIND_SUSPEND_ACCOUNT, reason="under review",
    )
    once = Envelope.wrap(topic=VERDICTS, key=account.account_id, message=sanction,
                         source="antiabuse", now=account.created_at.ToDatetime())
    again = Envelope.wrap(topic=VERDICTS, key=account.account_id, message=sanction,
                          source="antiabuse", now=account.created_at.ToDatetime())
    await publish(kafka_broker.bootstrap, [once, once, again])
    await sanctions_consumed(kafka_broker.bootstrap, ["accounts.sanctions"])

    fetched = await stub.GetAccount(
        accounts_pb2.GetAccountRequest(account_id=account.account_id),
        metadata=[("authorization", f"Bearer {signed_in.access_token}")],
    )  # the access token still works until it expires: it is not revoked
    assert fetched.status == accounts_pb2.ACCOUNT_STATUS_FROZEN
    with pytest.raises(grpc.aio.AioRpcError) as login:
        await stub.Login(accounts_pb2.LoginRequest(email=email, password=PASSWORD))
    assert login.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "frozen" in (login.value.details() or "")
    with pytest.raises(grpc.aio.AioRpcError) as refresh:
        await stub.RefreshSession(
            accounts_pb2.RefreshSessionRequest(refresh_token=signed_in.refresh_token))
    assert refresh.value.code() == grpc.StatusCode.UNAUTHENTICATED

    url = accounts_service.settings.database_url
    published = await query(
        url, "SELECT key FROM outbox WHERE ce_type = 'tavla.accounts.v1.AccountSuspended'"
        " AND key = $1", account.account_id)
    assert len(published) == 1
    assert await query(url, "SELECT 1 FROM blocked_identifiers WHERE account_id = $1",
                       account.account_id) == []
    # The same device may still register another account: only termination blocks it.
    await stub.Register(accounts_pb2.RegisterRequest(
        email=f"other-{uuid.uuid4().hex[:8]}@example.com", password=PASSWORD,
        display_name=f"p{uuid.uuid4().hex[:10]}", residence="MT",
        date_of_birth="1990-04-21"), metadata=device)
