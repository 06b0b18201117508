"""Where each service listens when the platform runs on one machine (`tavla dev`).

In Kubernetes every pod uses the defaults from its own environment instead; this
table exists so that local processes never collide and tests can find them.
"""

from __future__ import annotations

from dataclasses import dataclass

# Each service's gateway port is its gRPC port plus this (accounts: 51051).
GATEWAY_PORT_SHIFT = 1000


@dataclass(frozen=True)
class ServicePorts:
    grpc: int
    metrics: int
    # The TLS port only the gateway's certificate opens (services/kit/gateway_tls.py).
    gateway: int


def _service(grpc: int, metrics: int) -> ServicePorts:
    return ServicePorts(grpc=grpc, metrics=metrics, gateway=grpc + GATEWAY_PORT_SHIFT)


# The order is the start order; accounts first because others read identities.
SERVICES: dict[str, ServicePorts] = {
    "accounts": _service(grpc=50051, metrics=9101),
    "game": _service(grpc=50052, metrics=9102),
    "matchmaking": _service(grpc=50053, metrics=9103),
    "wallet": _service(grpc=50054, metrics=9104),
    "analysis": _service(grpc=50055, metrics=9105),
    "antiabuse": _service(grpc=50056, metrics=9106),
    "geo": _service(grpc=50057, metrics=9107),
    "tournaments": _service(grpc=50058, metrics=9108),
}

GATEWAY_PORT = 8080
GATEWAY_ADMIN_PORT = 9901
DEV_POSTGRES_PORT = 55432
DEV_KAFKA_PORT = 19092

# Every port above, in one order: `TAVLA_DEV_PORT_BASE` lays a stack's ports out from its
# base in this order, one after another (services/kit/devstack/dev.py).
DEV_PORTS: tuple[int, ...] = (
    GATEWAY_PORT, GATEWAY_ADMIN_PORT, DEV_POSTGRES_PORT, DEV_KAFKA_PORT,
    *(port for s in SERVICES.values() for port in (s.grpc, s.gateway, s.metrics)),
)
