"""Game-service wiring: settings from the environment and the coalesced relay wake-up."""

from __future__ import annotations

import asyncio

import pytest

from services.game.main import CoalescedWake, GameSettings
from services.kit.config import ConfigError, Env


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
