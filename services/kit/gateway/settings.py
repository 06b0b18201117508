"""What differs between one gateway and another: addresses, token rules, limits, CORS.

`tavla dev` builds a `GatewaySettings` in code; the Helm chart writes the same
fields as JSON (a ConfigMap made from its values) and the gateway pod's init
container turns that into the Envoy config with `tavla gateway config`. Unknown
or ill-typed fields are refused with a message naming the field, so a typo in
the chart's values cannot silently drop a protection.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

# Methods whose calls are limited per client address, by the settings key that sets the limit.
RATE_LIMITED_METHODS = {
    "login": "/tavla.accounts.v1.AccountsService/Login",
    "register": "/tavla.accounts.v1.AccountsService/Register",
    "refresh": "/tavla.accounts.v1.AccountsService/RefreshSession",
}


class SettingsError(ValueError):
    """A gateway setting is missing or wrong; the message names it."""


@dataclass(frozen=True)
class Upstream:
    """Where one service's gRPC port is: an IP (STATIC) or a DNS name (STRICT_DNS)."""

    host: str
    port: int
    dns: bool = False


@dataclass(frozen=True)
class UpstreamTls:
    """The gateway's client certificate for the services' gateway ports, and the CA that
    signed their server certificates (PEM files; services/kit/gateway_tls.py)."""

    cert_file: str
    key_file: str
    ca_file: str


@dataclass(frozen=True)
class RateLimit:
    """At most `requests` calls per `per_seconds` seconds from one client address."""

    requests: int
    per_seconds: int = 60


# The gateway's limits unless its settings say otherwise, and the services' own for calls
# that did not come through it (services/kit/rate_limits.py).
DEFAULT_RATE_LIMITS: Mapping[str, RateLimit] = {
    "login": RateLimit(10, 60), "register": RateLimit(5, 60), "refresh": RateLimit(30, 60),
}


@dataclass(frozen=True)
class HealthCheck:
    interval_seconds: float = 1.0
    timeout_seconds: float = 1.0
    unhealthy_threshold: int = 1
    healthy_threshold: int = 1
    # /healthz is 200 only when every service has at least this share of healthy hosts.
    min_healthy_percent: float = 100.0


@dataclass(frozen=True)
class GatewaySettings:
    upstreams: Mapping[str, Upstream]  # area (accounts, game, ...) -> its gRPC address
    jwks_file: str  # the JWKS (public keys) that verifies access tokens
    descriptor_file: str  # the descriptor set as Envoy reads it
    listen_address: str = "127.0.0.1"
    listen_port: int = 8080
    admin_address: str = "127.0.0.1"
    admin_port: int = 9901
    # A second listener proxying the admin's /ready and /stats/prometheus (Kubernetes probes).
    ops_port: int | None = None
    jwt_issuer: str = "tavla"
    jwt_audiences: tuple[str, ...] = ("tavla-api",)
    allow_native_grpc: bool = False
    cors_allow_origins: tuple[str, ...] = ()
    cors_max_age_seconds: int = 600
    # Proxies in front of Envoy that append to X-Forwarded-For (the rate limits key on
    # the client address Envoy derives from it).
    xff_num_trusted_hops: int = 0
    route_timeout_seconds: float = 30.0
    health: HealthCheck = field(default_factory=HealthCheck)
    rate_limits: Mapping[str, RateLimit] = field(default_factory=lambda: dict(DEFAULT_RATE_LIMITS))
    # The wallet's payment-provider webhook listener (plain HTTP), when a real provider
    # is configured: its one path is routed without a token (the HMAC is its credential).
    webhooks: Upstream | None = None
    # Mutual TLS to the services' gateway ports: without it they believe no client
    # address (the upstreams' ports are then their plain gRPC ports).
    upstream_tls: UpstreamTls | None = None

    def __post_init__(self) -> None:
        unknown = set(self.rate_limits) - set(RATE_LIMITED_METHODS)
        if unknown:
            raise SettingsError(
                f"rate_limits: unknown {sorted(unknown)}; known: {sorted(RATE_LIMITED_METHODS)}"
            )
        for name, limit in self.rate_limits.items():
            if limit.requests < 1 or limit.per_seconds < 1:
                raise SettingsError(f"rate_limits.{name}: requests and per_seconds must be >= 1")
        if not self.jwt_audiences:
            raise SettingsError("jwt_audiences: at least one audience (tokens for other "
                                "audiences must not open this API)")

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any]) -> GatewaySettings:
        """From the JSON form (the chart's ConfigMap); refuses unknown or mistyped fields."""
        known = {f.name for f in fields(cls)}
        unknown = set(raw) - known
        if unknown:
            raise SettingsError(f"unknown gateway settings {sorted(unknown)}")
        values: dict[str, Any] = dict(raw)
        if "route_timeout_seconds" in raw:
            values["route_timeout_seconds"] = _duration(raw["route_timeout_seconds"],
                                                        "route_timeout_seconds")
        try:
            values["upstreams"] = {
                area: Upstream(**_object(up, f"upstreams.{area}"))
                for area, up in _object(raw.get("upstreams"), "upstreams").items()
            }
            if "health" in raw:
                health = _object(raw["health"], "health")
                for name in ("interval_seconds", "timeout_seconds"):
                    if name in health:
                        health[name] = _duration(health[name], f"health.{name}")
                values["health"] = HealthCheck(**health)
            if "rate_limits" in raw:
                values["rate_limits"] = {
                    name: RateLimit(**_object(limit, f"rate_limits.{name}"))
                    for name, limit in _object(raw["rate_limits"], "rate_limits").items()
                }
            if raw.get("upstream_tls") is not None:
                values["upstream_tls"] = UpstreamTls(**_object(raw["upstream_tls"],
                                                               "upstream_tls"))
            if raw.get("webhooks") is not None:
                values["webhooks"] = Upstream(**_object(raw["webhooks"], "webhooks"))
            for name in ("jwt_audiences", "cors_allow_origins"):
                if name in raw:
                    values[name] = tuple(_list(raw[name], name))
            settings = cls(**values)
        except TypeError as error:
            raise SettingsError(f"gateway settings: {error}") from None
        _check_types(settings)
        return settings


_DURATION = re.compile(r"^([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)$")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def _duration(value: Any, name: str) -> float:
    """Seconds from a number of seconds or a duration such as 500ms, 5s, 1m (Helm values)."""
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return float(value)
    match = _DURATION.match(value) if isinstance(value, str) else None
    if match is None:
        raise SettingsError(f"{name} must be seconds or a duration such as 500ms, 5s, 1m; "
                            f"not {value!r}")
    return float(match.group(1)) * _UNIT_SECONDS[match.group(2)]


def _object(value: Any, name: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise SettingsError(f"{name} must be an object, not {value!r}")
    return dict(value)


def _list(value: Any, name: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise SettingsError(f"{name} must be a list of strings, not {value!r}")
    return value


def _check_types(settings: GatewaySettings) -> None:
    for name in ("listen_port", "admin_port", "xff_num_trusted_hops", "cors_max_age_seconds"):
        if not isinstance(getattr(settings, name), int):
            raise SettingsError(f"{name} must be an integer")
    if settings.ops_port is not None and not isinstance(settings.ops_port, int):
        raise SettingsError("ops_port must be an integer")
    if not isinstance(settings.allow_native_grpc, bool):
        raise SettingsError("allow_native_grpc must be true or false")
    for area, upstream in settings.upstreams.items():
        if not isinstance(upstream.port, int) or not upstream.host:
            raise SettingsError(f"upstreams.{area}: host and an integer port are required")
    tls = settings.upstream_tls
    if tls is not None and not all(isinstance(v, str) and v for v in
                                   (tls.cert_file, tls.key_file, tls.ca_file)):
        raise SettingsError("upstream_tls: cert_file, key_file and ca_file are required")
    hook = settings.webhooks
    if hook is not None and (not isinstance(hook.port, int) or not hook.host):
        raise SettingsError("webhooks: host and an integer port are required")
