"""Wiring for the analysis service: settings -> evaluation pool -> service -> servicer,
and the game-event consumer that analyses finished matches.

The pool's worker processes start (nets and bear-off database loaded) before the
server accepts calls, and are shut down when it stops.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from services.analysis.api import AnalysisApi
from services.analysis.config import AnalysisSettings
from services.analysis.consumers import GAME_TOPIC, MATCHES_GROUP, matches_consumer
from services.analysis.matches import MatchAnalyser
from services.analysis.pool import EvaluationPool
from services.analysis.records import GrpcMatchRecords
from services.analysis.service import AnalysisService
from services.kit.config import Settings
from services.kit.events.consumer import EventConsumer
from services.kit.events.kafka import make_consumer
from services.kit.logging import get_logger
from services.kit.server import Runtime, Wiring, run_service
from tavla.analysis.v1 import analysis_pb2, analysis_pb2_grpc

log = get_logger(__name__)


def wiring(
    runtime: Runtime, pool: EvaluationPool, analysis: AnalysisSettings | None = None
) -> Wiring:
    api = AnalysisApi(AnalysisService(pool, runtime.sessions, runtime.clock))
    consumers: list[EventConsumer] = []
    closers: list[Callable[[], Coroutine[Any, Any, None]]] = []
    if analysis is not None and analysis.game_address:
        records = GrpcMatchRecords(analysis.game_address, runtime.credentials)
        closers.append(records.close)
        analyser = MatchAnalyser(pool, records, runtime.clock, runtime.settings.service)
        kafka = runtime.settings.kafka
        session_timeout_ms = runtime.settings.kafka_session_timeout_ms
        consumers.append(
            matches_consumer(
                sessions=runtime.sessions,
                consumer_factory=lambda: make_consumer(
                    kafka,
                    group=MATCHES_GROUP,
                    topics=[GAME_TOPIC],
                    session_timeout_ms=session_timeout_ms,
                ),
                analyser=analyser,
                clock=runtime.clock,
                service=runtime.settings.service,
            )
        )
    else:
        log.warning("match_analysis_off", why="TAVLA_GAME_ADDRESS is not set")
    return Wiring(
        servicers=[(analysis_pb2_grpc.add_AnalysisServiceServicer_to_server, api)],
        service_names=[analysis_pb2.DESCRIPTOR.services_by_name["AnalysisService"].full_name],
        consumers=consumers,
        on_stop=closers,
    )


async def serve(settings: Settings) -> None:
    analysis = AnalysisSettings.from_env()
    pool = EvaluationPool(
        analysis.workers, analysis.queue, analysis.bearoff_cache, service=settings.service
    )
    try:
        await pool.warm_up()
        await run_service(settings, lambda runtime: wiring(runtime, pool, analysis))
    finally:
        pool.close()
