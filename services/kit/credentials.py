"""A service's credentials, from its settings: its own service key (it signs service
tokens and the events the service publishes), the public keys of the other services
(they verify callers and the producers of consumed events), and how it verifies
players' access tokens.

Loaded at start; a missing or malformed key stops the process with a message
naming the variable (``TAVLA_SERVICE_KEY_FILE``, ``TAVLA_SERVICE_PUBLIC_KEYS_DIR``,
``TAVLA_ACCOUNTS_ADDRESS``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import grpc

from services.kit.authn import Access, needs_player_tokens
from services.kit.client import service_channel
from services.kit.config import ConfigError, Settings
from services.kit.events.signing import EventSigner, EventVerifier
from services.kit.jwks import JwksCache, grpc_fetch
from services.kit.keys import load_private_key
from services.kit.player_tokens import KeySource, PlayerTokenVerifier
from services.kit.service_tokens import (
    ServiceTokenMinter,
    ServiceTokenVerifier,
    load_public_keys,
)


@dataclass(frozen=True)
class ServiceCredentials:
    minter: ServiceTokenMinter
    verifier: ServiceTokenVerifier
    # The events this service publishes are signed with its key; those it consumes are
    # verified against the keys of their producers (services.kit.events.signing).
    event_signer: EventSigner
    event_verifier: EventVerifier


def load_service_credentials(settings: Settings) -> ServiceCredentials:
    key = load_private_key(Path(settings.service_key_file), "TAVLA_SERVICE_KEY_FILE")
    callers = load_public_keys(Path(settings.service_public_keys_dir))
    return ServiceCredentials(
        minter=ServiceTokenMinter(settings.service, key),
        verifier=ServiceTokenVerifier(settings.service, callers),
        event_signer=EventSigner(settings.service, key),
        event_verifier=EventVerifier(callers),
    )


@dataclass
class PlayerVerification:
    """How a process verifies access tokens: None when it serves no player method."""

    verifier: PlayerTokenVerifier | None = None
    jwks: JwksCache | None = None
    channel: grpc.aio.Channel | None = None

    def ready(self) -> bool:
        """Whether player tokens can be verified: the JWKS was fetched at least once."""
        return self.jwks is None or self.jwks.ready

    async def close(self) -> None:
        if self.channel is not None:
            await self.channel.close(None)


def player_verification(
    settings: Settings,
    table: Mapping[str, Access],
    own_keys: KeySource | None,
    minter: ServiceTokenMinter,
) -> PlayerVerification:
    """The service's own keys if it has them (accounts), else the accounts service's JWKS."""
    if not needs_player_tokens(table):
        return PlayerVerification()
    if own_keys is not None:
        return PlayerVerification(PlayerTokenVerifier(own_keys))
    if not settings.accounts_address:
        raise ConfigError(
            f"TAVLA_ACCOUNTS_ADDRESS is required: {settings.service} serves player methods and "
            "verifies access tokens with the keys the accounts service publishes"
        )
    channel = service_channel(settings.accounts_address, target="accounts", credentials=minter)
    jwks = JwksCache(
        grpc_fetch(channel),
        refresh_seconds=settings.jwks_refresh_seconds,
        min_refresh_seconds=settings.jwks_min_refresh_seconds,
    )
    return PlayerVerification(PlayerTokenVerifier(jwks), jwks, channel)
