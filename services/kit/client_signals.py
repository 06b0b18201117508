"""Where a player's call comes from: the client's address and device id, as the gateway passed them.

The gateway (Envoy) sets ``x-tavla-client-address`` on every request it
forwards to the client's address as Envoy determined it (the peer, or the
address the configured number of trusted proxies put in ``x-forwarded-for``),
overwriting any value a client sent, so a client cannot choose it. The header
``x-tavla-device-id`` is the client app's own installation id, passed through
as sent: a claim, useful to link accounts, never a credential.

Both are believed only on a call that proves it came from the gateway: over the
service's gateway port, with the gateway's client certificate signed by the
platform CA (:mod:`services.kit.gateway_tls`). Anyone who reaches the plain
gRPC port can write the headers, so there they are ignored: such a call (a
service calling another, a direct caller) has no address, and callers that need
one for a real-money decision refuse rather than guess.
"""
from __future__ import annotations

import functools
import ipaddress
from dataclasses import dataclass
from typing import Any

import grpc

from services.kit.gateway_tls import from_gateway

CLIENT_ADDRESS_HEADER = "x-tavla-client-address"
DEVICE_ID_HEADER = "x-tavla-device-id"
DEVICE_ID_MAX_LENGTH = 128


@dataclass(frozen=True, slots=True)
class ClientSignals:
    """The client's address (canonical text, "" if unknown) and device id ("" if none)."""

    address: str = ""
    device_id: str = ""


def client_signals(context: grpc.aio.ServicerContext[Any, Any]) -> ClientSignals:
    """The address and device id of the client behind this call (empty when not known,
    and for every call that did not come from the gateway: see the module docstring)."""
    if not from_gateway(context):
        return ClientSignals()
    return signals_from_metadata(context.invocation_metadata() or ())


def signals_from_metadata(metadata: Any) -> ClientSignals:
    """The signals a call's metadata pairs state (believe them only from the gateway)."""
    address = device = ""
    for key, value in metadata:
        if key == CLIENT_ADDRESS_HEADER and isinstance(value, str):
            address = _address(value)
        elif key == DEVICE_ID_HEADER and isinstance(value, str):
            device = _device_id(value)
    return ClientSignals(address=address, device_id=device)


@functools.lru_cache(maxsize=4096)
def _address(value: str) -> str:
    """A valid IP address in canonical form; "" for anything else (never trusted half-way).

    Remembered (bounded): a player's calls repeat the same address, and parsing it
    was a visible part of a game move's CPU."""
    try:
        return str(ipaddress.ip_address(value.strip()))
    except ValueError:
        return ""


def _device_id(value: str) -> str:
    value = value.strip()
    if len(value) > DEVICE_ID_MAX_LENGTH or not value.isprintable():
        return ""
    return value
