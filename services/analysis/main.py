"""Wiring for the analysis service: a skeleton serving health and metrics for now."""

from __future__ import annotations

from services.kit.config import Settings
from services.kit.server import Wiring, run_service


async def serve(settings: Settings) -> None:
    await run_service(settings, lambda runtime: Wiring())
