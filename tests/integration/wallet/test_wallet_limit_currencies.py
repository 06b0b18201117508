"""A deposit limit set in one currency protects the player in every currency, on the real
wallet: deposits in EUR and GBP count against a USD limit at the operator's planning rates
(1 EUR = 1.17 USD, 1 GBP = 1.33 USD), rounded up, even when they arrive at the same time."""

from __future__ import annotations

import asyncio

import grpc

from tavla.wallet.v1 import wallet_pb2
from tests.support.wallet import Wallet, as_player, balance, money, new_id, wait_for_balance

DAY = wallet_pb2.LIMIT_PERIOD_DAY


async def deposit(wallet: Wallet, player: str, minor: int, currency: str) -> grpc.StatusCode:
    """OK, or the code the wallet refused the deposit with."""
    try:
        await wallet.stub.Deposit(
            wallet_pb2.DepositRequest(amount=money(minor, currency), idempotency_key=new_id("dep")),
            metadata=as_player(player),
        )
    except grpc.aio.AioRpcError as error:
        assert "limit of 10.00 USD" in (error.details() or ""), error.details()
        return error.code()
    return grpc.StatusCode.OK


async def usd_daily_limit_of_ten(wallet: Wallet, player: str) -> None:
    await wallet.stub.SetDepositLimit(
        wallet_pb2.SetDepositLimitRequest(period=DAY, limit=money(1000)),
        metadata=as_player(player),
    )


async def test_a_usd_limit_refuses_eur_and_gbp_deposits_above_it(wallet: Wallet) -> None:
    player = new_id()
    await usd_daily_limit_of_ten(wallet, player)
    with_details = []
    for currency in ("EUR", "GBP"):
        try:
            await wallet.stub.Deposit(
                wallet_pb2.DepositRequest(amount=money(50000, currency), idempotency_key=currency),
                metadata=as_player(player),
            )
        except grpc.aio.AioRpcError as error:
            assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
            with_details.append(error.details() or "")
    # 500.00 EUR x 1.17 = 585.00 USD; 500.00 GBP x 1.33 = 665.00 USD.
    assert "a deposit of 500.00 EUR (counted as 585.00 USD" in with_details[0]
    assert "a deposit of 500.00 GBP (counted as 665.00 USD" in with_details[1]
    assert len(with_details) == 2
    # 8.54 EUR counts 9.9918, rounded up to 10.00 USD: exactly the limit, so it is taken.
    assert await deposit(wallet, player, 854, "EUR") == grpc.StatusCode.OK
    await wait_for_balance(wallet.stub, player, 854, "EUR")
    assert await deposit(wallet, player, 1, "GBP") == grpc.StatusCode.FAILED_PRECONDITION
    listed = await wallet.stub.ListDepositLimits(
        wallet_pb2.ListDepositLimitsRequest(), metadata=as_player(player)
    )
    assert [(item.current.minor_units, item.used.minor_units) for item in listed.limits] == [
        (1000, 1000)
    ]
    assert await balance(wallet.stub, player, "GBP") == (0, 0)


async def test_deposits_in_two_currencies_at_once_cannot_both_slip_under_a_limit(
    wallet: Wallet,
) -> None:
    players = [new_id() for _ in range(6)]
    await asyncio.gather(*(usd_daily_limit_of_ten(wallet, player) for player in players))
    # Alone, 5.00 EUR (5.85 USD) and 5.00 GBP (6.65 USD) each fit; together (12.50) they do not.
    outcomes = await asyncio.gather(
        *(
            deposit(wallet, player, 500, currency)
            for player in players
            for currency in ("EUR", "GBP")
        )
    )
    for index, _ in enumerate(players):
        pair = sorted(outcomes[2 * index : 2 * index + 2], key=lambda code: code.value)
        assert pair == [grpc.StatusCode.OK, grpc.StatusCode.FAILED_PRECONDITION]
    # And the refused 500.00 EUR and GBP of the report, sent at once, are both refused.
    player = new_id()
    await usd_daily_limit_of_ten(wallet, player)
    both = await asyncio.gather(
        deposit(wallet, player, 50000, "EUR"), deposit(wallet, player, 50000, "GBP")
    )
    assert both == [grpc.StatusCode.FAILED_PRECONDITION] * 2
