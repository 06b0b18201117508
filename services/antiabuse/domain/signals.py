"""Identifiers that can link accounts, normalised so that trivial variations still match.

- ``device``: the client's device id (``x-tavla-device-id``, carried by LoggedIn);
- ``address``: the exact client address (canonical text; an address that cannot be one
  person's, private, carrier-grade NAT, loopback, link-local, reserved or multicast
  (:mod:`services.kit.person_address`), is ignored, and so is its network);
- ``network``: its /24 (IPv4) or /64 (IPv6): a provider's block, an office, a campus;
- ``email``: the mailbox with case, ``+tags`` and Gmail dots removed;
- ``payment``: a payment instrument's fingerprint, the provider's opaque token for a
  card or account (never its number; the wallet's Deposited and WithdrawalCompleted),
  qualified by the provider that issued it (fingerprints of two providers never match);
- ``name``: the display name reduced to its letters: evidence only, never a link
  (many honest players share a first name).

How strongly each kind links two accounts is :mod:`.link_strength`.
"""

from __future__ import annotations

import ipaddress
import unicodedata
from dataclasses import dataclass
from enum import StrEnum

from services.kit.mailbox import mailbox_key
from services.kit.person_address import person_address


class SignalKind(StrEnum):
    DEVICE = "device"
    ADDRESS = "address"
    NETWORK = "network"
    EMAIL = "email"
    PAYMENT = "payment"
    NAME = "name"


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
    """The exact address and its /24 or /64; nothing for text that is not an address, or
    for an address that cannot be one person's."""
    ip = person_address(address)
    if ip is None:
        # Not an address, or not one person's: a private or carrier-NAT address is
        # shared by construction, loopback is tavla dev's players. Linking on it would
        # join strangers.
        return []
    prefix = 24 if ip.version == 4 else 64
    network = ipaddress.ip_network(f"{ip}/{prefix}", strict=False)
    return [Signal(SignalKind.ADDRESS, str(ip)), Signal(SignalKind.NETWORK, str(network))]
