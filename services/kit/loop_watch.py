"""What holds a service's event loop up, as metrics: garbage-collector pauses and loop lag.

Every call a process answers waits behind whatever its event loop is doing, so a
pause of the loop is a pause of every call in flight. Two things are measured:

- each pass of CPython's cyclic garbage collector (``gc.callbacks``): its wall
  time, by generation (``tavla_gc_pause_seconds``); every pass is counted, at the
  cost of two clock reads;
- the loop's lag (``tavla_event_loop_lag_seconds``): a task asks to wake every
  ``interval`` seconds and records how late it woke. It samples: a stall of the
  loop shows as the part of it still to run when the wake was due, so a stall
  longer than the interval is always seen, a shorter one in proportion.

A long pause with little CPU in it is the process waiting for a core (a busy
machine), not the process's own work: compare with the process's CPU time.
"""

from __future__ import annotations

import asyncio
import gc
import time
from typing import Any

from services.kit.metrics import EVENT_LOOP_LAG, GC_PAUSE

# One wake a second: every service runs one, idle or not, and its cost is per second
# (about 1.5 ms of CPU a second at ten wakes, on a loaded machine; 6 ms at fifty), which
# the services whose goals count CPU per second of play cannot spare. Any stall over a
# second is seen, shorter ones in proportion to their length; the GC passes, each
# counted, and the RPC histograms show the rest.
LAG_INTERVAL_SECONDS = 1.0


class GcPauses:
    """Observes every garbage-collector pass into ``tavla_gc_pause_seconds``."""

    def __init__(self, service: str) -> None:
        self._series = [GC_PAUSE.labels(service, str(generation)) for generation in range(3)]
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self._series[info["generation"]].observe(time.perf_counter() - self._started)

    def install(self) -> None:
        if self not in gc.callbacks:
            gc.callbacks.append(self)

    def remove(self) -> None:
        if self in gc.callbacks:
            gc.callbacks.remove(self)


async def watch_loop_lag(service: str, interval: float = LAG_INTERVAL_SECONDS) -> None:
    """Record, until cancelled, how late the loop wakes a task that sleeps ``interval``."""
    series = EVENT_LOOP_LAG.labels(service)
    loop = asyncio.get_running_loop()
    while True:
        due = loop.time() + interval
        await asyncio.sleep(interval)
        series.observe(max(0.0, loop.time() - due))
