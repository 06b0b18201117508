"""The pauses of a service's event loop as metrics: every GC pass, and the loop's lag."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import time

from prometheus_client import REGISTRY

from services.kit.loop_watch import GcPauses, watch_loop_lag


def observed(name: str, **labels: str) -> float:
    """A sample of the default registry so far (0 before the series exists)."""
    return REGISTRY.get_sample_value(name, labels) or 0.0


def gc_passes(service: str) -> list[float]:
    return [observed("tavla_gc_pause_seconds_count", service=service, generation=str(g))
            for g in range(3)]  # fmt: skip


def test_every_collection_is_observed_by_generation_until_removed() -> None:
    pauses = GcPauses("watch-test")
    before = gc_passes("watch-test")
    pauses.install()
    pauses.install()  # once only
    try:
        gc.collect(0)
        gc.collect(2)
    finally:
        pauses.remove()
    gc.collect(0)  # not observed: removed
    after = gc_passes("watch-test")
    assert [a - b for a, b in zip(after, before, strict=True)] == [1, 0, 1]
    assert pauses not in gc.callbacks


async def test_a_stalled_loop_shows_as_lag() -> None:
    lag = "tavla_event_loop_lag_seconds"
    count_before = observed(f"{lag}_count", service="lag-test")
    sum_before = observed(f"{lag}_sum", service="lag-test")
    watcher = asyncio.create_task(watch_loop_lag("lag-test", interval=0.005))
    await asyncio.sleep(0.02)
    time.sleep(0.06)  # noqa: ASYNC251 (the point: the loop is held, the watcher wakes late)
    await asyncio.sleep(0.02)
    watcher.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await watcher
    assert observed(f"{lag}_count", service="lag-test") - count_before >= 2
    assert observed(f"{lag}_sum", service="lag-test") - sum_before >= 0.05
