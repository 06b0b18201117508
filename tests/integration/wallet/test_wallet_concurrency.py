"""Many operations at once on the same accounts, and random operation sequences.

Balances must come out exact (the order of concurrent operations cannot change
the result when none is refused) and the audit must stay clean throughout.
"""

from __future__ import annotations

import asyncio
import random
from collections import defaultdict
from dataclasses import dataclass, field

import grpc
from prometheus_client import REGISTRY

from services.wallet.audit_cli import audit_database
from services.wallet.domain.commission import quote_single_game
from services.wallet.domain.money import Money
from services.wallet.domain.schedule import schedule_in_force
from services.wallet.domain.terms import MoneyGame, WinType
from tavla.game.v1 import game_pb2
from tavla.wallet.v1 import wallet_pb2
from tests.support.wallet import (
    GAME_STARTED_AT,
    Side,
    Wallet,
    as_player,
    balance,
    claim_holds,
    fund,
    game_ended,
    held_for_game,
    money,
    new_id,
    place_hold,
    wait_for_balance,
)

FAILED_GROUPS = "tavla_wallet_settlement_groups_total"
RESULTS = {
    WinType.SINGLE: game_pb2.RESULT_TYPE_SINGLE,
    WinType.GAMMON: game_pb2.RESULT_TYPE_GAMMON,
    WinType.BACKGAMMON: game_pb2.RESULT_TYPE_BACKGAMMON,
}


def quote(stake: int, cube: int, win_type: WinType) -> tuple[int, int]:
    """(winner credit, loser debit) the schedule says, for the expected balances."""
    schedule = schedule_in_force("USD", GAME_STARTED_AT)
    result = quote_single_game(
        schedule, MoneyGame(Money(stake, "USD")), cube, win_type, (1500, 1500)
    )
    return result.winner_credit.amount, result.loser_debit.amount


async def test_parallel_settlements_deposits_and_holds_on_the_same_accounts(
    wallet: Wallet,
) -> None:
    rng = random.Random(7)
    players = [new_id() for _ in range(6)]
    expected: dict[str, int] = {}
    for player in players:
        await fund(wallet.stub, player, 100_000)
        expected[player] = 100_000

    settlements = []
    for _ in range(80):
        winner, loser = rng.sample(players, 2)
        stake, cube, win_type = (
            rng.choice([100, 250, 500]),
            rng.choice([1, 2]),
            rng.choice(list(WinType)),
        )
        credit, debit = quote(stake, cube, win_type)
        expected[winner] += credit
        expected[loser] -= debit
        game, table = new_id("g"), new_id("t")
        # Real money settles only from stakes held and claimed for the game.
        sides = await held_for_game(wallet.stub, [winner, loser], stake * cube * 3, table, game)
        settlements.append(
            game_ended(
                winner=sides[0],
                loser=sides[1],
                stake=stake,
                cube=cube,
                result=RESULTS[win_type],
                game_id=game,
                table_id=table,
            )
        )
    deposits = []
    for index in range(30):
        player = players[index % len(players)]
        expected[player] += 1000
        deposits.append(
            wallet.stub.Deposit(
                wallet_pb2.DepositRequest(amount=money(1000), idempotency_key=new_id("d")),
                metadata=as_player(player),
            )
        )
    # Holds placed and released on the same accounts while the rest runs.
    table = new_id("t")
    holds = [place_hold(wallet.stub, player, 700, table) for player in players]

    failed_groups = REGISTRY.get_sample_value(FAILED_GROUPS, {"outcome": "failed"}) or 0.0
    outcomes = await asyncio.gather(
        *(wallet.consumer.handle(ended) for ended in settlements), *deposits, *holds
    )
    assert all(outcomes[: len(settlements)])
    # Concurrent settlement groups lock in one order: none failed (no deadlock, no fallback).
    assert (REGISTRY.get_sample_value(FAILED_GROUPS, {"outcome": "failed"}) or 0.0) == failed_groups
    for hold in outcomes[len(settlements) + len(deposits) :]:
        assert isinstance(hold, wallet_pb2.Hold)
        await wallet.stub.ReleaseHold(wallet_pb2.ReleaseHoldRequest(hold_id=hold.hold_id))
    for player in players:
        await wait_for_balance(wallet.stub, player, expected[player])
    assert await audit_database(wallet.url) == ()


async def test_concurrent_withdrawals_cannot_overdraw(wallet: Wallet) -> None:
    player = new_id()
    await fund(wallet.stub, player, 1000)
    calls = [
        wallet.stub.Withdraw(
            wallet_pb2.WithdrawRequest(amount=money(300), idempotency_key=new_id("w")),
            metadata=as_player(player),
        )
        for _ in range(10)
    ]
    outcomes = await asyncio.gather(*calls, return_exceptions=True)
    accepted = [o for o in outcomes if isinstance(o, wallet_pb2.PaymentOperation)]
    refused = [o for o in outcomes if isinstance(o, grpc.aio.AioRpcError)]
    assert len(accepted) == 3
    assert {error.code() for error in refused} == {grpc.StatusCode.FAILED_PRECONDITION}
    assert (await balance(wallet.stub, player))[0] == 100


@dataclass
class Model:
    """What the test expects: the open holds, hence each player's held total."""

    players: list[str]
    # hold id -> (player, amount, table)
    holds: dict[str, tuple[str, int, str]] = field(default_factory=dict)

    def held(self, player: str) -> int:
        return sum(amount for owner, amount, _ in self.holds.values() if owner == player)


async def test_random_operation_sequences_keep_every_invariant(wallet: Wallet) -> None:
    rng = random.Random(20261129)
    players = [new_id() for _ in range(4)]
    model = Model(players)
    for player in players:
        await fund(wallet.stub, player, 5000)
    refusals: dict[str, int] = defaultdict(int)

    async def step() -> None:
        action = rng.choice(["hold", "hold", "raise", "release", "settle", "withdraw", "deposit"])
        player = rng.choice(players)
        try:
            await OPERATIONS[action](wallet, rng, model, player)
        except grpc.aio.AioRpcError as error:
            # Refusals are part of the sequence; they must be the clear, expected kinds.
            assert error.code() == grpc.StatusCode.FAILED_PRECONDITION, error.details()
            refusals[action] += 1

    for index in range(90):
        await step()
        if index % 30 == 29:
            assert await audit_database(wallet.url) == ()
            for player in players:
                available, held = await balance(wallet.stub, player)
                assert available >= 0
                assert held == model.held(player)
    assert sum(refusals.values()) < 90


async def _hold(wallet: Wallet, rng: random.Random, model: Model, player: str) -> None:
    amount = rng.choice([300, 600, 1500, 9000])
    table = new_id("t")
    hold = await place_hold(wallet.stub, player, amount, table)
    model.holds[hold.hold_id] = (player, amount, table)


async def _raise(wallet: Wallet, rng: random.Random, model: Model, player: str) -> None:
    mine = [hold_id for hold_id, (owner, _, _) in model.holds.items() if owner == player]
    if not mine:
        return
    hold_id = rng.choice(mine)
    owner, amount, table = model.holds[hold_id]
    await wallet.stub.RaiseHold(
        wallet_pb2.RaiseHoldRequest(hold_id=hold_id, new_amount=money(amount * 2))
    )
    model.holds[hold_id] = (owner, amount * 2, table)


async def _release(wallet: Wallet, rng: random.Random, model: Model, player: str) -> None:
    if model.holds:
        hold_id = rng.choice(sorted(model.holds))
        await wallet.stub.ReleaseHold(wallet_pb2.ReleaseHoldRequest(hold_id=hold_id))
        del model.holds[hold_id]


async def _settle(wallet: Wallet, rng: random.Random, model: Model, player: str) -> None:
    """Two players sit at a new table with holds, and one wins at some cube."""
    opponent = rng.choice([p for p in model.players if p != player])
    stake, table = 100, new_id("t")
    first = await place_hold(wallet.stub, player, stake * 3, table)
    try:
        second = await place_hold(wallet.stub, opponent, stake * 3, table)
    except grpc.aio.AioRpcError:
        await wallet.stub.ReleaseHold(wallet_pb2.ReleaseHoldRequest(hold_id=first.hold_id))
        raise
    winner, loser = rng.sample(
        [Side(player, hold_id=first.hold_id), Side(opponent, hold_id=second.hold_id)], 2
    )
    game = new_id("g")
    await claim_holds(wallet.stub, table, game, [winner, loser], stake * 3)
    result = rng.choice(list(RESULTS.values()))
    ended = game_ended(
        winner=winner, loser=loser, stake=stake, result=result, table_id=table, game_id=game
    )
    assert await wallet.consumer.handle(ended)


async def _withdraw(wallet: Wallet, rng: random.Random, model: Model, player: str) -> None:
    await wallet.stub.Withdraw(
        wallet_pb2.WithdrawRequest(
            amount=money(rng.choice([100, 2000, 50_000])), idempotency_key=new_id("w")
        ),
        metadata=as_player(player),
    )


async def _deposit(wallet: Wallet, rng: random.Random, model: Model, player: str) -> None:
    await wallet.stub.Deposit(
        wallet_pb2.DepositRequest(
            amount=money(rng.choice([500, 1500])), idempotency_key=new_id("d")
        ),
        metadata=as_player(player),
    )


OPERATIONS = {
    "hold": _hold,
    "raise": _raise,
    "release": _release,
    "settle": _settle,
    "withdraw": _withdraw,
    "deposit": _deposit,
}
