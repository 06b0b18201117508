"""SettlePool: a tournament's fee holds become house revenue and its buy-in holds pay the
prizes, on the real wallet, from held money only, once, with a clean audit."""

from __future__ import annotations

from typing import Any

import grpc
import pytest

from services.wallet import consumers as wallet_consumers
from services.wallet.audit_cli import audit_database
from tavla.wallet.v1 import wallet_pb2
from tests.support.tournaments import scalar
from tests.support.wallet import (
    Side,
    Wallet,
    balance,
    fund,
    match_ended,
    money,
    new_id,
    place_hold,
)


def settle(
    table: str, holds: list[str], house: int, payouts: dict[str, int], key: str
) -> wallet_pb2.SettlePoolRequest:
    return wallet_pb2.SettlePoolRequest(
        table_id=table,
        hold_ids=holds,
        house_revenue=money(house),
        payouts=[wallet_pb2.PoolPayout(account_id=a, amount=money(m)) for a, m in payouts.items()],
        idempotency_key=key,
    )


async def test_fees_then_prizes_to_the_cent_once_with_a_clean_audit(wallet: Wallet) -> None:
    table = new_id("tournament")
    players = [new_id() for _ in range(4)]
    buy_ins, fees = [], []
    for player in players:
        await fund(wallet.stub, player, 2_000)
        buy_ins.append((await place_hold(wallet.stub, player, 1_001, table)).hold_id)
        fees.append((await place_hold(wallet.stub, player, 99, table)).hold_id)
    assert await balance(wallet.stub, players[0]) == (900, 1_100)

    fee_request = settle(table, fees, 4 * 99, {}, f"{table}:fees")
    for _ in range(2):  # the retry answers the same and moves nothing more
        posted = await wallet.stub.SettlePool(fee_request)
        assert [h.status for h in posted.holds] == [wallet_pb2.HOLD_STATUS_POSTED] * 4
    assert await balance(wallet.stub, players[0]) == (900, 1_001)

    # 4 x 10.01 = 40.04 at 70/30: 28.028 -> 28.02 and 12.012 -> 12.01, 0.01 left to 1st.
    prizes = {players[2]: 2_803, players[0]: 1_201}
    for _ in range(2):
        await wallet.stub.SettlePool(settle(table, buy_ins, 0, prizes, f"{table}:prizes"))
    assert await balance(wallet.stub, players[2]) == (900 + 2_803, 0)
    assert await balance(wallet.stub, players[0]) == (900 + 1_201, 0)
    assert await balance(wallet.stub, players[1]) == (900, 0)
    assert await balance(wallet.stub, players[3]) == (900, 0)
    assert await audit_database(wallet.url) == ()


async def test_a_pool_that_does_not_add_up_moves_nothing(wallet: Wallet) -> None:
    table = new_id("tournament")
    player, other = new_id(), new_id()
    holds = []
    for who in (player, other):
        await fund(wallet.stub, who, 1_000)
        holds.append((await place_hold(wallet.stub, who, 500, table)).hold_id)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await wallet.stub.SettlePool(settle(table, holds, 0, {player: 1_001}, new_id("k")))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "holds 1000" in (caught.value.details() or "")
    assert await balance(wallet.stub, player) == (500, 500)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await wallet.stub.SettlePool(settle(new_id("t"), holds, 1_000, {}, new_id("k")))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "placed for table" in (caught.value.details() or "")
    assert await audit_database(wallet.url) == ()


class Logged:
    """Stands in for a module's logger: what it was asked to log, by level."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def __getattr__(self, level: str) -> Any:
        return lambda event, **_: self.events.append((level, event))


async def test_a_match_staked_on_nothing_is_not_settled(
    wallet: Wallet, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tournament's match is created in PLAY with no stake (the tournament holds and pays
    its money itself): its end records no settlement, and is no error for the operators."""
    winner, loser = Side(new_id(), 1500.0, ""), Side(new_id(), 1500.0, "")
    ended = match_ended(winner=winner, loser=loser, stake=0, length=3, currency="PLAY")
    logged = Logged()
    monkeypatch.setattr(wallet_consumers, "log", logged)
    assert await wallet.consumer.handle(ended)
    assert [event for level, event in logged.events if level == "error"] == []
    assert ("info", "unstaked_match_not_settled") in logged.events
    recorded = await scalar(
        wallet.url, "SELECT count(*) FROM settlements WHERE game_id = :game", game=ended.game_id
    )
    assert recorded == 0


async def test_a_ticket_is_held_at_its_target_once_never_spendable(wallet: Wallet) -> None:
    # 4 x 2.50 = 10.00 buys one ticket of 9.00 + 1.00 at the target, for players[1].
    satellite, target = new_id("satellite"), new_id("target")
    players = [new_id() for _ in range(4)]
    holds = []
    for player in players:
        await fund(wallet.stub, player, 1_000)
        holds.append((await place_hold(wallet.stub, player, 250, satellite)).hold_id)
    request = settle(satellite, holds, 0, {}, f"{satellite}:tickets")
    request.tickets.append(
        wallet_pb2.PoolTicket(
            account_id=players[1], table_id=target, buy_in=money(900), entry_fee=money(100)
        )
    )
    answers = [await wallet.stub.SettlePool(request) for _ in range(2)]  # the retry replays
    assert answers[0].ticket_holds == answers[1].ticket_holds
    ticket_holds = answers[0].ticket_holds
    assert [(h.account_id, h.table_id, h.amount.minor_units, h.status) for h in ticket_holds] == [
        (players[1], target, 900, wallet_pb2.HOLD_STATUS_OPEN),
        (players[1], target, 100, wallet_pb2.HOLD_STATUS_OPEN),
    ]
    assert await balance(wallet.stub, players[1]) == (750, 1_000)
    for loser in (players[0], players[2], players[3]):
        assert await balance(wallet.stub, loser) == (750, 0)
    assert await audit_database(wallet.url) == ()
