"""Start the analysis service in-process for other services' tests: a real pool of spawned
worker processes (the exact bear-off database from the shared cache), on PostgreSQL and
the broker, listening on a free port or the one given (a test that starts it late)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from services.analysis.config import default_cache_dir
from services.analysis.main import wiring
from services.analysis.pool import EvaluationPool
from tests.support.services import (
    RunningService,
    fast_settings,
    free_port,
    new_database,
    start_service,
    stop_service,
)


@dataclass
class RunningAnalysis:
    running: RunningService
    pool: EvaluationPool

    @property
    def address(self) -> str:
        return self.running.address

    async def stop(self) -> None:
        await stop_service(self.running)
        self.pool.close()


async def start_analysis(
    postgres_server: Any, kafka_broker: Any, *, port: int | None = None, workers: int = 1
) -> RunningAnalysis:
    pool = EvaluationPool(workers, 8, default_cache_dir())
    await pool.warm_up()
    database = new_database(postgres_server, "analysis")
    settings = fast_settings(
        "analysis",
        postgres_server.url(database),
        kafka_broker.bootstrap,
        TAVLA_GRPC_PORT=str(port or free_port()),
    )
    running = await start_service(settings, lambda runtime: wiring(runtime, pool))
    return RunningAnalysis(running, pool)
