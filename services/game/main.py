"""Wiring for the game service: settings -> unit of work -> service -> servicer and loops.

Service-specific settings: ``TAVLA_ANALYSIS_ADDRESS`` (required: the analysis gRPC
address, the one source of every disconnection settlement's shares; without it the
process refuses to start, as the wallet does without a payment provider, so that no
deployment splits every disconnection evenly by omission); all others optional:
``TAVLA_WALLET_ADDRESS`` (wallet gRPC address; without it only PLAY tables run and
their doubles are not checked), ``TAVLA_GAME_ANALYSIS_WAIT_SECONDS`` (120: how long
after the reconnect window a settlement keeps retrying an unreachable analysis service
before the "not analysed" even split), ``TAVLA_GAME_ANALYSIS_TIMEOUT_SECONDS`` (5: one
call's deadline), ``TAVLA_GAME_RECONNECT_SECONDS_UNSAFE`` (tests and ``tavla dev`` only:
a reconnect window shorter than the house's five minutes; the chart refuses it unless
``notProduction``), ``TAVLA_GAME_TIMER_SECONDS`` (how often due timers are fired),
``TAVLA_GAME_PRESENCE_SILENCE_SECONDS`` (silence after which a player counts as
disconnected), ``TAVLA_GAME_PRESENCE_SWEEP_SECONDS``, ``TAVLA_GAME_GEO_RECHECK_SECONDS``
(300: how long a real-money seat's location check holds before it is asked again), and
``TAVLA_GAME_GEO_SWEEP_SECONDS`` (30: how often seats due a re-check are swept). The
geo gate is the geo service at ``TAVLA_GEO_ADDRESS`` (:meth:`GeoGate.from_env`; unset,
real-money calls that need a check are refused), closed at shutdown.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from datetime import timedelta
from functools import partial
from typing import Any

from services.game.api import GameApi
from services.game.domain import RECONNECT_WINDOW
from services.game.fastpath import FastStore
from services.game.ports import (
    GrpcAnalyst,
    GrpcWallet,
    SettlementAnalyst,
    WalletPort,
)
from services.game.service import GameService
from services.game.store import GameUnitOfWork
from services.kit.config import Env, Settings
from services.kit.events.consumer import EventConsumer
from services.kit.events.kafka import make_consumer
from services.kit.geo_gate import GeoGate
from services.kit.money_bounds import MoneyBounds
from services.kit.screen_names import consumer_group as screen_names_group
from services.kit.screen_names import screen_names_consumer
from services.kit.self_exclusion import ACCOUNTS_TOPIC, consumer_group, self_exclusions_consumer
from services.kit.server import Runtime, Wiring, run_service
from services.kit.service_tokens import ServiceTokenMinter
from services.kit.suspensions import consumer_group as suspensions_group
from services.kit.suspensions import suspensions_consumer
from tavla.game.v1 import game_pb2, game_pb2_grpc


@dataclass(frozen=True)
class GameSettings:
    analysis_address: str
    wallet_address: str | None = None
    timer_seconds: float = 1.0
    presence_silence_seconds: float = 15.0
    presence_sweep_seconds: float = 5.0
    analysis_wait_seconds: float = 120.0
    analysis_timeout_seconds: float = 5.0
    reconnect_seconds: float = RECONNECT_WINDOW.total_seconds()
    geo_recheck_seconds: float = 300.0
    geo_sweep_seconds: float = 30.0
    # How often an idle WatchGame stream reads anyway: changes wake it by NOTIFY, so this
    # only bounds the delay after a notification lost while the listener reconnected.
    watch_fallback_seconds: float = 30.0
    # The operator's maximum stakes and largest losses per currency (TAVLA_MONEY_MAX_*).
    money_bounds: MoneyBounds = field(default_factory=MoneyBounds.defaults)

    @classmethod
    def from_env(cls, env: Env | None = None) -> GameSettings:
        env = env or Env()
        return cls(
            wallet_address=env.optional_text("TAVLA_WALLET_ADDRESS"),
            analysis_address=env.text("TAVLA_ANALYSIS_ADDRESS"),
            timer_seconds=env.number("TAVLA_GAME_TIMER_SECONDS", 1.0, low=0.05, high=60.0),
            presence_silence_seconds=env.number(
                "TAVLA_GAME_PRESENCE_SILENCE_SECONDS", 15.0, low=1.0, high=600.0
            ),
            presence_sweep_seconds=env.number(
                "TAVLA_GAME_PRESENCE_SWEEP_SECONDS", 5.0, low=0.05, high=600.0
            ),
            analysis_wait_seconds=env.number(
                "TAVLA_GAME_ANALYSIS_WAIT_SECONDS", 120.0, low=0.0, high=86400.0
            ),
            analysis_timeout_seconds=env.number(
                "TAVLA_GAME_ANALYSIS_TIMEOUT_SECONDS", 5.0, low=0.1, high=60.0
            ),
            # The house gives five minutes; only tests and tavla dev shorten it (the name
            # says so, as the wallet's TAVLA_WALLET_SANDBOX_REAL_MONEY_UNSAFE does).
            reconnect_seconds=env.number(
                "TAVLA_GAME_RECONNECT_SECONDS_UNSAFE",
                RECONNECT_WINDOW.total_seconds(),
                low=1.0,
                high=RECONNECT_WINDOW.total_seconds(),
            ),
            geo_recheck_seconds=env.number(
                "TAVLA_GAME_GEO_RECHECK_SECONDS", 300.0, low=10.0, high=3600.0
            ),
            geo_sweep_seconds=env.number(
                "TAVLA_GAME_GEO_SWEEP_SECONDS", 30.0, low=0.05, high=600.0
            ),
            watch_fallback_seconds=env.number(
                "TAVLA_GAME_WATCH_FALLBACK_SECONDS", 30.0, low=1.0, high=600.0
            ),
            money_bounds=MoneyBounds.from_env(env),
        )


class CoalescedWake:
    """Wake the outbox relay at most once per ``delay``: events leave within it, in batches.

    Waking it after every command made the relay run one publish cycle (several
    statements and a broker round trip) per event under load.
    """

    def __init__(self, wake: Callable[[], None], delay_seconds: float = 0.02) -> None:
        self._wake = wake
        self._delay = delay_seconds
        self._pending = False

    def __call__(self) -> None:
        if self._pending:
            return
        self._pending = True
        asyncio.get_running_loop().call_later(self._delay, self._fire)

    def _fire(self) -> None:
        self._pending = False
        self._wake()


def build_service(
    runtime: Runtime,
    game_settings: GameSettings,
    *,
    wallet: WalletPort | None = None,
    analyst: SettlementAnalyst | None = None,
    geo: GeoGate | None = None,
) -> GameService:
    """``wallet``, ``analyst`` and ``geo`` (tests) replace the clients made from the settings;
    the wiring closes them all when the service stops."""
    unit_of_work = partial(
        GameUnitOfWork,
        runtime.sessions,
        source=runtime.settings.service,
        clock=runtime.clock,
        on_commit=runtime.relay.wake,
    )
    if wallet is None and game_settings.wallet_address:
        wallet = GrpcWallet(game_settings.wallet_address, runtime.credentials)
    if analyst is None:
        analyst = analysis_service(game_settings, runtime.credentials)
    return GameService(
        unit_of_work,
        fast=FastStore(runtime.settings.database_url),
        source=runtime.settings.service,
        on_commit=CoalescedWake(runtime.relay.wake),
        clock=runtime.clock,
        wallet=wallet,
        analyst=analyst,
        presence_silence=timedelta(seconds=game_settings.presence_silence_seconds),
        watch_fallback_seconds=game_settings.watch_fallback_seconds,
        geo=geo or GeoGate.from_env(runtime.credentials),
        geo_recheck=timedelta(seconds=game_settings.geo_recheck_seconds),
        analysis_wait=timedelta(seconds=game_settings.analysis_wait_seconds),
        reconnect_window=timedelta(seconds=game_settings.reconnect_seconds),
        bounds=game_settings.money_bounds,
    )


def wiring(
    runtime: Runtime,
    game_settings: GameSettings,
    *,
    service: GameService | None = None,
    background: bool = True,
) -> Wiring:
    """``background=False`` leaves timers and presence to the caller (tests drive them)."""
    loops: list[Callable[[], Coroutine[Any, Any, None]]] = []
    if service is None:
        service = build_service(runtime, game_settings)
    listener = service.listener(runtime.settings.database_url)
    loops += [service.hold_pool, listener.run]
    if background:
        loops += [
            partial(service.run_timers, game_settings.timer_seconds),
            partial(service.run_presence, game_settings.presence_sweep_seconds),
            partial(service.run_location_checks, game_settings.geo_sweep_seconds),
        ]
    return Wiring(
        servicers=[(game_pb2_grpc.add_GameServiceServicer_to_server, GameApi(service))],
        service_names=[game_pb2.DESCRIPTOR.services_by_name["GameService"].full_name],
        consumers=[self_exclusions(runtime), screen_names(runtime), suspensions(runtime)],
        background=loops,
        on_stop=[service.close_clients],
    )


def self_exclusions(runtime: Runtime) -> EventConsumer:
    """The accounts service's self-exclusions, which game creation refuses."""
    return _accounts_copy(runtime, self_exclusions_consumer, consumer_group("game"))


def screen_names(runtime: Runtime) -> EventConsumer:
    """The accounts service's screen names, which name the seats of new games."""
    return _accounts_copy(runtime, screen_names_consumer, screen_names_group("game"))


def suspensions(runtime: Runtime) -> EventConsumer:
    """The accounts service's suspensions and terminations, which the lobby chat refuses."""
    return _accounts_copy(runtime, suspensions_consumer, suspensions_group("game"))


def _accounts_copy(
    runtime: Runtime, build: Callable[..., EventConsumer], group: str
) -> EventConsumer:
    """A kit copy of the accounts stream's facts, read by a consumer group of its own."""
    settings = runtime.settings
    return build(
        sessions=runtime.sessions,
        consumer_factory=lambda: make_consumer(
            settings.kafka,
            group=group,
            topics=[ACCOUNTS_TOPIC],
            session_timeout_ms=settings.kafka_session_timeout_ms,
        ),
        clock=runtime.clock,
        service=settings.service,
    )


def analysis_service(
    game_settings: GameSettings, credentials: ServiceTokenMinter
) -> SettlementAnalyst:
    """The analysis service's SettlementShares: the one source of disconnection shares.

    An unreachable one is waited for up to ``TAVLA_GAME_ANALYSIS_WAIT_SECONDS``; only
    then is a settlement split evenly, "not analysed".
    """
    return GrpcAnalyst(
        game_settings.analysis_address,
        credentials,
        timeout_seconds=game_settings.analysis_timeout_seconds,
    )


async def serve(settings: Settings) -> None:
    game_settings = GameSettings.from_env()
    await run_service(settings, lambda runtime: wiring(runtime, game_settings))
