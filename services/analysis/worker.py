"""What runs inside each evaluation worker process (picklable entry points, one engine each).

The pool starts workers with :func:`start` (spawned, not forked: the parent runs gRPC
and asyncio, which must not be forked). Each worker loads the exact bear-off database
once from the cache directory and keeps one :class:`Evaluator`; the entry points take
gnubg ids already validated by the service (so they decode without the checks) and
return the engine's plain dataclasses.
GNU Backgammon's nets (gnubg-nn, GPLv3) are loaded only in these processes.
"""

from __future__ import annotations

import gc
from pathlib import Path

from services.analysis.domain import match_analysis
from services.analysis.domain.engine import (
    Evaluator,
    PositionEvaluation,
    RankedPlay,
    SettlementFigures,
    decode_trusted,
)
from services.analysis.domain.match_analysis import Decision
from services.analysis.domain.matread import MatRecord
from services.backgammon import bearoff
from services.kit.orphans import die_with

_engine: Evaluator | None = None


def start(bearoff_cache: str | None, parent_pid: int | None = None) -> None:
    """Worker initialiser: die with the service, then the bear-off database (cached on
    disk), then the engine. ``parent_pid`` is the service's: a SIGKILLed service must
    leave no worker behind (:mod:`services.kit.orphans`)."""
    global _engine
    if parent_pid is not None:
        die_with(parent_pid)
    if bearoff_cache:
        bearoff.use_database(bearoff.cached_database(Path(bearoff_cache)))
    _engine = Evaluator()
    # Long-lived tables out of the cyclic collector's reach (see kit.server.tune_garbage_collector).
    gc.freeze()


def engine() -> Evaluator:
    global _engine
    if _engine is None:  # called in-process (tests, the benchmark) without start()
        _engine = Evaluator()
    return _engine


def ready() -> bool:
    """A no-op job: lets the pool wait until every worker has started."""
    return _engine is not None


def evaluate(position_id: str, match_id: str, plies: int) -> PositionEvaluation:
    return (_engine or engine()).evaluate_trusted(position_id, match_id, plies)


def evaluate_many(positions: list[tuple[str, str]], plies: int) -> list[PositionEvaluation]:
    return [evaluate(position_id, match_id, plies) for position_id, match_id in positions]


def best_moves(
    position_id: str, match_id: str, dice: tuple[int, int], plies: int
) -> list[RankedPlay]:
    board, state = decode_trusted(position_id, match_id)
    return engine().best_moves(board, state, dice, plies)


def settlement(position_id: str, match_id: str, plies: int) -> SettlementFigures:
    board, state = decode_trusted(position_id, match_id)
    return engine().settlement(board, state, plies)


def analyse_game(record: MatRecord, index: int, plies: int, crawford: bool) -> list[Decision]:
    """One game of a match record, every decision graded (the pool runs games in parallel)."""
    return match_analysis.analyse_game(record, index, engine(), plies, crawford)
