"""Where each service listens when the platform runs on one machine (`tavla dev`).

In Kubernetes every pod uses the defaults from its own environment instead; this
table exists so that local processes never collide and tests can find them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ServicePorts:
    grpc: int
    metrics: int

    @property
    def gateway(self) -> int:
        """The TLS port only the gateway's certificate opens (services/kit/gateway_tls.py)."""
        return self.grpc + GATEWAY_PORT_SHIFT


# The order is the start order; accounts first because others read identities.
SERVICES: dict[str, ServicePorts] = {
    "accounts": ServicePorts(grpc=50051, metrics=9101),
    "game": ServicePorts(grpc=50052, metrics=9102),
    "matchmaking": ServicePorts(grpc=50053, metrics=9103),
    "wallet": ServicePorts(grpc=50054, metrics=9104),
    "analysis": ServicePorts(grpc=50055, metrics=9105),
    "antiabuse": ServicePorts(grpc=50056, metrics=9106),
    "geo": ServicePorts(grpc=50057, metrics=9107),
    "tournaments": ServicePorts(grpc=50058, metrics=9108),
}

# Each service's gateway port is its gRPC port plus this (accounts: 51051).
GATEWAY_PORT_SHIFT = 1000
GATEWAY_PORT = 8080
GATEWAY_ADMIN_PORT = 9901
DEV_POSTGRES_PORT = 55432
DEV_KAFKA_PORT = 19092
