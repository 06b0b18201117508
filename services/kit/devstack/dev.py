"""`tavla dev`: the whole platform on one machine, in the foreground.

PostgreSQL (or the server in TAVLA_DATABASE_URL), the broker (or the one in
TAVLA_KAFKA_BOOTSTRAP), the topics, the local signing keys, geo's small
MaxMind-format databases (documentation ranges, ``services/geo/devdata.py``,
written into the run directory), every service in
`services.kit.ports` as its own `tavla serve` process, and Envoy in front.
It waits for the gateway's /healthz, prints what runs where, and stays until
Ctrl-C or SIGTERM, then stops everything it started and exits 0. A child that
dies makes it print that child's log tail, stop the rest and exit 1.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from urllib.parse import urlsplit

import psutil

from services.kit import ports
from services.kit.config import LOG_LEVELS, ConfigError, Env
from services.kit.devstack.broker import KafkaBroker, create_topics, read_topics
from services.kit.devstack.certs import PlatformCertificates, ensure_platform_certificates
from services.kit.devstack.envoy import EnvoyGateway, render_config, validate_config, write_config
from services.kit.devstack.keys import ServiceKeys, ensure_service_keys, ensure_signing_keys
from services.kit.devstack.postgres import PostgresServer, ensure_database, with_database
from services.kit.devstack.supervisor import (
    ProcessFailed,
    StopRequested,
    Supervisor,
    raise_if_stop_requested,
    request_stop,
)
from services.kit.events.connection import PLAINTEXT, KafkaSecurity

REPO_ROOT = Path(__file__).resolve().parents[3]
_Handler = Callable[[int, FrameType | None], object] | int | signal.Handlers


# The dev stack's payments: the sandbox, chosen by name, allowed real currencies by its
# loud flag so a developer can deposit sandbox USD. Production sets neither (the chart).
DEV_WALLET_PAYMENTS = {
    "TAVLA_WALLET_PAYMENT_PROVIDER": "sandbox",
    "TAVLA_WALLET_SANDBOX_REAL_MONEY_UNSAFE": "true",
    "TAVLA_NOT_PRODUCTION": "true",
}


class DevError(RuntimeError):
    """A problem the person running `tavla dev` can fix; printed without a traceback."""


@dataclass(frozen=True)
class DevSettings:
    """Where things go and which ports they use; all from TAVLA_* variables."""

    run_dir: Path
    port_offset: int = 0
    # Every port laid out from here instead, one after another in `ports.DEV_PORTS`'s
    # order: the tests put each stack in a block of ports of its own below the kernel's
    # ephemeral range (services/kit/devstack/net.py), where no client takes one.
    port_base: int | None = None
    database_url: str | None = None
    kafka_bootstrap: str | None = None
    # TLS and SASL of that external broker (services/kit/events/connection.py); the
    # services started inherit the same variables.
    kafka_security: KafkaSecurity = PLAINTEXT
    log_level: str = "info"
    healthz_timeout: float = 120.0
    # Proxies in front of the gateway whose X-Forwarded-For it believes: 0 locally (nothing
    # stands in front); end-to-end tests set 1 to say where their players are.
    xff_num_trusted_hops: int = 0
    descriptor: Path = REPO_ROOT / "gen" / "tavla.pb"
    topics_file: Path = REPO_ROOT / "deploy" / "topics.txt"
    services: Mapping[str, ports.ServicePorts] = field(default_factory=lambda: ports.SERVICES)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> DevSettings:
        env = Env(environ)
        try:
            settings = cls(
                run_dir=Path(env.optional_text("TAVLA_DEV_DIR") or REPO_ROOT / ".tavla").resolve(),
                port_offset=env.integer("TAVLA_DEV_PORT_OFFSET", 0, low=0, high=5000),
                port_base=_port_base(env),
                database_url=env.optional_text("TAVLA_DATABASE_URL"),
                kafka_bootstrap=env.optional_text("TAVLA_KAFKA_BOOTSTRAP"),
                kafka_security=KafkaSecurity.from_env(env),
                log_level=env.choice("TAVLA_LOG_LEVEL", "info", LOG_LEVELS),
                healthz_timeout=float(env.integer("TAVLA_DEV_TIMEOUT", 120, low=1, high=3600)),
                xff_num_trusted_hops=env.integer("TAVLA_DEV_XFF_TRUSTED_HOPS", 0, low=0, high=2),
            )
        except ConfigError as error:
            raise DevError(str(error)) from None
        if settings.database_url and not settings.database_url.startswith("postgresql+asyncpg://"):
            raise DevError("TAVLA_DATABASE_URL must be a postgresql+asyncpg:// URL")
        return settings

    def port(self, base: int) -> int:
        """Where the component whose port is ``base`` in `services.kit.ports` listens."""
        if self.port_base is not None:
            return self.port_base + ports.DEV_PORTS.index(base)
        return base + self.port_offset

    @property
    def gateway_port(self) -> int:
        return self.port(ports.GATEWAY_PORT)

    @property
    def admin_port(self) -> int:
        return self.port(ports.GATEWAY_ADMIN_PORT)

    def service_ports(self, name: str) -> ports.ServicePorts:
        base = self.services[name]
        return ports.ServicePorts(grpc=self.port(base.grpc), metrics=self.port(base.metrics),
                                  gateway=self.port(base.gateway))


def _port_base(env: Env) -> int | None:
    if env.optional_text("TAVLA_DEV_PORT_BASE") is None:
        return None
    if env.optional_text("TAVLA_DEV_PORT_OFFSET") is not None:
        raise ConfigError("TAVLA_DEV_PORT_BASE and TAVLA_DEV_PORT_OFFSET: set one of them")
    return env.integer("TAVLA_DEV_PORT_BASE", 0, low=1024, high=65535 - len(ports.DEV_PORTS))


@dataclass
class Row:
    component: str
    address: str
    pid: str
    log: str


def progress(message: str) -> None:
    print(f"[tavla dev] {message}", flush=True)


def run(settings: DevSettings) -> int:
    """Start everything, stay in the foreground, stop everything; the exit status."""
    previous = _install_signal_handlers()
    # Services drain for up to TAVLA_SHUTDOWN_GRACE_SECONDS (10 s by default) on SIGTERM.
    supervisor = Supervisor(settings.run_dir / "logs", stop_timeout=15.0)
    try:
        rows = _start_stack(settings, supervisor)
        print(format_table(rows), flush=True)
        progress("ready; Ctrl-C stops everything")
        return _watch(supervisor)
    except StopRequested:
        progress("stop requested")
        return 0
    except (DevError, ProcessFailed, RuntimeError, ValueError, OSError) as error:
        # initdb, psql, topic creation and config validation fail with messages meant
        # for a person; a traceback would bury them.
        print(f"[tavla dev] error: {error}", file=sys.stderr, flush=True)
        return 1
    finally:
        # Another Ctrl-C now only sets the flag again: it cannot cut the cleanup short.
        progress("stopping every process started")
        stopping = time.monotonic()
        supervisor.close()
        _reap_strays()
        progress(f"stopped ({time.monotonic() - stopping:.1f}s)")
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _install_signal_handlers() -> dict[signal.Signals, _Handler]:
    def on_signal(signum: int, frame: FrameType | None) -> None:
        request_stop()

    previous: dict[signal.Signals, _Handler] = {}
    for signum in (signal.SIGINT, signal.SIGTERM):
        old = signal.getsignal(signum)
        previous[signum] = old if old is not None else signal.SIG_DFL
        signal.signal(signum, on_signal)
    return previous


def _reap_strays() -> None:
    """Kill any child still alive after the supervisor's stop (belt and braces)."""
    strays = psutil.Process().children(recursive=True)
    for child in strays:
        with contextlib.suppress(psutil.Error):
            child.kill()
    psutil.wait_procs(strays, timeout=5)


def _start_stack(settings: DevSettings, supervisor: Supervisor) -> list[Row]:
    if not settings.descriptor.exists():
        raise DevError(f"{settings.descriptor} is missing: run `make proto` first")
    _check_ports_free(settings)
    started = time.monotonic()
    rows: list[Row] = []
    database_url = _start_postgres(settings, supervisor, rows)
    raise_if_stop_requested()
    bootstrap = _start_broker(settings, supervisor, rows)
    raise_if_stop_requested()
    keys = ensure_signing_keys(settings.run_dir)
    progress(f"signing key {keys.private_key_file} (public JWKS {keys.jwks_file})")
    # "ops" is the operator tools' identity (freezes, reviews): its key is made too.
    service_keys = ensure_service_keys(settings.run_dir, [*settings.services, "ops"])
    progress(f"service keys in {service_keys.directory}")
    certs = ensure_platform_certificates(settings.run_dir, settings.services)
    progress(f"gateway-to-service TLS: CA and certificates in {certs.directory}")
    extra_env = {"geo": _geo_databases(settings.run_dir)} if "geo" in settings.services else {}
    for name in settings.services:
        raise_if_stop_requested()
        _start_service(settings, supervisor, rows, name, database_url, bootstrap,
                       keys.private_key_file, service_keys,
                       {**certs.service_env(name, settings.service_ports(name).gateway),
                        **extra_env.get(name, {})})
    raise_if_stop_requested()
    gateway = _start_gateway(settings, supervisor, rows, keys.jwks_file, certs)
    _wait_healthy(settings, supervisor, gateway)
    progress(f"GET {gateway.base_url}/healthz -> 200 after {time.monotonic() - started:.1f}s")
    return rows


def _geo_databases(run_dir: Path) -> dict[str, str]:
    """geo's City and Anonymous-IP databases, rewritten at every start, as its environment.

    Geo refuses to start without both (a production setting never defaults to
    "no decision"); here they are the small documentation-range databases whose
    named addresses (``FLORIDA_IP``, ``MALTA_IP``, ...) are in services/geo/devdata.py.
    """
    from services.geo.devdata import write_dev_databases  # mmdb-writer: the local extra

    city, anonymous = write_dev_databases(run_dir / "geo")
    progress(f"geo: dev databases {city} and {anonymous} (documentation ranges)")
    return {"TAVLA_GEO_CITY_DB": str(city), "TAVLA_GEO_ANONYMOUS_DB": str(anonymous)}


def _check_ports_free(settings: DevSettings) -> None:
    wanted = {"gateway": settings.gateway_port, "gateway admin": settings.admin_port}
    if settings.database_url is None:
        wanted["postgres"] = settings.port(ports.DEV_POSTGRES_PORT)
    if settings.kafka_bootstrap is None:
        wanted["broker"] = settings.port(ports.DEV_KAFKA_PORT)
    for name in settings.services:
        service = settings.service_ports(name)
        wanted[f"{name} grpc"] = service.grpc
        wanted[f"{name} gateway"] = service.gateway
        wanted[f"{name} metrics"] = service.metrics
    busy = [f"{what} {port}" for what, port in wanted.items() if not port_free(port)]
    if busy:
        raise DevError(
            "ports already in use on 127.0.0.1: " + ", ".join(busy)
            + " (another `tavla dev`? TAVLA_DEV_PORT_OFFSET shifts every port)"
        )


def port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _start_postgres(settings: DevSettings, supervisor: Supervisor, rows: list[Row]) -> str:
    """Start the local server unless one is given; create the per-service databases."""
    if settings.database_url is not None:
        server_url = settings.database_url
        where = urlsplit(server_url).hostname or "?"
        progress(f"postgres: using TAVLA_DATABASE_URL at {where}")
        rows.append(Row("postgres (external)", f"{where}:{urlsplit(server_url).port or 5432}",
                        "-", "-"))
    else:
        server = PostgresServer(
            settings.run_dir / "postgres", settings.port(ports.DEV_POSTGRES_PORT), supervisor
        )
        progress(f"postgres: starting on 127.0.0.1:{server.port}")
        took = server.start()
        progress(f"postgres: accepting connections ({took:.1f}s)")
        server_url = server.url()
        rows.append(_row("postgres", f"127.0.0.1:{server.port}", supervisor, server.name))
    for name in settings.services:
        if ensure_database(server_url, database_name(name)):
            progress(f"postgres: created database {database_name(name)}")
    return server_url


def database_name(service: str) -> str:
    return f"tavla_{service}"


def _start_broker(settings: DevSettings, supervisor: Supervisor, rows: list[Row]) -> str:
    topics = read_topics(settings.topics_file)
    if settings.kafka_bootstrap is not None:
        bootstrap = settings.kafka_bootstrap
        progress(f"broker: using TAVLA_KAFKA_BOOTSTRAP {bootstrap}")
        created = create_topics(bootstrap, topics, settings.kafka_security)
        rows.append(Row("broker (external)", bootstrap, "-", "-"))
    else:
        broker = KafkaBroker(settings.port(ports.DEV_KAFKA_PORT), supervisor)
        progress(f"broker: starting Tansu on {broker.bootstrap}")
        took = broker.start()
        progress(f"broker: accepting connections ({took:.1f}s)")
        created = broker.create_topics(topics)
        bootstrap = broker.bootstrap
        rows.append(_row("broker (tansu)", bootstrap, supervisor, broker.name))
    progress(f"broker: {len(topics)} topics ready ({len(created)} created)")
    return bootstrap


def _start_service(
    settings: DevSettings,
    supervisor: Supervisor,
    rows: list[Row],
    name: str,
    server_url: str,
    bootstrap: str,
    private_key: Path,
    service_keys: ServiceKeys,
    extra_env: Mapping[str, str],
) -> None:
    service = settings.service_ports(name)
    env = dict(os.environ)
    env.update(
        # Only this machine can reach the services; the gateway is the way in.
        TAVLA_GRPC_BIND="127.0.0.1",
        TAVLA_METRICS_BIND="127.0.0.1",
        TAVLA_GRPC_REFLECTION="true",
        TAVLA_SERVICE_KEY_FILE=str(service_keys.private_key_file(name)),
        TAVLA_SERVICE_PUBLIC_KEYS_DIR=str(service_keys.public_keys_dir),
        TAVLA_GRPC_PORT=str(service.grpc),
        TAVLA_METRICS_PORT=str(service.metrics),
        TAVLA_DATABASE_URL=with_database(server_url, database_name(name)),
        TAVLA_KAFKA_BOOTSTRAP=bootstrap,
        TAVLA_LOG_LEVEL=settings.log_level,
        PYTHONUNBUFFERED="1",
    )
    # Where the others are, as the Helm chart tells each pod (game -> wallet, ...).
    env.update(
        (f"TAVLA_{other.upper()}_ADDRESS", f"127.0.0.1:{settings.service_ports(other).grpc}")
        for other in settings.services
    )
    if name == "accounts":
        env["TAVLA_JWT_PRIVATE_KEY_FILE"] = str(private_key)
    if name == "wallet":
        env.update(DEV_WALLET_PAYMENTS)
    env.update(extra_env)
    argv = [sys.executable, "-m", "services.cli", "serve", name]
    proc = supervisor.start(name, argv, env=env, cwd=REPO_ROOT, tier="services")
    progress(f"{name}: started (pid {proc.pid}), grpc 127.0.0.1:{service.grpc}")
    rows.append(_row(
        name, f"grpc 127.0.0.1:{service.grpc}, gateway (mTLS) :{service.gateway}, "
        f"metrics :{service.metrics}", supervisor, name
    ))


def _start_gateway(
    settings: DevSettings, supervisor: Supervisor, rows: list[Row], jwks_file: Path,
    certs: PlatformCertificates,
) -> EnvoyGateway:
    config = render_config(
        descriptor=settings.descriptor,
        jwks_file=jwks_file,
        # The services' gateway ports: there alone a client address is believed.
        upstreams={name: settings.service_ports(name).gateway for name in settings.services},
        listen_port=settings.gateway_port,
        admin_port=settings.admin_port,
        xff_num_trusted_hops=settings.xff_num_trusted_hops,
        upstream_tls=certs.upstream_tls(),
    )
    path = write_config(settings.run_dir / "envoy.json", config)
    validate_config(path)
    gateway = EnvoyGateway(path, settings.gateway_port, settings.admin_port, supervisor)
    took = gateway.start()
    progress(f"gateway: Envoy live on {gateway.base_url} ({took:.1f}s); waiting for services")
    rows.append(_row("gateway (envoy)", f"{gateway.base_url} (admin :{settings.admin_port})",
                     supervisor, gateway.name))
    return gateway


def _row(component: str, address: str, supervisor: Supervisor, name: str) -> Row:
    proc = supervisor.get(name)
    return Row(component, address, str(proc.pid), str(proc.log_path))


def _wait_healthy(settings: DevSettings, supervisor: Supervisor, gateway: EnvoyGateway) -> None:
    """Until /healthz is 200; a child exiting or the timeout stops the wait."""
    started = time.monotonic()
    deadline = started + settings.healthz_timeout
    announced: set[str] = set()
    while True:
        raise_if_stop_requested()
        exited = supervisor.first_exited()
        if exited is not None:
            raise exited.failure(f"exited with status {exited.returncode()} while starting")
        health = gateway.cluster_health()
        for name in sorted(n for n, ok in health.items() if ok and n not in announced):
            announced.add(name)
            progress(f"{name}: SERVING ({time.monotonic() - started:.1f}s)")
        if gateway.healthz() == 200:
            return
        if time.monotonic() > deadline:
            waiting = sorted(n for n in settings.services if not health.get(n, False))
            raise _timeout_error(supervisor, waiting, settings.healthz_timeout)
        time.sleep(0.25)


def _timeout_error(supervisor: Supervisor, waiting: list[str], timeout: float) -> DevError:
    tails = "\n".join(
        f"--- {name} ({supervisor.get(name).log_path}):\n{supervisor.get(name).log_tail(15)}"
        for name in waiting
    )
    return DevError(f"/healthz not 200 after {timeout:.0f}s; not SERVING: "
                    f"{', '.join(waiting) or 'none'}\n{tails}")


def _watch(supervisor: Supervisor) -> int:
    """Foreground until a signal (StopRequested) or a child exits (status 1)."""
    while True:
        raise_if_stop_requested()
        exited = supervisor.first_exited()
        if exited is not None:
            error = exited.failure(f"exited with status {exited.returncode()}")
            print(f"[tavla dev] error: {error}", file=sys.stderr, flush=True)
            return 1
        time.sleep(0.2)


def format_table(rows: list[Row]) -> str:
    header = Row("COMPONENT", "ADDRESS", "PID", "LOG")
    cells = [header, *rows]
    widths = [max(len(getattr(r, f)) for r in cells) for f in ("component", "address", "pid")]
    lines = [
        f"{r.component:<{widths[0]}}  {r.address:<{widths[1]}}  {r.pid:>{widths[2]}}  {r.log}"
        for r in cells
    ]
    return "\n".join(lines)

