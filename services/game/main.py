"""Wiring for the game service: settings -> unit of work -> service -> servicer and loops.

Service-specific settings (all optional):
``TAVLA_WALLET_ADDRESS`` (wallet gRPC address; without it only PLAY tables run and
their doubles are not checked), ``TAVLA_ANALYSIS_ADDRESS`` (analysis gRPC address for
disconnection settlements; without it, or while it is down, the rules library's
figures or the "not analysed" even split), ``TAVLA_GAME_TIMER_SECONDS`` (how often due timers
are fired), ``TAVLA_GAME_PRESENCE_SILENCE_SECONDS`` (silence after which a player
counts as disconnected), ``TAVLA_GAME_PRESENCE_SWEEP_SECONDS``,
``TAVLA_GAME_BEAROFF_CACHE_DIR`` (where the bear-off database for disconnection
settlements is read, or written once built; default ``$XDG_CACHE_HOME/tavla``, the
image sets one it ships prebuilt), ``TAVLA_GAME_GEO_RECHECK_SECONDS`` (300: how long a
real-money seat's location check holds before it is asked again), and
``TAVLA_GAME_GEO_SWEEP_SECONDS`` (30: how often seats due a re-check are swept). The
geo gate is the geo service at ``TAVLA_GEO_ADDRESS`` (:meth:`GeoGate.from_env`; unset,
real-money calls that need a check are refused), closed at shutdown.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any

from services.game.analyst import RulesLibraryAnalyst
from services.game.api import GameApi
from services.game.fastpath import FastStore
from services.game.ports import GrpcAnalyst, GrpcWallet, SettlementAnalyst, WalletPort
from services.game.service import GameService
from services.game.store import GameUnitOfWork
from services.kit.config import Env, Settings
from services.kit.geo_gate import GeoGate
from services.kit.lifetime import close_at_shutdown
from services.kit.server import Runtime, Wiring, run_service
from services.kit.service_tokens import ServiceTokenMinter
from tavla.game.v1 import game_pb2, game_pb2_grpc


@dataclass(frozen=True)
class GameSettings:
    wallet_address: str | None = None
    analysis_address: str | None = None
    timer_seconds: float = 1.0
    presence_silence_seconds: float = 15.0
    presence_sweep_seconds: float = 5.0
    bearoff_cache_dir: str | None = None
    geo_recheck_seconds: float = 300.0
    geo_sweep_seconds: float = 30.0

    @classmethod
    def from_env(cls, env: Env | None = None) -> GameSettings:
        env = env or Env()
        return cls(
            wallet_address=env.optional_text("TAVLA_WALLET_ADDRESS"),
            analysis_address=env.optional_text("TAVLA_ANALYSIS_ADDRESS"),
            timer_seconds=env.number("TAVLA_GAME_TIMER_SECONDS", 1.0, low=0.05, high=60.0),
            presence_silence_seconds=env.number(
                "TAVLA_GAME_PRESENCE_SILENCE_SECONDS", 15.0, low=1.0, high=600.0
            ),
            presence_sweep_seconds=env.number(
                "TAVLA_GAME_PRESENCE_SWEEP_SECONDS", 5.0, low=0.05, high=600.0
            ),
            bearoff_cache_dir=env.optional_text("TAVLA_GAME_BEAROFF_CACHE_DIR"),
            geo_recheck_seconds=env.number(
                "TAVLA_GAME_GEO_RECHECK_SECONDS", 300.0, low=10.0, high=3600.0
            ),
            geo_sweep_seconds=env.number(
                "TAVLA_GAME_GEO_SWEEP_SECONDS", 30.0, low=0.05, high=600.0
            ),
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
    """``geo`` (tests) replaces the gate :meth:`GeoGate.from_env` makes; the wiring closes it."""
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
        analyst = with_analysis_service(
            game_settings, exact_figures(game_settings), runtime.credentials
        )
    return GameService(
        unit_of_work,
        fast=FastStore(runtime.settings.database_url),
        source=runtime.settings.service,
        on_commit=CoalescedWake(runtime.relay.wake),
        clock=runtime.clock,
        wallet=wallet,
        analyst=analyst,
        presence_silence=timedelta(seconds=game_settings.presence_silence_seconds),
        geo=geo or GeoGate.from_env(runtime.credentials),
        geo_recheck=timedelta(seconds=game_settings.geo_recheck_seconds),
    )


def exact_figures(game_settings: GameSettings) -> RulesLibraryAnalyst:
    directory = game_settings.bearoff_cache_dir
    return RulesLibraryAnalyst(Path(directory) if directory else None)


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
        figures = exact_figures(game_settings)
        loops.append(figures.warm_up)  # no disconnection settlement waits for the database
        service = build_service(
            runtime,
            game_settings,
            analyst=with_analysis_service(game_settings, figures, runtime.credentials),
        )
    loops += [service.hold_pool, close_at_shutdown(service.close_geo)]
    if background:
        loops += [
            partial(service.run_timers, game_settings.timer_seconds),
            partial(service.run_presence, game_settings.presence_sweep_seconds),
            partial(service.run_location_checks, game_settings.geo_sweep_seconds),
        ]
    return Wiring(
        servicers=[(game_pb2_grpc.add_GameServiceServicer_to_server, GameApi(service))],
        service_names=[game_pb2.DESCRIPTOR.services_by_name["GameService"].full_name],
        background=loops,
    )


def with_analysis_service(
    game_settings: GameSettings, figures: RulesLibraryAnalyst, credentials: ServiceTokenMinter
) -> SettlementAnalyst:
    """The analysis service when configured, the exact figures while it is down or absent."""
    if game_settings.analysis_address:
        return GrpcAnalyst(game_settings.analysis_address, credentials, fallback=figures)
    return figures


async def serve(settings: Settings) -> None:
    game_settings = GameSettings.from_env()
    await run_service(settings, lambda runtime: wiring(runtime, game_settings))
