"""Real-money tables (doubles checked with the wallet port), listing games, moves as steps."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest

from services.kit.clock import ManualClock
from tavla.game.v1 import game_pb2
from tests.support.game import (
    FakeWallet,
    GameHandle,
    as_player,
    create_request,
    start_game_service,
    take_turn,
)
from tests.support.services import RunningService, new_database, stop_service

WALLET = FakeWallet()


@pytest.fixture(scope="module")
async def money_service(
    postgres_server: Any, kafka_broker: Any, geo_service: RunningService
) -> AsyncIterator[GameHandle]:
    name = new_database(postgres_server, "game_tables")
    handle = await start_game_service(
        postgres_server.url(name),
        kafka_broker.bootstrap,
        ManualClock(),
        wallet=WALLET,
        geo_address=geo_service.address,
    )
    yield handle
    await stop_service(handle.running)


async def to_roll_phase(handle: GameHandle, game: game_pb2.Game) -> game_pb2.Game:
    while game.phase != game_pb2.TURN_PHASE_ROLL_OR_DOUBLE:
        game = await take_turn(handle.stub, game)
    return game


async def test_a_double_needs_both_players_to_cover_the_larger_cube(
    money_service: GameHandle,
) -> None:
    request = create_request(stake=500, currency="EUR")
    for index, player in enumerate(request.players):
        player.hold_id = f"hold-{index}-{player.account_id[:8]}"
    game = await to_roll_phase(money_service, await money_service.stub.CreateGame(request))
    doubler = game.awaiting_account_id
    taker = next(p.account_id for p in game.players if p.account_id != doubler)
    WALLET.balances[doubler] = 10_000
    WALLET.balances[taker] = 2_999  # a backgammon at cube 2 costs 500 x 2 x 3 = 3000
    double = game_pb2.DoubleRequest(game_id=game.game_id, expected_version=game.version)
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await money_service.stub.Double(double, metadata=as_player(doubler))
    assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "cannot cover the double" in (refused.value.details() or "")

    WALLET.balances[taker] = 3_000
    offered = await money_service.stub.Double(double, metadata=as_player(doubler))
    taken = await money_service.stub.Take(
        game_pb2.TakeRequest(game_id=game.game_id, expected_version=offered.version),
        metadata=as_player(taker),
    )
    assert taken.cube_value == 2 and taken.cube_owner_account_id == taker
    holds = {hold for hold, amount in WALLET.raised if amount == 3_000}
    assert holds == {p.hold_id for p in request.players}


async def test_a_stale_double_is_refused_as_stale_before_the_wallet_is_asked(
    money_service: GameHandle,
) -> None:
    request = create_request(stake=500, currency="EUR")
    for index, player in enumerate(request.players):
        player.hold_id = f"hold-{index}-{player.account_id[:8]}"
    game = await to_roll_phase(money_service, await money_service.stub.CreateGame(request))
    doubler = game.awaiting_account_id
    WALLET.balances.pop(doubler, None)  # could not cover: that must not be the answer
    stale = game_pb2.DoubleRequest(game_id=game.game_id, expected_version=game.version - 1)
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await money_service.stub.Double(stale, metadata=as_player(doubler))
    assert refused.value.code() == grpc.StatusCode.ABORTED
    assert f"at version {game.version}" in (refused.value.details() or "")


async def test_list_games_shows_a_players_games_in_progress(money_service: GameHandle) -> None:
    game = await money_service.stub.CreateGame(create_request())
    player = game.players[0].account_id
    listed = await money_service.stub.ListGames(
        game_pb2.ListGamesRequest(in_progress_only=True), metadata=as_player(player)
    )
    assert [g.game_id for g in listed.games] == [game.game_id]
    assert not listed.games[0].legal_plays


async def test_a_move_may_be_sent_as_checker_steps(money_service: GameHandle) -> None:
    game = await money_service.stub.CreateGame(create_request())
    play = game.legal_plays[0]
    moved = await money_service.stub.Move(
        game_pb2.MoveRequest(
            game_id=game.game_id,
            expected_version=game.version,
            steps=game_pb2.CheckerSteps(steps=play.steps),
        ),
        metadata=as_player(game.awaiting_account_id),
    )
    assert moved.version == game.version + 1
    assert moved.player_on_roll_account_id != game.player_on_roll_account_id


async def test_calls_without_an_account_are_unauthenticated(money_service: GameHandle) -> None:
    game = await money_service.stub.CreateGame(create_request())
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await money_service.stub.GetGame(game_pb2.GetGameRequest(game_id=game.game_id))
    assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED


async def test_leaving_a_match_forfeits_it(money_service: GameHandle) -> None:
    game = await money_service.stub.CreateGame(create_request(match_length=5))
    leaver = game.players[0].account_id
    left = await money_service.stub.Leave(
        game_pb2.LeaveRequest(game_id=game.game_id, expected_version=game.version),
        metadata=as_player(leaver),
    )
    assert left.status == game_pb2.GAME_STATUS_FINISHED
    assert left.last_outcome.reason == game_pb2.END_REASON_LEFT
    assert left.winner_account_id == game.players[1].account_id
    assert left.players[1].score >= 5
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await money_service.stub.Roll(
            game_pb2.RollRequest(game_id=game.game_id, expected_version=left.version),
            metadata=as_player(left.players[1].account_id),
        )
    assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
