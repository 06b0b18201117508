"""Real-money play against the real wallet service: cover checks, raised holds, settlements.

Both services run in-process on the same PostgreSQL server and broker; the game
service reaches the wallet over gRPC (``GrpcWallet``) and the wallet settles from
the game's GameEnded and MatchEnded on Kafka.
"""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import pytest

from tavla.game.v1 import game_pb2, game_pb2_grpc
from tavla.wallet.v1 import wallet_pb2_grpc
from tests.support.game import as_player, create_request, start_game_with_wallet, take_turn
from tests.support.services import RunningService, new_database, stop_service
from tests.support.wallet import balance, fund, place_hold, start_wallet

STAKE = 500  # USD cents per point
FIRST_HOLD = STAKE * 3  # a backgammon at cube 1


async def test_doubles_are_covered_holds_raised_and_the_drop_settled(
    postgres_server: Any, kafka_broker: Any, geo_service: RunningService
) -> None:
    names = [new_database(postgres_server, p) for p in ("wallet_for_game", "game_with_wallet")]
    wallet = await start_wallet(
        postgres_server.url(names[0]), kafka_broker.bootstrap, geo_address=geo_service.address
    )
    game_service = await start_game_with_wallet(
        postgres_server.url(names[1]), kafka_broker.bootstrap, wallet.address, geo_service.address
    )
    try:
        wallet_stub = wallet_pb2_grpc.WalletServiceStub(wallet.channel)
        stub = game_pb2_grpc.GameServiceStub(game_service.channel)
        await play_with_the_wallet(stub, wallet_stub)
        await settle_a_match(stub, wallet_stub)
    finally:
        await stop_service(game_service)
        await stop_service(wallet)


async def play_with_the_wallet(stub: Any, wallet_stub: Any) -> None:
    request = create_request(stake=STAKE, currency="USD")
    accounts = [p.account_id for p in request.players]
    for account in accounts:
        await fund(wallet_stub, account, 2_000)
    for player in request.players:
        hold = await place_hold(wallet_stub, player.account_id, FIRST_HOLD, request.table_id)
        player.hold_id = hold.hold_id
    game = await stub.CreateGame(request)
    while game.phase != game_pb2.TURN_PHASE_ROLL_OR_DOUBLE:
        game = await take_turn(stub, game)
    doubler = game.awaiting_account_id
    taker = next(a for a in accounts if a != doubler)
    double = game_pb2.DoubleRequest(game_id=game.game_id, expected_version=game.version)
    await fund(wallet_stub, doubler, 8_000)
    # The taker's 2,000 cannot cover a backgammon at cube 2 (3,000): no double yet.
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await stub.Double(double, metadata=as_player(doubler))
    assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "cannot cover" in (refused.value.details() or "")
    await fund(wallet_stub, taker, 1_000)
    offered = await stub.Double(double, metadata=as_player(doubler))
    taken = await stub.Take(
        game_pb2.TakeRequest(game_id=game.game_id, expected_version=offered.version),
        metadata=as_player(taker),
    )
    for account in accounts:
        _, held = await balance(wallet_stub, account)
        assert held == STAKE * 2 * 3
    await settle_by_a_drop(stub, wallet_stub, taken, taker)


async def settle_by_a_drop(stub: Any, wallet_stub: Any, game: Any, taker: str) -> None:
    """The taker's opponent drops at once: the taker wins the cube (2 x stake)."""
    loser = next(p.account_id for p in game.players if p.account_id != taker)
    before = sum(await balance(wallet_stub, loser))
    while not (
        game.phase == game_pb2.TURN_PHASE_ROLL_OR_DOUBLE and game.awaiting_account_id == taker
    ):
        game = await take_turn(stub, game)
    # A redouble to 4 needs 6,000 of cover from each player.
    await fund(wallet_stub, loser, 10_000)
    await fund(wallet_stub, taker, 10_000)
    before += 10_000
    offered = await stub.Double(
        game_pb2.DoubleRequest(game_id=game.game_id, expected_version=game.version),
        metadata=as_player(taker),
    )
    dropped = await stub.Drop(
        game_pb2.DropRequest(game_id=game.game_id, expected_version=offered.version),
        metadata=as_player(loser),
    )
    assert dropped.status == game_pb2.GAME_STATUS_FINISHED
    assert dropped.last_outcome.points == 2 and dropped.winner_account_id == taker
    async with asyncio.timeout(90):  # the wallet settles from GameEnded on Kafka
        while sum(await balance(wallet_stub, loser)) != before - STAKE * 2:
            await asyncio.sleep(0.2)


async def settle_a_match(stub: Any, wallet_stub: Any) -> None:
    """A 1-point match resigned at once: the wallet settles the match stake on MatchEnded."""
    request = create_request(match_length=1, stake=1_000, currency="USD")
    for player in request.players:
        await fund(wallet_stub, player.account_id, 1_000)
        hold = await place_hold(wallet_stub, player.account_id, 1_000, request.table_id)
        player.hold_id = hold.hold_id
    game = await stub.CreateGame(request)
    resigner = game.awaiting_account_id
    before = sum(await balance(wallet_stub, resigner))
    offered = await stub.Resign(
        game_pb2.ResignRequest(
            game_id=game.game_id, expected_version=game.version, level=game_pb2.RESULT_TYPE_SINGLE
        ),
        metadata=as_player(resigner),
    )
    over = await stub.AcceptResign(
        game_pb2.AcceptResignRequest(game_id=game.game_id, expected_version=offered.version),
        metadata=as_player(offered.awaiting_account_id),
    )
    assert over.status == game_pb2.GAME_STATUS_FINISHED
    async with asyncio.timeout(90):
        while sum(await balance(wallet_stub, resigner)) != before - 1_000:
            await asyncio.sleep(0.2)
