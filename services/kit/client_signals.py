"""Where a player's call comes from: the client's address and device id, as the gateway passed them.

The gateway (Envoy) sets ``x-tavla-client-address`` on every request it
forwards to the client's address as Envoy determined it (the peer, or the
address the configured number of trusted proxies put in ``x-forwarded-for``),
overwriting any value a client sent, so a client cannot choose it. The header
``x-tavla-device-id`` is the client app's own installation id, passed through
as sent: a claim, useful to link accounts, never a credential.

Only the gateway and the services reach a service's gRPC port (the chart's
NetworkPolicy), so these headers are what the gateway saw. A call that did
not come through the gateway (a service calling another) has no address:
callers that need one for a real-money decision must refuse rather than guess.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any

import grpc

CLIENT_ADDRESS_HEADER = "x-tavla-client-address"
DEVICE_ID_HEADER = "x-tavla-device-id"
DEVICE_ID_MAX_LENGTH = 128


@dataclass(frozen=True, slots=True)
class ClientSignals:
    """The client's address (canonical text, "" if unknown) and device id ("" if none)."""

    address: str = ""
    device_id: str = ""


def client_signals(context: grpc.aio.ServicerContext[Any, Any]) -> ClientSignals:
    """The address and device id of the client behind this call (empty when not known)."""
    return signals_from_metadata(context.invocation_metadata() or ())


def signals_from_metadata(metadata: Any) -> ClientSignals:
    """As :func:`client_signals`, from a call's metadata pairs."""
    address = device = ""
    for key, value in metadata:
        if key == CLIENT_ADDRESS_HEADER and isinstance(value, str):
            address = _address(value)
        elif key == DEVICE_ID_HEADER and isinstance(value, str):
            device = _device_id(value)
    return ClientSignals(address=address, device_id=device)


def _address(value: str) -> str:
    """A valid IP address in canonical form; "" for anything else (never trusted half-way)."""
    try:
        return str(ipaddress.ip_address(value.strip()))
    except ValueError:
        return ""


def _device_id(value: str) -> str:
    value = value.strip()
    if len(value) > DEVICE_ID_MAX_LENGTH or not value.isprintable():
        return ""
    return value
