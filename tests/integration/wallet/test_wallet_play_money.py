"""Play money without any payment provider, and the sandbox kept to play money.

A wallet whose sandbox is not allowed real money (as it would be if anyone chose
it in production) refuses real-currency deposits and withdrawals with a clear
error; players still get play money from the free top-up: capped, once an hour
(on the injectable clock), a balanced transfer from the house's play-money
issue account that the audit accepts.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import grpc
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from services.kit.clock import ManualClock
from services.wallet.audit_cli import audit_database
from tavla.wallet.v1 import wallet_pb2, wallet_pb2_grpc
from tests.support.services import RunningService, new_database, stop_service
from tests.support.wallet import (
    GAME_STARTED_AT,
    PLAY_ONLY_SANDBOX,
    Wallet,
    as_player,
    balance,
    direct_consumer,
    money,
    new_id,
    place_hold,
    start_wallet,
    wait_for_balance,
)

CEILING = 1_000_000  # 10,000.00 PLAY, in minor units


@pytest.fixture(scope="module")
async def play_wallet(
    postgres_server: Any, kafka_broker: Any, geo_service: RunningService
) -> AsyncIterator[Wallet]:
    database = new_database(postgres_server, "wallet_play")
    url = postgres_server.url(database)
    clock = ManualClock(GAME_STARTED_AT)
    service = await start_wallet(
        url,
        kafka_broker.bootstrap,
        clock=clock,
        sandbox=PLAY_ONLY_SANDBOX,
        geo_address=geo_service.address,
    )
    consumer = direct_consumer(url, clock, pool=2)
    yield Wallet(
        service, wallet_pb2_grpc.WalletServiceStub(service.channel), clock, database, url, consumer
    )
    await consumer.close()
    await stop_service(service)


async def refused(call: Any) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call
    return caught.value


async def test_the_sandbox_refuses_real_money_without_the_loud_flag(play_wallet: Wallet) -> None:
    player = new_id()
    error = await refused(
        play_wallet.stub.Deposit(
            wallet_pb2.DepositRequest(
                amount=money(2500), idempotency_key="usd", payment_method="sandbox"
            ),
            metadata=as_player(player),
        )
    )
    assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
    details = error.details() or ""
    assert "play money (PLAY) only" in details
    assert "TAVLA_WALLET_SANDBOX_REAL_MONEY_UNSAFE" in details
    error = await refused(
        play_wallet.stub.Withdraw(
            wallet_pb2.WithdrawRequest(amount=money(100), idempotency_key="w"),
            metadata=as_player(player),
        )
    )
    assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "play money (PLAY) only" in (error.details() or "")
    # Nothing was recorded for either.
    engine = create_async_engine(play_wallet.url)
    try:
        async with engine.connect() as connection:
            count = await connection.scalar(
                text("SELECT count(*) FROM payments WHERE player_id = :p"), {"p": player}
            )
    finally:
        await engine.dispose()
    assert count == 0
    assert await balance(play_wallet.stub, player) == (0, 0)


async def test_the_sandbox_still_serves_play_money(play_wallet: Wallet) -> None:
    player = new_id()
    await play_wallet.stub.Deposit(
        wallet_pb2.DepositRequest(amount=money(500, "PLAY"), idempotency_key="play"),
        metadata=as_player(player),
    )
    await wait_for_balance(play_wallet.stub, player, 500, "PLAY")


async def test_a_free_top_up_is_capped_and_once_an_hour(play_wallet: Wallet) -> None:
    player = new_id()
    meta = as_player(player)
    first = await play_wallet.stub.TopUpPlayMoney(
        wallet_pb2.TopUpPlayMoneyRequest(idempotency_key="t1"), metadata=meta
    )
    assert (first.credited.minor_units, first.credited.currency) == (CEILING, "PLAY")
    assert first.balance.minor_units == CEILING
    assert first.next_top_up_at.ToDatetime() == (GAME_STARTED_AT + timedelta(hours=1)).replace(
        tzinfo=None
    )
    # A retry with the same key is the same top-up, not a second one.
    again = await play_wallet.stub.TopUpPlayMoney(
        wallet_pb2.TopUpPlayMoneyRequest(idempotency_key="t1"), metadata=meta
    )
    assert again.credited.minor_units == CEILING
    assert await balance(play_wallet.stub, player, "PLAY") == (CEILING, 0)

    error = await refused(
        play_wallet.stub.TopUpPlayMoney(
            wallet_pb2.TopUpPlayMoneyRequest(idempotency_key="t2"), metadata=meta
        )
    )
    assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "once an hour" in (error.details() or "")

    # An hour later: a player at the ceiling gets nothing more, held stakes included.
    play_wallet.clock.advance(timedelta(hours=1))
    await place_hold(play_wallet.stub, player, 400_000, new_id("t"), "PLAY")
    assert await balance(play_wallet.stub, player, "PLAY") == (600_000, 400_000)
    error = await refused(
        play_wallet.stub.TopUpPlayMoney(
            wallet_pb2.TopUpPlayMoneyRequest(idempotency_key="t3"), metadata=meta
        )
    )
    assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "10000.00 PLAY" in (error.details() or "")


async def test_a_top_up_after_losing_refills_to_the_ceiling_and_the_books_balance(
    play_wallet: Wallet,
) -> None:
    player = new_id()
    meta = as_player(player)
    await play_wallet.stub.Deposit(
        wallet_pb2.DepositRequest(amount=money(250_000, "PLAY"), idempotency_key="d"),
        metadata=meta,
    )
    await wait_for_balance(play_wallet.stub, player, 250_000, "PLAY")
    top_up = await play_wallet.stub.TopUpPlayMoney(
        wallet_pb2.TopUpPlayMoneyRequest(idempotency_key="t"), metadata=meta
    )
    assert top_up.credited.minor_units == 750_000  # 10,000.00 - 2,500.00, by hand
    assert await balance(play_wallet.stub, player, "PLAY") == (CEILING, 0)
    engine = create_async_engine(play_wallet.url)
    try:
        async with engine.connect() as connection:
            row = (
                await connection.execute(
                    text(
                        "SELECT debit_account_id, amount, code FROM transfers "
                        "WHERE credit_account_id = :account AND code = 4"
                    ),
                    {"account": f"player:{player}:PLAY"},
                )
            ).one()
    finally:
        await engine.dispose()
    assert tuple(row) == ("play_money_issue:PLAY", 750_000, 4)
    assert await audit_database(play_wallet.url) == ()


async def test_a_top_up_needs_a_signed_in_player_and_a_key(play_wallet: Wallet) -> None:
    error = await refused(
        play_wallet.stub.TopUpPlayMoney(wallet_pb2.TopUpPlayMoneyRequest(idempotency_key="k"))
    )
    assert error.code() == grpc.StatusCode.UNAUTHENTICATED
    error = await refused(
        play_wallet.stub.TopUpPlayMoney(
            wallet_pb2.TopUpPlayMoneyRequest(), metadata=as_player(new_id())
        )
    )
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "idempotency_key is required" in (error.details() or "")
