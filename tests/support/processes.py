"""Services as real ``tavla serve <service>`` processes, for tests that kill them.

"Survives a crash" is shown by SIGKILL of a real process and a restart, never by a
graceful stop (the in-process helpers in :mod:`tests.support.services` can only
stop gracefully). :func:`service_environment` is the one place that says what a
deployment gives a service process (database, broker, ports, credentials when the
services need them), so every subprocess test starts services the same way.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import functools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from services.kit.devstack.net import free_port
from tests.support.identity import caller_channel, gateway_port_env, service_env

REPO = Path(__file__).resolve().parents[2]
READY_TIMEOUT = 120.0
# How long a stopping process may drain before SIGKILL.
STOP_TIMEOUT = 10.0


def service_environment(
    service: str, database_url: str, bootstrap: str, *, accounts_address: str, **extra: str
) -> dict[str, str]:
    """What a deployment gives ``tavla serve <service>``, on free ports, polling fast.

    The caller's own ``TAVLA_*`` variables are dropped: the process gets exactly
    this configuration (plus ``extra``, e.g. ``TAVLA_FAILPOINTS``): its service key,
    the accounts service whose JWKS verifies players' tokens, loopback binds.
    """
    env = {name: value for name, value in os.environ.items() if not name.startswith("TAVLA_")}
    env.update(
        TAVLA_DATABASE_URL=database_url,
        TAVLA_KAFKA_BOOTSTRAP=bootstrap,
        TAVLA_GRPC_PORT=str(free_port()),
        TAVLA_METRICS_PORT=str(free_port()),
        TAVLA_GRPC_BIND="127.0.0.1",
        TAVLA_METRICS_BIND="127.0.0.1",
        TAVLA_ACCOUNTS_ADDRESS=accounts_address,
        **service_env(service),
        **gateway_port_env(service),
        TAVLA_READINESS_INTERVAL_SECONDS="1",  # as tests.support.services.fast_settings
        TAVLA_OUTBOX_POLL_SECONDS="0.2",
        TAVLA_SHUTDOWN_GRACE_SECONDS="2",
        TAVLA_LOG_LEVEL="info",
        # A killed process's partitions move on after 3 s instead of 10 s.
        TAVLA_KAFKA_SESSION_TIMEOUT_MS="3000",
    )
    if service == "geo":  # it refuses to start without both databases: the dev ones
        city, anonymous = geo_dev_databases()
        env.update(TAVLA_GEO_CITY_DB=str(city), TAVLA_GEO_ANONYMOUS_DB=str(anonymous))
    if service == "game":  # it refuses to start without one: nothing listens on this one
        env.update(TAVLA_ANALYSIS_ADDRESS=f"127.0.0.1:{free_port()}")
    if service == "wallet":  # the sandbox provider, for test dollars too, confirming at once
        env.update(
            TAVLA_WALLET_PAYMENT_PROVIDER="sandbox",
            TAVLA_WALLET_SANDBOX_REAL_MONEY_UNSAFE="true",
            TAVLA_NOT_PRODUCTION="true",
            TAVLA_WALLET_SANDBOX_DELAY_SECONDS="0",
        )
    env.update(extra)
    return env


@functools.cache
def geo_dev_databases() -> tuple[Path, Path]:
    """The dev City and Anonymous-IP databases (services/geo/devdata.py), written once per run."""
    from services.geo.devdata import write_dev_databases

    directory = Path(tempfile.mkdtemp(prefix="tavla-geo-dbs-"))
    atexit.register(shutil.rmtree, directory, True)
    return write_dev_databases(directory)


async def tavla(*arguments: str, env: dict[str, str], timeout: float = 120.0) -> tuple[int, str]:
    """Run the ``tavla`` command itself (e.g. ``wallet audit``): exit status, output."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "services.cli", *arguments, cwd=REPO, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    async with asyncio.timeout(timeout):
        output, _ = await process.communicate()
    assert process.returncode is not None
    return process.returncode, output.decode(errors="replace")


@dataclass
class ServeProcess:
    """One ``tavla serve <service>`` process; its output goes to ``log``."""

    service: str
    process: subprocess.Popen[bytes]
    env: dict[str, str]
    log: Path

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.env['TAVLA_GRPC_PORT']}"

    def channel(self) -> grpc.aio.Channel:
        """A channel to the process with another service's credential for internal methods,
        on its gateway port with the gateway's certificate (a client address is believed)."""
        if "TAVLA_GATEWAY_PORT" not in self.env:
            return caller_channel(self.address, target=self.service)
        return caller_channel(f"127.0.0.1:{self.env['TAVLA_GATEWAY_PORT']}",
                              target=self.service, gateway=True)

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    async def wait_serving(self, timeout: float = READY_TIMEOUT) -> None:
        """Until its health service answers SERVING (database and broker reachable)."""
        channel = self.channel()
        health = health_pb2_grpc.HealthStub(channel)
        try:
            async with asyncio.timeout(timeout):
                while True:
                    if self.process.poll() is not None:
                        raise AssertionError(
                            f"tavla serve {self.service} exited with {self.process.returncode}:\n"
                            f"{self.output()}"
                        )
                    try:
                        answer = await health.Check(health_pb2.HealthCheckRequest(), timeout=1)
                        if answer.status == health_pb2.HealthCheckResponse.SERVING:
                            return
                    except grpc.aio.AioRpcError:
                        pass
                    await asyncio.sleep(0.1)
        finally:
            await channel.close()

    async def wait_killed(self, timeout: float = 60.0) -> None:
        """Until the process died of SIGKILL (a fail point's, or :meth:`kill`'s)."""
        async with asyncio.timeout(timeout):
            while self.process.poll() is None:
                await asyncio.sleep(0.05)
        assert self.process.returncode == -signal.SIGKILL, (
            f"tavla serve {self.service} exited with {self.process.returncode}, not SIGKILL:\n"
            f"{self.output()}"
        )

    async def kill(self) -> None:
        """SIGKILL, from outside: no handler runs, nothing is flushed."""
        self.process.send_signal(signal.SIGKILL)
        await self.wait_killed()

    def stop(self) -> None:
        """At the end of a test: SIGTERM, then SIGKILL, to the process and what it started.

        It leads its own process group (``start_new_session``), so a child it left
        behind when it was killed (the game's bear-off builder) goes too.
        """
        self.send_stop()
        self.finish_stop(time.monotonic() + STOP_TIMEOUT)

    def send_stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)

    def finish_stop(self, deadline: float) -> None:
        """Wait for the stopping process until ``deadline``, then SIGKILL its group."""
        group = self.process.pid
        try:
            self.process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, signal.SIGKILL)
            self.process.wait(STOP_TIMEOUT)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGKILL)  # children that outlived their parent


class ServeProcesses:
    """Starts ``tavla serve`` processes for one test and ends every one of them after it."""

    def __init__(self, directory: Path) -> None:
        self._directory = directory
        self._started: list[ServeProcess] = []

    def launch(self, service: str, env: dict[str, str]) -> ServeProcess:
        log = self._directory / f"{service}-{len(self._started)}.log"
        with log.open("wb") as sink:
            process = subprocess.Popen(
                [sys.executable, "-m", "services.cli", "serve", service],
                cwd=REPO,
                env=env,
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        started = ServeProcess(service, process, env, log)
        self._started.append(started)
        return started

    async def start(self, service: str, env: dict[str, str]) -> ServeProcess:
        """Launch and wait until it serves."""
        started = self.launch(service, env)
        await started.wait_serving()
        return started

    def stop_all(self) -> None:
        """Stop them all at once: each drains on its own, so none waits for another's stop."""
        for started in self._started:
            started.send_stop()
        deadline = time.monotonic() + STOP_TIMEOUT
        for started in self._started:
            started.finish_stop(deadline)


@contextmanager
def serve_processes(directory: Path) -> Iterator[ServeProcesses]:
    processes = ServeProcesses(directory)
    try:
        yield processes
    finally:
        processes.stop_all()
