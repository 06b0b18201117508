"""Screen names on the real accounts service (PostgreSQL): chosen at Register or once with
SetScreenName, unique ignoring case and look-alike letters (a unique index settles
concurrent registrations), read back with GetScreenNames, signed into access tokens; and
GetScreenNames through the real Envoy gateway."""

from __future__ import annotations

import asyncio
import shutil
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import grpc
import httpx
import jwt
import pytest
from sqlalchemy import text

from services.kit.db import make_engine
from services.kit.devstack.keys import PRIVATE_KEY_FILE
from services.kit.devstack.supervisor import Supervisor
from tavla.accounts.v1 import accounts_pb2, accounts_pb2_grpc
from tests.support.gateway import envoy_in_front
from tests.support.identity import CERTIFICATES, PLAYER_KEY_FILE, as_player
from tests.support.services import (
    RunningService,
    new_database,
    start_accounts,
    stop_service,
)

PASSWORD = "correct horse battery"
CYRILLIC_A = "\u0430"


def tag() -> str:
    """A fresh suffix (hex, so no staff word or offensive word can appear in it)."""
    return uuid.uuid4().hex[:8]


@pytest.fixture
def stub(accounts_service: RunningService) -> accounts_pb2_grpc.AccountsServiceStub:
    return accounts_pb2_grpc.AccountsServiceStub(accounts_service.channel)


def registration(name: str) -> accounts_pb2.RegisterRequest:
    return accounts_pb2.RegisterRequest(
        email=f"{uuid.uuid4().hex}@example.com", password=PASSWORD, display_name=name,
        residence="MT", date_of_birth="1990-04-21",
    )


async def refused(call: Any) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as error:
        await call
    return error.value


async def execute(service: RunningService, query: str, **params: Any) -> list[Any]:
    engine = make_engine(service.settings.database_url)
    try:
        async with engine.begin() as connection:
            result = await connection.execute(text(query), params)
            return list(result.all()) if result.returns_rows else []
    finally:
        await engine.dispose()


async def test_a_name_taken_in_another_case_or_with_look_alike_letters_is_refused(
    stub: Any,
) -> None:
    suffix = tag()
    paul = await stub.Register(registration(f"Paul_{suffix}"))
    assert paul.screen_name == paul.display_name == f"Paul_{suffix}"
    for alike in (f"paul_{suffix}", f"PAUL-{suffix}", f"P{CYRILLIC_A}ul_{suffix}"):
        error = await refused(stub.Register(registration(alike)))
        assert error.code() is grpc.StatusCode.ALREADY_EXISTS, alike
        assert f"the screen name {alike!r} is taken, or one that looks like it" in (
            error.details() or "")
    assert (await stub.Register(registration(f"Paula_{suffix}"))).screen_name


async def test_a_name_whose_canonical_form_is_longer_is_stored(stub: Any) -> None:
    # Capital Cyrillic yeru folds to "bl": 20 letters, a 40-character key.
    name = "\u042b" * 19 + "\u042e"
    assert (await stub.Register(registration(name))).screen_name == name


@pytest.mark.parametrize(
    ("name", "phrase"),
    [("Support_Desk", "kept for the site's staff"), ("Adm1n_x", "kept for the site's staff"),
     ("fuck_you", "offensive"), ("ab", "3 to 20 characters"), ("ann.smith", "not '.'")],
)
async def test_a_bad_name_is_invalid_argument_saying_why(
    stub: Any, name: str, phrase: str
) -> None:
    error = await refused(stub.Register(registration(name)))
    assert error.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert phrase in (error.details() or "")


async def test_of_concurrent_registrations_of_look_alike_names_one_wins(
    stub: Any, accounts_service: RunningService,
) -> None:
    suffix = tag()
    spellings = [f"Paul_{suffix}", f"paul-{suffix}", f"P{CYRILLIC_A}ul_{suffix}",
                 f"PAUL_{suffix}", f"pau1_{suffix}", f"PAUl-{suffix}"]
    answers = await asyncio.gather(*(stub.Register(registration(name)) for name in spellings),
                                   return_exceptions=True)
    won = [a for a in answers if isinstance(a, accounts_pb2.Account)]
    lost = [a for a in answers if isinstance(a, grpc.aio.AioRpcError)]
    assert len(won) == 1 and len(lost) == len(spellings) - 1, answers
    assert {error.code() for error in lost} == {grpc.StatusCode.ALREADY_EXISTS}
    # The database holds that rule itself: a second row with the same form is refused.
    (index,), = await execute(
        accounts_service,
        "SELECT indexdef FROM pg_indexes WHERE indexname = 'ix_accounts_screen_name_key'")
    assert "UNIQUE" in index and "screen_name_key" in index


async def test_screen_names_are_looked_up_by_signed_in_players_only(stub: Any) -> None:
    ann = await stub.Register(registration(f"ann_{tag()}"))
    bob = await stub.Register(registration(f"bob_{tag()}"))
    nobody = str(uuid.uuid4())
    request = accounts_pb2.GetScreenNamesRequest(
        account_ids=[ann.account_id, bob.account_id, nobody, ann.account_id])
    error = await refused(stub.GetScreenNames(request))
    assert error.code() is grpc.StatusCode.UNAUTHENTICATED
    answer = await stub.GetScreenNames(request, metadata=as_player(bob.account_id))
    assert {(n.account_id, n.screen_name) for n in answer.names} == {
        (ann.account_id, ann.display_name), (bob.account_id, bob.display_name)}

    too_many = accounts_pb2.GetScreenNamesRequest(
        account_ids=[str(uuid.uuid4()) for _ in range(101)])
    error = await refused(stub.GetScreenNames(too_many, metadata=as_player(bob.account_id)))
    assert error.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert "at most 100 account ids" in (error.details() or "")
    error = await refused(stub.GetScreenNames(
        accounts_pb2.GetScreenNamesRequest(account_ids=["not-an-id"]),
        metadata=as_player(bob.account_id)))
    assert error.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert "is not an account id" in (error.details() or "")


async def test_the_access_token_carries_the_screen_name(stub: Any) -> None:
    request = registration(f"Ann_{tag()}")
    await stub.Register(request)
    signed_in = await stub.Login(accounts_pb2.LoginRequest(email=request.email,
                                                           password=PASSWORD))
    claims = jwt.decode(signed_in.access_token, options={"verify_signature": False})
    assert claims["screen_name"] == request.display_name


async def test_an_account_from_before_screen_names_chooses_one_once(
    stub: Any, accounts_service: RunningService,
) -> None:
    suffix = tag()
    taken = await stub.Register(registration(f"Taken_{suffix}"))
    legacy = await stub.Register(registration(f"old_{suffix}"))
    # As migration 0006 leaves an account opened before the rules: a display name
    # under the old ones, no screen name.
    await execute(accounts_service, "UPDATE accounts SET display_name = :old, "
                  "screen_name_key = NULL WHERE account_id = :id",
                  old=f"old.{suffix}", id=legacy.account_id)
    owner = as_player(legacy.account_id)
    fetched = await stub.GetAccount(
        accounts_pb2.GetAccountRequest(account_id=legacy.account_id), metadata=owner)
    assert (fetched.display_name, fetched.screen_name) == (f"old.{suffix}", "")
    names = await stub.GetScreenNames(
        accounts_pb2.GetScreenNamesRequest(account_ids=[legacy.account_id]), metadata=owner)
    assert list(names.names) == []

    def choose(name: str, account_id: str = legacy.account_id) -> Any:
        return stub.SetScreenName(
            accounts_pb2.SetScreenNameRequest(account_id=account_id, screen_name=name),
            metadata=owner)

    assert (await refused(choose(f"x_{suffix}", taken.account_id))).code() is (
        grpc.StatusCode.PERMISSION_DENIED)
    error = await refused(choose(f"TAKEN_{suffix}"))
    assert error.code() is grpc.StatusCode.ALREADY_EXISTS
    assert "is taken, or one that looks like it" in (error.details() or "")
    assert (await refused(choose("staff_room"))).code() is grpc.StatusCode.INVALID_ARGUMENT

    chosen = await choose(f"Old_{suffix}")
    assert (chosen.display_name, chosen.screen_name) == (f"Old_{suffix}", f"Old_{suffix}")
    error = await refused(choose(f"New_{suffix}"))
    assert error.code() is grpc.StatusCode.FAILED_PRECONDITION
    assert "chosen once" in (error.details() or "")
    names = await stub.GetScreenNames(
        accounts_pb2.GetScreenNamesRequest(account_ids=[legacy.account_id]), metadata=owner)
    assert [n.screen_name for n in names.names] == [f"Old_{suffix}"]


@pytest.fixture
def supervisor(tmp_path: Path) -> Iterator[Supervisor]:
    with Supervisor(tmp_path / "logs", stop_timeout=3) as owner:
        yield owner


@pytest.fixture
async def gateway(
    tmp_path: Path, supervisor: Supervisor, postgres_server: Any, kafka_broker: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> AsyncIterator[str]:
    """Envoy (the dev config) in front of a real accounts service: its base URL."""
    database = postgres_server.url(new_database(postgres_server, "accounts"))
    accounts = await start_accounts(database, kafka_broker.bootstrap, PLAYER_KEY_FILE,
                                    monkeypatch)
    shutil.copy(PLAYER_KEY_FILE, tmp_path / PRIVATE_KEY_FILE)  # the JWKS of accounts' key
    try:
        async with envoy_in_front(
            tmp_path, supervisor, {"accounts": accounts.gateway_port},
            upstream_tls=CERTIFICATES.upstream_tls(),
        ) as base_url:  # fmt: skip
            yield base_url
    finally:
        await stop_service(accounts)


async def test_screen_names_through_the_gateway(gateway: str) -> None:
    suffix = tag()
    async with httpx.AsyncClient(base_url=gateway, timeout=20) as client:
        ids = {}
        for name in (f"Ann_{suffix}", f"Bob_{suffix}"):
            email = f"{name.lower()}@example.com"
            registered = await client.post("/v1/accounts", json={
                "email": email, "password": PASSWORD, "displayName": name,
                "residence": "MT", "dateOfBirth": "1990-04-21"})
            assert registered.status_code == 200, registered.text
            assert registered.json()["screenName"] == name
            ids[registered.json()["accountId"]] = name
        alike = await client.post("/v1/accounts", json={
            "email": f"other-{suffix}@example.com", "password": PASSWORD,
            "displayName": f"{CYRILLIC_A}nn_{suffix}", "residence": "MT",
            "dateOfBirth": "1990-04-21"})
        assert alike.status_code == 409, alike.text
        assert "looks like it" in alike.json()["message"]

        query = [("accountIds", account_id) for account_id in ids]
        assert (await client.get("/v1/screen-names", params=query)).status_code == 401
        signed_in = await client.post("/v1/sessions", json={
            "email": f"ann_{suffix}@example.com", "password": PASSWORD})
        assert signed_in.status_code == 200, signed_in.text
        bearer = {"authorization": f"Bearer {signed_in.json()['accessToken']}"}
        answer = await client.get("/v1/screen-names", params=query, headers=bearer)
        assert answer.status_code == 200, answer.text
        assert {n["accountId"]: n["screenName"] for n in answer.json()["names"]} == ids
