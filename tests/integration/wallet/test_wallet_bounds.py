"""Amounts above the operator's maximums are refused before anything is recorded.

An int64 deposit through the gateway used to be confirmed: the provider's clearing account
then passed int64 and every later posting against it failed, so no deposit was confirmed
for anyone and withdrawals answered 500. Each amount a caller can send (deposit,
withdrawal, hold, cover check, claim, quote) is now INVALID_ARGUMENT naming the limit.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Iterator
from pathlib import Path

import grpc
import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from services.kit.devstack.envoy import EnvoyGateway, render_config, write_config
from services.kit.devstack.net import free_port
from services.kit.devstack.supervisor import Supervisor
from services.kit.keys import public_jwk
from services.wallet.audit_cli import audit_database
from tavla.wallet.v1 import wallet_pb2
from tests.support.identity import DEFAULT_ADDRESS, PLAYER_KEY, PLAYER_KID, player_token
from tests.support.wallet import (
    Side,
    Wallet,
    as_player,
    balance,
    claim_holds,
    fund,
    money,
    new_id,
    place_hold,
    wait_for_balance,
)

DESCRIPTOR = Path(__file__).resolve().parents[3] / "gen" / "tavla.pb"
INT64_MAX = 2**63 - 1
INVALID_ARGUMENT = 3


@pytest.fixture
def supervisor(tmp_path: Path) -> Iterator[Supervisor]:
    with Supervisor(tmp_path / "logs", stop_timeout=3) as owner:
        yield owner


async def rpc_error(call: Awaitable[object]) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call
    return caught.value


async def recorded_payments(wallet: Wallet, player: str) -> int:
    engine = create_async_engine(wallet.url)
    try:
        async with engine.connect() as connection:
            count = await connection.scalar(
                text("SELECT count(*) FROM payments WHERE player_id = :p"), {"p": player}
            )
    finally:
        await engine.dispose()
    return int(count or 0)


async def test_an_int64_deposit_through_the_gateway_is_refused_and_the_wallet_goes_on(
    wallet: Wallet, tmp_path: Path, supervisor: Supervisor
) -> None:
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps({"keys": [public_jwk(PLAYER_KEY.public_key(), PLAYER_KID)]}))
    listen, admin = free_port(), free_port()
    config = render_config(
        descriptor=DESCRIPTOR,
        jwks_file=jwks,
        upstreams={"wallet": wallet.service.settings.grpc_port},
        listen_port=listen,
        admin_port=admin,
        health_interval=0.2,
        xff_num_trusted_hops=1,  # a proxy in front says where the player is: Malta
    )
    gateway = EnvoyGateway(write_config(tmp_path / "envoy.json", config), listen, admin, supervisor)
    gateway.start()
    attacker = new_id()
    headers = {
        "authorization": f"Bearer {player_token(attacker, residence='MT')}",
        "x-forwarded-for": DEFAULT_ADDRESS,
    }
    body = {
        "amount": {"minorUnits": str(INT64_MAX), "currency": "USD"},
        "idempotencyKey": "all-of-it",
        "paymentMethod": "sandbox",
    }
    try:
        async with httpx.AsyncClient(base_url=gateway.base_url, timeout=20) as client:
            async with asyncio.timeout(30):
                while (await client.get("/healthz")).status_code != 200:
                    await asyncio.sleep(0.1)
            refused = await client.post("/v1/wallet/deposits", json=body, headers=headers)
            small = dict(body, amount={"minorUnits": "2500001", "currency": "USD"})
            above = await client.post("/v1/wallet/deposits", json=small, headers=headers)
    finally:
        gateway.stop()
    assert refused.status_code == 400, refused.text
    error = refused.json()
    assert error["code"] == INVALID_ARGUMENT
    assert "TAVLA_MONEY_MAX_DEPOSIT_USD" in error["message"]
    assert "at most 2500000 minor units of USD" in error["message"]
    assert above.status_code == 400 and "at most 2500000" in above.json()["message"]
    assert await recorded_payments(wallet, attacker) == 0  # nothing recorded, nothing sent
    assert await balance(wallet.stub, attacker) == (0, 0)
    # Another player's deposit is confirmed and their withdrawal paid out, as before.
    other = new_id()
    await fund(wallet.stub, other, 1000)
    paid = await wallet.stub.Withdraw(
        wallet_pb2.WithdrawRequest(amount=money(1000), idempotency_key=new_id("w")),
        metadata=as_player(other),
    )
    assert paid.status in (
        wallet_pb2.PAYMENT_STATUS_PENDING,
        wallet_pb2.PAYMENT_STATUS_COMPLETED,
    )
    await wait_for_balance(wallet.stub, other, 0)
    assert await audit_database(wallet.url) == ()


async def test_a_withdrawal_above_the_maximum_is_refused_with_nothing_recorded(
    wallet: Wallet,
) -> None:
    player = new_id()
    await fund(wallet.stub, player, 1000)
    error = await rpc_error(
        wallet.stub.Withdraw(
            wallet_pb2.WithdrawRequest(amount=money(INT64_MAX), idempotency_key="w"),
            metadata=as_player(player),
        )
    )
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "TAVLA_MONEY_MAX_WITHDRAWAL_USD" in (error.details() or "")
    assert await recorded_payments(wallet, player) == 1  # the funding deposit only
    assert await balance(wallet.stub, player) == (1000, 0)


async def test_holds_above_a_tables_largest_loss_are_refused(wallet: Wallet) -> None:
    player, table = new_id(), new_id("t")
    await fund(wallet.stub, player, 3000)
    placed = await rpc_error(place_hold(wallet.stub, player, INT64_MAX, table))
    assert placed.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "TAVLA_MONEY_MAX_TABLE_EXPOSURE_USD" in (placed.details() or "")
    hold = await place_hold(wallet.stub, player, 1500, table)
    raised = await rpc_error(
        wallet.stub.RaiseHold(
            wallet_pb2.RaiseHoldRequest(hold_id=hold.hold_id, new_amount=money(INT64_MAX))
        )
    )
    assert raised.code() == grpc.StatusCode.INVALID_ARGUMENT
    cover = await rpc_error(
        wallet.stub.CanCover(
            wallet_pb2.CanCoverRequest(
                account_id=player, amount=money(INT64_MAX), hold_id=hold.hold_id
            )
        )
    )
    assert cover.code() == grpc.StatusCode.INVALID_ARGUMENT
    side = Side(player, hold_id=hold.hold_id)
    claimed = await rpc_error(claim_holds(wallet.stub, table, new_id("g"), [side, side], INT64_MAX))
    assert claimed.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert await balance(wallet.stub, player) == (1500, 1500)  # only the bounded hold


@pytest.mark.parametrize(
    "kind", [wallet_pb2.SETTLEMENT_KIND_SINGLE_GAME, wallet_pb2.SETTLEMENT_KIND_SERIES]
)
async def test_an_int64_stake_cannot_be_quoted(
    wallet: Wallet, kind: wallet_pb2.SettlementKind.ValueType
) -> None:
    request = wallet_pb2.QuoteCommissionRequest(
        stake=money(INT64_MAX),
        kind=kind,
        cube_value=1,
        result=1,
        match_length=3 if kind == wallet_pb2.SETTLEMENT_KIND_SERIES else 0,
        rating_a=1500,
        rating_b=1500,
    )
    error = await rpc_error(wallet.stub.QuoteCommission(request, metadata=as_player(new_id())))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "TAVLA_MONEY_MAX_STAKE_USD" in (error.details() or "")


async def test_a_quote_past_the_largest_loss_at_the_top_stake_is_refused(wallet: Wallet) -> None:
    """$5,000.00 x 64 x 3 is the largest loss the defaults allow; a quote at the top stake
    with a backgammon at 64 is within it, and its product never passes int64."""
    request = wallet_pb2.QuoteCommissionRequest(
        stake=money(500_000),
        kind=wallet_pb2.SETTLEMENT_KIND_SINGLE_GAME,
        cube_value=64,
        result=3,
        rating_a=1500,
        rating_b=1500,
    )
    quote = await wallet.stub.QuoteCommission(request, metadata=as_player(new_id()))
    assert quote.loser_debit.minor_units == 500_000 * 64 * 3
