"""Stakes a game may start on (ClaimHolds), and currencies without a commission schedule.

No real-money game without both stakes held, one stake never backs two
games, and a currency whose games could not be settled is refused when a hold is
placed or a commission quoted, not discovered at settlement.
"""

from __future__ import annotations

from collections.abc import Awaitable
from datetime import UTC, datetime
from typing import Any

import grpc
import pytest

from services.kit.clock import ManualClock
from tavla.game.v1 import game_pb2
from tavla.wallet.v1 import wallet_pb2, wallet_pb2_grpc
from tests.support.services import RunningService, new_database, stop_service
from tests.support.wallet import (
    Wallet,
    as_player,
    balance,
    fund,
    money,
    new_id,
    place_hold,
    start_wallet,
)


async def rpc_error(call: Awaitable[object]) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call
    return caught.value


def claim(
    table: str, game: str, seats: list[tuple[str, str]], required: int, currency: str = "USD"
) -> wallet_pb2.ClaimHoldsRequest:
    return wallet_pb2.ClaimHoldsRequest(
        table_id=table,
        game_id=game,
        required=money(required, currency),
        seats=[wallet_pb2.SeatHold(account_id=a, hold_id=h) for a, h in seats],
    )


async def seated_pair(wallet: Wallet, table: str, amount: int = 1500) -> list[tuple[str, str]]:
    seats = []
    for _ in range(2):
        player = new_id()
        await fund(wallet.stub, player, 10_000)
        seats.append((player, (await place_hold(wallet.stub, player, amount, table)).hold_id))
    return seats


async def test_both_stakes_are_claimed_for_one_game_only(wallet: Wallet) -> None:
    table = new_id("t")
    seats = await seated_pair(wallet, table)
    claimed = await wallet.stub.ClaimHolds(claim(table, "g1", seats, 1500))
    assert [(h.account_id, h.hold_id, h.game_id) for h in claimed.holds] == [
        (player, hold, "g1") for player, hold in seats
    ]
    again = await wallet.stub.ClaimHolds(claim(table, "g1", seats, 1500))  # a retried create
    assert [h.game_id for h in again.holds] == ["g1", "g1"]
    error = await rpc_error(wallet.stub.ClaimHolds(claim(table, "g2", seats, 1500)))
    assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert f"hold {seats[0][1]} is already staked on game g1" in (error.details() or "")
    for player, _ in seats:  # claiming moves no money
        assert await balance(wallet.stub, player) == (8500, 1500)


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ("too small", "holds 15.00 USD but the game needs 15.01 USD held to start"),
        ("other table", "is for table"),
        ("swapped", "belongs to"),
        ("unknown", "no hold 'nope'"),
        ("released", "is already voided"),
        ("currency", "is in USD but the table plays in EUR"),
    ],
)
async def test_a_stake_not_held_as_the_game_needs_is_refused_naming_it(
    wallet: Wallet, change: str, problem: str
) -> None:
    table = new_id("t")
    seats = await seated_pair(wallet, table)
    required, currency, at = 1500, "USD", table
    if change == "too small":
        required = 1501
    elif change == "other table":
        at = new_id("t")
    elif change == "swapped":
        seats = [(seats[0][0], seats[1][1]), (seats[1][0], seats[0][1])]
    elif change == "unknown":
        seats = [(seats[0][0], "nope"), seats[1]]
    elif change == "released":
        await wallet.stub.ReleaseHold(wallet_pb2.ReleaseHoldRequest(hold_id=seats[0][1]))
    else:
        currency = "EUR"
    error = await rpc_error(
        wallet.stub.ClaimHolds(claim(at, new_id("g"), seats, required, currency))
    )
    assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert seats[0][0] in (error.details() or "") and problem in (error.details() or "")


async def test_eur_stakes_are_held_and_quoted_under_the_eur_schedule(wallet: Wallet) -> None:
    player = new_id()
    await fund(wallet.stub, player, 10_000, "EUR")
    await place_hold(wallet.stub, player, 2700, new_id("t"), "EUR")
    assert await balance(wallet.stub, player, "EUR") == (7300, 2700)
    quote = await wallet.stub.QuoteCommission(
        wallet_pb2.QuoteCommissionRequest(
            kind=wallet_pb2.SETTLEMENT_KIND_SINGLE_GAME,
            stake=money(900, "EUR"),
            cube_value=1,
            result=game_pb2.RESULT_TYPE_GAMMON,
            rating_a=1500,
            rating_b=1500,
        ),
        metadata=as_player(player),
    )
    # W = 18.00 EUR, above the EUR schedule's 17.00 bound: 3.9%, 1800 x 0.039 = 70.2 -> 70.
    assert quote.schedule_version == "gammonempire-2026-01-eur"
    assert (quote.rate, quote.commission_per_player.minor_units) == ("0.039", 70)
    assert (quote.winner_credit.minor_units, quote.loser_debit.minor_units) == (1660, 1800)


async def test_no_stake_or_quote_in_a_currency_without_a_schedule_in_force(
    postgres_server: Any, kafka_broker: Any, geo_service: RunningService
) -> None:
    """A wallet whose clock is before every shipped schedule has no currency to play in."""
    url = postgres_server.url(new_database(postgres_server, "wallet_unscheduled"))
    early = await start_wallet(
        url,
        kafka_broker.bootstrap,
        clock=ManualClock(datetime(2025, 12, 31, tzinfo=UTC)),
        geo_address=geo_service.address,
    )
    try:
        stub = wallet_pb2_grpc.WalletServiceStub(early.channel)
        player, table = new_id(), new_id("t")
        await fund(stub, player, 10_000)
        refused = [
            await rpc_error(place_hold(stub, player, 1500, table)),
            await rpc_error(
                stub.QuoteCommission(
                    wallet_pb2.QuoteCommissionRequest(
                        kind=wallet_pb2.SETTLEMENT_KIND_SERIES, stake=money(1000), match_length=3
                    ),
                    metadata=as_player(player),
                )
            ),
            await rpc_error(stub.ClaimHolds(claim(table, "g", [(player, "h")] * 2, 1500))),
        ]
        for error in refused:
            assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert "no commission schedule for 'USD'" in (error.details() or "")
            assert "tables play in PLAY" in (error.details() or "")
        assert await balance(stub, player) == (10_000, 0)
    finally:
        await stop_service(early)
