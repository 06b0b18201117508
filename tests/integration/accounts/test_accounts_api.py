"""The accounts slice end to end through gRPC: PostgreSQL, the outbox and Kafka."""

from __future__ import annotations

import statistics
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import grpc
import jwt
import pytest

from tavla.accounts.v1 import accounts_pb2, accounts_pb2_grpc, events_pb2
from tests.support.identity import as_player
from tests.support.kafka import keyed_records
from tests.support.services import RunningService

PASSWORD = "correct horse battery"
# The one answer to an unknown email, a wrong password and a locked account alike.
BAD_LOGIN = (
    "email or password is wrong, or the account is locked after 3 failed logins in a row: "
    "try again later or contact support"
)


def unique_name() -> str:
    return f"p{uuid.uuid4().hex[:10]}"


@pytest.fixture
def stub(accounts_service: RunningService) -> accounts_pb2_grpc.AccountsServiceStub:
    return accounts_pb2_grpc.AccountsServiceStub(accounts_service.channel)


async def register(
    stub: accounts_pb2_grpc.AccountsServiceStub, name: str | None = None
) -> accounts_pb2.Account:
    name = name or unique_name()
    return await stub.Register(
        accounts_pb2.RegisterRequest(
            email=f"{name}@Example.com", password=PASSWORD, display_name=name,
            residence="us-nj", date_of_birth="1990-04-21",
        )
    )


async def test_register_stores_the_account_normalised(stub: Any) -> None:
    account = await register(stub)
    assert account.email.endswith("@example.com")
    # The residence as ISO writes it, its country, and the date of birth, shown to the owner.
    assert (account.residence, account.country_code) == ("US-NJ", "US")
    assert account.date_of_birth == "1990-04-21"
    assert account.status == accounts_pb2.ACCOUNT_STATUS_ACTIVE

    fetched = await stub.GetAccount(
        accounts_pb2.GetAccountRequest(account_id=account.account_id),
        metadata=as_player(account.account_id),
    )
    assert fetched == account


async def test_account_registered_event_reaches_kafka_with_cloudevents_headers(
    stub: Any, kafka_broker: Any
) -> None:
    account = await register(stub)
    (record,) = await keyed_records(
        kafka_broker.bootstrap, "tavla.accounts.v1", account.account_id, lambda found: True,
        timeout=30,
    )  # fmt: skip
    headers = {name: value.decode() for name, value in record.headers}
    assert headers["ce_type"] == "tavla.accounts.v1.AccountRegistered"
    assert headers["ce_source"] == "//tavla/accounts"
    assert headers["ce_specversion"] == "1.0"
    assert headers["content-type"] == "application/protobuf"
    uuid.UUID(headers["ce_id"])
    datetime.fromisoformat(headers["ce_time"])
    event = events_pb2.AccountRegistered.FromString(record.value)
    assert (event.account_id, event.display_name) == (account.account_id, account.display_name)


async def test_login_issues_a_token_for_the_account(stub: Any) -> None:
    account = await register(stub)
    response = await stub.Login(
        accounts_pb2.LoginRequest(email=account.email.upper(), password=PASSWORD)
    )
    claims = jwt.decode(response.access_token, options={"verify_signature": False})
    assert claims["sub"] == account.account_id == response.account_id
    assert claims["iss"] == "tavla"
    # Signed in, so that services asking geo read it from the token (acting_residence).
    assert claims["residence"] == "US-NJ"
    assert response.expires_at.ToDatetime(tzinfo=UTC) > datetime.now(UTC)


@pytest.mark.parametrize(
    ("field", "value", "code", "phrase"),
    [
        ("email", "not-an-email", grpc.StatusCode.INVALID_ARGUMENT, "valid email"),
        ("password", "short", grpc.StatusCode.INVALID_ARGUMENT, "password must be"),
        ("display_name", "a b", grpc.StatusCode.INVALID_ARGUMENT, "display name"),
        ("residence", "Malta", grpc.StatusCode.INVALID_ARGUMENT, "ISO 3166"),
        ("residence", "", grpc.StatusCode.INVALID_ARGUMENT, "residence is required"),
        ("residence", "US", grpc.StatusCode.INVALID_ARGUMENT, "needs your state"),
        ("residence", "US-XX", grpc.StatusCode.INVALID_ARGUMENT, "ISO 3166"),
        ("date_of_birth", "", grpc.StatusCode.INVALID_ARGUMENT, "date_of_birth is required"),
        ("date_of_birth", "21/04/1990", grpc.StatusCode.INVALID_ARGUMENT, "YYYY-MM-DD"),
        ("date_of_birth", "1990-02-30", grpc.StatusCode.INVALID_ARGUMENT, "YYYY-MM-DD"),
        # Ten years old whatever today is: refused with the day they turn 18.
        ("date_of_birth", f"{datetime.now(UTC).year - 10}-01-01",
         grpc.StatusCode.INVALID_ARGUMENT, "18 or over"),
    ],
)
async def test_bad_registration_input_gets_a_clear_error(
    stub: Any, field: str, value: str, code: grpc.StatusCode, phrase: str
) -> None:
    name = unique_name()
    request = accounts_pb2.RegisterRequest(
        email=f"{name}@example.com", password=PASSWORD, display_name=name, residence="MT",
        date_of_birth="1990-04-21",
    )
    setattr(request, field, value)
    with pytest.raises(grpc.aio.AioRpcError) as error:
        await stub.Register(request)
    assert error.value.code() is code
    assert phrase in (error.value.details() or "")


async def test_the_same_email_cannot_register_twice(stub: Any) -> None:
    account = await register(stub)
    with pytest.raises(grpc.aio.AioRpcError) as error:
        await stub.Register(
            accounts_pb2.RegisterRequest(
                email=account.email,
                password=PASSWORD,
                display_name=unique_name(),
                residence="MT",
                date_of_birth="1990-04-21",
            )
        )
    assert error.value.code() is grpc.StatusCode.ALREADY_EXISTS


async def test_wrong_password_and_unknown_email_look_the_same(stub: Any) -> None:
    account = await register(stub)
    details = []
    for email, password in [(account.email, "wrong password!"), ("nobody@example.com", PASSWORD)]:
        with pytest.raises(grpc.aio.AioRpcError) as error:
            await stub.Login(accounts_pb2.LoginRequest(email=email, password=password))
        assert error.value.code() is grpc.StatusCode.UNAUTHENTICATED
        details.append(error.value.details())
    assert details[0] == details[1]


async def test_a_player_reads_only_their_own_account(stub: Any) -> None:
    mine, theirs = await register(stub), await register(stub)
    with pytest.raises(grpc.aio.AioRpcError) as error:
        await stub.GetAccount(
            accounts_pb2.GetAccountRequest(account_id=theirs.account_id),
            metadata=as_player(mine.account_id),
        )
    assert error.value.code() is grpc.StatusCode.PERMISSION_DENIED


async def test_self_exclusion_can_be_lengthened_but_not_shortened(stub: Any) -> None:
    account = await register(stub)
    request = accounts_pb2.SelfExcludeRequest(account_id=account.account_id)
    request.until.FromDatetime(datetime.now(UTC) + timedelta(days=30))
    excluded = await stub.SelfExclude(request, metadata=as_player(account.account_id))
    assert excluded.status == accounts_pb2.ACCOUNT_STATUS_SELF_EXCLUDED

    request.until.FromDatetime(datetime.now(UTC) + timedelta(days=7))
    with pytest.raises(grpc.aio.AioRpcError) as error:
        await stub.SelfExclude(request, metadata=as_player(account.account_id))
    assert error.value.code() is grpc.StatusCode.FAILED_PRECONDITION
    assert "cannot be shortened" in (error.value.details() or "")


async def test_login_refresh_and_logout_over_grpc(stub: Any) -> None:
    account = await register(stub)
    login = await stub.Login(accounts_pb2.LoginRequest(email=account.email, password=PASSWORD))
    assert login.refresh_token and login.refresh_expires_at.seconds > login.expires_at.seconds
    refreshed = await stub.RefreshSession(
        accounts_pb2.RefreshSessionRequest(refresh_token=login.refresh_token)
    )
    claims = jwt.decode(refreshed.access_token, options={"verify_signature": False})
    assert claims["sub"] == account.account_id == refreshed.account_id
    await stub.Logout(accounts_pb2.LogoutRequest(refresh_token=refreshed.refresh_token))
    with pytest.raises(grpc.aio.AioRpcError) as error:
        await stub.RefreshSession(
            accounts_pb2.RefreshSessionRequest(refresh_token=refreshed.refresh_token)
        )
    assert error.value.code() is grpc.StatusCode.UNAUTHENTICATED
    assert "log in again" in (error.value.details() or "")
    with pytest.raises(grpc.aio.AioRpcError) as error:
        await stub.RefreshSession(accounts_pb2.RefreshSessionRequest())
    assert error.value.code() is grpc.StatusCode.INVALID_ARGUMENT


async def refused_login(stub: Any, email: str, password: str) -> tuple[Any, str, float]:
    """A refused login's code, message and how long it took (seconds)."""
    started = time.perf_counter()
    with pytest.raises(grpc.aio.AioRpcError) as error:
        await stub.Login(accounts_pb2.LoginRequest(email=email, password=password))
    took = time.perf_counter() - started
    return error.value.code(), error.value.details() or "", took


async def test_a_locked_account_answers_as_an_unknown_email_in_the_same_time(stub: Any) -> None:
    account = await register(stub)
    for _ in range(3):
        code, _, _ = await refused_login(stub, account.email, "nope nope!")
        assert code is grpc.StatusCode.UNAUTHENTICATED
    unknown_email = f"{unique_name()}@example.com"
    locked, unknown = [], []
    for _ in range(7):  # interleaved, so a busy moment of the machine falls on both
        locked.append(await refused_login(stub, account.email, PASSWORD))
        unknown.append(await refused_login(stub, unknown_email, PASSWORD))
    # The same answer: nothing tells a guesser the email has an account, or that it is locked.
    assert {(code, message) for code, message, _ in locked + unknown} == {
        (grpc.StatusCode.UNAUTHENTICATED, BAD_LOGIN)
    }
    # The same time: each is one argon2 verification (tens of milliseconds), so the
    # medians agree within a factor of two, where a lock answered without one took a
    # small fraction of an unknown email's time.
    locked_median = statistics.median(took for _, _, took in locked)
    unknown_median = statistics.median(took for _, _, took in unknown)
    assert unknown_median / 2 < locked_median < unknown_median * 2, (locked_median, unknown_median)


