"""Identifiers that can link accounts, normalised so that trivial variations still match.

- ``device``: the client's device id (``x-tavla-device-id``, carried by LoggedIn);
- ``address``: the exact client address (canonical text; loopback, link-local,
  multicast and unspecified addresses say nothing of a client and are ignored);
- ``network``: its /24 (IPv4) or /64 (IPv6): one household, office or carrier NAT;
- ``email``: the mailbox with case, ``+tags`` and Gmail dots removed;
- ``payment``: a payment instrument's fingerprint, the provider's opaque token for a
  card or account (never its number; the wallet's Deposited and WithdrawalCompleted),
  qualified by the provider that issued it (fingerprints of two providers never match);
- ``name``: the display name reduced to its letters: evidence only, never a link
  (many honest players share a first name).
"""

from __future__ import annotations

import ipaddress
import unicodedata
from dataclasses import dataclass
from enum import StrEnum

from services.kit.mailbox import mailbox_key


class SignalKind(StrEnum):
    DEVICE = "device"
    ADDRESS = "address"
    NETWORK = "network"
    EMAIL = "email"
    PAYMENT = "payment"
    NAME = "name"


# Kinds that link accounts; NAME corroborates only.
LINKING = frozenset(
    {
        SignalKind.DEVICE,
        SignalKind.ADDRESS,
        SignalKind.NETWORK,
        SignalKind.EMAIL,
        SignalKind.PAYMENT,
    }
)
# Kinds strong enough on their own for a HIGH alert (a shared network alone is MEDIUM).
STRONG = frozenset({SignalKind.DEVICE, SignalKind.ADDRESS, SignalKind.EMAIL, SignalKind.PAYMENT})

MAX_VALUE = 200


@dataclass(frozen=True)
class Signal:
    kind: SignalKind
    value: str


def email_signal(email: str) -> Signal | None:
    mailbox = mailbox_key(email)
    return Signal(SignalKind.EMAIL, mailbox[:MAX_VALUE]) if mailbox else None


def name_signal(display_name: str) -> Signal | None:
    decomposed = unicodedata.normalize("NFKD", display_name).casefold()
    letters = "".join(c for c in decomposed if c.isalpha())
    return Signal(SignalKind.NAME, letters[:MAX_VALUE]) if len(letters) >= 3 else None


def payment_signal(provider: str, fingerprint: str) -> Signal | None:
    """A payment instrument, as ``provider:fingerprint``; nothing without a fingerprint."""
    token = fingerprint.strip()
    if not token:
        return None
    return Signal(SignalKind.PAYMENT, f"{provider.strip()}:{token}"[:MAX_VALUE])


def device_signal(device_id: str) -> Signal | None:
    device = device_id.strip()
    return Signal(SignalKind.DEVICE, device[:MAX_VALUE]) if device else None


def address_signals(address: str) -> list[Signal]:
    """The exact address and its /24 or /64; nothing for text that is not an address."""
    try:
        ip = ipaddress.ip_address(address.strip())
    except ValueError:
        return []
    if ip.version == 6 and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.is_loopback or ip.is_unspecified or ip.is_link_local or ip.is_multicast:
        # Not where a client is: the gateway saw no placed caller (tavla dev's players
        # call from loopback). Linking on it would join every such player.
        return []
    prefix = 24 if ip.version == 4 else 64
    network = ipaddress.ip_network(f"{ip}/{prefix}", strict=False)
    return [Signal(SignalKind.ADDRESS, str(ip)), Signal(SignalKind.NETWORK, str(network))]
