"""What the ``tavla bench`` commands share: servers, service processes, keys, CPU time, percentiles.

A benchmark does production's work: each service it measures runs as its own
process (``python -m services.cli serve <service>``, the command a deployment
runs), at production's log level, against a real PostgreSQL and broker, so the
client's CPU is never counted as the server's and nothing is skipped in-process.
:class:`BenchStack` starts what is missing (PostgreSQL, the broker) or uses the
external servers it is given, and starts and stops the service processes.

Identity is production's too (README: "Security: what is trusted where"). The
run dir gets a key pair per service (``ensure_service_keys``) and an access-token
signing key (``ensure_signing_keys``); every service process gets its own
service key, the public keys of all, loopback binds and the address of an
accounts process (started on first need, with the signing key) whose JWKS it
verifies players' access tokens with. :class:`BenchKeys` is the benchmark's side:
players' calls carry access tokens signed with that key (as accounts issues
them), internal calls the service token of the service the benchmark stands in
for (matchmaking for ``CreateGame`` and ``PlaceHold``, game for ``RaiseHold``).
Wallet processes run the sandbox payment provider, named explicitly; only the
one players deposit bench dollars through is allowed real currencies.

Location is production's too: a geo process (started on first need,
on the dev databases of ``services/geo/devdata.py`` written to the run dir)
answers every service process, which gets its address as ``TAVLA_GEO_ADDRESS``;
players' calls carry what the gateway and accounts would give them, a Malta
residence in the access token and a Malta client address
(``x-tavla-client-address``), so deposits and real-money games ask geo as
deployed. A service believes that address only from the gateway
(``services/kit/gateway_tls.py``), so every process gets a gateway port and the
benchmark's channel to a process goes there with the gateway's certificate (the
run dir's CA, ``services/kit/devstack/certs.py``), as Envoy's does.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import grpc
import jwt
import psutil
from grpc_health.v1 import health_pb2, health_pb2_grpc

from services.kit.client import service_channel
from services.kit.client_signals import CLIENT_ADDRESS_HEADER
from services.kit.devstack.certs import (
    TLS_DIR,
    PlatformCertificates,
    ensure_platform_certificates,
)
from services.kit.devstack.keys import (
    PRIVATE_KEY_FILE,
    SERVICE_KEYS_DIR,
    ServiceKeys,
    ensure_service_keys,
    ensure_signing_keys,
    load_private_key,
)
from services.kit.devstack.net import free_port
from services.kit.events.signing import EventSigner
from services.kit.geo_gate import GEO_ADDRESS
from services.kit.keys import key_id
from services.kit.ports import SERVICES
from services.kit.service_tokens import ServiceTokenMinter

if TYPE_CHECKING:
    from services.kit.devstack.broker import KafkaBroker
    from services.kit.devstack.postgres import PostgresServer

REPO_ROOT = Path(__file__).resolve().parents[2]
# Production's default (README: TAVLA_LOG_LEVEL); a benchmark at a quieter level
# would measure a lighter path than the one deployed.
PRODUCTION_LOG_LEVEL = "info"
# The sandbox provider, named (the wallet refuses to start without a choice),
# confirming at once. Play money only: what every benchmark wallet process gets.
WALLET_BENCH_ENV = {
    "TAVLA_WALLET_PAYMENT_PROVIDER": "sandbox",
    "TAVLA_WALLET_SANDBOX_DELAY_SECONDS": "0",
}
# The wallet process players deposit bench dollars through
# (``services.wallet.bench.fund_players``): the sandbox may move USD there, and
# its poller confirms the deposits promptly. Only that process gets it.
FUNDING_WALLET_ENV = {
    "TAVLA_WALLET_SANDBOX_REAL_MONEY_UNSAFE": "true",
    "TAVLA_NOT_PRODUCTION": "true",
    "TAVLA_WALLET_SANDBOX_POLL_SECONDS": "0.05",
}
ACCESS_TOKEN_SECONDS = 3600  # longer than any run: a player's token is minted once
BENCH_RESIDENCE = "MT"  # every bench player lives in Malta and calls from there

# Metadata for a call made as a player (account id -> ``authorization`` header).
PlayerMetadata = Callable[[str], list[tuple[str, str]]]


@dataclass(frozen=True)
class ServiceProcess:
    """One started ``tavla serve`` process."""

    name: str
    service: str
    address: str
    pid: int
    database_url: str
    metrics_port: int = 0  # its Prometheus /metrics (0: not served; BenchStack(metrics=True))


@dataclass
class BenchKeys:
    """The keys of a run dir, as the benchmark's side uses them.

    ``run_dir`` holds ``jwt-private.pem`` (the key accounts signs access tokens
    with) and ``service-keys/`` (one key pair per service), as ``tavla dev``'s
    run dir does.
    """

    run_dir: Path
    _minters: dict[str, ServiceTokenMinter] = field(default_factory=dict)
    # A process's gRPC address -> its gateway port's, for the processes started here.
    gateway_addresses: dict[str, str] = field(default_factory=dict)

    @classmethod
    def generate(cls, run_dir: Path) -> BenchKeys:
        """A fresh run dir's keys: the signing key and a key pair per service."""
        ensure_signing_keys(run_dir)
        # "ops" is the operator tools' identity, as in `tavla dev`: the health probes use it.
        ensure_service_keys(run_dir, [*SERVICES, "ops"])
        ensure_platform_certificates(run_dir, SERVICES)
        return cls(run_dir)

    @classmethod
    def of_dev_stack(cls) -> BenchKeys:
        """The keys of the running ``tavla dev`` (``TAVLA_DEV_DIR``, default ``.tavla/``)."""
        run_dir = Path(os.environ.get("TAVLA_DEV_DIR") or REPO_ROOT / ".tavla").resolve()
        if not (run_dir / PRIVATE_KEY_FILE).exists():
            raise SystemExit(
                f"no {PRIVATE_KEY_FILE} in {run_dir}: start `tavla dev` first, or set "
                "TAVLA_DEV_DIR to its run dir (the benchmark signs with its keys)"
            )
        return cls(run_dir)

    @property
    def service_keys(self) -> ServiceKeys:
        return ServiceKeys(self.run_dir / SERVICE_KEYS_DIR)

    @property
    def signing_key_file(self) -> Path:
        return self.run_dir / PRIVATE_KEY_FILE

    def service_env(self, service: str) -> dict[str, str]:
        """What ``tavla serve <service>`` needs to sign and check service tokens."""
        keys = self.service_keys
        return {
            "TAVLA_SERVICE_KEY_FILE": str(keys.private_key_file(service)),
            "TAVLA_SERVICE_PUBLIC_KEYS_DIR": str(keys.public_keys_dir),
        }

    def players(self, residence: str = BENCH_RESIDENCE) -> PlayerMetadata:
        """Call metadata per account, minted once: an access token as accounts issues it
        (with the ``residence`` claim, Malta by default) and the Malta client address
        the gateway would pass."""
        from services.geo.devdata import MALTA_IP

        key = load_private_key(self.signing_key_file)
        kid = key_id(key.public_key())
        minted: dict[str, list[tuple[str, str]]] = {}

        def metadata(account: str) -> list[tuple[str, str]]:
            if account not in minted:
                now = int(time.time())
                claims = {
                    "iss": "tavla", "aud": "tavla-api", "sub": account, "iat": now,
                    "exp": now + ACCESS_TOKEN_SECONDS, "jti": uuid.uuid4().hex,
                    "residence": residence,
                }  # fmt: skip
                token = jwt.encode(claims, key, algorithm="ES256", headers={"kid": kid})
                minted[account] = [
                    ("authorization", f"Bearer {token}"),
                    (CLIENT_ADDRESS_HEADER, MALTA_IP),
                ]
            return minted[account]

        return metadata

    def event_signer(self, service: str) -> EventSigner:
        """Signs events as ``service``'s relay does (the benchmark writes some itself)."""
        return EventSigner(service, load_private_key(self.service_keys.private_key_file(service)))

    def minter(self, caller: str) -> ServiceTokenMinter:
        """Service tokens signed as ``caller`` (the service the benchmark stands in for)."""
        if caller not in self._minters:
            key = load_private_key(self.service_keys.private_key_file(caller))
            self._minters[caller] = ServiceTokenMinter(caller, key)
        return self._minters[caller]

    @property
    def certificates(self) -> PlatformCertificates:
        return PlatformCertificates(self.run_dir / TLS_DIR)

    def channel(self, address: str, *, target: str, caller: str) -> grpc.aio.Channel:
        """A channel to ``target`` at ``address`` whose calls carry ``caller``'s service token,
        on the process's gateway port with the gateway's certificate when it has one."""
        gateway = self.gateway_addresses.get(address)
        if gateway is None:
            return service_channel(address, target=target, credentials=self.minter(caller))
        certs = self.certificates
        tls = grpc.ssl_channel_credentials(
            certs.ca_file.read_bytes(), certs.gateway_key_file.read_bytes(),
            certs.gateway_cert_file.read_bytes(),
        )
        return service_channel(gateway, target=target, credentials=self.minter(caller), tls=tls)


class BenchStack:
    """PostgreSQL, the broker, keys and service processes for one benchmark run.

    Everything started is stopped when ``stack`` closes.
    """

    def __init__(
        self,
        stack: ExitStack,
        *,
        database_url: str | None = None,
        bootstrap: str | None = None,
        postgres_settings: Mapping[str, str] | None = None,
        metrics: bool = False,
        service_env: Mapping[str, str] | None = None,
    ) -> None:
        """``metrics``: every service process serves its Prometheus /metrics on a port of
        its own (:attr:`ServiceProcess.metrics_port`), for a benchmark that reads them.
        ``service_env``: settings every service process gets (accounts and geo included)."""
        from services.kit.devstack.supervisor import Supervisor

        self.run_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="tavla-bench-")))
        self.supervisor = stack.enter_context(Supervisor(self.run_dir / "logs"))
        stack.callback(self._stop_services)  # before the supervisor stops the servers
        self.keys = BenchKeys.generate(self.run_dir)
        self._server_url = database_url
        self._bootstrap = bootstrap
        self._postgres_settings = postgres_settings
        self._metrics = metrics
        self._service_env = dict(service_env or {})
        self._accounts: ServiceProcess | None = None
        self._geo: ServiceProcess | None = None
        # The servers it started itself (None when given external ones), and each
        # service's command line, so a fault suite can kill one and start it again.
        self.postgres: PostgresServer | None = None
        self.broker: KafkaBroker | None = None
        self._launches: dict[str, tuple[list[str], dict[str, str]]] = {}

    @property
    def server_url(self) -> str:
        """The PostgreSQL server (asyncpg URL), started on first use when none was given."""
        if self._server_url is None:
            from services.kit.devstack.postgres import PostgresServer

            postgres = PostgresServer(
                self.run_dir / "postgres", free_port(), self.supervisor,
                settings=self._postgres_settings,
            )  # fmt: skip
            postgres.start()
            self.postgres = postgres
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
            self.broker = broker
            self._bootstrap = broker.bootstrap
        return self._bootstrap

    @property
    def accounts(self) -> ServiceProcess:
        """The accounts process whose JWKS the others verify access tokens with.

        Started once, and SERVING before the first service that needs it starts (unless
        :meth:`start_shared` started it): a service fetches the JWKS as it starts, and
        after a failed fetch it refuses players' calls until its next attempt.
        """
        if self._accounts is None:
            self._accounts = self._start_accounts()
            asyncio.run(self.wait_serving(self._accounts))
        return self._accounts

    @property
    def geo(self) -> ServiceProcess:
        """The geo process every other service asks, on the dev databases (started once,
        and SERVING before the first service that needs it starts, unless
        :meth:`start_shared` started it)."""
        if self._geo is None:
            self._geo = self._start_geo()
            asyncio.run(self.wait_serving(self._geo))
        return self._geo

    def start_shared(self) -> tuple[ServiceProcess, ServiceProcess]:
        """Accounts and geo started without waiting for them, so that the services started
        next start beside them; the caller waits for all (:meth:`wait_serving`). A
        process that started before accounts served is not SERVING until it fetched the
        JWKS (it tries again every second), so waiting for every process covers it."""
        if self._accounts is None:
            self._accounts = self._start_accounts()
        if self._geo is None:
            self._geo = self._start_geo()
        return self._accounts, self._geo

    def _start_accounts(self) -> ServiceProcess:
        return self._start(
            "accounts",
            "accounts",
            self.new_database("accounts_bench"),
            {"TAVLA_JWT_PRIVATE_KEY_FILE": str(self.keys.signing_key_file)},
        )

    def _start_geo(self) -> ServiceProcess:
        return self._start(
            "geo",
            "geo",
            self.new_database("geo_bench"),
            {"TAVLA_ACCOUNTS_ADDRESS": self.accounts.address, **self.geo_dev_databases()},
        )

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
        port: int | None = None,
    ) -> ServiceProcess:
        """``tavla serve <service>`` as ``name`` (its log in the run directory); not yet ready.

        Its gRPC port is ``port`` when given (a process that must be named to another
        before it starts: analysis and game each need the other's address), else a free one.

        It gets its service key, the public keys of all, loopback binds, the
        accounts process's address (started first if need be), the geo process's
        (all but geo itself), for the wallet the sandbox provider
        (:data:`WALLET_BENCH_ENV`), for geo the dev databases unless
        ``extra_env`` names others (``tavla bench geo`` does), and for the game an
        analysis address nothing listens on unless ``extra_env`` names one (the game
        refuses to start without one; the benchmarks' games end by play, not by
        disconnection).
        """
        env = {"TAVLA_ACCOUNTS_ADDRESS": self.accounts.address}
        if service != "geo":
            env[GEO_ADDRESS] = self.geo.address
        if service == "game":
            env["TAVLA_ANALYSIS_ADDRESS"] = f"127.0.0.1:{free_port()}"
        if service == "wallet":
            env.update(WALLET_BENCH_ENV)
        if service == "geo":
            env.update(self.geo_dev_databases())  # unless the caller names its own (below)
        env.update(extra_env or {})
        return self._start(name, service, database_url, env, port)

    def geo_dev_databases(self) -> dict[str, str]:
        """Geo refuses to start without its two databases: the small dev ones
        (services/geo/devdata.py) in the run dir, as ``tavla dev`` gives it."""
        from services.geo.devdata import write_dev_databases  # mmdb-writer: the local extra

        directory = self.run_dir / "geo"
        city, anonymous = directory / "city.mmdb", directory / "anonymous.mmdb"
        if not city.exists():
            city, anonymous = write_dev_databases(directory)
        return {"TAVLA_GEO_CITY_DB": str(city), "TAVLA_GEO_ANONYMOUS_DB": str(anonymous)}

    def _start(
        self,
        name: str,
        service: str,
        database_url: str,
        extra_env: dict[str, str],
        port: int | None = None,
    ) -> ServiceProcess:
        port, gateway_port = port or free_port(), free_port()
        metrics_port = free_port() if self._metrics else 0
        env = dict(os.environ)
        env.update(
            TAVLA_DATABASE_URL=database_url,
            TAVLA_KAFKA_BOOTSTRAP=self.bootstrap,
            TAVLA_GRPC_PORT=str(port),
            TAVLA_METRICS_PORT=str(metrics_port),
            # Only this machine can reach a benchmark's services.
            TAVLA_GRPC_BIND="127.0.0.1",
            TAVLA_METRICS_BIND="127.0.0.1",
            TAVLA_LOG_LEVEL=PRODUCTION_LOG_LEVEL,
            **self.keys.service_env(service),
            **self.keys.certificates.service_env(service, gateway_port),
            **self._service_env,
        )
        env.update(extra_env)
        argv = [sys.executable, "-m", "services.cli", "serve", service]
        process = self.supervisor.start(name, argv, env=env, cwd=REPO_ROOT)
        self._launches[name] = (argv, env)
        address = f"127.0.0.1:{port}"
        self.keys.gateway_addresses[address] = f"127.0.0.1:{gateway_port}"
        return ServiceProcess(name, service, address, process.pid, database_url, metrics_port)

    def restart_service(self, service: ServiceProcess) -> ServiceProcess:
        """The same ``tavla serve`` again (same port, same settings) after it stopped or was
        killed; not yet ready."""
        argv, env = self._launches[service.name]
        self.supervisor.stop(service.name)  # reaps a killed process; stops a live one
        process = self.supervisor.start(service.name, argv, env=env, cwd=REPO_ROOT)
        return ServiceProcess(
            service.name, service.service, service.address, process.pid, service.database_url,
            service.metrics_port,
        )  # fmt: skip

    async def wait_serving(self, *services: ServiceProcess) -> None:
        """Until each service is SERVING (else its log tail, and TimeoutError)."""
        for service in services:
            try:
                await wait_serving(service.address, service.service, self.keys.minter("ops"))
            except TimeoutError:
                print(self.log_tail(service), file=sys.stderr)
                raise

    def stop_service(self, service: ServiceProcess) -> None:
        """A graceful stop (SIGTERM), as a rolling deployment does."""
        self.supervisor.stop(service.name)

    def _stop_services(self) -> None:
        """Every service process stopped together, each draining on its own (the supervisor
        stops its children one after another, each waiting for the one before)."""
        started = [p for p in self.supervisor.processes if p.name in self._launches]
        for process in started:
            process.send_stop()
        deadline = time.monotonic() + self.supervisor.stop_timeout
        for process in started:
            process.finish_stop(deadline)

    def log_tail(self, service: ServiceProcess, lines: int = 40) -> str:
        return self.supervisor.get(service.name).log_tail(lines)


async def wait_serving(
    address: str, target: str, credentials: ServiceTokenMinter, within_seconds: float = 120.0
) -> None:
    """Until the service's overall health is SERVING (database and broker reachable).

    The health check is open to every caller; the channel is a kit channel all the same.
    """
    request = health_pb2.HealthCheckRequest()
    deadline = time.monotonic() + within_seconds
    async with service_channel(address, target=target, credentials=credentials) as channel:
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
