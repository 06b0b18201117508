"""Wiring for the analysis service: settings -> evaluation pool -> service -> servicer.

The pool's worker processes start (nets and bear-off database loaded) before the
server accepts calls, and are shut down when it stops.
"""

from __future__ import annotations

from services.analysis.api import AnalysisApi
from services.analysis.config import AnalysisSettings
from services.analysis.pool import EvaluationPool
from services.analysis.service import AnalysisService
from services.kit.config import Settings
from services.kit.server import Runtime, Wiring, run_service
from tavla.analysis.v1 import analysis_pb2, analysis_pb2_grpc


def wiring(runtime: Runtime, pool: EvaluationPool) -> Wiring:
    api = AnalysisApi(AnalysisService(pool))
    return Wiring(
        servicers=[(analysis_pb2_grpc.add_AnalysisServiceServicer_to_server, api)],
        service_names=[analysis_pb2.DESCRIPTOR.services_by_name["AnalysisService"].full_name],
    )


async def serve(settings: Settings) -> None:
    analysis = AnalysisSettings.from_env()
    pool = EvaluationPool(
        analysis.workers, analysis.queue, analysis.bearoff_cache, service=settings.service
    )
    try:
        await pool.warm_up()
        await run_service(settings, lambda runtime: wiring(runtime, pool))
    finally:
        pool.close()
