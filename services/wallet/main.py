"""Wiring for the wallet: settings -> unit of work -> service -> servicer, consumers, provider.

The payment provider is chosen by ``TAVLA_WALLET_PAYMENT_PROVIDER``
(:mod:`services.wallet.provider_config`), read before anything starts so a
missing choice stops the process with a message naming the variable. The real
provider brings the webhook listener; the sandbox its in-process callback loop.
The geo gate (deposits, withdrawals, the play-money top-up) is the geo service at
``TAVLA_GEO_ADDRESS`` (:meth:`GeoGate.from_env`; unset, real-money payments are
refused), closed at shutdown.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping
from functools import partial
from typing import Any

from services.kit.clock import Clock
from services.kit.config import Settings
from services.kit.events.kafka import make_consumer
from services.kit.geo_gate import GeoGate
from services.kit.money_bounds import MoneyBounds
from services.kit.server import Runtime, Wiring, run_service
from services.wallet.api import WalletApi
from services.wallet.consumers import (
    ACCOUNTS_GROUP,
    ACCOUNTS_TOPIC,
    GAME_TOPIC,
    SETTLEMENT_GROUP,
    accounts_consumer,
    settlement_consumer,
)
from services.wallet.http_provider import HttpProvider
from services.wallet.provider import PaymentProvider, SandboxProvider
from services.wallet.provider_config import PaymentSettings
from services.wallet.sanctions import ANTIABUSE_TOPIC, SANCTIONS_GROUP, sanctions_consumer
from services.wallet.service import WalletService
from services.wallet.settlement import Settler
from services.wallet.store.unit_of_work import WalletUnitOfWork
from tavla.wallet.v1 import wallet_pb2, wallet_pb2_grpc

Loop = Callable[[], Coroutine[Any, Any, None]]


def build_provider(payments: PaymentSettings, clock: Clock) -> PaymentProvider:
    if payments.http is not None:
        return HttpProvider(payments.http)
    if payments.sandbox is not None:
        return SandboxProvider(payments.sandbox, clock)
    raise ValueError(f"no settings for payment provider {payments.provider!r}")


def provider_loops(provider: PaymentProvider, service: WalletService, clock: Clock) -> list[Loop]:
    """The provider's background work: webhooks in, or the sandbox's callbacks."""
    if isinstance(provider, HttpProvider):
        http = provider

        async def webhooks() -> None:
            # aiohttp's server, imported for this provider alone (the sandbox needs none).
            from services.wallet.webhooks import serve_webhooks

            try:
                await serve_webhooks(service.provider_event, http.config, clock)
            finally:
                await http.close()

        return [webhooks]
    if isinstance(provider, SandboxProvider):
        sandbox = provider

        async def sandbox_callbacks() -> None:
            await sandbox.run(service.waiting_payments, service.provider_callback)

        return [sandbox_callbacks]
    return []


def wiring(
    runtime: Runtime,
    payments: PaymentSettings,
    environ: Mapping[str, str] | None = None,
    bounds: MoneyBounds | None = None,
) -> Wiring:
    """``environ`` (tests) replaces the process environment for the geo gate's settings
    and, unless ``bounds`` is given, the operator's money bounds (TAVLA_MONEY_MAX_*)."""
    geo = GeoGate.from_env(runtime.credentials, environ)
    bounds = bounds or MoneyBounds.from_env(environ)
    unit_of_work = partial(
        WalletUnitOfWork,
        runtime.sessions,
        source=runtime.settings.service,
        clock=runtime.clock,
        on_commit=runtime.relay.wake,
    )
    provider = build_provider(payments, runtime.clock)
    service = WalletService(
        unit_of_work, clock=runtime.clock, provider=provider, geo=geo, bounds=bounds
    )
    kafka = runtime.settings.kafka
    session_timeout_ms = runtime.settings.kafka_session_timeout_ms
    settlement = settlement_consumer(
        sessions=runtime.sessions,
        consumer_factory=lambda: make_consumer(
            kafka,
            group=SETTLEMENT_GROUP,
            topics=[GAME_TOPIC],
            session_timeout_ms=session_timeout_ms,
        ),
        settler=Settler(runtime.clock),
        clock=runtime.clock,
        service=runtime.settings.service,
    )
    exclusions = accounts_consumer(
        sessions=runtime.sessions,
        consumer_factory=lambda: make_consumer(
            kafka,
            group=ACCOUNTS_GROUP,
            topics=[ACCOUNTS_TOPIC],
            session_timeout_ms=session_timeout_ms,
        ),
        clock=runtime.clock,
        service=runtime.settings.service,
    )
    sanctions = sanctions_consumer(
        sessions=runtime.sessions,
        consumer_factory=lambda: make_consumer(
            kafka,
            group=SANCTIONS_GROUP,
            topics=[ANTIABUSE_TOPIC],
            session_timeout_ms=session_timeout_ms,
        ),
        clock=runtime.clock,
        service=runtime.settings.service,
    )
    return Wiring(
        servicers=[(wallet_pb2_grpc.add_WalletServiceServicer_to_server, WalletApi(service))],
        service_names=[wallet_pb2.DESCRIPTOR.services_by_name["WalletService"].full_name],
        consumers=[settlement, exclusions, sanctions],
        background=[*provider_loops(provider, service, runtime.clock)],
        on_stop=[geo.close],
    )


async def serve(settings: Settings) -> None:
    # Before migrating: a missing or bad provider choice stops the process, naming the variable.
    payments = PaymentSettings.from_env()
    bounds = MoneyBounds.from_env()
    await run_service(settings, lambda runtime: wiring(runtime, payments, bounds=bounds))
