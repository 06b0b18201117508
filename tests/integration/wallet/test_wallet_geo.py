"""Deposits and withdrawals ask the geo service first: refused from where the
rules forbid, with nothing recorded; refused while geo is down; play money goes on.

The wallet runs in-process with the real HTTP provider adapter against the test's own
provider (``tests/support/payment_provider.py``, which records every call) and asks
the real geo service (the ``geo_service`` fixture, on the dev databases of
``services/geo/devdata.py``). Each refusal's reason code is the one the geo README's
policy gives for that place, written out here by hand.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from services.geo.devdata import (
    FLORIDA_IP,
    MALTA_IP,
    NEW_JERSEY_IP,
    NEW_JERSEY_VPN_IP,
    UNPLACED_IP,
)
from services.kit.devstack.certs import make_ca, make_leaf
from services.kit.devstack.keys import load_private_key
from services.kit.devstack.net import free_port
from services.kit.gateway_tls import GATEWAY_CLIENT_NAME
from services.kit.keys import private_pem
from tavla.wallet.v1 import wallet_pb2, wallet_pb2_grpc
from tests.support.identity import CERTIFICATES, caller_channel
from tests.support.payment_provider import PaidWallet, deposit, paid_wallet, settle
from tests.support.services import RunningService
from tests.support.wallet import as_player, balance, money, new_id


@pytest.fixture(scope="module")
async def paid(
    postgres_server: Any, kafka_broker: Any, geo_service: RunningService
) -> AsyncIterator[PaidWallet]:
    async with paid_wallet(postgres_server, kafka_broker, geo_service.address) as running:
        yield running


@pytest.fixture(scope="module")
async def geo_down(postgres_server: Any, kafka_broker: Any) -> AsyncIterator[PaidWallet]:
    """A wallet whose geo service address answers nothing (a port nobody listens on)."""
    async with paid_wallet(postgres_server, kafka_broker, f"127.0.0.1:{free_port()}") as running:
        yield running


async def traces(paid: PaidWallet, player: str) -> dict[str, Any]:
    """Everything a payment of ``player``'s would leave: rows, transfers, events, calls."""
    engine = create_async_engine(paid.url)
    try:
        async with engine.connect() as connection:
            payments = await connection.scalar(
                text("SELECT count(*) FROM payments WHERE player_id = :p"), {"p": player}
            )
            transfers = await connection.scalar(
                text(
                    "SELECT count(*) FROM transfers WHERE debit_account_id LIKE :a "
                    "OR credit_account_id LIKE :a"
                ),
                {"a": f"player:{player}:%"},
            )
            events = await connection.scalar(
                text("SELECT count(*) FROM outbox WHERE key = :p"), {"p": player}
            )
    finally:
        await engine.dispose()
    calls = [call for call in paid.provider.calls if call[1] == player]
    return {"payments": payments, "transfers": transfers, "events": events, "calls": calls}


async def refused(call: Any, code: grpc.StatusCode, *words: str) -> str:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call
    details = caught.value.details() or ""
    assert caught.value.code() == code, details
    for word in words:
        assert word in details, details
    return details


def deposit_request(cents: int = 2500, currency: str = "USD") -> wallet_pb2.DepositRequest:
    return wallet_pb2.DepositRequest(
        amount=money(cents, currency), idempotency_key=new_id("k"), payment_method="card-4242"
    )


def withdraw_request(cents: int = 1000) -> wallet_pb2.WithdrawRequest:
    return wallet_pb2.WithdrawRequest(
        amount=money(cents), idempotency_key=new_id("w"), payout_method="iban-1"
    )


async def funded(paid: PaidWallet, cents: int = 5000) -> str:
    """A player who deposited ``cents`` USD from Malta (allowed), settled by the provider,
    and whose payout destination the provider verified."""
    player = new_id()
    await settle(paid, await deposit(paid, player, cents))
    assert await balance(paid.stub, player) == (cents, 0)
    paid.provider.verified.add((player, "iban-1"))
    return player


# (residence, address, the reason code the geo README gives for it)
REFUSALS = [
    pytest.param("US-NJ", FLORIDA_IP, "location_restricted", id="florida-address"),
    pytest.param("US-MT", MALTA_IP, "residence_restricted", id="montana-resident"),
    pytest.param("US-NJ", NEW_JERSEY_VPN_IP, "anonymous_vpn", id="vpn"),
    pytest.param("US-NJ", UNPLACED_IP, "location_unplaced", id="unplaced-address"),
]


@pytest.mark.parametrize(("residence", "address", "reason"), REFUSALS)
async def test_a_deposit_from_where_the_rules_forbid_is_refused_and_nothing_happens(
    paid: PaidWallet, residence: str, address: str, reason: str
) -> None:
    player = new_id()
    where = as_player(player, residence=residence, address=address)
    details = await refused(
        paid.stub.Deposit(deposit_request(), metadata=where),
        grpc.StatusCode.FAILED_PRECONDITION,
        "depositing is not allowed from here",
        f"[{reason}]",
    )
    assert "[location_restricted]" not in details or reason == "location_restricted"
    assert await traces(paid, player) == {"payments": 0, "transfers": 0, "events": 0, "calls": []}


@pytest.mark.parametrize(("residence", "address", "reason"), REFUSALS)
async def test_a_withdrawal_from_where_the_rules_forbid_is_refused_and_nothing_happens(
    paid: PaidWallet, residence: str, address: str, reason: str
) -> None:
    player = await funded(paid)
    before = await traces(paid, player)
    await refused(
        paid.stub.Withdraw(
            withdraw_request(), metadata=as_player(player, residence=residence, address=address)
        ),
        grpc.StatusCode.FAILED_PRECONDITION,
        "withdrawing is not allowed from here",
        f"[{reason}]",
    )
    # Not even the payout destination was asked about; the balance is whole.
    assert await traces(paid, player) == before
    assert await balance(paid.stub, player) == (5000, 0)


async def test_a_malta_resident_in_malta_and_one_in_new_jersey_deposit_and_withdraw(
    paid: PaidWallet,
) -> None:
    player = await funded(paid)  # deposited from Malta as a Malta resident
    payout = await paid.stub.Withdraw(withdraw_request(1000), metadata=as_player(player))
    assert payout.status == wallet_pb2.PAYMENT_STATUS_PENDING
    assert await balance(paid.stub, player) == (4000, 0)
    assert ("verify", player) in paid.provider.calls

    jersey = new_id()
    operation = await paid.stub.Deposit(
        deposit_request(), metadata=as_player(jersey, residence="US-NJ", address=NEW_JERSEY_IP)
    )
    assert operation.status == wallet_pb2.PAYMENT_STATUS_PENDING
    assert (await traces(paid, jersey))["calls"] == [("submit", jersey)]


async def test_a_payment_without_a_client_address_is_refused(paid: PaidWallet) -> None:
    """A call that did not come through the gateway has no location: never guessed."""
    player = new_id()
    await refused(
        paid.stub.Deposit(deposit_request(), metadata=as_player(player, address="")),
        grpc.StatusCode.FAILED_PRECONDITION,
        "[location_unknown]",
    )
    assert await traces(paid, player) == {"payments": 0, "transfers": 0, "events": 0, "calls": []}


async def test_while_geo_cannot_be_reached_payments_are_unavailable_and_nothing_happens(
    geo_down: PaidWallet,
) -> None:
    player = new_id()
    await refused(
        geo_down.stub.Deposit(deposit_request(), metadata=as_player(player)),
        grpc.StatusCode.UNAVAILABLE,
        "the location check cannot be made now",
    )
    await refused(
        geo_down.stub.Withdraw(withdraw_request(), metadata=as_player(player)),
        grpc.StatusCode.UNAVAILABLE,
        "withdrawing is paused",
    )
    assert await traces(geo_down, player) == {
        "payments": 0,
        "transfers": 0,
        "events": 0,
        "calls": [],
    }


async def test_play_money_is_play_money_from_florida_and_while_geo_is_down(
    paid: PaidWallet, geo_down: PaidWallet
) -> None:
    """The top-up asks for play money, which the rules refuse only in fully blocked
    countries (none of the dev addresses) and which goes on while geo is out of reach."""
    for wallet in (paid, geo_down):
        player = new_id()
        response = await wallet.stub.TopUpPlayMoney(
            wallet_pb2.TopUpPlayMoneyRequest(idempotency_key=new_id("top")),
            metadata=as_player(player, residence="US-FL", address=FLORIDA_IP),
        )
        assert response.credited.minor_units == 1_000_000
        assert await balance(wallet.stub, player, "PLAY") == (1_000_000, 0)


# What a service believes about where a call comes from: only what the gateway's
# certificate proves (services/kit/gateway_tls.py), never a header's presence.


async def test_a_client_address_written_by_a_direct_caller_is_not_believed(
    paid: PaidWallet,
) -> None:
    """A valid token straight to the wallet's plain port, saying "Malta" in the header the
    gateway sets: the call has no location, so the deposit is refused and nothing happens."""
    player = new_id()
    async with caller_channel(paid.service.address, "wallet") as channel:
        direct = wallet_pb2_grpc.WalletServiceStub(channel)
        await refused(
            direct.Deposit(deposit_request(), metadata=as_player(player, address=MALTA_IP)),
            grpc.StatusCode.FAILED_PRECONDITION,
            "[location_unknown]",
        )
    assert await traces(paid, player) == {"payments": 0, "transfers": 0, "events": 0, "calls": []}


def _client_credentials(ca: Any, ca_key: Any, common_name: str) -> grpc.ChannelCredentials:
    """TLS with a client certificate for ``common_name`` signed by ``ca``, trusting the test CA."""
    key = ec.generate_private_key(ec.SECP256R1())
    cert = make_leaf(common_name, key, ca, ca_key, client=True)
    return grpc.ssl_channel_credentials(
        CERTIFICATES.ca_file.read_bytes(), private_pem(key),
        cert.public_bytes(serialization.Encoding.PEM),
    )


async def test_a_client_certificate_from_another_ca_opens_nothing(paid: PaidWallet) -> None:
    """The gateway's own name on a certificate the platform CA did not sign: the gateway
    port refuses the connection, and nothing happens."""
    other_key = ec.generate_private_key(ec.SECP256R1())
    credentials = _client_credentials(make_ca(other_key, "another CA"), other_key,
                                      GATEWAY_CLIENT_NAME)
    player = new_id()
    async with grpc.aio.secure_channel(paid.service.gateway_address, credentials) as channel:
        stub = wallet_pb2_grpc.WalletServiceStub(channel)
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.Deposit(deposit_request(), metadata=as_player(player), timeout=5)
        assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
    assert await traces(paid, player) == {"payments": 0, "transfers": 0, "events": 0, "calls": []}


async def test_a_platform_certificate_that_is_not_the_gateways_is_not_believed(
    paid: PaidWallet,
) -> None:
    """A client certificate the platform CA signed for another name gets in, but its
    client address is not believed: the deposit is refused as unplaced."""
    ca_key = load_private_key(CERTIFICATES.ca_key_file)
    ca = x509.load_pem_x509_certificate(CERTIFICATES.ca_file.read_bytes())
    credentials = _client_credentials(ca, ca_key, "tavla-wallet")
    player = new_id()
    async with grpc.aio.secure_channel(paid.service.gateway_address, credentials) as channel:
        stub = wallet_pb2_grpc.WalletServiceStub(channel)
        await refused(
            stub.Deposit(deposit_request(), metadata=as_player(player, address=MALTA_IP)),
            grpc.StatusCode.FAILED_PRECONDITION,
            "[location_unknown]",
        )
    assert await traces(paid, player) == {"payments": 0, "transfers": 0, "events": 0, "calls": []}


async def test_play_money_is_refused_to_a_sanctioned_residence_straight_to_the_port(
    paid: PaidWallet,
) -> None:
    """No address (the plain port), the declared residence still counts: an Iranian
    resident gets no play money; a Maltese one does."""
    async with caller_channel(paid.service.address, "wallet") as channel:
        direct = wallet_pb2_grpc.WalletServiceStub(channel)
        iranian = new_id()
        await refused(
            direct.TopUpPlayMoney(
                wallet_pb2.TopUpPlayMoneyRequest(idempotency_key=new_id("top")),
                metadata=as_player(iranian, residence="IR", address=""),
            ),
            grpc.StatusCode.FAILED_PRECONDITION,
            "[residence_restricted]",
        )
        assert await balance(paid.stub, iranian, "PLAY") == (0, 0)
        maltese = new_id()
        await direct.TopUpPlayMoney(
            wallet_pb2.TopUpPlayMoneyRequest(idempotency_key=new_id("top")),
            metadata=as_player(maltese, residence="MT", address=""),
        )
        assert await balance(paid.stub, maltese, "PLAY") == (1_000_000, 0)
