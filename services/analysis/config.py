"""The analysis service's settings: the evaluation pool and the bear-off cache.

- ``TAVLA_ANALYSIS_WORKERS`` (default: the CPUs this process may use): worker
  processes evaluating positions. Evaluation is CPU-bound, so more workers than
  cores only adds queueing.
- ``TAVLA_ANALYSIS_QUEUE`` (default 64): evaluations that may wait for a worker on
  top of those running. A call beyond that is refused with RESOURCE_EXHAUSTED at
  once rather than queued without bound (callers retry or fall back).
- ``TAVLA_ANALYSIS_BEAROFF_CACHE`` (default ``$XDG_CACHE_HOME/tavla`` or
  ``~/.cache/tavla``): where the exact bear-off database is read from, or built and
  written the first time (about 8 s of CPU; the image ships one).
- ``TAVLA_GAME_ADDRESS`` (set for every service by ``tavla dev`` and the chart): the
  game service, whose match records match analysis fetches. Without it the service
  evaluates positions but does not consume game events (logged at start).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from services.kit.config import Env

WORKERS = "TAVLA_ANALYSIS_WORKERS"
QUEUE = "TAVLA_ANALYSIS_QUEUE"
BEAROFF_CACHE = "TAVLA_ANALYSIS_BEAROFF_CACHE"
GAME_ADDRESS = "TAVLA_GAME_ADDRESS"


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME")
    return Path(base) / "tavla" if base else Path.home() / ".cache" / "tavla"


def available_cpus() -> int:
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


@dataclass(frozen=True, slots=True)
class AnalysisSettings:
    workers: int
    queue: int = 64
    bearoff_cache: Path | None = None
    game_address: str | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> AnalysisSettings:
        env = Env(environ)
        cache = env.optional_text(BEAROFF_CACHE)
        return cls(
            workers=env.integer(WORKERS, available_cpus(), low=1, high=256),
            queue=env.integer(QUEUE, 64, low=0, high=100_000),
            bearoff_cache=Path(cache) if cache else default_cache_dir(),
            game_address=env.optional_text(GAME_ADDRESS),
        )
