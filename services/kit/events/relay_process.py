"""The outbox relay in a process of its own, beside the service's (``TAVLA_OUTBOX_RELAY_PROCESS``).

In the service's process the relay shares the event loop that answers calls: each
round claims rows, signs every record (ES256) and produces them, and a call that
arrives meanwhile waits. For a service whose every answer records an event (geo),
that is a fifth of the loop's time and a stall of several milliseconds per round.
With the setting on, :class:`RelayProcess` stands in for the relay in the service's
process and runs the same :class:`~services.kit.events.relay.OutboxRelay` in a child
process (``python -m services.kit.events.relay_process``) with its own event loop,
database connections and producer, and the service's key: what is published, signed
and guaranteed (at least once, in commit order, the advisory lock) does not change.

The child's stdin is its only link to the service. The service writes its
:class:`~services.kit.config.Settings` and the relay's idle poll interval first
(length-prefixed pickle: nothing in the child's arguments or environment), then one byte
per commit that recorded events (:meth:`RelayProcess.wake`). The end of stdin, when the
service stops or dies (even by SIGKILL), makes the child drain what is pending within
the grace period and exit, so it never outlives its service. The child ignores SIGINT
and SIGTERM: its service says when to stop. A child that exits on its own is logged and
started again; meanwhile events wait in the outbox, as they do while the broker is away.

The relay's metrics (``tavla_events_published_total``, ``tavla_events_parked_total``,
``tavla_outbox_pending``) are counted in the child and sent up its stdout as one JSON
line a second while they change; the service adds them to its own /metrics.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import pickle
import signal
import struct
import sys
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from prometheus_client import Counter, Gauge

from services.kit import logging as kit_logging
from services.kit.clock import Clock, SystemClock
from services.kit.config import Settings
from services.kit.credentials import load_service_credentials
from services.kit.db import make_engine
from services.kit.events.kafka import make_producer
from services.kit.events.relay import OutboxRelay
from services.kit.events.signing import EventSigner
from services.kit.metrics import EVENTS_PARKED, EVENTS_PUBLISHED, OUTBOX_PENDING

log = kit_logging.get_logger(__name__)

WAKE = b"\x01"
_LENGTH = struct.Struct(">I")
# The relay's metrics by sample name, as the child reports them.
RELAY_METRICS: Mapping[str, Counter | Gauge] = {
    "tavla_events_published_total": EVENTS_PUBLISHED,
    "tavla_events_parked_total": EVENTS_PARKED,
    "tavla_outbox_pending": OUTBOX_PENDING,
}
REPORT_SECONDS = 1.0


def outbox_relay(
    settings: Settings, engine: Any, signer: EventSigner, clock: Clock
) -> OutboxRelay:
    """The service's relay as its settings make it (in either process)."""
    return OutboxRelay(
        service=settings.service,
        engine=engine,
        producer_factory=lambda: make_producer(
            settings.kafka, service=settings.service, idempotence=settings.kafka_idempotence
        ),
        clock=clock,
        signer=signer,
        poll_seconds=settings.outbox_poll_seconds,
        retention=timedelta(hours=settings.outbox_retention_hours),
    )


class RelayProcess:
    """The service process's side: starts the child, wakes it, restarts it, stops it."""

    def __init__(self, settings: Settings, *, restart_seconds: float = 1.0) -> None:
        self._settings = settings
        self._restart_seconds = restart_seconds
        self._process: asyncio.subprocess.Process | None = None
        self._stopping = False
        self._reported: dict[str, float] = {}
        self._reporting: asyncio.Task[None] | None = None
        self._idle_poll_seconds: float | None = None

    def poll_idle_every(self, seconds: float) -> None:
        """As :meth:`OutboxRelay.poll_idle_every`, for the child's relay (sent at its start)."""
        self._idle_poll_seconds = seconds

    def wake(self) -> None:
        """Called after a commit that recorded events: one byte down the child's stdin.

        Skipped while an earlier byte is still buffered here: the child has a wake-up
        coming already.
        """
        process = self._process
        if process is None or process.stdin is None:
            return
        transport = process.stdin.transport
        if transport.is_closing() or transport.get_write_buffer_size():
            return
        with contextlib.suppress(ConnectionError, RuntimeError):
            process.stdin.write(WAKE)

    async def run(self) -> None:
        while not self._stopping:
            process = await self._start()
            self._reporting = asyncio.create_task(self._read_reports(process))
            code = await process.wait()
            await self._reporting
            if self._stopping:
                return
            log.error("outbox_relay_process_exited", code=code,
                      restart_seconds=self._restart_seconds)  # fmt: skip
            await asyncio.sleep(self._restart_seconds)

    async def _start(self) -> asyncio.subprocess.Process:
        environ = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", __name__, stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, env=environ,
        )  # fmt: skip
        assert process.stdin is not None
        settings = pickle.dumps((self._settings, self._idle_poll_seconds))
        process.stdin.write(_LENGTH.pack(len(settings)) + settings + WAKE)
        self._process = process
        self._reported = {}  # a new child counts from zero
        log.info("outbox_relay_process_started", pid=process.pid)
        return process

    async def _read_reports(self, process: asyncio.subprocess.Process) -> None:
        assert process.stdout is not None
        async for line in process.stdout:
            with contextlib.suppress(ValueError):
                self._apply_report(json.loads(line))

    def _apply_report(self, samples: list[list[Any]]) -> None:
        """Counters go up by what the child counted since its last report; gauges are set."""
        for name, labels, value in samples:
            metric = RELAY_METRICS.get(name)
            if metric is None:
                continue
            child = metric.labels(*labels)
            if isinstance(child, Gauge):
                child.set(value)
                continue
            seen = f"{name}{labels}"
            child.inc(max(0.0, value - self._reported.get(seen, 0.0)))
            self._reported[seen] = value

    async def stop(self, drain_seconds: float = 5.0) -> None:
        """Close the child's stdin (it drains and exits); kill it if it overstays."""
        self._stopping = True
        process = self._process
        if process is None or process.returncode is not None or process.stdin is None:
            return
        process.stdin.close()
        try:
            async with asyncio.timeout(drain_seconds + 5.0):
                await process.wait()
        except TimeoutError:
            log.error("outbox_relay_process_killed", pid=process.pid)
            process.kill()
            await process.wait()
        if self._reporting is not None:  # the child's last report: what it drained
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._reporting, timeout=1.0)


# ---------------------------------------------------------------- the child


def relay_samples() -> list[list[Any]]:
    """The relay's metric samples in this process: [name, label values, value]."""
    samples: list[list[Any]] = []
    for metric in set(RELAY_METRICS.values()):
        for family in metric.collect():
            samples += [
                [sample.name, list(sample.labels.values()), sample.value]
                for sample in family.samples
                if sample.name in RELAY_METRICS
            ]
    return samples


async def _report_metrics() -> None:
    last: list[list[Any]] = []
    while True:
        await asyncio.sleep(REPORT_SECONDS)
        samples = relay_samples()
        if samples != last:
            sys.stdout.write(json.dumps(samples) + "\n")
            sys.stdout.flush()
            last = samples


async def _read_settings(stdin: asyncio.StreamReader) -> tuple[Settings, float | None]:
    """The service's settings and the relay's idle poll interval (None: as the settings say)."""
    (length,) = _LENGTH.unpack(await stdin.readexactly(_LENGTH.size))
    settings, idle_poll_seconds = pickle.loads(await stdin.readexactly(length))
    if not isinstance(settings, Settings):
        raise TypeError("the relay process expects Settings first on its stdin")
    return settings, idle_poll_seconds


async def relay_child() -> None:
    """Publish the service's outbox until stdin ends, then drain and exit."""
    loop = asyncio.get_running_loop()
    stdin = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdin), sys.stdin)
    settings, idle_poll_seconds = await _read_settings(stdin)
    kit_logging.configure(settings.service, settings.log_level)
    signer = load_service_credentials(settings).event_signer
    engine = make_engine(settings.database_url, pool_size=2)
    relay = outbox_relay(settings, engine, signer, SystemClock())
    if idle_poll_seconds is not None:
        relay.poll_idle_every(idle_poll_seconds)
    tasks = [asyncio.create_task(relay.run()), asyncio.create_task(_report_metrics())]
    while await stdin.read(4096):
        relay.wake()
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await relay.stop(drain_seconds=settings.shutdown_grace_seconds)
    await engine.dispose()
    sys.stdout.write(json.dumps(relay_samples()) + "\n")


def main() -> None:
    for stop_signal in (signal.SIGINT, signal.SIGTERM):
        signal.signal(stop_signal, signal.SIG_IGN)  # the service says when: stdin's end
    asyncio.run(relay_child())


if __name__ == "__main__":
    main()
