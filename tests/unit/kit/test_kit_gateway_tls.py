"""The gateway port's settings and who counts as the gateway (services/kit/gateway_tls.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from services.kit.config import ConfigError
from services.kit.devstack.certs import ensure_platform_certificates
from services.kit.gateway_tls import GatewayPort, from_gateway


def test_without_a_port_there_is_no_gateway_port() -> None:
    assert GatewayPort.from_env({}) is None


def test_a_port_needs_its_three_files_each_named(tmp_path: Path) -> None:
    env = ensure_platform_certificates(tmp_path, ["wallet"]).service_env("wallet", 50154)
    port = GatewayPort.from_env(env)
    assert port is not None and port.port == 50154
    for variable in ("TAVLA_GATEWAY_TLS_CERT_FILE", "TAVLA_GATEWAY_TLS_KEY_FILE",
                     "TAVLA_GATEWAY_CLIENT_CA_FILE"):
        with pytest.raises(ConfigError, match=variable):
            GatewayPort.from_env({**env, variable: ""})
        with pytest.raises(ConfigError, match=f"{variable}=.*no such file"):
            GatewayPort.from_env({**env, variable: str(tmp_path / "missing.pem")})
    with pytest.raises(ConfigError, match="TAVLA_GATEWAY_PORT"):
        GatewayPort.from_env({**env, "TAVLA_GATEWAY_PORT": "https"})


class _Context:
    def __init__(self, auth: dict[str, list[bytes]]) -> None:
        self._auth = auth

    def auth_context(self) -> dict[str, list[bytes]]:
        return self._auth


@pytest.mark.parametrize(("auth", "believed"), [
    ({"transport_security_type": [b"ssl"], "x509_common_name": [b"tavla-gateway"]}, True),
    ({"transport_security_type": [b"ssl"], "x509_common_name": [b"wallet"]}, False),
    ({"transport_security_type": [b"ssl"]}, False),  # TLS without a client certificate
    ({"transport_security_type": [b"insecure"], "x509_common_name": [b"tavla-gateway"]}, False),
    ({}, False),
])
def test_only_the_gateways_certificate_over_tls_is_the_gateway(
    auth: dict[str, list[bytes]], believed: bool
) -> None:
    context: Any = _Context(auth)
    assert from_gateway(context) is believed
