"""Game-service wiring: settings from the environment, the relay wake-up, the analysts."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from services.backgammon import bearoff
from services.game.main import CoalescedWake, GameSettings, exact_figures, with_analysis_service
from services.game.ports import GrpcAnalyst
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


def test_settings_read_the_optional_addresses_and_intervals() -> None:
    settings = GameSettings.from_env(
        Env({"TAVLA_WALLET_ADDRESS": "wallet:50054", "TAVLA_GAME_TIMER_SECONDS": "0.5"})
    )
    assert settings.wallet_address == "wallet:50054"
    assert settings.analysis_address is None
    assert settings.timer_seconds == 0.5
    with pytest.raises(ConfigError, match="TAVLA_GAME_PRESENCE_SILENCE_SECONDS"):
        GameSettings.from_env(Env({"TAVLA_GAME_PRESENCE_SILENCE_SECONDS": "0"}))


def test_location_checks_hold_five_minutes_unless_configured() -> None:
    defaults = GameSettings.from_env(Env({}))
    assert (defaults.geo_recheck_seconds, defaults.geo_sweep_seconds) == (300.0, 30.0)
    configured = GameSettings.from_env(
        Env({"TAVLA_GAME_GEO_RECHECK_SECONDS": "120", "TAVLA_GAME_GEO_SWEEP_SECONDS": "10"})
    )
    assert (configured.geo_recheck_seconds, configured.geo_sweep_seconds) == (120.0, 10.0)
    # A check that never lapses would never be periodic: refused at start, naming the variable.
    with pytest.raises(ConfigError, match="TAVLA_GAME_GEO_RECHECK_SECONDS"):
        GameSettings.from_env(Env({"TAVLA_GAME_GEO_RECHECK_SECONDS": "86400"}))


async def test_the_exact_figures_warm_up_from_the_configured_cache(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    # pytest's cache directory holds the database between runs (the other tests share it).
    directory = request.config.cache.mkdir("tavla-bearoff") if request.config.cache else tmp_path
    settings = GameSettings.from_env(Env({"TAVLA_GAME_BEAROFF_CACHE_DIR": str(directory)}))
    figures = exact_figures(settings)
    # no analysis service set
    assert with_analysis_service(settings, figures, minter("game")) is figures
    await figures.warm_up()  # loads the database, or builds it once and writes it there
    assert (directory / bearoff.CACHE_FILE).stat().st_size > 1_000_000
    analysed = with_analysis_service(
        GameSettings(analysis_address="analysis:50056"), figures, minter("game")
    )
    assert isinstance(analysed, GrpcAnalyst)
