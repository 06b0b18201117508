"""Wiring for the accounts service: settings -> unit of work -> service -> servicer."""

from __future__ import annotations

from datetime import timedelta
from functools import partial

from argon2 import PasswordHasher

from services.accounts.api import AccountsApi
from services.accounts.sanctions import ANTIABUSE_TOPIC, SANCTIONS_GROUP, sanctions_consumer
from services.accounts.service import AccountsService, SessionPolicy
from services.accounts.store import AccountsUnitOfWork
from services.accounts.tokens import TokenIssuer
from services.kit.config import ConfigError, Env, Settings
from services.kit.events.kafka import make_consumer
from services.kit.geo_gate import GeoGate
from services.kit.server import Runtime, Wiring, run_service
from tavla.accounts.v1 import accounts_pb2, accounts_pb2_grpc


def build_tokens() -> TokenIssuer:
    env = Env()
    # Short: access tokens are not revoked by logout, they just expire (refresh tokens rotate).
    ttl = env.integer("TAVLA_JWT_TTL_SECONDS", 900, low=60, high=24 * 3600)
    return TokenIssuer.from_files(
        env.text("TAVLA_JWT_PRIVATE_KEY_FILE"),
        timedelta(seconds=ttl),
        env.optional_text("TAVLA_JWT_PUBLISHED_KEYS_DIR"),
    )


# Argon2id at the library's parameters (RFC 9106's second recommendation: 3 passes over
# 64 MiB, 4 lanes), about 0.2 s of CPU per hash or verification. A test stack registering
# and logging in dozens of players may ask, by this loud name, for one pass over 8 MiB in
# one lane (under 0.01 s): the same argon2id, refused unless TAVLA_NOT_PRODUCTION=true says
# this is not production (the end-to-end tests' stacks set both, docs/testing.md).
CHEAP_HASHES_FLAG = "TAVLA_ACCOUNTS_CHEAP_PASSWORD_HASHES_UNSAFE"
NOT_PRODUCTION_FLAG = "TAVLA_NOT_PRODUCTION"


def build_hasher(env: Env | None = None) -> PasswordHasher:
    env = env or Env()
    if not env.flag(CHEAP_HASHES_FLAG, False):
        return PasswordHasher()
    if not env.flag(NOT_PRODUCTION_FLAG, False):
        raise ConfigError(
            f"{CHEAP_HASHES_FLAG}=true makes password hashes cheap to guess; it is refused "
            f"unless {NOT_PRODUCTION_FLAG}=true says this is not production"
        )
    return PasswordHasher(time_cost=1, memory_cost=8 * 1024, parallelism=1)


def build_policy() -> SessionPolicy:
    env = Env()
    return SessionPolicy(
        lockout=timedelta(
            minutes=env.integer("TAVLA_ACCOUNTS_LOCKOUT_MINUTES", 15, low=1, high=7 * 24 * 60)
        ),
        refresh_ttl=timedelta(
            days=env.integer("TAVLA_ACCOUNTS_REFRESH_TTL_DAYS", 30, low=1, high=365)
        ),
    )


def wiring(runtime: Runtime, tokens: TokenIssuer) -> Wiring:
    unit_of_work = partial(
        AccountsUnitOfWork,
        runtime.sessions,
        source=runtime.settings.service,
        clock=runtime.clock,
        on_commit=runtime.relay.wake,
    )
    # TAVLA_GEO_ADDRESS: register and login ask geo there (unset or down: they go on).
    geo = GeoGate.from_env(runtime.credentials)
    service = AccountsService(
        unit_of_work,
        hasher=build_hasher(),
        tokens=tokens,
        clock=runtime.clock,
        geo=geo,
        policy=build_policy(),
    )
    settings = runtime.settings
    sanctions = sanctions_consumer(
        sessions=runtime.sessions,
        consumer_factory=lambda: make_consumer(
            settings.kafka,
            group=SANCTIONS_GROUP,
            topics=[ANTIABUSE_TOPIC],
            session_timeout_ms=settings.kafka_session_timeout_ms,
        ),
        clock=runtime.clock,
        service=settings.service,
    )
    return Wiring(
        servicers=[
            (accounts_pb2_grpc.add_AccountsServiceServicer_to_server, AccountsApi(service, tokens))
        ],
        service_names=[accounts_pb2.DESCRIPTOR.services_by_name["AccountsService"].full_name],
        # Our own tokens are verified with our own keys, not a JWKS fetched from ourselves.
        player_keys=tokens.verification_keys(),
        consumers=[sanctions],
        on_stop=[geo.close],
    )


async def serve(settings: Settings) -> None:
    tokens = build_tokens()  # fail before migrating if the signing key is missing
    build_policy()  # and if a setting is wrong
    build_hasher()
    await run_service(settings, lambda runtime: wiring(runtime, tokens))
