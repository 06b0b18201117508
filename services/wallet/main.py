"""Wiring for the wallet: settings -> unit of work -> service -> servicer, consumer, provider."""

from __future__ import annotations

from functools import partial

from services.kit.config import Settings
from services.kit.events.kafka import make_consumer
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
from services.wallet.provider import SandboxConfig, SandboxProvider
from services.wallet.service import WalletService
from services.wallet.settlement import Settler
from services.wallet.store.unit_of_work import WalletUnitOfWork
from tavla.wallet.v1 import wallet_pb2, wallet_pb2_grpc


def wiring(runtime: Runtime, sandbox: SandboxConfig | None = None) -> Wiring:
    unit_of_work = partial(
        WalletUnitOfWork,
        runtime.sessions,
        source=runtime.settings.service,
        clock=runtime.clock,
        on_commit=runtime.relay.wake,
    )
    provider = SandboxProvider(sandbox or SandboxConfig.from_env(), runtime.clock)
    service = WalletService(unit_of_work, clock=runtime.clock, provider=provider)
    bootstrap = runtime.settings.kafka_bootstrap
    session_timeout_ms = runtime.settings.kafka_session_timeout_ms
    settlement = settlement_consumer(
        sessions=runtime.sessions,
        consumer_factory=lambda: make_consumer(
            bootstrap,
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
            bootstrap,
            group=ACCOUNTS_GROUP,
            topics=[ACCOUNTS_TOPIC],
            session_timeout_ms=session_timeout_ms,
        ),
        clock=runtime.clock,
        service=runtime.settings.service,
    )

    async def sandbox_callbacks() -> None:
        await provider.run(service.waiting_payments, service.provider_callback)

    return Wiring(
        servicers=[(wallet_pb2_grpc.add_WalletServiceServicer_to_server, WalletApi(service))],
        service_names=[wallet_pb2.DESCRIPTOR.services_by_name["WalletService"].full_name],
        consumers=[settlement, exclusions],
        background=[sandbox_callbacks],
    )


async def serve(settings: Settings) -> None:
    sandbox = SandboxConfig.from_env()  # fail before migrating if the sandbox is misconfigured
    await run_service(settings, lambda runtime: wiring(runtime, sandbox))
