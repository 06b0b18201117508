"""The analysis service over gRPC: real server, PostgreSQL, broker, service credentials
and a real pool of spawned worker processes.

Expected shares are derived by hand: bear-offs whose outcome is counted on the dice
(the one-checker race the player on roll wins this roll; fifteen checkers on the
six-point against one checker), valued with the wallet's split rule (money:
(1 + E/3) / 2 of a pot of 3 x cube each side) or the published Kazaross-XG2 table
(0.56261: 6-away against 7-away).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from decimal import Decimal
from typing import Any

import grpc
import pytest

from services.analysis.config import default_cache_dir
from services.analysis.main import wiring
from services.analysis.pool import EvaluationPool
from services.backgammon import match_id, position_id
from services.backgammon.board import STARTING_BOARD, Board
from services.backgammon.match_id import MatchIdState
from tavla.analysis.v1 import analysis_pb2, analysis_pb2_grpc
from tests.support.identity import as_player, as_service, bare_channel
from tests.support.services import (
    RunningService,
    fast_settings,
    new_database,
    start_service,
    stop_service,
)

REST = (0,) * 19
ONE_ON_ACE = (1, 0, 0, 0, 0) + (0,) * 20
FIFTEEN_ON_SIX = (0, 0, 0, 0, 0, 15, *REST)
SURE_WIN = position_id.encode(Board(ONE_ON_ACE, (0, 0, 0, 0, 0, 1, *REST)))
GAMMONISH_LOSS = position_id.encode(Board(FIFTEEN_ON_SIX, ONE_ON_ACE))
OPENING = position_id.encode(STARTING_BOARD)


async def running(
    postgres_server: Any, kafka_broker: Any, workers: int, queue: int
) -> tuple[RunningService, EvaluationPool]:
    pool = EvaluationPool(workers, queue, default_cache_dir())
    await pool.warm_up()
    database = new_database(postgres_server, "analysis")
    settings = fast_settings("analysis", postgres_server.url(database), kafka_broker.bootstrap)
    service = await start_service(settings, lambda runtime: wiring(runtime, pool))
    return service, pool


@pytest.fixture(scope="module")
async def analysis_service(
    postgres_server: Any, kafka_broker: Any
) -> AsyncIterator[RunningService]:
    service, pool = await running(postgres_server, kafka_broker, workers=1, queue=8)
    yield service
    await stop_service(service)
    pool.close()


@pytest.fixture
def stub(analysis_service: RunningService) -> analysis_pb2_grpc.AnalysisServiceStub:
    return analysis_pb2_grpc.AnalysisServiceStub(analysis_service.channel)


def money(**fields: Any) -> str:
    return match_id.encode(MatchIdState(**fields))


async def shares(
    stub: analysis_pb2_grpc.AnalysisServiceStub, pid: str, mid: str
) -> analysis_pb2.SettlementSharesResponse:
    return await stub.SettlementShares(
        analysis_pb2.SettlementSharesRequest(position_id=pid, gnubg_match_id=mid)
    )


async def test_a_leaver_in_a_lost_position_gets_what_the_equity_says_not_half(stub: Any) -> None:
    # Fifteen on the six-point against one checker on the ace: no win (the opponent
    # finishes next roll); the gammon is saved only by bearing a checker off now: any 6
    # (11 rolls), 5-1 and 4-2 (4), 3-3 and 2-2 (2): 17/36. E = -1 - 19/36 = -55/36,
    # no double; share (1 + E/3) / 2 = 53/216 = 0.245370 (half would be 0.5).
    lost = await shares(stub, GAMMONISH_LOSS, money())
    assert Decimal(lost.on_roll_share) == Decimal("0.245370")
    assert Decimal(lost.on_roll_share) + Decimal(lost.opponent_share) == 1
    assert lost.method == analysis_pb2.SHARE_METHOD_EXACT
    assert lost.probabilities.lose_gammon == pytest.approx(19 / 36)
    assert lost.cubeful_equity == pytest.approx(-55 / 36)
    assert not lost.HasField("match_winning_chance")
    # A sure win: the player on roll doubles and the opponent passes: E = +1, share 2/3.
    won = await shares(stub, SURE_WIN, money())
    assert Decimal(won.on_roll_share) == Decimal("0.666667")
    assert "before the roll" in won.basis


async def test_a_match_game_is_settled_by_the_chance_of_winning_the_match(stub: Any) -> None:
    # 7-point match at 0-0: a sure single win leaves the player 6-away against 7-away.
    answer = await shares(stub, SURE_WIN, money(match_length=7))
    assert answer.match_winning_chance == pytest.approx(0.56261)
    assert Decimal(answer.on_roll_share) == Decimal("0.562610")


async def test_a_pending_double_is_valued_as_the_doubled_players_better_answer(stub: Any) -> None:
    # Doubled in a sure loss: taking loses 2 cubes, passing 1; pass is better: E = +1.
    answer = await shares(stub, SURE_WIN, money(doubled=True, turn=1))
    assert answer.cubeful_equity == pytest.approx(1.0)
    assert Decimal(answer.on_roll_share) == Decimal("0.666667")
    assert "pass" in answer.basis


async def test_a_contact_position_is_settled_by_the_net(stub: Any) -> None:
    answer = await shares(stub, OPENING, money())
    assert answer.method == analysis_pb2.SHARE_METHOD_NEURAL_NET
    assert answer.plies == 2
    assert Decimal("0.45") < Decimal(answer.on_roll_share) < Decimal("0.55")
    assert answer.probabilities.win == pytest.approx(0.52, abs=0.02)


async def test_evaluations_from_ids_and_from_a_spelled_out_board_agree(stub: Any) -> None:
    by_id = await stub.EvaluatePosition(analysis_pb2.EvaluatePositionRequest(position_id=OPENING))
    spec = analysis_pb2.PositionSpec(
        on_roll_checkers=list(STARTING_BOARD.player),
        opponent_checkers=list(STARTING_BOARD.opponent),
    )
    by_board = await stub.EvaluatePosition(analysis_pb2.EvaluatePositionRequest(position=spec))
    assert by_board.position_id == OPENING
    assert by_board.cubeful_equity == pytest.approx(by_id.cubeful_equity)
    assert by_id.cube_action == analysis_pb2.CUBE_ACTION_NO_DOUBLE


async def test_best_moves_rank_the_plays_of_a_roll(stub: Any) -> None:
    request = analysis_pb2.BestMovesRequest(position_id=OPENING, dice=[3, 1])
    moves = (await stub.BestMoves(request)).moves
    assert moves[0].notation == "8/5 6/5"  # the book play of an opening 31
    assert moves[0].equity_loss == 0
    assert all(m.equity_loss >= 0 for m in moves) and len(moves) == 16


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (analysis_pb2.EvaluatePositionRequest(position_id="not-an-id"), "Position ID"),
        (
            analysis_pb2.EvaluatePositionRequest(position_id=OPENING, gnubg_match_id="@@"),
            "Match ID",
        ),
        (analysis_pb2.EvaluatePositionRequest(position_id=OPENING, plies=5), "plies"),
        (analysis_pb2.EvaluatePositionRequest(), "position_id is required"),
    ],
)
async def test_bad_input_is_invalid_argument_with_a_clear_message(
    stub: Any, request_: Any, message: str
) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as failure:
        await stub.EvaluatePosition(request_)
    assert failure.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert message in (failure.value.details() or "")


async def test_bad_dice_are_invalid_argument(stub: Any) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as failure:
        await stub.BestMoves(analysis_pb2.BestMovesRequest(position_id=OPENING, dice=[7]))
    assert failure.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "two values from 1 to 6" in (failure.value.details() or "")


# Credentials are made when the test runs: a service token lives five minutes, and
# the suite may reach this test longer than that after collecting it.
@pytest.mark.parametrize(
    ("credential", "code"),
    [
        (lambda: as_service("antiabuse", "analysis"), grpc.StatusCode.PERMISSION_DENIED),
        (lambda: as_player("acct-1"), grpc.StatusCode.PERMISSION_DENIED),
        (lambda: (), grpc.StatusCode.UNAUTHENTICATED),
    ],
    ids=["another-service", "a-player", "nobody"],
)
async def test_settlement_shares_is_for_the_game_service_only(
    analysis_service: RunningService, credential: Any, code: grpc.StatusCode
) -> None:
    metadata = credential()
    async with bare_channel(analysis_service.address) as channel:
        stub = analysis_pb2_grpc.AnalysisServiceStub(channel)
        request = analysis_pb2.SettlementSharesRequest(position_id=OPENING)
        with pytest.raises(grpc.aio.AioRpcError) as failure:
            await stub.SettlementShares(request, metadata=metadata)
        assert failure.value.code() == code
        allowed = await stub.SettlementShares(request, metadata=as_service("game", "analysis"))
        assert Decimal(allowed.on_roll_share) + Decimal(allowed.opponent_share) == 1


async def test_a_full_queue_answers_resource_exhausted(
    postgres_server: Any, kafka_broker: Any
) -> None:
    # One worker, no queue: while a 2-ply ranking of an opening 1-1 (seconds of work)
    # runs, every other call is refused at once instead of waiting.
    service, pool = await running(postgres_server, kafka_broker, workers=1, queue=0)
    try:
        stub = analysis_pb2_grpc.AnalysisServiceStub(service.channel)
        request = analysis_pb2.BestMovesRequest(position_id=OPENING, dice=[1, 1], plies=2)

        async def rank() -> analysis_pb2.BestMovesResponse:
            return await stub.BestMoves(request)

        slow = asyncio.create_task(rank())
        while pool.in_flight == 0:
            await asyncio.sleep(0.01)
        with pytest.raises(grpc.aio.AioRpcError) as failure:
            await stub.EvaluatePosition(analysis_pb2.EvaluatePositionRequest(position_id=OPENING))
        assert failure.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "at capacity" in (failure.value.details() or "")
        assert (await slow).moves
        backlog = await pool.run(len, "")  # the queue is free again once the slow call ends
        assert backlog == 0
    finally:
        await stop_service(service)
        pool.close()
