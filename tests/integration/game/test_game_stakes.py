"""Real money only with money held, against the real wallet service.

A real-money game starts only on both seats' stakes, claimed from the wallet; a take
whose stake the wallet cannot hold is refused before it is applied, so nobody can
lose more than is held; a EUR game is held, played out and settled under the EUR
commission schedule. Both services run in-process on the same PostgreSQL server and
broker; the game reaches the wallet over gRPC and the wallet settles from Kafka.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass
from typing import Any

import grpc
import pytest

from services.wallet.audit_cli import audit_database
from tavla.game.v1 import game_pb2, game_pb2_grpc
from tavla.wallet.v1 import wallet_pb2, wallet_pb2_grpc
from tests.support.game import (
    as_player,
    create_request,
    play_out,
    start_game_with_wallet,
    take_turn,
)
from tests.support.services import RunningService, new_database, stop_service
from tests.support.wallet import balance, fund, new_id, place_hold, start_wallet

FAILED = grpc.StatusCode.FAILED_PRECONDITION


@dataclass
class Stack:
    game: game_pb2_grpc.GameServiceStub
    wallet: wallet_pb2_grpc.WalletServiceStub
    wallet_url: str


@pytest.fixture(scope="module")
async def stack(
    postgres_server: Any, kafka_broker: Any, geo_service: RunningService
) -> AsyncIterator[Stack]:
    names = [new_database(postgres_server, p) for p in ("wallet_stakes", "game_stakes")]
    wallet_url = postgres_server.url(names[0])
    wallet = await start_wallet(wallet_url, kafka_broker.bootstrap, geo_address=geo_service.address)
    started: list[RunningService] = [wallet]
    try:
        game = await start_game_with_wallet(
            postgres_server.url(names[1]),
            kafka_broker.bootstrap,
            wallet.address,
            geo_service.address,
        )
        started.append(game)
        yield Stack(
            game_pb2_grpc.GameServiceStub(game.channel),
            wallet_pb2_grpc.WalletServiceStub(wallet.channel),
            wallet_url,
        )
    finally:
        for service in reversed(started):
            await stop_service(service)


async def refused(call: Awaitable[object], code: grpc.StatusCode, *parts: str) -> str:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call
    details = caught.value.details() or ""
    assert caught.value.code() == code, details
    for part in parts:
        assert part in details
    return details


async def games_of(stack: Stack, account: str) -> list[str]:
    listed = await stack.game.ListGames(game_pb2.ListGamesRequest(), metadata=as_player(account))
    return [g.game_id for g in listed.games]


async def total(stack: Stack, account: str, currency: str = "USD") -> int:
    available, held = await balance(stack.wallet, account, currency)
    return available + held


async def wait_for_total(
    stack: Stack, account: str, expected: int, currency: str = "USD", timeout: float = 90
) -> None:
    async with asyncio.timeout(timeout):  # the wallet settles from GameEnded on Kafka
        while await total(stack, account, currency) != expected:
            await asyncio.sleep(0.2)


async def test_a_real_money_game_starts_only_on_both_stakes_held(stack: Stack) -> None:
    request = create_request(stake=500, currency="USD", idempotency_key=new_id("create"))
    alice, bob = request.players
    for player in request.players:
        await fund(stack.wallet, player.account_id, 6_000)
    await refused(stack.game.CreateGame(request), FAILED, "no hold_id for alice, bob")

    # 500 x 3 = 1,500 must be held for a backgammon at cube 1; bob's hold is a cent short.
    alice.hold_id = (
        await place_hold(stack.wallet, alice.account_id, 1_500, request.table_id)
    ).hold_id
    short = await place_hold(stack.wallet, bob.account_id, 1_499, request.table_id)
    bob.hold_id = short.hold_id
    await refused(stack.game.CreateGame(request), FAILED, bob.account_id, "needs 15.00 USD held")
    elsewhere = await place_hold(stack.wallet, bob.account_id, 1_500, new_id("t"))
    bob.hold_id = elsewhere.hold_id
    await refused(stack.game.CreateGame(request), FAILED, "is for table")
    in_euros = game_pb2.CreateGameRequest()
    in_euros.CopyFrom(request)
    in_euros.rules.stake.currency = "EUR"
    in_euros.idempotency_key = new_id("create")
    await refused(stack.game.CreateGame(in_euros), FAILED, "plays in EUR")
    in_yen = game_pb2.CreateGameRequest()
    in_yen.CopyFrom(in_euros)
    in_yen.rules.stake.currency = "JPY"
    await refused(stack.game.CreateGame(in_yen), grpc.StatusCode.INVALID_ARGUMENT, "JPY")
    assert await games_of(stack, alice.account_id) == []  # nothing was created

    bob.hold_id = (await place_hold(stack.wallet, bob.account_id, 1_500, request.table_id)).hold_id
    game = await stack.game.CreateGame(request)
    retried = await stack.game.CreateGame(request)  # same key: the same game
    assert retried.game_id == game.game_id
    assert await games_of(stack, alice.account_id) == [game.game_id]

    # The stakes now back this game and no other.
    second = game_pb2.CreateGameRequest()
    second.CopyFrom(request)
    second.idempotency_key = new_id("create")
    await refused(
        stack.game.CreateGame(second), FAILED, f"is already staked on game {game.game_id}"
    )
    assert await games_of(stack, alice.account_id) == [game.game_id]


async def test_a_take_the_wallet_cannot_hold_is_refused_and_nobody_loses_more_than_held(
    stack: Stack,
) -> None:
    request = create_request(stake=500, currency="USD")
    for player in request.players:
        await fund(stack.wallet, player.account_id, 3_000)
        hold = await place_hold(stack.wallet, player.account_id, 1_500, request.table_id)
        player.hold_id = hold.hold_id
    game = await stack.game.CreateGame(request)
    while game.phase != game_pb2.TURN_PHASE_ROLL_OR_DOUBLE:
        game = await take_turn(stack.game, game)
    doubler = game.awaiting_account_id
    taker = next(p.account_id for p in game.players if p.account_id != doubler)
    offered = await stack.game.Double(
        game_pb2.DoubleRequest(game_id=game.game_id, expected_version=game.version),
        metadata=as_player(doubler),
    )
    # The doubler's stake already covers a backgammon at cube 2: 500 x 2 x 3 = 3,000.
    assert await balance(stack.wallet, doubler) == (0, 3_000)
    # The taker could cover it when the double was offered, then sat at another table.
    await place_hold(stack.wallet, taker, 1_500, new_id("t"))
    assert await balance(stack.wallet, taker) == (0, 3_000)
    take = game_pb2.TakeRequest(game_id=game.game_id, expected_version=offered.version)
    await refused(
        stack.game.Take(take, metadata=as_player(taker)),
        grpc.StatusCode.FAILED_PRECONDITION,
        "cannot take",
        "nothing changed",
        "drop",
    )
    unchanged = await stack.game.GetGame(
        game_pb2.GetGameRequest(game_id=game.game_id), metadata=as_player(taker)
    )
    assert unchanged.version == offered.version and unchanged.cube_value == 1
    assert unchanged.phase == game_pb2.TURN_PHASE_CUBE_RESPONSE

    dropped = await stack.game.Drop(
        game_pb2.DropRequest(game_id=game.game_id, expected_version=offered.version),
        metadata=as_player(taker),
    )
    assert dropped.winner_account_id == doubler and dropped.last_outcome.points == 1
    # The taker loses the cube before the double, 5.00, out of the 15.00 held here.
    # The winner gets 5.00 less 4.9% from each player: 500 x 0.049 = 24.5 -> 25, so 4.50.
    await wait_for_total(stack, taker, 3_000 - 500)
    await wait_for_total(stack, doubler, 3_000 + 500 - 2 * 25)
    assert await balance(stack.wallet, taker) == (1_000, 1_500)  # the other table's stake
    assert await audit_database(stack.wallet_url) == ()


# W = 18.00 EUR x result at cube 1: single 18.00, gammon 36.00, backgammon 54.00, all
# in the EUR schedule's middle band (17.00 < W <= 85.00): 3.9% per player, half up:
# 1800 x 0.039 = 70.2 -> 70; 3600 x 0.039 = 140.4 -> 140; 5400 x 0.039 = 210.6 -> 211.
# (Under the USD bounds a single game's 18.00 would pay 4.9%.)
EUR_STAKE = 1_800
EUR_COMMISSION_PER_PLAYER = {
    game_pb2.RESULT_TYPE_SINGLE: 70,
    game_pb2.RESULT_TYPE_GAMMON: 140,
    game_pb2.RESULT_TYPE_BACKGAMMON: 211,
}


async def test_a_eur_game_is_held_played_out_and_settled_under_the_eur_schedule(
    stack: Stack,
) -> None:
    request = create_request(stake=EUR_STAKE, currency="EUR")
    for player in request.players:
        await fund(stack.wallet, player.account_id, 10_000, "EUR")
        hold = await place_hold(
            stack.wallet, player.account_id, EUR_STAKE * 3, request.table_id, "EUR"
        )
        player.hold_id = hold.hold_id
    game = await play_out(stack.game, await stack.game.CreateGame(request))
    assert game.status == game_pb2.GAME_STATUS_FINISHED
    outcome = game.last_outcome
    assert outcome.cube_value == 1  # the scripted players never double
    win = EUR_STAKE * int(outcome.result)
    commission = EUR_COMMISSION_PER_PLAYER[outcome.result]
    loser = next(p.account_id for p in game.players if p.account_id != game.winner_account_id)
    await wait_for_total(stack, loser, 10_000 - win, "EUR")
    await wait_for_total(stack, game.winner_account_id, 10_000 + win - 2 * commission, "EUR")
    for account in (loser, game.winner_account_id):
        assert (await balance(stack.wallet, account, "EUR"))[1] == 0  # both holds posted
    assert await audit_database(stack.wallet_url) == ()


async def test_a_beaver_holds_four_times_the_cube_before_it_stands(stack: Stack) -> None:
    request = create_request(stake=500, currency="USD", beaver=True)
    for player in request.players:
        await fund(stack.wallet, player.account_id, 10_000)
        hold = await place_hold(stack.wallet, player.account_id, 1_500, request.table_id)
        player.hold_id = hold.hold_id
    game = await stack.game.CreateGame(request)
    while game.phase != game_pb2.TURN_PHASE_ROLL_OR_DOUBLE:
        game = await take_turn(stack.game, game)
    doubler = game.awaiting_account_id
    beaver = next(p.account_id for p in game.players if p.account_id != doubler)
    offered = await stack.game.Double(
        game_pb2.DoubleRequest(game_id=game.game_id, expected_version=game.version),
        metadata=as_player(doubler),
    )
    # 8,500 left, 5,000 of it now at another table: a take (+1,500) could be held, a
    # beaver (a backgammon at cube 4: 500 x 4 x 3 = 6,000, so +4,500) cannot.
    elsewhere = await place_hold(stack.wallet, beaver, 5_000, new_id("t"))
    request_beaver = game_pb2.BeaverRequest(game_id=game.game_id, expected_version=offered.version)
    await refused(
        stack.game.Beaver(request_beaver, metadata=as_player(beaver)),
        FAILED,
        "cannot beaver",
        "nothing changed",
    )
    assert await balance(stack.wallet, beaver) == (3_500, 6_500)
    await stack.wallet.ReleaseHold(wallet_pb2.ReleaseHoldRequest(hold_id=elsewhere.hold_id))
    beavered = await stack.game.Beaver(request_beaver, metadata=as_player(beaver))
    assert await balance(stack.wallet, beaver) == (4_000, 6_000)
    assert await balance(stack.wallet, doubler) == (7_000, 3_000)  # held at the double
    taken = await stack.game.Take(
        game_pb2.TakeRequest(game_id=game.game_id, expected_version=beavered.version),
        metadata=as_player(doubler),
    )
    assert taken.cube_value == 4 and taken.cube_owner_account_id == beaver
    assert await balance(stack.wallet, doubler) == (4_000, 6_000)

    # The doubler resigns a single game at cube 4: 500 x 4 = 2,000, the top of the USD
    # schedule's first band (W <= 20.00): 4.9% each, 2000 x 0.049 = 98.
    offer = await stack.game.Resign(
        game_pb2.ResignRequest(
            game_id=game.game_id,
            expected_version=taken.version,
            level=game_pb2.RESULT_TYPE_SINGLE,
        ),
        metadata=as_player(doubler),
    )
    over = await stack.game.AcceptResign(
        game_pb2.AcceptResignRequest(game_id=game.game_id, expected_version=offer.version),
        metadata=as_player(beaver),
    )
    assert over.winner_account_id == beaver and over.last_outcome.points == 4
    await wait_for_total(stack, doubler, 10_000 - 2_000)
    await wait_for_total(stack, beaver, 10_000 + 2_000 - 2 * 98)
    assert await audit_database(stack.wallet_url) == ()


@pytest.mark.parametrize(
    ("stake", "currency", "limit"),
    [
        (2**63 // 4, "PLAY", "TAVLA_MONEY_MAX_STAKE_PLAY"),  # a double on it passed int64
        (2**63 - 1, "USD", "TAVLA_MONEY_MAX_STAKE_USD"),
    ],
)
async def test_a_stake_past_the_operators_bounds_creates_no_game(
    stack: Stack, stake: int, currency: str, limit: str
) -> None:
    request = create_request(stake=stake, currency=currency, idempotency_key=new_id("create"))
    for player in request.players:
        player.hold_id = new_id("hold")  # whatever is held, the stake itself is refused
    await refused(stack.game.CreateGame(request), grpc.StatusCode.INVALID_ARGUMENT, limit)
    assert await games_of(stack, request.players[0].account_id) == []
