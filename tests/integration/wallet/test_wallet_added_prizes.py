"""AddToPool: house money into a tournament's prize pool (a freeroll's pool, an added
prize), on the real wallet: held once per key from the house's prize fund, bounded by
the operator's maximum, paid out by SettlePool with the entrants' buy-ins or given back
to the fund when the tournament is cancelled, every movement in the ledger and the audit
clean."""

from __future__ import annotations

import grpc
import pytest

from services.wallet.audit_cli import audit_database
from tavla.wallet.v1 import wallet_pb2
from tests.support.tournaments import scalar
from tests.support.wallet import Wallet, balance, fund, money, new_id, place_hold

HOUSE_FUND = "house_prizes:USD"


def add(
    table: str, minor_units: int, key: str, currency: str = "USD"
) -> wallet_pb2.AddToPoolRequest:
    return wallet_pb2.AddToPoolRequest(
        table_id=table, amount=money(minor_units, currency), idempotency_key=key
    )


def prizes(
    table: str, holds: list[str], payouts: dict[str, int], key: str, house: int = 0
) -> wallet_pb2.SettlePoolRequest:
    return wallet_pb2.SettlePoolRequest(
        table_id=table,
        hold_ids=holds,
        house_revenue=money(house),
        payouts=[wallet_pb2.PoolPayout(account_id=a, amount=money(m)) for a, m in payouts.items()],
        idempotency_key=key,
    )


async def moved(wallet: Wallet, table: str, code: int) -> list[tuple[str, str, int]]:
    """(debit, credit, amount) of every transfer of ``code`` for ``table``, in id order."""
    rows = await scalar(
        wallet.url,
        "SELECT COALESCE(json_agg(json_build_array(debit_account_id, credit_account_id, amount) "
        "ORDER BY id), '[]') FROM transfers WHERE reference = :ref AND code = :code",
        ref=f"table:{table}",
        code=code,
    )
    assert isinstance(rows, list)
    return [(debit, credit, amount) for debit, credit, amount in rows]


async def test_an_added_prize_is_held_once_and_paid_with_the_buy_ins(wallet: Wallet) -> None:
    table = new_id("tournament")
    players = [new_id() for _ in range(2)]
    buy_ins = []
    for player in players:
        await fund(wallet.stub, player, 2_000)
        buy_ins.append((await place_hold(wallet.stub, player, 1_000, table)).hold_id)

    key = f"{table}:added-prize"
    first, again = [await wallet.stub.AddToPool(add(table, 5_000, key)) for _ in range(2)]
    assert first == again  # the retry answers the same hold and moves nothing more
    assert (first.account_id, first.table_id, first.amount.minor_units, first.status) == (
        "~house", table, 5_000, wallet_pb2.HOLD_STATUS_OPEN
    )
    assert await moved(wallet, table, 14) == [(HOUSE_FUND, "held_stakes:USD", 5_000)]
    assert await audit_database(wallet.url) == ()

    # The pool: 2 x 10.00 + 50.00 added = 70.00 at 65/35 = 45.50 and 24.50.
    request = prizes(table, [*buy_ins, first.hold_id], {players[1]: 4_550, players[0]: 2_450},
                     f"{table}:prizes")  # fmt: skip
    for _ in range(2):
        posted = await wallet.stub.SettlePool(request)
        assert [h.status for h in posted.holds] == [wallet_pb2.HOLD_STATUS_POSTED] * 3
    assert await balance(wallet.stub, players[1]) == (1_000 + 4_550, 0)
    assert await balance(wallet.stub, players[0]) == (1_000 + 2_450, 0)
    # The house hold went back to the fund, which paid what the buy-ins did not.
    assert await moved(wallet, table, 15) == [("held_stakes:USD", HOUSE_FUND, 5_000)]
    from_fund = await moved(wallet, table, 24)
    assert sum(amount for _, _, amount in from_fund) == 5_000
    assert {debit for debit, _, _ in from_fund} == {HOUSE_FUND}
    assert await audit_database(wallet.url) == ()


async def test_a_freeroll_pool_is_house_money_only(wallet: Wallet) -> None:
    table = new_id("freeroll")
    winner, runner_up = new_id(), new_id()
    house = await wallet.stub.AddToPool(add(table, 1_001, f"{table}:added-prize"))
    # 10.01 at 65/35: 6.5065 -> 6.50 and 3.5035 -> 3.50, the 0.01 left to 1st: 6.51, 3.50.
    await wallet.stub.SettlePool(
        prizes(table, [house.hold_id], {winner: 651, runner_up: 350}, f"{table}:prizes")
    )
    assert await balance(wallet.stub, winner) == (651, 0)
    assert await balance(wallet.stub, runner_up) == (350, 0)
    assert sorted(await moved(wallet, table, 24)) == sorted([
        (HOUSE_FUND, f"player:{winner}:USD", 651),
        (HOUSE_FUND, f"player:{runner_up}:USD", 350),
    ])
    assert await audit_database(wallet.url) == ()


async def test_a_cancelled_tournament_gives_the_added_prize_back(wallet: Wallet) -> None:
    table = new_id("cancelled")
    house = await wallet.stub.AddToPool(add(table, 2_500, f"{table}:added-prize", "PLAY"))
    for _ in range(2):  # a retried release gives back nothing twice
        released = await wallet.stub.ReleaseHold(
            wallet_pb2.ReleaseHoldRequest(
                hold_id=house.hold_id, reason="tournament cancelled",
                idempotency_key=f"release:{house.hold_id}",
            )
        )  # fmt: skip
        assert released.status == wallet_pb2.HOLD_STATUS_RELEASED
    released_back = await moved(wallet, table, 16)
    assert released_back == [("held_stakes:PLAY", "house_prizes:PLAY", 2_500)]
    assert await audit_database(wallet.url) == ()


async def test_an_added_prize_above_the_operators_bound_is_refused(wallet: Wallet) -> None:
    table = new_id("tournament")
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await wallet.stub.AddToPool(add(table, 1_000_001, new_id("k")))  # the default: 10,000.00
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "TAVLA_MONEY_MAX_ADDED_PRIZE_USD" in (caught.value.details() or "")
    for bad in (0, -5):
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await wallet.stub.AddToPool(add(table, bad, new_id("k")))
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT, bad
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await wallet.stub.AddToPool(add(table, 100, new_id("k"), "JPY"))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert await scalar(
        wallet.url, "SELECT count(*) FROM holds WHERE table_id = :t", t=table
    ) == 0
    assert await moved(wallet, table, 14) == []


async def test_the_house_is_no_players_account(wallet: Wallet) -> None:
    """No call can make a player's hold or payout of the house's holder: its money comes
    only through AddToPool, and a pool with house money pays no house revenue."""
    table = new_id("tournament")
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await place_hold(wallet.stub, "~house", 100, table)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "names the house" in (caught.value.details() or "")
    house = await wallet.stub.AddToPool(add(table, 500, f"{table}:added-prize"))
    for payouts, fee in (({"~house": 500}, 0), ({}, 500)):
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await wallet.stub.SettlePool(
                prizes(table, [house.hold_id], payouts, new_id("k"), house=fee)
            )
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT, payouts
    again = await wallet.stub.AddToPool(add(table, 500, f"{table}:added-prize"))
    assert again.status == wallet_pb2.HOLD_STATUS_OPEN  # refused pools moved nothing
    assert await audit_database(wallet.url) == ()
