"""Kafka over TLS and SASL/SCRAM: the client configuration the environment produces.

The settings (services/kit/events/connection.py) are read by ``Settings.from_env``
the way ``tavla serve`` reads them; the test then builds the real aiokafka
producer, consumer and admin client from them (no broker: clients connect only on
``start()``) and reads back what each client would connect with. The expected
values are the variables' own values and a CA certificate the test makes itself.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import ssl
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from services.cli import main as tavla
from services.kit.config import ConfigError, Settings
from services.kit.events.connection import KafkaConnection
from services.kit.events.kafka import consumer_options, producer_options

BASE = {
    "TAVLA_DATABASE_URL": "postgresql+asyncpg://postgres@127.0.0.1:5432/tavla_wallet",
    "TAVLA_KAFKA_BOOTSTRAP": "kafka-0.example:9093,kafka-1.example:9093",
    "TAVLA_SERVICE_KEY_FILE": "/run/secrets/wallet.key.pem",
    "TAVLA_SERVICE_PUBLIC_KEYS_DIR": "/run/secrets/service-public-keys",
}
CA_NAME = "Tavla test Kafka cluster CA"
PASSWORD = "s3cret-scram-password"


def write_ca(path: Path) -> Path:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, CA_NAME)])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(days=1))
        .not_valid_after(now + dt.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return path


@pytest.fixture
def secured(tmp_path: Path) -> dict[str, str]:
    """The variables the chart sets for SASL_SSL (password and CA as mounted files)."""
    password_file = tmp_path / "password"
    password_file.write_text(PASSWORD + "\n")  # a Secret made with `echo` ends in a newline
    return {
        **BASE,
        "TAVLA_KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
        "TAVLA_KAFKA_SASL_MECHANISM": "SCRAM-SHA-512",
        "TAVLA_KAFKA_SASL_USERNAME": "tavla-wallet",
        "TAVLA_KAFKA_SASL_PASSWORD_FILE": str(password_file),
        "TAVLA_KAFKA_SSL_CA_FILE": str(write_ca(tmp_path / "ca.crt")),
    }


def connection_of(client: Any) -> dict[str, Any]:
    """What an aiokafka client will connect with (its internal AIOKafkaClient)."""
    inner = client.client if isinstance(client, AIOKafkaProducer) else client._client
    return {
        "bootstrap": inner._bootstrap_servers,
        "protocol": inner._security_protocol,
        "mechanism": inner._sasl_mechanism,
        "username": inner._sasl_plain_username,
        "password": inner._sasl_plain_password,
        "ssl_context": inner._ssl_context,
    }


def build_clients(kafka: KafkaConnection) -> list[Any]:
    async def build() -> list[Any]:
        return [
            AIOKafkaProducer(**producer_options(kafka, service="wallet", idempotence=True)),
            AIOKafkaConsumer("tavla.game.v1", **consumer_options(kafka, group="wallet-settle")),
            AIOKafkaAdminClient(**kafka.client_options()),
        ]

    return asyncio.run(build())


def test_by_default_every_client_speaks_plaintext() -> None:
    kafka = Settings.from_env("wallet", BASE).kafka
    for client in build_clients(kafka):
        seen = connection_of(client)
        assert seen["protocol"] == "PLAINTEXT"
        assert seen["ssl_context"] is None
        assert seen["username"] is None and seen["password"] is None


def test_sasl_ssl_reaches_the_producer_the_consumers_and_the_admin_client(
    secured: dict[str, str],
) -> None:
    kafka = Settings.from_env("wallet", secured).kafka
    clients = build_clients(kafka)
    assert len(clients) == 3
    for client in clients:
        seen = connection_of(client)
        kind = type(client).__name__
        assert seen["bootstrap"] == "kafka-0.example:9093,kafka-1.example:9093", kind
        assert seen["protocol"] == "SASL_SSL", kind
        assert seen["mechanism"] == "SCRAM-SHA-512", kind
        assert seen["username"] == "tavla-wallet", kind
        assert seen["password"] == PASSWORD, kind  # the file's content, newline dropped
        context: ssl.SSLContext = seen["ssl_context"]
        # Verifies the brokers' certificates and names, trusting the CA file.
        assert context.verify_mode == ssl.CERT_REQUIRED, kind
        assert context.check_hostname is True, kind
        subjects = [dict(item[0] for item in ca["subject"]) for ca in context.get_ca_certs()]
        assert {"commonName": CA_NAME} in subjects, kind


def test_tls_without_sasl_and_sha256_scram_are_accepted(secured: dict[str, str]) -> None:
    tls_only = {k: v for k, v in secured.items() if "SASL" not in k}
    tls_only["TAVLA_KAFKA_SECURITY_PROTOCOL"] = "SSL"
    options = Settings.from_env("wallet", tls_only).kafka.client_options()
    assert options["security_protocol"] == "SSL"
    assert isinstance(options["ssl_context"], ssl.SSLContext)
    assert "sasl_plain_password" not in options
    sha256 = {**secured, "TAVLA_KAFKA_SASL_MECHANISM": "scram-sha-256"}
    del sha256["TAVLA_KAFKA_SSL_CA_FILE"]  # a public CA: the system's trust store
    options = Settings.from_env("wallet", sha256).kafka.client_options()
    assert options["sasl_mechanism"] == "SCRAM-SHA-256"
    assert isinstance(options["ssl_context"], ssl.SSLContext)


def test_the_password_never_shows_in_a_repr(secured: dict[str, str]) -> None:
    settings = Settings.from_env("wallet", secured)
    assert PASSWORD not in repr(settings)
    assert PASSWORD not in repr(settings.kafka)


def _without(env: dict[str, str], *names: str) -> dict[str, str]:
    return {k: v for k, v in env.items() if k not in names}


BAD = {
    "SASL without a user": (
        lambda e, _: _without(e, "TAVLA_KAFKA_SASL_USERNAME"),
        "TAVLA_KAFKA_SECURITY_PROTOCOL=SASL_SSL needs TAVLA_KAFKA_SASL_USERNAME",
    ),
    "SASL without a password": (
        lambda e, _: _without(e, "TAVLA_KAFKA_SASL_PASSWORD_FILE"),
        "needs TAVLA_KAFKA_SASL_PASSWORD_FILE",
    ),
    "SASL without a mechanism": (
        lambda e, _: _without(e, "TAVLA_KAFKA_SASL_MECHANISM"),
        "needs TAVLA_KAFKA_SASL_MECHANISM",
    ),
    "SASL credentials on a plaintext protocol": (
        lambda e, _: _without(
            {**e, "TAVLA_KAFKA_SECURITY_PROTOCOL": "PLAINTEXT"}, "TAVLA_KAFKA_SSL_CA_FILE"
        ),
        "does not use SASL",
    ),
    "SASL credentials with TLS only": (
        lambda e, _: {**e, "TAVLA_KAFKA_SECURITY_PROTOCOL": "SSL"},
        "TAVLA_KAFKA_SECURITY_PROTOCOL=SSL does not use SASL",
    ),
    "a CA file without TLS": (
        lambda e, _: {**e, "TAVLA_KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT"},
        "TAVLA_KAFKA_SSL_CA_FILE set but TAVLA_KAFKA_SECURITY_PROTOCOL=SASL_PLAINTEXT",
    ),
    "an unknown protocol": (
        lambda e, _: {**e, "TAVLA_KAFKA_SECURITY_PROTOCOL": "TLS"},
        "TAVLA_KAFKA_SECURITY_PROTOCOL='TLS' must be one of",
    ),
    "PLAIN, which sends the password itself": (
        lambda e, _: {**e, "TAVLA_KAFKA_SASL_MECHANISM": "PLAIN"},
        "TAVLA_KAFKA_SASL_MECHANISM='PLAIN' must be one of SCRAM-SHA-512, SCRAM-SHA-256",
    ),
    "a password file that is not there": (
        lambda e, d: {**e, "TAVLA_KAFKA_SASL_PASSWORD_FILE": str(d / "missing")},
        "TAVLA_KAFKA_SASL_PASSWORD_FILE=",
    ),
    "an empty password file": (
        lambda e, d: {**e, "TAVLA_KAFKA_SASL_PASSWORD_FILE": str(_file(d / "empty", "\n"))},
        "is empty",
    ),
    "a CA file that holds no certificate": (
        lambda e, d: {**e, "TAVLA_KAFKA_SSL_CA_FILE": str(_file(d / "ca.txt", "not a cert"))},
        "holds no PEM certificate",
    ),
    "a CA file that is not there": (
        lambda e, d: {**e, "TAVLA_KAFKA_SSL_CA_FILE": str(d / "none.crt")},
        "cannot be read",
    ),
}


def _file(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.mark.parametrize("case", sorted(BAD))
def test_half_or_contradictory_settings_stop_the_start_naming_the_variable(
    secured: dict[str, str], tmp_path: Path, case: str
) -> None:
    change, phrase = BAD[case]
    with pytest.raises(ConfigError) as error:
        Settings.from_env("wallet", change(secured, tmp_path))
    assert phrase in str(error.value)


def test_tavla_serve_and_events_tail_refuse_them_before_connecting(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, value in {**BASE, "TAVLA_KAFKA_SECURITY_PROTOCOL": "SASL_SSL"}.items():
        monkeypatch.setenv(name, value)
    for name in ("TAVLA_KAFKA_SASL_MECHANISM", "TAVLA_KAFKA_SASL_USERNAME",
                 "TAVLA_KAFKA_SASL_PASSWORD_FILE", "TAVLA_KAFKA_SSL_CA_FILE"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    assert tavla(["serve", "wallet"]) == 2
    assert tavla(["events", "tail", "--topic", "tavla.wallet.v1"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("tavla serve wallet: TAVLA_KAFKA_SECURITY_PROTOCOL=SASL_SSL needs")
    assert err[1].startswith("tavla events tail: TAVLA_KAFKA_SECURITY_PROTOCOL=SASL_SSL needs")
