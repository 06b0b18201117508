"""The evaluation pool: worker processes behind a bounded queue, with a backlog gauge.

At most ``workers + queue`` evaluations are accepted at a time; one more is refused
at once with RESOURCE_EXHAUSTED (:class:`~services.kit.errors.ResourceExhausted`)
naming the limit, so a burst never grows memory or latency without bound and callers
(the game's analyst falls back after its own wait) decide what to do.
``tavla_analysis_backlog`` is the number waiting for a worker,
``tavla_analysis_in_flight`` those accepted and not finished.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from prometheus_client import Gauge

from services.analysis import worker
from services.kit.errors import ResourceExhausted

T = TypeVar("T")

BACKLOG = Gauge(
    "tavla_analysis_backlog", "Evaluations accepted and waiting for a worker process.", ["service"]
)
IN_FLIGHT = Gauge("tavla_analysis_in_flight", "Evaluations accepted and not finished.", ["service"])


class EvaluationPool:
    def __init__(
        self, workers: int, queue: int, bearoff_cache: Path | None, *, service: str = "analysis"
    ) -> None:
        self.workers = workers
        self.limit = workers + queue
        self._in_flight = 0
        self._backlog = BACKLOG.labels(service)
        self._gauge = IN_FLIGHT.labels(service)
        self._executor = ProcessPoolExecutor(
            max_workers=workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=worker.start,
            initargs=(str(bearoff_cache) if bearoff_cache else None, os.getpid()),
        )

    @property
    def in_flight(self) -> int:
        return self._in_flight

    async def run(self, function: Callable[..., T], *args: Any) -> T:
        """``function(*args)`` in a worker, or ResourceExhausted when the queue is full."""
        if self._in_flight >= self.limit:
            raise ResourceExhausted(
                f"analysis is at capacity: {self._in_flight} evaluations in progress or queued "
                f"(limit {self.limit}: {self.workers} workers + TAVLA_ANALYSIS_QUEUE); "
                "retry shortly"
            )
        self._count(+1)
        try:
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(self._executor, partial(function, *args))
        finally:
            self._count(-1)

    def _count(self, change: int) -> None:
        self._in_flight += change
        self._gauge.set(self._in_flight)
        self._backlog.set(max(self._in_flight - self.workers, 0))

    async def warm_up(self) -> None:
        """Start every worker (nets and bear-off database loaded) before serving."""
        loop = asyncio.get_running_loop()
        await asyncio.gather(
            *(loop.run_in_executor(self._executor, worker.ready) for _ in range(self.workers))
        )

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
