"""Match analysis as a use case: fetch the record, grade it on the pool, store, announce.

:class:`MatchAnalyser` is what the game-event consumer calls for a finished match
(MatchEnded) or single money game (GameEnded). Inside the consumer's inbox
transaction it fetches the Jellyfish record from the game service, analyses its
games in parallel on the worker pool, attaches each decision's time from the
``decision_times`` rows, and stores the ``MatchAnalysis`` with a ``MatchAnalysed``
in the outbox, both in that transaction. A session already analysed is left as it
is (a replayed or duplicated event changes nothing).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from datetime import datetime

from google.protobuf.timestamp_pb2 import Timestamp
from sqlalchemy.ext.asyncio import AsyncSession

from services.analysis import store, worker
from services.analysis.domain.match_analysis import (
    Decision,
    PlayerFigures,
    crawford_games,
    summarise,
)
from services.analysis.domain.matread import MatFileError, MatRecord, parse
from services.analysis.pool import EvaluationPool
from services.analysis.records import MatchRecords
from services.kit.clock import Clock
from services.kit.errors import FailedPrecondition, NotFound
from services.kit.events.envelope import Envelope
from services.kit.events.tables import outbox_row
from services.kit.logging import get_logger
from tavla.analysis.v1 import analysis_pb2, events_pb2

log = get_logger(__name__)

TOPIC = "tavla.analysis.v1"
MATCH_PLIES = 0  # whole matches at 0-ply (well under a second for a 7-point match)
_ANALYSIS_NAMESPACE = uuid.UUID("0b1c9e55-5d6a-4f0e-8e8f-3f2a1c6d7b90")
# Decision kinds as the game's events time them (a beaver is a take).
_TIMED = {"checker": "checker", "double": "double", "take": "answer", "pass": "answer"}


async def analyse_record(
    pool: EvaluationPool, record: MatRecord, plies: int = MATCH_PLIES
) -> list[Decision]:
    """Every decision of ``record``, its games graded in parallel on the pool."""
    flags = crawford_games(record)
    games = await asyncio.gather(
        *(
            pool.run(worker.analyse_game, record, index, plies, flags[index])
            for index in range(len(record.games))
        )
    )
    return [decision for game in games for decision in game]


def attach_times(
    decisions: Sequence[Decision], accounts: tuple[str, str], times: Sequence[store.DecisionTime]
) -> list[float | None]:
    """Each decision's seconds, matched in order per (game, player, kind); a group whose
    counts differ (a record and events that disagree) stays untimed rather than misaligned."""
    timed: dict[tuple[int, str, str], list[float]] = {}
    for row in times:
        timed.setdefault((row.game_number, row.account_id, _TIMED[row.kind]), []).append(
            row.seconds
        )
    wanted: dict[tuple[int, str, str], list[int]] = {}
    for index, decision in enumerate(decisions):
        if decision.kind in _TIMED:
            key = (decision.game, accounts[decision.player], _TIMED[decision.kind])
            wanted.setdefault(key, []).append(index)
    seconds: list[float | None] = [None] * len(decisions)
    for key, indexes in wanted.items():
        found = timed.get(key, [])
        if len(found) == len(indexes):
            for index, value in zip(indexes, found, strict=True):
                seconds[index] = value
    return seconds


def player_message(
    figures: PlayerFigures,
    account_id: str,
    decisions: Sequence[tuple[Decision, float | None]],
) -> analysis_pb2.PlayerAnalysis:
    checker = [d for d, _ in decisions if d.kind == "checker" and d.counted]
    agreement = sum(1 for d in checker if d.error == 0.0) / len(checker) if checker else 0.0
    timed = [s for _, s in decisions if s is not None]
    return analysis_pb2.PlayerAnalysis(
        account_id=account_id,
        performance_rating=figures.pr,
        checker_error=figures.checker_error,
        cube_error=figures.cube_error,
        decisions=figures.decisions,
        blunders=figures.very_bad,
        luck=figures.luck,
        best_move_agreement=agreement,
        name=figures.name,
        checker_decisions=figures.checker_decisions,
        cube_decisions=figures.cube_decisions,
        error_per_decision=figures.error_per_decision,
        checker_error_per_decision=figures.checker_error_per_decision,
        cube_error_per_decision=figures.cube_error_per_decision,
        doubtful=figures.doubtful,
        bad=figures.bad,
        very_bad=figures.very_bad,
        seconds_per_decision=sum(timed) / len(timed) if timed else None,
        decision_list=[
            analysis_pb2.DecisionAnalysis(
                game_number=d.game,
                kind=d.kind,
                counted=d.counted,
                error=d.error,
                luck=d.luck,
                dice=list(d.dice) if d.dice != (0, 0) else [],
                played=d.played,
                best=d.best,
                cube_value=d.cube,
                seconds=s,
                rank=d.rank or None,
                second_loss=d.second_loss,
                third_loss=d.third_loss,
            )
            for d, s in decisions
        ],
    )


def analysis_message(
    game_id: str,
    record: MatRecord,
    accounts: tuple[str, str],
    decisions: Sequence[Decision],
    seconds: Sequence[float | None],
    plies: int,
    now: datetime,
) -> analysis_pb2.MatchAnalysis:
    figures = summarise(record.names, list(decisions))
    paired = list(zip(decisions, seconds, strict=True))
    players = [
        player_message(figures[p], accounts[p], [(d, s) for d, s in paired if d.player == p])
        for p in (0, 1)
    ]
    analysed_at = Timestamp()
    analysed_at.FromDatetime(now)
    return analysis_pb2.MatchAnalysis(
        analysis_id=str(uuid.uuid5(_ANALYSIS_NAMESPACE, game_id)),
        game_id=game_id,
        players=players,
        plies=plies,
        analysed_at=analysed_at,
    )


class MatchAnalyser:
    def __init__(
        self, pool: EvaluationPool, records: MatchRecords, clock: Clock, source: str
    ) -> None:
        self._pool = pool
        self._records = records
        self._clock = clock
        self._source = source

    async def analyse(self, session: AsyncSession, game_id: str, accounts: tuple[str, str]) -> bool:
        """Analyse, store and announce a finished session once; False when already done,
        or when the game service has no finished record of it or the record cannot be
        read (logged: retrying would not help). The game service unreachable raises
        (the consumer retries the batch)."""
        if await store.is_analysed(session, game_id):
            return False
        try:
            text = await self._records.mat_text(game_id)
        except (NotFound, FailedPrecondition) as refused:
            log.error("match_record_refused", game_id=game_id, error=str(refused))
            return False
        try:
            record = parse(text)
            decisions = await analyse_record(self._pool, record)
        except MatFileError as error:
            log.error("match_record_unreadable", game_id=game_id, error=str(error))
            return False
        seconds = attach_times(decisions, accounts, await store.times_of(session, game_id))
        now = self._clock.now()
        message = analysis_message(game_id, record, accounts, decisions, seconds, MATCH_PLIES, now)
        saved = await store.save_analysis(
            session,
            game_id=game_id,
            analysis_id=message.analysis_id,
            accounts=accounts,
            plies=MATCH_PLIES,
            analysis=message.SerializeToString(),
            now=now,
        )
        if saved:
            event = events_pb2.MatchAnalysed(
                game_id=game_id,
                analysis_id=message.analysis_id,
                players=message.players,
                plies=message.plies,
                occurred_at=message.analysed_at,
            )
            envelope = Envelope.wrap(
                topic=TOPIC, key=game_id, message=event, source=self._source, now=now
            )
            await session.execute(outbox_row.insert().values(**envelope.as_outbox_values()))
        return saved
