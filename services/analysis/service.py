"""The analysis use cases: validate a request, run it in the pool, shape the answer.

Ids are decoded here first (cheap) so that a bad Position ID or Match ID is an
INVALID_ARGUMENT naming the id, never a worker's exception; the evaluation itself
runs in a worker process (:mod:`services.analysis.pool`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from services.analysis import store, worker
from services.analysis.domain.engine import (
    MAX_PLIES,
    PositionEvaluation,
    RankedPlay,
    SettlementFigures,
    decode,
)
from services.analysis.domain.matread import MatFileError, parse
from services.analysis.matches import MATCH_PLIES, analyse_record, analysis_message
from services.analysis.pool import EvaluationPool
from services.backgammon.errors import RulesError
from services.kit.clock import Clock, SystemClock
from services.kit.errors import InvalidArgument, NotFound, PermissionDenied
from tavla.analysis.v1 import analysis_pb2

# Settlements search 2 plies before the roll (about 30 ms a position); with dice
# already rolled each play is valued one ply shallower.
SETTLEMENT_PLIES = 2
SHARE_PLACES = Decimal("0.000001")


@dataclass(frozen=True, slots=True)
class Shares:
    on_roll: Decimal
    opponent: Decimal
    figures: SettlementFigures
    plies: int


def check_ids(position_id: str, match_id: str) -> None:
    if not position_id:
        raise InvalidArgument("position_id is required: a gnubg Position ID such as 4HPwATDgc/ABMA")
    try:
        decode(position_id, match_id)
    except RulesError as error:
        raise InvalidArgument(str(error)) from None


def check_plies(plies: int) -> None:
    if not 0 <= plies <= MAX_PLIES:
        raise InvalidArgument(f"plies must be 0, 1 or {MAX_PLIES}, got {plies}")


def check_dice(dice: Sequence[int]) -> tuple[int, int]:
    if len(dice) != 2 or not all(1 <= die <= 6 for die in dice):
        raise InvalidArgument(f"dice must be exactly two values from 1 to 6, got {list(dice)}")
    return dice[0], dice[1]


def split(share: float) -> tuple[Decimal, Decimal]:
    """Two decimal shares in [0, 1] that sum to exactly 1."""
    on_roll = min(max(Decimal(share).quantize(SHARE_PLACES), Decimal(0)), Decimal(1))
    return on_roll, Decimal(1) - on_roll


class AnalysisService:
    def __init__(
        self,
        pool: EvaluationPool,
        sessions: async_sessionmaker[AsyncSession] | None = None,
        clock: Clock | None = None,
    ) -> None:
        self._pool = pool
        self._sessions = sessions
        self._clock = clock or SystemClock()

    async def match_analysis(self, game_id: str, account_id: str) -> analysis_pb2.MatchAnalysis:
        """A finished session's analysis, for one of its two players only."""
        stored = await self._stored(game_id)
        if account_id not in stored.accounts:
            raise PermissionDenied(
                f"the analysis of game {game_id} is shown only to the two players of that game"
            )
        return analysis_pb2.MatchAnalysis.FromString(stored.analysis)

    async def stored_analysis(self, game_id: str) -> analysis_pb2.MatchAnalysis:
        return analysis_pb2.MatchAnalysis.FromString((await self._stored(game_id)).analysis)

    async def _stored(self, game_id: str) -> store.StoredAnalysis:
        if not game_id:
            raise InvalidArgument("game_id is required")
        assert self._sessions is not None, "match analysis needs the database"
        async with self._sessions() as session:
            stored = await store.load_analysis(session, game_id)
        if stored is None:
            raise NotFound(
                f"no analysis of game {game_id}: it is analysed once it is over (seconds later)"
            )
        return stored

    async def analyse_text(self, mat_text: str) -> analysis_pb2.MatchAnalysis:
        """A Jellyfish .mat text analysed on the pool (not stored, no event)."""
        try:
            record = parse(mat_text)
            decisions = await analyse_record(self._pool, record)
        except MatFileError as error:
            raise InvalidArgument(f"mat_text: {error}") from None
        seconds: list[float | None] = [None] * len(decisions)
        return analysis_message(
            "", record, ("", ""), decisions, seconds, MATCH_PLIES, self._clock.now()
        )

    async def evaluate(self, position_id: str, match_id: str, plies: int) -> PositionEvaluation:
        check_ids(position_id, match_id)
        check_plies(plies)
        return await self._pool.run(worker.evaluate, position_id, match_id, plies)

    async def best_moves(
        self, position_id: str, match_id: str, dice: Sequence[int], plies: int, limit: int = 0
    ) -> list[RankedPlay]:
        check_ids(position_id, match_id)
        check_plies(plies)
        roll = check_dice(dice)
        moves = await self._pool.run(worker.best_moves, position_id, match_id, roll, plies)
        return moves[:limit] if limit else moves

    async def settlement(self, position_id: str, match_id: str) -> Shares:
        check_ids(position_id, match_id)
        figures = await self._pool.run(worker.settlement, position_id, match_id, SETTLEMENT_PLIES)
        on_roll, opponent = split(figures.on_roll_share)
        return Shares(on_roll, opponent, figures, SETTLEMENT_PLIES)
