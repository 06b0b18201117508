"""Configuration is validated at start, and every error names its variable."""

from __future__ import annotations

import pytest

from services.kit.config import ConfigError, Env, Settings

GOOD = {
    "TAVLA_DATABASE_URL": "postgresql+asyncpg://postgres@127.0.0.1:5432/tavla_game",
    "TAVLA_KAFKA_BOOTSTRAP": "127.0.0.1:9092",
    "TAVLA_SERVICE_KEY_FILE": "/run/secrets/game.key.pem",
    "TAVLA_SERVICE_PUBLIC_KEYS_DIR": "/run/secrets/service-public-keys",
}


def test_defaults_fill_what_is_not_set() -> None:
    settings = Settings.from_env("game", GOOD)
    assert settings.grpc_port == 50051
    assert settings.kafka_idempotence is False
    assert settings.kafka_session_timeout_ms == 10_000
    assert settings.log_level == "info"
    assert settings.grpc_reflection is False  # off unless asked for
    assert settings.accounts_address is None


@pytest.mark.parametrize(
    ("name", "value", "phrase"),
    [
        ("TAVLA_GRPC_PORT", "eighty", "TAVLA_GRPC_PORT='eighty' is not an integer"),
        ("TAVLA_GRPC_PORT", "70000", "TAVLA_GRPC_PORT=70000 is outside 1..65535"),
        ("TAVLA_KAFKA_IDEMPOTENCE", "maybe", "TAVLA_KAFKA_IDEMPOTENCE='maybe' is not a boolean"),
        ("TAVLA_LOG_LEVEL", "loud", "TAVLA_LOG_LEVEL='loud' must be one of"),
        ("TAVLA_KAFKA_SESSION_TIMEOUT_MS", "500", "TAVLA_KAFKA_SESSION_TIMEOUT_MS=500 is outside"),
        ("TAVLA_DATABASE_URL", "mysql://x/y", "TAVLA_DATABASE_URL must be a postgresql+asyncpg"),
        ("TAVLA_SHUTDOWN_GRACE_SECONDS", "-1", "TAVLA_SHUTDOWN_GRACE_SECONDS=-1.0 is outside"),
    ],
)
def test_a_bad_value_names_the_variable(name: str, value: str, phrase: str) -> None:
    with pytest.raises(ConfigError) as error:
        Settings.from_env("game", {**GOOD, name: value})
    assert phrase in str(error.value)


@pytest.mark.parametrize(
    "missing",
    [
        "TAVLA_DATABASE_URL",
        "TAVLA_KAFKA_BOOTSTRAP",
        "TAVLA_SERVICE_KEY_FILE",
        "TAVLA_SERVICE_PUBLIC_KEYS_DIR",
    ],
)
def test_a_missing_required_variable_is_named(missing: str) -> None:
    environ = {name: value for name, value in GOOD.items() if name != missing}
    with pytest.raises(ConfigError, match=f"{missing} is required"):
        Settings.from_env("game", environ)


def test_a_required_address_says_what_it_is_needed_for() -> None:
    env = Env({"TAVLA_GAME_ADDRESS": "game:50052", "TAVLA_WALLET_ADDRESS": ""})
    assert env.address("TAVLA_GAME_ADDRESS", needed_to="create games") == "game:50052"
    with pytest.raises(
        ConfigError, match=r"TAVLA_WALLET_ADDRESS is required to place stake holds \(the"
    ):
        env.address("TAVLA_WALLET_ADDRESS", needed_to="place stake holds")


def test_an_unknown_service_is_refused() -> None:
    with pytest.raises(ConfigError, match="unknown service 'poker'"):
        Settings.from_env("poker", GOOD)


def test_serve_exits_2_with_the_variable_named(capsys: pytest.CaptureFixture[str]) -> None:
    from services.cli import main

    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("TAVLA_DATABASE_URL", raising=False)
        assert main(["serve", "geo"]) == 2
    assert "TAVLA_DATABASE_URL is required" in capsys.readouterr().err
