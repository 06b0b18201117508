"""The stack an evaluation runs on: its own ``tavla dev``, or one already running.

By default :class:`DevStack` starts ``tavla dev`` as a subprocess, with a run dir
of its own and its ports laid out from ``TAVLA_DEV_PORT_BASE`` in a block reserved
below the kernel's ephemeral range (:func:`services.kit.devstack.net.reserve_ports`,
as the tests' stacks do: no client connection can hold one of them, and no other
stack of this machine's tests or evaluations takes the block until it is given back),
trusting one proxy hop (``TAVLA_DEV_XFF_TRUSTED_HOPS=1``: simulated players say where
they call from) and with the game's tests-only short presence and reconnect windows
(a deliberate disconnection ends in seconds, not five minutes). ``attach`` uses a
running ``tavla dev`` instead, found as ``tavla dev`` places it
(``TAVLA_DEV_PORT_OFFSET`` or ``TAVLA_DEV_PORT_BASE``), which must have been started
with those settings.

"Caught up" is read from every service's ``/metrics``: each consumer's backlog
(``tavla_consumer_lag``) and each outbox (``tavla_outbox_pending``) at 0, and the
counts of events consumed unchanged, on consecutive scrapes.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from aiokafka import AIOKafkaConsumer, TopicPartition

from services.kit import ports
from services.kit.devstack.dev import DevSettings
from services.kit.devstack.net import PortRange, reserve_ports

ALERTS_TOPIC = "tavla.compliance.alerts.v1"
REPO_ROOT = Path(__file__).resolve().parents[3]
Progress = Callable[[str], None]  # one line of progress for a person
STACK_ENV = {
    "TAVLA_DEV_XFF_TRUSTED_HOPS": "1",
    "TAVLA_GAME_PRESENCE_SILENCE_SECONDS": "20",
    "TAVLA_GAME_PRESENCE_SWEEP_SECONDS": "0.5",
    "TAVLA_GAME_RECONNECT_SECONDS_UNSAFE": "2",
    "TAVLA_GAME_TIMER_SECONDS": "0.2",
    "TAVLA_LOG_LEVEL": "warning",
}


@dataclass
class DevStack:
    layout: DevSettings  # where the stack's ports are (its offset or base)
    process: subprocess.Popen[bytes] | None = None
    run_dir: Path | None = None
    block: PortRange | None = None  # the reserved ports of a stack started here
    _temp: tempfile.TemporaryDirectory[str] | None = field(default=None, repr=False)

    @property
    def gateway(self) -> str:
        return f"http://127.0.0.1:{self.layout.gateway_port}"

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.layout.port(ports.DEV_KAFKA_PORT)}"

    def metrics_urls(self) -> list[str]:
        return [f"http://127.0.0.1:{self.layout.service_ports(name).metrics}/metrics"
                for name in ports.SERVICES]

    @classmethod
    def attach(cls) -> DevStack:
        return cls(DevSettings.from_env())

    @classmethod
    async def start_healthy(cls, progress: Progress, attempts: int = 3) -> DevStack:
        """``tavla dev`` healthy; started again on another block should something outside
        the reservations (a program binding a fixed port) hold one of its ports."""
        for _ in range(attempts):
            stack = cls.start(progress)
            try:
                await stack.wait_healthy()
                return stack
            except RuntimeError:
                output = stack.output_tail()
                stack.stop()
                if "already in use" not in output:
                    raise RuntimeError(f"tavla dev failed:\n{output}") from None
                progress("a port was taken: tavla dev again on another block of ports")
        raise RuntimeError(f"tavla dev found no free ports in {attempts} attempts")

    def output_tail(self, lines: int = 30) -> str:
        if self.run_dir is None:
            return ""
        output = self.run_dir.parent / "tavla-dev.out"
        text = output.read_text(errors="replace") if output.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    @classmethod
    def start(cls, progress: Progress) -> DevStack:
        # Shared with the tests' stacks: should every block be held, one comes free soon.
        block = reserve_ports(len(ports.DEV_PORTS), patience=120.0)
        temp = tempfile.TemporaryDirectory(prefix="tavla-abuse-eval-")
        run_dir = Path(temp.name) / "run"
        env = {k: v for k, v in os.environ.items()
               if k not in ("TAVLA_DATABASE_URL", "TAVLA_KAFKA_BOOTSTRAP", "TAVLA_DEV_PORT_OFFSET")}
        env.update(STACK_ENV, TAVLA_DEV_DIR=str(run_dir), TAVLA_DEV_PORT_BASE=str(block.first))
        log = (Path(temp.name) / "tavla-dev.out").open("wb")
        process = subprocess.Popen([sys.executable, "-m", "services.cli", "dev"], cwd=REPO_ROOT,
                                   env=env, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        progress(f"tavla dev started (pid {process.pid}, ports from {block.first}, "
                 f"output {log.name})")
        layout = DevSettings(run_dir=run_dir, port_base=block.first)
        return cls(layout, process, run_dir, block, temp)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()  # tavla dev stops every process it started
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        if self._temp is not None:
            self._temp.cleanup()
        if self.block is not None:  # its processes are gone: another stack may have the ports
            self.block.release()

    async def wait_healthy(self, within: float = 240.0) -> None:
        deadline = time.monotonic() + within
        async with httpx.AsyncClient(timeout=2) as client:
            while time.monotonic() < deadline:
                if self.process is not None and self.process.poll() is not None:
                    raise RuntimeError(f"tavla dev exited with {self.process.returncode}")
                try:
                    if (await client.get(self.gateway + "/healthz")).status_code == 200:
                        return
                except httpx.TransportError:
                    pass
                await asyncio.sleep(0.3)
        raise TimeoutError(f"{self.gateway}/healthz not 200 after {within:.0f}s")

    async def backlog(self) -> tuple[float, float, float]:
        """(consumer lag, outbox pending, events consumed) summed over every service."""
        lag = pending = consumed = 0.0
        async with httpx.AsyncClient(timeout=5) as client:
            for url in self.metrics_urls():
                try:
                    text = (await client.get(url)).text
                except httpx.TransportError:
                    continue
                for line in text.splitlines():
                    name, _, value = line.rpartition(" ")
                    if name.startswith("tavla_consumer_lag{"):
                        lag += float(value)
                    elif name.startswith("tavla_outbox_pending{"):
                        pending += float(value)
                    elif name.startswith("tavla_events_consumed_total{"):
                        consumed += float(value)
        return lag, pending, consumed

    async def wait_caught_up(self, progress: Progress, quiet_scrapes: int = 4,
                             within: float = 300.0) -> None:
        """Until every consumer's backlog and outbox is 0 and nothing more is consumed."""
        deadline, last, quiet = time.monotonic() + within, -1.0, 0
        while time.monotonic() < deadline:
            lag, pending, consumed = await self.backlog()
            quiet = quiet + 1 if lag == 0 and pending == 0 and consumed == last else 0
            if quiet >= quiet_scrapes:
                progress(f"caught up: {consumed:.0f} events consumed, backlog 0")
                return
            if quiet == 0:
                progress(f"waiting for consumers: backlog {lag:.0f}, outbox {pending:.0f}, "
                         f"{consumed:.0f} consumed")
            last = consumed
            await asyncio.sleep(1.0)
        raise TimeoutError(f"the consumers did not catch up within {within:.0f}s")


async def read_alerts(bootstrap: str) -> list[object]:
    """Every ComplianceAlert on the compliance stream, from the beginning (no group)."""
    from tavla.antiabuse.v1 import events_pb2

    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    alerts: list[object] = []
    try:
        await consumer.topics()  # fetches the cluster's metadata
        numbers = consumer.partitions_for_topic(ALERTS_TOPIC) or set()
        partitions = [TopicPartition(ALERTS_TOPIC, n) for n in sorted(numbers)]
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        idle = 0
        while idle < 3:  # three empty fetches in a row: the end of the stream
            fetched = await consumer.getmany(timeout_ms=700)
            records = [r for batch in fetched.values() for r in batch]
            idle = 0 if records else idle + 1
            for record in records:
                alert = events_pb2.ComplianceAlert()
                alert.ParseFromString(record.value)
                alerts.append(alert)
    finally:
        await consumer.stop()
    return alerts
