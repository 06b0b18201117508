"""No forged identity, no call trusted for where it comes from: each service checks for itself.

A real accounts service (signing access tokens, serving its JWKS) and a real
wallet service that fetches that JWKS over gRPC, both on PostgreSQL and the
broker, called directly: no gateway in between, as an attacker who reaches a
service's port would. Every bad credential also carries the
``x-tavla-account-id`` header the old services trusted, so each refusal here
was an acceptance before.
"""

from __future__ import annotations

import asyncio
import dataclasses
import ipaddress
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import httpx
import jwt
import psutil
import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from services.kit.devstack.net import free_port
from services.kit.keys import key_id, private_pem, public_pem
from services.kit.service_tokens import SERVICE_TOKEN_HEADER, ServiceTokenMinter
from services.wallet import main as wallet_main
from services.wallet.provider_config import PaymentSettings
from tavla.accounts.v1 import accounts_pb2, accounts_pb2_grpc
from tavla.common.v1 import money_pb2
from tavla.wallet.v1 import wallet_pb2, wallet_pb2_grpc
from tests.support.identity import as_service, bare_channel, player_token
from tests.support.services import (
    RunningService,
    fast_settings,
    new_database,
    start_accounts,
    start_service,
    stop_service,
)
from tests.support.wallet import FAST_SANDBOX

PASSWORD = "correct horse battery"
# Short, so the rotation test waits little; the flood limit itself is unit-tested.
MIN_REFRESH_SECONDS = 0.2


@dataclass
class Stack:
    accounts: RunningService
    wallet: RunningService
    signing_key: ec.EllipticCurvePrivateKey
    key_dir: Path

    @property
    def accounts_stub(self) -> accounts_pb2_grpc.AccountsServiceStub:
        return accounts_pb2_grpc.AccountsServiceStub(bare_channel(self.accounts.address))

    @property
    def wallet_stub(self) -> wallet_pb2_grpc.WalletServiceStub:
        return wallet_pb2_grpc.WalletServiceStub(bare_channel(self.wallet.address))


def new_key(directory: Path, name: str) -> tuple[ec.EllipticCurvePrivateKey, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    path = directory / f"{name}.pem"
    path.write_bytes(private_pem(key))
    return key, path


async def start_stack(
    postgres_server: Any, kafka_broker: Any, key_dir: Path, patch: pytest.MonkeyPatch
) -> Stack:
    signing_key, key_file = new_key(key_dir, "signing-1")
    accounts = await start_accounts(
        postgres_server.url(new_database(postgres_server, "identity_accounts")),
        kafka_broker.bootstrap,
        key_file,
        patch,
    )
    settings = fast_settings(
        "wallet",
        postgres_server.url(new_database(postgres_server, "identity_wallet")),
        kafka_broker.bootstrap,
        TAVLA_ACCOUNTS_ADDRESS=accounts.address,
        TAVLA_JWKS_MIN_REFRESH_SECONDS=str(MIN_REFRESH_SECONDS),
    )
    # The wallet's own main wiring, verifying tokens with the JWKS it fetches from accounts.
    wallet = await start_service(
        settings,
        lambda runtime: wallet_main.wiring(runtime, PaymentSettings.sandboxed(FAST_SANDBOX)),
        jwks=True,
    )
    return Stack(accounts, wallet, signing_key, key_dir)


@pytest.fixture(scope="module")
async def stack(
    postgres_server: Any,
    kafka_broker: Any,
    tmp_path_factory: pytest.TempPathFactory,
    module_monkeypatch: pytest.MonkeyPatch,
) -> AsyncIterator[Stack]:
    running = await start_stack(
        postgres_server, kafka_broker, tmp_path_factory.mktemp("identity"), module_monkeypatch
    )
    yield running
    await stop_service(running.wallet)
    await stop_service(running.accounts)


async def sign_up(stub: accounts_pb2_grpc.AccountsServiceStub) -> tuple[str, str]:
    """A new account and its access token from Login: (account id, token)."""
    name = f"p{uuid.uuid4().hex[:10]}"
    email = f"{name}@example.com"
    await stub.Register(
        accounts_pb2.RegisterRequest(
            email=email, password=PASSWORD, display_name=name, residence="MT",
            date_of_birth="1990-04-21",
        )
    )
    login = await stub.Login(accounts_pb2.LoginRequest(email=email, password=PASSWORD))
    return login.account_id, login.access_token


def bearer(token: str, forged_account: str = "victim") -> list[tuple[str, str]]:
    """A token, plus the identity header an attacker would add (the old services trusted it)."""
    return [("authorization", f"Bearer {token}"), ("x-tavla-account-id", forged_account)]


async def refusal(call: Any) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as error:
        await call
    return error.value


def cover_request(account_id: str = "victim") -> wallet_pb2.CanCoverRequest:
    return wallet_pb2.CanCoverRequest(
        account_id=account_id, amount=money_pb2.Money(minor_units=100, currency="USD")
    )


def hold_request(account_id: str = "victim") -> wallet_pb2.PlaceHoldRequest:
    return wallet_pb2.PlaceHoldRequest(
        account_id=account_id,
        amount=money_pb2.Money(minor_units=100, currency="USD"),
        table_id="t-identity",
        idempotency_key=uuid.uuid4().hex,
    )


# --- players: the service verifies the access token itself ---------------------------------


async def test_a_forged_account_header_without_a_token_is_refused(stack: Stack) -> None:
    error = await refusal(
        stack.wallet_stub.GetBalances(
            wallet_pb2.GetBalancesRequest(), metadata=[("x-tavla-account-id", "victim")]
        )
    )
    assert error.code() is grpc.StatusCode.UNAUTHENTICATED
    assert "access token" in (error.details() or "")


async def test_a_valid_token_acts_as_its_subject_whatever_header_comes_with_it(
    stack: Stack,
) -> None:
    ann, ann_token = await sign_up(stack.accounts_stub)
    bob, _ = await sign_up(stack.accounts_stub)
    balances = await stack.wallet_stub.GetBalances(
        wallet_pb2.GetBalancesRequest(), metadata=bearer(ann_token, forged_account=bob)
    )
    assert isinstance(balances, wallet_pb2.GetBalancesResponse)
    # Ann's token with Bob's id in the header: the accounts service acts as Ann.
    mine = await stack.accounts_stub.GetAccount(
        accounts_pb2.GetAccountRequest(account_id=ann), metadata=bearer(ann_token, bob)
    )
    assert mine.account_id == ann
    error = await refusal(
        stack.accounts_stub.GetAccount(
            accounts_pb2.GetAccountRequest(account_id=bob), metadata=bearer(ann_token, bob)
        )
    )
    assert error.code() is grpc.StatusCode.PERMISSION_DENIED


def _claims(**changes: Any) -> dict[str, Any]:
    now = int(time.time())
    claims = {"iss": "tavla", "aud": "tavla-api", "sub": "victim", "iat": now, "exp": now + 600}
    claims.update(changes)
    return {k: v for k, v in claims.items() if v is not None}


def bad_tokens(signing_key: ec.EllipticCurvePrivateKey) -> dict[str, str]:
    kid = key_id(signing_key.public_key())
    stranger = ec.generate_private_key(ec.SECP256R1())
    now = int(time.time())
    return {
        "expired": player_token(
            "victim", key=signing_key, iat=now - 7200, exp=now - 3600
        ),
        "unsigned (alg none)": jwt.encode(_claims(), None, algorithm="none",
                                          headers={"kid": kid}),
        "signed by another key": player_token("victim", key=stranger, kid=kid),
        "wrong audience": player_token("victim", key=signing_key, aud="tavla-admin"),
        "wrong issuer": player_token("victim", key=signing_key, iss="evil"),
        "no expiry": jwt.encode(_claims(exp=None), signing_key, algorithm="ES256",
                                headers={"kid": kid}),
        "unknown key id": player_token("victim", key=stranger),
        "not a JWT": "victim",
    }


@pytest.mark.parametrize(
    "kind",
    [
        "expired",
        "unsigned (alg none)",
        "signed by another key",
        "wrong audience",
        "wrong issuer",
        "no expiry",
        "unknown key id",
        "not a JWT",
    ],
)
async def test_a_bad_access_token_is_refused_by_the_service_itself(
    stack: Stack, kind: str
) -> None:
    token = bad_tokens(stack.signing_key)[kind]
    for call in (
        stack.wallet_stub.GetBalances(wallet_pb2.GetBalancesRequest(), metadata=bearer(token)),
        stack.accounts_stub.GetAccount(
            accounts_pb2.GetAccountRequest(account_id="victim"), metadata=bearer(token)
        ),
    ):
        error = await refusal(call)
        assert error.code() is grpc.StatusCode.UNAUTHENTICATED, (kind, error.details())


# --- internal methods: a service credential from a declared caller --------------------------


async def test_a_player_token_never_opens_an_internal_method(stack: Stack) -> None:
    _, token = await sign_up(stack.accounts_stub)
    error = await refusal(stack.wallet_stub.PlaceHold(hold_request(), metadata=bearer(token)))
    assert error.code() is grpc.StatusCode.PERMISSION_DENIED
    assert "internal" in (error.details() or "")


async def test_an_internal_method_without_any_credential_is_refused(stack: Stack) -> None:
    error = await refusal(
        stack.wallet_stub.PlaceHold(hold_request(), metadata=[("x-tavla-account-id", "victim")])
    )
    assert error.code() is grpc.StatusCode.UNAUTHENTICATED
    assert SERVICE_TOKEN_HEADER in (error.details() or "")


async def test_a_service_not_among_the_declared_callers_is_refused(stack: Stack) -> None:
    error = await refusal(
        stack.wallet_stub.PlaceHold(hold_request(), metadata=as_service("analysis", "wallet"))
    )
    assert error.code() is grpc.StatusCode.PERMISSION_DENIED
    assert "'analysis' may not call" in (error.details() or "")


async def test_a_service_token_for_another_service_is_refused(stack: Stack) -> None:
    error = await refusal(
        stack.wallet_stub.CanCover(cover_request(), metadata=as_service("game", "analysis"))
    )
    assert error.code() is grpc.StatusCode.UNAUTHENTICATED
    assert "addressed to another service" in (error.details() or "")


async def test_a_service_token_signed_with_a_key_the_wallet_does_not_hold_is_refused(
    stack: Stack,
) -> None:
    impostor = ServiceTokenMinter("game", ec.generate_private_key(ec.SECP256R1()))
    error = await refusal(
        stack.wallet_stub.CanCover(
            cover_request(), metadata=[(SERVICE_TOKEN_HEADER, impostor.token("wallet"))]
        )
    )
    assert error.code() is grpc.StatusCode.UNAUTHENTICATED


async def test_a_declared_caller_with_its_own_token_gets_through(stack: Stack) -> None:
    player, _ = await sign_up(stack.accounts_stub)
    answer = await stack.wallet_stub.CanCover(
        cover_request(player), metadata=as_service("game", "wallet")
    )
    assert not answer.can_cover  # a new player has no money: the call itself went through
    hold = await refusal(
        stack.wallet_stub.PlaceHold(hold_request(player), metadata=as_service("game", "wallet"))
    )
    assert hold.code() is grpc.StatusCode.FAILED_PRECONDITION  # past the door, short of funds


# --- what a process exposes ------------------------------------------------------------------


def listening_addresses(port: int) -> set[str]:
    """This process's listening addresses on ``port``, IPv4-mapped ones as plain IPv4."""
    found = set()
    for conn in psutil.Process().net_connections(kind="tcp"):
        if conn.status == psutil.CONN_LISTEN and conn.laddr.port == port:
            address = ipaddress.ip_address(conn.laddr.ip)
            if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
                address = address.ipv4_mapped
            found.add(str(address))
    return found


async def test_grpc_and_metrics_listen_on_the_configured_address_only(stack: Stack) -> None:
    settings = stack.wallet.settings
    assert listening_addresses(settings.grpc_port) == {"127.0.0.1"}
    assert listening_addresses(settings.metrics_port) == {"127.0.0.1"}


async def test_metrics_show_nothing_a_player_could_use(stack: Stack) -> None:
    player, token = await sign_up(stack.accounts_stub)
    await stack.wallet_stub.GetBalances(wallet_pb2.GetBalancesRequest(), metadata=bearer(token))
    await refusal(stack.wallet_stub.PlaceHold(hold_request(player), metadata=bearer(token)))
    await refusal(stack.wallet_stub.GetBalances(wallet_pb2.GetBalancesRequest(),
                                                metadata=bearer("forged." + token)))
    await stack.wallet_stub.CanCover(cover_request(player), metadata=as_service("game", "wallet"))
    async with httpx.AsyncClient() as http:
        scraped = [
            (await http.get(service.metrics_url)).text
            for service in (stack.wallet, stack.accounts)
        ]
    for text in scraped:
        assert "tavla_rpc_requests_total" in text  # the calls above were counted
        for secret in (player, token, token.split(".")[1], "t-identity", "victim", "Bearer"):
            assert secret not in text


async def test_reflection_is_off_unless_turned_on(stack: Stack) -> None:
    from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

    async with bare_channel(stack.wallet.address) as channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        request = reflection_pb2.ServerReflectionRequest(list_services="")
        with pytest.raises(grpc.aio.AioRpcError) as error:
            async for _ in stub.ServerReflectionInfo(iter([request])):
                pass
    assert error.value.code() is grpc.StatusCode.UNIMPLEMENTED


# --- key rotation ----------------------------------------------------------------------------


async def test_a_rotated_signing_key_is_picked_up_from_the_jwks_and_old_tokens_still_work(
    postgres_server: Any, kafka_broker: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rotating = await start_stack(postgres_server, kafka_broker, tmp_path, monkeypatch)
    try:
        account, old_token = await sign_up(rotating.accounts_stub)
        email = (
            await rotating.accounts_stub.GetAccount(
                accounts_pb2.GetAccountRequest(account_id=account), metadata=bearer(old_token)
            )
        ).email
        get = wallet_pb2.GetBalancesRequest()
        await rotating.wallet_stub.GetBalances(get, metadata=bearer(old_token))

        next_key, next_key_file = new_key(tmp_path, "signing-2")
        early = player_token(account, key=next_key)
        error = await refusal(rotating.wallet_stub.GetBalances(get, metadata=bearer(early)))
        assert error.code() is grpc.StatusCode.UNAUTHENTICATED  # not published yet

        # The operator's rotation: sign with the new key, keep publishing the old one.
        published = tmp_path / "published"
        published.mkdir()
        (published / "signing-1.pem").write_bytes(public_pem(rotating.signing_key.public_key()))
        # Same gRPC address (the wallet's TAVLA_ACCOUNTS_ADDRESS); /metrics of the first
        # run is still bound in this process, so a new metrics port.
        settings = dataclasses.replace(rotating.accounts.settings, metrics_port=free_port())
        await stop_service(rotating.accounts)
        rotating.accounts = await start_accounts(
            "", "", next_key_file, monkeypatch, published_keys_dir=published, settings=settings
        )
        await asyncio.sleep(MIN_REFRESH_SECONDS)  # the unknown-kid refresh limit has passed

        login = await rotating.accounts_stub.Login(
            accounts_pb2.LoginRequest(email=email, password=PASSWORD)
        )
        assert jwt.get_unverified_header(login.access_token)["kid"] == key_id(
            next_key.public_key()
        )
        # The wallet has not seen this kid: it refreshes the JWKS and accepts the token.
        await rotating.wallet_stub.GetBalances(get, metadata=bearer(login.access_token))
        await rotating.wallet_stub.GetBalances(get, metadata=bearer(early))
        await rotating.wallet_stub.GetBalances(get, metadata=bearer(old_token))
        jwks = await rotating.accounts_stub.GetJwks(accounts_pb2.GetJwksRequest())
        assert [k.kid for k in jwks.keys] == [
            key_id(next_key.public_key()), key_id(rotating.signing_key.public_key())
        ]
    finally:
        await stop_service(rotating.wallet)
        await stop_service(rotating.accounts)

