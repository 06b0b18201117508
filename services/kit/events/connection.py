"""How a process reaches Kafka: the bootstrap servers, and TLS and SASL when configured.

Every Kafka client the kit builds (the outbox relay's producer, the consumers,
the admin client that creates topics, ``tavla events tail``) takes its
connection options from one :class:`KafkaConnection`, read from the
environment at start:

- ``TAVLA_KAFKA_SECURITY_PROTOCOL``: ``PLAINTEXT`` (default), ``SSL``, ``SASL_SSL`` or
  ``SASL_PLAINTEXT``;
- ``TAVLA_KAFKA_SASL_MECHANISM``: ``SCRAM-SHA-512`` or ``SCRAM-SHA-256`` (``SASL_*`` only);
- ``TAVLA_KAFKA_SASL_USERNAME``: the SCRAM user (``SASL_*`` only);
- ``TAVLA_KAFKA_SASL_PASSWORD_FILE``: a file holding its password, a mounted Secret
  (``SASL_*`` only);
- ``TAVLA_KAFKA_SSL_CA_FILE``: PEM of the CAs that sign the brokers' certificates
  (``SSL`` and ``SASL_SSL``; unset: the system's CAs).

Half or contradictory settings stop the process at start with a
:class:`~services.kit.config.ConfigError` naming the variable, rather than
a client that connects in the clear or fails its handshake minutes later:
a SASL protocol without its mechanism, user or password; SASL settings, or a
CA file, with a protocol that would not use them; an unknown protocol or
mechanism; a password file or CA file that cannot be read. Only SCRAM is
accepted: ``PLAIN`` would hand the password itself to every broker. The
password is read once, at start (a rotated one takes a rolling restart, as the
README's runbook says), and never appears in ``repr``.

TLS always verifies the brokers' certificates and host names
(``ssl.create_default_context``); there is no switch to turn that off.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass, field
from pathlib import Path

from services.kit.env import ConfigError, Env

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_SSL", "SASL_PLAINTEXT")
MECHANISMS = ("SCRAM-SHA-512", "SCRAM-SHA-256")

PROTOCOL_VAR = "TAVLA_KAFKA_SECURITY_PROTOCOL"
MECHANISM_VAR = "TAVLA_KAFKA_SASL_MECHANISM"
USERNAME_VAR = "TAVLA_KAFKA_SASL_USERNAME"
PASSWORD_FILE_VAR = "TAVLA_KAFKA_SASL_PASSWORD_FILE"
CA_FILE_VAR = "TAVLA_KAFKA_SSL_CA_FILE"
SASL_VARS = (MECHANISM_VAR, USERNAME_VAR, PASSWORD_FILE_VAR)


@dataclass(frozen=True)
class KafkaSecurity:
    """TLS and SASL settings of the Kafka clients; the default speaks plaintext."""

    protocol: str = "PLAINTEXT"
    sasl_mechanism: str | None = None
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    ca_file: str | None = None

    @property
    def tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    @classmethod
    def from_env(cls, env: Env) -> KafkaSecurity:
        protocol = (env.optional_text(PROTOCOL_VAR) or "PLAINTEXT").upper()
        if protocol not in PROTOCOLS:
            raise ConfigError(
                f"{PROTOCOL_VAR}={env.optional_text(PROTOCOL_VAR)!r} must be one of "
                f"{', '.join(PROTOCOLS)}"
            )
        given = {name: env.optional_text(name) for name in (*SASL_VARS, CA_FILE_VAR)}
        if not protocol.startswith("SASL_"):
            stray = [name for name in SASL_VARS if given[name]]
            if stray:
                raise ConfigError(
                    f"{', '.join(stray)} set but {PROTOCOL_VAR}={protocol} does not use SASL; "
                    f"set {PROTOCOL_VAR}=SASL_SSL to authenticate, or unset them"
                )
        if protocol not in ("SSL", "SASL_SSL") and given[CA_FILE_VAR]:
            raise ConfigError(
                f"{CA_FILE_VAR} set but {PROTOCOL_VAR}={protocol} does not use TLS; "
                f"set {PROTOCOL_VAR}=SSL or SASL_SSL, or unset it"
            )
        ca_file = given[CA_FILE_VAR]
        if ca_file:
            _check_ca_file(ca_file)
        if not protocol.startswith("SASL_"):
            return cls(protocol=protocol, ca_file=ca_file)
        missing = [name for name in SASL_VARS if not given[name]]
        if missing:
            raise ConfigError(
                f"{PROTOCOL_VAR}={protocol} needs {', '.join(missing)} "
                f"(SASL with SCRAM: mechanism, user and password file)"
            )
        mechanism = str(given[MECHANISM_VAR]).upper()
        if mechanism not in MECHANISMS:
            raise ConfigError(
                f"{MECHANISM_VAR}={given[MECHANISM_VAR]!r} must be one of {', '.join(MECHANISMS)}"
            )
        return cls(
            protocol=protocol,
            sasl_mechanism=mechanism,
            username=given[USERNAME_VAR],
            password=_read_password(str(given[PASSWORD_FILE_VAR])),
            ca_file=ca_file,
        )

    def ssl_context(self) -> ssl.SSLContext | None:
        """A verifying TLS context (the CA file's CAs, else the system's), or None without TLS."""
        if not self.tls:
            return None
        return ssl.create_default_context(cafile=self.ca_file)

    def client_options(self) -> dict[str, object]:
        """The aiokafka keyword arguments (producer, consumer and admin alike)."""
        options: dict[str, object] = {"security_protocol": self.protocol}
        context = self.ssl_context()
        if context is not None:
            options["ssl_context"] = context
        if self.sasl:
            options["sasl_mechanism"] = self.sasl_mechanism
            options["sasl_plain_username"] = self.username
            options["sasl_plain_password"] = self.password
        return options


PLAINTEXT = KafkaSecurity()


@dataclass(frozen=True)
class KafkaConnection:
    """Where the brokers are and how to speak to them."""

    bootstrap: str
    security: KafkaSecurity = PLAINTEXT

    @classmethod
    def from_env(cls, env: Env, bootstrap: str | None = None) -> KafkaConnection:
        """``TAVLA_KAFKA_BOOTSTRAP`` (or ``bootstrap``) with the security variables above."""
        return cls(
            bootstrap=bootstrap or env.text("TAVLA_KAFKA_BOOTSTRAP"),
            security=KafkaSecurity.from_env(env),
        )

    def client_options(self) -> dict[str, object]:
        return {"bootstrap_servers": self.bootstrap, **self.security.client_options()}


def _read_password(path: str) -> str:
    try:
        password = Path(path).read_text(encoding="utf-8").strip()
    except OSError as error:
        raise ConfigError(
            f"{PASSWORD_FILE_VAR}={path!r} cannot be read: {error.strerror}"
        ) from None
    if not password:
        raise ConfigError(f"{PASSWORD_FILE_VAR}={path!r} is empty")
    return password


def _check_ca_file(path: str) -> None:
    try:
        ssl.create_default_context(cafile=path)
    except ssl.SSLError:  # before OSError, of which it is a subclass
        raise ConfigError(f"{CA_FILE_VAR}={path!r} holds no PEM certificate") from None
    except OSError as error:
        raise ConfigError(f"{CA_FILE_VAR}={path!r} cannot be read: {error.strerror}") from None
