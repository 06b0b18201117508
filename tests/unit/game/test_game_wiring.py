"""Game-service wiring: settings from the environment, the relay wake-up, the analysts."""

from __future__ import annotations

import asyncio

import pytest

from services.game.main import CoalescedWake, GameSettings, analysis_service
from services.game.ports import GrpcAnalyst
from services.game.service import Watchers
from services.kit.config import ConfigError, Env
from tests.support.identity import minter


async def test_many_commits_wake_the_relay_once_per_window() -> None:
    wakes: list[int] = []
    wake = CoalescedWake(lambda: wakes.append(1), delay_seconds=0.05)
    for _ in range(100):
        wake()
    assert wakes == []  # not before the window ends
    await asyncio.sleep(0.1)
    assert wakes == [1]
    wake()
    await asyncio.sleep(0.1)
    assert wakes == [1, 1]

# The one setting the game cannot start without.
ANALYSIS = {"TAVLA_ANALYSIS_ADDRESS": "analysis:50056"}


def test_settings_read_the_addresses_and_intervals() -> None:
    settings = GameSettings.from_env(
        Env({**ANALYSIS, "TAVLA_WALLET_ADDRESS": "wallet:50054", "TAVLA_GAME_TIMER_SECONDS": "0.5"})
    )
    assert settings.wallet_address == "wallet:50054"
    assert settings.analysis_address == "analysis:50056"
    assert settings.timer_seconds == 0.5
    with pytest.raises(ConfigError, match="TAVLA_GAME_PRESENCE_SILENCE_SECONDS"):
        GameSettings.from_env(Env({**ANALYSIS, "TAVLA_GAME_PRESENCE_SILENCE_SECONDS": "0"}))


def test_settings_without_an_analysis_address_are_refused_naming_it() -> None:
    # Not a quiet even split of every disconnection: the operator must name the service.
    with pytest.raises(ConfigError, match="TAVLA_ANALYSIS_ADDRESS is required"):
        GameSettings.from_env(Env({"TAVLA_WALLET_ADDRESS": "wallet:50054"}))


def test_location_checks_hold_five_minutes_unless_configured() -> None:
    defaults = GameSettings.from_env(Env(ANALYSIS))
    assert (defaults.geo_recheck_seconds, defaults.geo_sweep_seconds) == (300.0, 30.0)
    configured = GameSettings.from_env(
        Env(
            {
                **ANALYSIS,
                "TAVLA_GAME_GEO_RECHECK_SECONDS": "120",
                "TAVLA_GAME_GEO_SWEEP_SECONDS": "10",
            }
        )
    )
    assert (configured.geo_recheck_seconds, configured.geo_sweep_seconds) == (120.0, 10.0)
    # A check that never lapses would never be periodic: refused at start, naming the variable.
    with pytest.raises(ConfigError, match="TAVLA_GAME_GEO_RECHECK_SECONDS"):
        GameSettings.from_env(Env({**ANALYSIS, "TAVLA_GAME_GEO_RECHECK_SECONDS": "86400"}))


async def test_the_analysis_service_settles_and_the_wait_is_configured() -> None:
    # Async: the analyst's gRPC channel is made on the running loop, as the service makes it
    # (a synchronous test would lean on whatever loop an earlier test left behind).
    defaults = GameSettings.from_env(Env(ANALYSIS))
    assert (defaults.analysis_wait_seconds, defaults.reconnect_seconds) == (120.0, 300.0)
    configured = GameSettings.from_env(
        Env(
            {
                **ANALYSIS,
                "TAVLA_GAME_ANALYSIS_WAIT_SECONDS": "30",
                "TAVLA_GAME_RECONNECT_SECONDS_UNSAFE": "3",
            }
        )
    )
    assert (configured.analysis_wait_seconds, configured.reconnect_seconds) == (30.0, 3.0)
    assert isinstance(analysis_service(configured, minter("game")), GrpcAnalyst)
    # The house's five minutes can be shortened (tests, dev), never lengthened.
    with pytest.raises(ConfigError, match="TAVLA_GAME_RECONNECT_SECONDS_UNSAFE"):
        GameSettings.from_env(Env({**ANALYSIS, "TAVLA_GAME_RECONNECT_SECONDS_UNSAFE": "600"}))


def test_watch_streams_fall_back_to_a_read_every_30_seconds_unless_configured() -> None:
    assert GameSettings.from_env(Env(ANALYSIS)).watch_fallback_seconds == 30.0
    tuned = GameSettings.from_env(Env({**ANALYSIS, "TAVLA_GAME_WATCH_FALLBACK_SECONDS": "60"}))
    assert tuned.watch_fallback_seconds == 60.0
    with pytest.raises(ConfigError, match="TAVLA_GAME_WATCH_FALLBACK_SECONDS"):
        GameSettings.from_env(Env({**ANALYSIS, "TAVLA_GAME_WATCH_FALLBACK_SECONDS": "0"}))


async def test_a_change_wakes_the_games_watchers_and_a_reconnection_wakes_them_all() -> None:
    watchers = Watchers()
    first, second = watchers.event("g1"), watchers.event("g2")
    watchers.notify("g1")
    assert first.is_set() and not second.is_set()
    again = watchers.event("g1")  # a woken stream waits on a fresh event for what follows
    assert again is not first and not again.is_set()
    watchers.notify_all()
    assert again.is_set() and second.is_set()
