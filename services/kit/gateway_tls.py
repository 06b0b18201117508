"""The gateway's own door into a service: a TLS port that only the gateway's certificate opens.

Every service serves two gRPC ports. The plain one (``TAVLA_GRPC_PORT``) is for
other services (each call carries a service token) and for direct callers; the
gateway port (``TAVLA_GATEWAY_PORT``) speaks TLS and requires a client
certificate signed by the platform CA (``TAVLA_GATEWAY_CLIENT_CA_FILE``). Envoy
presents the gateway's certificate (common name ``tavla-gateway``) on every
call it forwards.

A call's client address and device id (:mod:`services.kit.client_signals`) are
believed only when :func:`from_gateway` sees that certificate in the call's
authentication context: a header's presence proves nothing, since anyone who
reaches the plain port can write it. The same servicers and interceptors serve
both ports, so what a call may do is the same on either; only what it says about
where the client is differs.

Without ``TAVLA_GATEWAY_PORT`` there is no gateway port: the service believes
no client address at all (real money is refused, locations are unknown).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from services.kit.env import ConfigError, Env

# The common name of the gateway's client certificate (the only one believed).
GATEWAY_CLIENT_NAME = "tavla-gateway"
PORT_VARIABLE = "TAVLA_GATEWAY_PORT"
CERT_VARIABLE = "TAVLA_GATEWAY_TLS_CERT_FILE"
KEY_VARIABLE = "TAVLA_GATEWAY_TLS_KEY_FILE"
CLIENT_CA_VARIABLE = "TAVLA_GATEWAY_CLIENT_CA_FILE"


@dataclass(frozen=True)
class GatewayPort:
    """Where the gateway port listens and the files that secure it (PEM)."""

    port: int
    cert_file: Path
    key_file: Path
    client_ca_file: Path

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> GatewayPort | None:
        """From ``TAVLA_GATEWAY_*``; None without a port; the three files required with one."""
        env = Env(environ)
        if env.optional_text(PORT_VARIABLE) is None:
            return None
        port = env.integer(PORT_VARIABLE, 0, low=1, high=65535)
        files = [Path(env.text(name)) for name in (CERT_VARIABLE, KEY_VARIABLE,
                                                   CLIENT_CA_VARIABLE)]
        for name, path in zip((CERT_VARIABLE, KEY_VARIABLE, CLIENT_CA_VARIABLE), files,
                              strict=True):
            if not path.is_file():
                raise ConfigError(f"{name}={str(path)!r}: no such file")
        return cls(port, *files)

    def server_credentials(self) -> grpc.ServerCredentials:
        """TLS with this service's pair, requiring a client certificate from the CA."""
        return grpc.ssl_server_credentials(
            [(self.key_file.read_bytes(), self.cert_file.read_bytes())],
            root_certificates=self.client_ca_file.read_bytes(),
            require_client_auth=True,
        )


def from_gateway(context: grpc.aio.ServicerContext[Any, Any]) -> bool:
    """Whether this call came over TLS with the gateway's certificate from the platform CA.

    The TLS handshake of the gateway port already refused any certificate the CA
    did not sign; the common name tells the gateway's certificate from the
    services' own (signed by the same CA).
    """
    auth = context.auth_context() or {}
    if auth.get("transport_security_type") != [b"ssl"]:
        return False
    return GATEWAY_CLIENT_NAME.encode() in auth.get("x509_common_name", [])
