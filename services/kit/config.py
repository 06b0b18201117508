"""Configuration from ``TAVLA_*`` environment variables, validated at start.

A bad or missing value raises :class:`ConfigError` naming the variable, and
``tavla serve`` turns that into a one-line message and exit status 2, so a
misconfigured pod fails fast instead of half-working.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from services.kit.env import ConfigError as ConfigError
from services.kit.env import Env as Env
from services.kit.events.connection import PLAINTEXT, KafkaConnection, KafkaSecurity
from services.kit.gateway_tls import GatewayPort
from services.kit.ports import SERVICES

LOG_LEVELS = ("debug", "info", "warning", "error")
# Services whose outbox relay runs in a process of its own unless
# TAVLA_OUTBOX_RELAY_PROCESS says otherwise (services/kit/events/relay_process.py):
# geo records an event with every answer, and its answers have a latency goal.
RELAY_PROCESS_SERVICES = frozenset({"geo"})


@dataclass(frozen=True)
class Settings:
    """What every service needs to run; service-specific settings extend it in main.py."""

    service: str
    grpc_port: int
    metrics_port: int
    database_url: str
    kafka_bootstrap: str
    # Idempotent relay producer (no transactions, see events/kafka.py): on for Apache
    # Kafka, off for the local broker, which rejects it.
    kafka_idempotence: bool
    log_level: str
    shutdown_grace_seconds: float
    outbox_poll_seconds: float
    readiness_interval_seconds: float
    outbox_retention_hours: float = 72.0
    # How long a consumer group waits for a member that stopped answering (a killed pod).
    kafka_session_timeout_ms: int = 10_000
    # TLS and SASL of every Kafka client (events/connection.py); plaintext by default.
    kafka_security: KafkaSecurity = PLAINTEXT
    # Interfaces the gRPC and /metrics servers listen on (127.0.0.1 keeps them local).
    grpc_bind: str = "0.0.0.0"
    metrics_bind: str = "0.0.0.0"
    # This service's ES256 private key (signs its service tokens) and the directory
    # of public keys (<service>.pem) of the services that may call it.
    service_key_file: str = ""
    service_public_keys_dir: str = ""
    # Where the accounts service's JWKS is fetched (services serving player methods).
    accounts_address: str | None = None
    jwks_refresh_seconds: float = 300.0
    jwks_min_refresh_seconds: float = 10.0
    grpc_reflection: bool = False
    # The TLS port only the gateway's certificate opens (services/kit/gateway_tls.py);
    # None: no client address is ever believed.
    gateway_port: GatewayPort | None = None
    # A successful call slower than this is logged at info level; faster ones only at
    # debug (every failed call is logged whatever its duration).
    log_slow_rpc_ms: float = 250.0
    # The outbox relay in a child process instead of on the event loop that answers calls.
    outbox_relay_process: bool = False

    @classmethod
    def from_env(cls, service: str, environ: Mapping[str, str] | None = None) -> Settings:
        if service not in SERVICES:
            raise ConfigError(f"unknown service {service!r}; expected one of {', '.join(SERVICES)}")
        env = Env(environ)
        database_url = env.text("TAVLA_DATABASE_URL")
        if not database_url.startswith("postgresql+asyncpg://"):
            raise ConfigError(
                "TAVLA_DATABASE_URL must be a postgresql+asyncpg:// URL, "
                f"got {database_url.split('://')[0]}://..."
            )
        return cls(
            service=service,
            grpc_port=env.integer("TAVLA_GRPC_PORT", 50051, low=1, high=65535),
            metrics_port=env.integer("TAVLA_METRICS_PORT", 9100, low=0, high=65535),
            database_url=database_url,
            kafka_bootstrap=env.text("TAVLA_KAFKA_BOOTSTRAP"),
            kafka_idempotence=env.flag("TAVLA_KAFKA_IDEMPOTENCE", False),
            log_level=env.choice("TAVLA_LOG_LEVEL", "info", LOG_LEVELS),
            shutdown_grace_seconds=env.number(
                "TAVLA_SHUTDOWN_GRACE_SECONDS", 10.0, low=0.0, high=600.0
            ),
            outbox_poll_seconds=env.number("TAVLA_OUTBOX_POLL_SECONDS", 0.5, low=0.01, high=60.0),
            readiness_interval_seconds=env.number(
                "TAVLA_READINESS_INTERVAL_SECONDS", 2.0, low=0.1, high=60.0
            ),
            outbox_retention_hours=env.number(
                "TAVLA_OUTBOX_RETENTION_HOURS", 72.0, low=0.0, high=24.0 * 365
            ),
            kafka_session_timeout_ms=env.integer(
                "TAVLA_KAFKA_SESSION_TIMEOUT_MS", 10_000, low=1_000, high=1_800_000
            ),
            grpc_bind=env.text("TAVLA_GRPC_BIND", "0.0.0.0"),
            metrics_bind=env.text("TAVLA_METRICS_BIND", "0.0.0.0"),
            service_key_file=env.text("TAVLA_SERVICE_KEY_FILE"),
            service_public_keys_dir=env.text("TAVLA_SERVICE_PUBLIC_KEYS_DIR"),
            accounts_address=env.optional_text("TAVLA_ACCOUNTS_ADDRESS"),
            jwks_refresh_seconds=env.number(
                "TAVLA_JWKS_REFRESH_SECONDS", 300.0, low=1.0, high=86_400.0
            ),
            jwks_min_refresh_seconds=env.number(
                "TAVLA_JWKS_MIN_REFRESH_SECONDS", 10.0, low=0.0, high=3_600.0
            ),
            grpc_reflection=env.flag("TAVLA_GRPC_REFLECTION", False),
            kafka_security=KafkaSecurity.from_env(env),
            gateway_port=GatewayPort.from_env(environ),
            log_slow_rpc_ms=env.number("TAVLA_LOG_SLOW_RPC_MS", 250.0, low=0.0, high=600_000.0),
            outbox_relay_process=env.flag(
                "TAVLA_OUTBOX_RELAY_PROCESS", service in RELAY_PROCESS_SERVICES
            ),
        )

    @property
    def kafka(self) -> KafkaConnection:
        """What every Kafka client of this service is built from (events/kafka.py)."""
        return KafkaConnection(self.kafka_bootstrap, self.kafka_security)
