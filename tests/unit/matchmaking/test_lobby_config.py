"""Matchmaking's configuration: it will not start without the wallet and the game service."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from services.kit.config import ConfigError, Env
from services.matchmaking.main import MatchmakingSettings
from tests.support.identity import service_env

ROOT = Path(__file__).resolve().parents[3]


def test_settings_need_the_wallet_and_game_addresses() -> None:
    settings = MatchmakingSettings.from_env(
        Env({"TAVLA_WALLET_ADDRESS": "wallet:50054", "TAVLA_GAME_ADDRESS": "game:50052"})
    )
    assert (settings.wallet_address, settings.game_address) == ("wallet:50054", "game:50052")
    assert settings.claim_seconds == 30.0
    with pytest.raises(ConfigError, match="TAVLA_WALLET_ADDRESS is required"):
        MatchmakingSettings.from_env(Env({"TAVLA_GAME_ADDRESS": "game:50052"}))
    with pytest.raises(ConfigError, match="TAVLA_GAME_ADDRESS is required"):
        MatchmakingSettings.from_env(Env({"TAVLA_WALLET_ADDRESS": "wallet:50054"}))
    with pytest.raises(ConfigError, match="TAVLA_MATCHMAKING_CLAIM_SECONDS"):
        MatchmakingSettings.from_env(
            Env(
                {
                    "TAVLA_WALLET_ADDRESS": "w:1",
                    "TAVLA_GAME_ADDRESS": "g:1",
                    "TAVLA_MATCHMAKING_CLAIM_SECONDS": "0",
                }
            )
        )


def test_tavla_serve_refuses_to_start_without_the_wallet_address() -> None:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("TAVLA_WALLET_ADDRESS", "TAVLA_GAME_ADDRESS")
    }
    env.update(
        service_env("matchmaking"),
        # Never reached: the addresses are checked before the database is touched.
        TAVLA_DATABASE_URL="postgresql+asyncpg://nobody@127.0.0.1:9/none",
        TAVLA_KAFKA_BOOTSTRAP="127.0.0.1:9",
        TAVLA_GAME_ADDRESS="127.0.0.1:9",
    )
    done = subprocess.run(
        [sys.executable, "-m", "services.cli", "serve", "matchmaking"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith(
        "tavla serve matchmaking: TAVLA_WALLET_ADDRESS is required"
    )
