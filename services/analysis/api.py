"""The AnalysisService gRPC servicer: protobuf <-> the service's dataclasses.

``GetMatchAnalysis`` serves a stored analysis to the acting player when they played
in it; ``AnalyseMatch`` (anti-abuse, ops) returns a stored one by game id or
analyses a given ``.mat`` text without storing it.
"""

from __future__ import annotations

from typing import Any

import grpc

from services.analysis.domain.engine import Chances, CubeAction, PositionEvaluation, RankedPlay
from services.analysis.service import AnalysisService
from services.backgammon import match_id, position_id
from services.backgammon.board import Board
from services.backgammon.errors import RulesError
from services.backgammon.match_id import MatchIdState
from services.kit.auth import acting_account
from services.kit.errors import InvalidArgument
from tavla.analysis.v1 import analysis_pb2, analysis_pb2_grpc

Context = grpc.aio.ServicerContext[Any, Any]

CUBE_ACTIONS = {
    CubeAction.NO_DOUBLE: analysis_pb2.CUBE_ACTION_NO_DOUBLE,
    CubeAction.DOUBLE_TAKE: analysis_pb2.CUBE_ACTION_DOUBLE_TAKE,
    CubeAction.DOUBLE_PASS: analysis_pb2.CUBE_ACTION_DOUBLE_PASS,
    CubeAction.TOO_GOOD: analysis_pb2.CUBE_ACTION_TOO_GOOD,
}
CUBE_OWNERS = {
    analysis_pb2.CUBE_OWNER_UNSPECIFIED: None,
    analysis_pb2.CUBE_OWNER_CENTRED: None,
    analysis_pb2.CUBE_OWNER_ON_ROLL: 0,
    analysis_pb2.CUBE_OWNER_OPPONENT: 1,
}


def probabilities_message(chances: Chances) -> analysis_pb2.Probabilities:
    return analysis_pb2.Probabilities(
        win=chances.win,
        win_gammon=chances.win_gammon,
        win_backgammon=chances.win_backgammon,
        lose_gammon=chances.lose_gammon,
        lose_backgammon=chances.lose_backgammon,
    )


def ids_of(spec: analysis_pb2.PositionSpec) -> tuple[str, str]:
    """gnubg ids for a spelled-out position (the player on roll is player 0)."""
    try:
        board = Board(tuple(spec.on_roll_checkers), tuple(spec.opponent_checkers))
        state = MatchIdState(
            cube_value=spec.cube_value or 1,
            cube_owner=CUBE_OWNERS.get(spec.cube_owner),
            match_length=spec.match_length,
            score=(spec.on_roll_score, spec.opponent_score),
            crawford=spec.crawford,
            jacoby=spec.jacoby,
        )
        return position_id.encode(board), match_id.encode(state)
    except RulesError as error:
        raise InvalidArgument(f"position: {error}") from None


def evaluation_message(pid: str, mid: str, ev: PositionEvaluation) -> analysis_pb2.Evaluation:
    return analysis_pb2.Evaluation(
        position_id=pid,
        gnubg_match_id=mid,
        cubeless_equity=ev.cubeless_equity,
        cubeful_equity=ev.cubeful_equity,
        probabilities=probabilities_message(ev.chances),
        cube_action=CUBE_ACTIONS[ev.cube_action],
        plies=ev.plies,
        no_double_equity=ev.no_double,
        double_take_equity=ev.double_take,
        double_pass_equity=ev.double_pass,
        match_winning_chance=ev.match_winning_chance,
        exact=ev.exact,
    )


def move_message(move: RankedPlay) -> analysis_pb2.RankedMove:
    return analysis_pb2.RankedMove(
        notation=move.notation,
        result_position_id=position_id.encode(move.result.swapped()),
        cubeful_equity=move.equity,
        equity_loss=move.equity_loss,
        probabilities=probabilities_message(move.chances),
    )


class AnalysisApi(analysis_pb2_grpc.AnalysisServiceServicer):
    def __init__(self, service: AnalysisService) -> None:
        self._service = service

    async def EvaluatePosition(
        self, request: analysis_pb2.EvaluatePositionRequest, context: Context
    ) -> analysis_pb2.Evaluation:
        pid, mid = request.position_id, request.gnubg_match_id
        if not pid and request.HasField("position"):
            pid, mid = ids_of(request.position)
        evaluation = await self._service.evaluate(pid, mid, request.plies)
        return evaluation_message(pid, mid, evaluation)

    async def BestMoves(
        self, request: analysis_pb2.BestMovesRequest, context: Context
    ) -> analysis_pb2.BestMovesResponse:
        moves = await self._service.best_moves(
            request.position_id,
            request.gnubg_match_id,
            list(request.dice),
            request.plies,
            request.max_moves,
        )
        return analysis_pb2.BestMovesResponse(moves=[move_message(m) for m in moves])

    async def SettlementShares(
        self, request: analysis_pb2.SettlementSharesRequest, context: Context
    ) -> analysis_pb2.SettlementSharesResponse:
        shares = await self._service.settlement(request.position_id, request.gnubg_match_id)
        figures = shares.figures
        method = (
            analysis_pb2.SHARE_METHOD_EXACT
            if figures.exact
            else analysis_pb2.SHARE_METHOD_NEURAL_NET
        )
        return analysis_pb2.SettlementSharesResponse(
            cubeful_equity=figures.cubeful_equity,
            on_roll_share=str(shares.on_roll),
            opponent_share=str(shares.opponent),
            method=method,
            probabilities=probabilities_message(figures.chances),
            match_winning_chance=figures.match_winning_chance,
            plies=shares.plies,
            basis=figures.basis,
        )

    async def AnalyseMatch(
        self, request: analysis_pb2.AnalyseMatchRequest, context: Context
    ) -> analysis_pb2.MatchAnalysis:
        if request.mat_text:
            return await self._service.analyse_text(request.mat_text)
        return await self._service.stored_analysis(request.game_id)

    async def GetMatchAnalysis(
        self, request: analysis_pb2.GetMatchAnalysisRequest, context: Context
    ) -> analysis_pb2.MatchAnalysis:
        return await self._service.match_analysis(request.game_id, acting_account(context))
