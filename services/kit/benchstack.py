"""What the ``tavla bench`` commands share: servers, service processes, CPU time, percentiles.

A benchmark does production's work: each service it measures runs as its own
process (``python -m services.cli serve <service>``, the command a deployment
runs), at production's log level, against a real PostgreSQL and broker, so the
client's CPU is never counted as the server's and nothing is skipped in-process.
:class:`BenchStack` starts what is missing (PostgreSQL, the broker) or uses the
external servers it is given, and starts and stops the service processes.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
import uuid
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import grpc
import psutil
from grpc_health.v1 import health_pb2, health_pb2_grpc

from services.kit.client import insecure_channel
from services.kit.devstack.net import free_port

REPO_ROOT = Path(__file__).resolve().parents[2]
# Production's default (README: TAVLA_LOG_LEVEL); a benchmark at a quieter level
# would measure a lighter path than the one deployed.
PRODUCTION_LOG_LEVEL = "info"


@dataclass(frozen=True)
class ServiceProcess:
    """One started ``tavla serve`` process."""

    name: str
    address: str
    pid: int
    database_url: str


class BenchStack:
    """PostgreSQL, the broker and service processes for one benchmark run.

    Everything started is stopped when ``stack`` closes.
    """

    def __init__(
        self, stack: ExitStack, *, database_url: str | None = None, bootstrap: str | None = None
    ) -> None:
        from services.kit.devstack.supervisor import Supervisor

        self.run_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="tavla-bench-")))
        self.supervisor = stack.enter_context(Supervisor(self.run_dir / "logs"))
        self._server_url = database_url
        self._bootstrap = bootstrap

    @property
    def server_url(self) -> str:
        """The PostgreSQL server (asyncpg URL), started on first use when none was given."""
        if self._server_url is None:
            from services.kit.devstack.postgres import PostgresServer

            postgres = PostgresServer(self.run_dir / "postgres", free_port(), self.supervisor)
            postgres.start()
            self._server_url = postgres.url()
        return self._server_url

    @property
    def bootstrap(self) -> str:
        """The broker, started with the topics of ``deploy/topics.txt`` when none was given."""
        if self._bootstrap is None:
            from services.kit.devstack.broker import KafkaBroker

            broker = KafkaBroker(free_port(), self.supervisor)
            broker.start()
            broker.create_topics_from_file()
            self._bootstrap = broker.bootstrap
        return self._bootstrap

    def new_database(self, prefix: str) -> str:
        """A fresh database on the server: its URL."""
        from services.kit.devstack.postgres import ensure_database, with_database

        name = f"{prefix}_{uuid.uuid4().hex[:8]}"
        ensure_database(self.server_url, name)
        return with_database(self.server_url, name)

    def start_service(
        self,
        name: str,
        service: str,
        database_url: str,
        extra_env: dict[str, str] | None = None,
    ) -> ServiceProcess:
        """``tavla serve <service>`` as ``name`` (its log in the run directory); not yet ready."""
        port = free_port()
        env = dict(os.environ)
        env.update(
            TAVLA_DATABASE_URL=database_url,
            TAVLA_KAFKA_BOOTSTRAP=self.bootstrap,
            TAVLA_GRPC_PORT=str(port),
            TAVLA_METRICS_PORT="0",
            TAVLA_LOG_LEVEL=PRODUCTION_LOG_LEVEL,
        )
        env.update(extra_env or {})
        argv = [sys.executable, "-m", "services.cli", "serve", service]
        process = self.supervisor.start(name, argv, env=env, cwd=REPO_ROOT)
        return ServiceProcess(name, f"127.0.0.1:{port}", process.pid, database_url)

    def stop_service(self, service: ServiceProcess) -> None:
        """A graceful stop (SIGTERM), as a rolling deployment does."""
        self.supervisor.stop(service.name)

    def log_tail(self, service: ServiceProcess, lines: int = 40) -> str:
        return self.supervisor.get(service.name).log_tail(lines)


async def wait_serving(address: str, within_seconds: float = 120.0) -> None:
    """Until the service's overall health is SERVING (database and broker reachable)."""
    request = health_pb2.HealthCheckRequest()
    deadline = time.monotonic() + within_seconds
    async with insecure_channel(address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while True:
            try:
                reply = await stub.Check(request, timeout=2)
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return
            except grpc.aio.AioRpcError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"the service at {address} was not SERVING after {within_seconds:.0f}s"
                )
            await asyncio.sleep(0.2)


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds the processes used so far."""
    total = 0.0
    for pid in pids:
        times = psutil.Process(pid).cpu_times()
        total += float(times.user + times.system)
    return total


def percentile(values: list[float], fraction: float) -> float:
    """The nearest-rank percentile (0 when there are no values)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]
