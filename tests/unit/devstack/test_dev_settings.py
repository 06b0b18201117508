"""`tavla dev` settings and helpers that need no process: env parsing, URLs, the table."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.kit import ports
from services.kit.devstack.dev import REPO_ROOT, DevError, DevSettings, Row, format_table
from services.kit.devstack.postgres import check_database_name, libpq_url, with_database


def test_defaults_are_the_documented_ports_and_run_dir() -> None:
    settings = DevSettings.from_env({})
    assert settings.run_dir == (REPO_ROOT / ".tavla").resolve()
    assert (settings.gateway_port, settings.admin_port) == (8080, 9901)
    assert settings.service_ports("accounts") == ports.SERVICES["accounts"]
    assert settings.database_url is None and settings.kafka_bootstrap is None


def test_offset_shifts_every_port_and_dev_dir_moves_the_run_dir(tmp_path: Path) -> None:
    settings = DevSettings.from_env(
        {"TAVLA_DEV_PORT_OFFSET": "100", "TAVLA_DEV_DIR": str(tmp_path)}
    )
    assert settings.run_dir == tmp_path.resolve()
    assert settings.gateway_port == ports.GATEWAY_PORT + 100
    assert settings.port(ports.DEV_POSTGRES_PORT) == ports.DEV_POSTGRES_PORT + 100
    assert settings.service_ports("game").grpc == ports.SERVICES["game"].grpc + 100
    assert settings.service_ports("game").metrics == ports.SERVICES["game"].metrics + 100


def test_a_port_base_lays_every_port_out_from_it_one_after_another() -> None:
    settings = DevSettings.from_env({"TAVLA_DEV_PORT_BASE": "24200"})
    game = settings.service_ports("game")
    laid_out = [settings.gateway_port, settings.admin_port,
                settings.port(ports.DEV_POSTGRES_PORT), settings.port(ports.DEV_KAFKA_PORT),
                *(p for name in ports.SERVICES
                  for p in (settings.service_ports(name).grpc,
                            settings.service_ports(name).gateway,
                            settings.service_ports(name).metrics))]
    assert laid_out == list(range(24200, 24200 + 4 + 3 * len(ports.SERVICES)))
    # The game is the second service: its three ports follow the accounts'.
    assert (game.grpc, game.gateway, game.metrics) == (24207, 24208, 24209)


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"TAVLA_DEV_PORT_OFFSET": "-5"}, "TAVLA_DEV_PORT_OFFSET"),
        ({"TAVLA_DEV_PORT_OFFSET": "99999"}, "TAVLA_DEV_PORT_OFFSET"),
        ({"TAVLA_DEV_PORT_BASE": "80"}, "TAVLA_DEV_PORT_BASE"),
        ({"TAVLA_DEV_PORT_BASE": "65530"}, "TAVLA_DEV_PORT_BASE"),
        ({"TAVLA_DEV_PORT_BASE": "24200", "TAVLA_DEV_PORT_OFFSET": "100"},
         "TAVLA_DEV_PORT_BASE and TAVLA_DEV_PORT_OFFSET"),
        ({"TAVLA_DEV_TIMEOUT": "soon"}, "TAVLA_DEV_TIMEOUT"),
        ({"TAVLA_LOG_LEVEL": "loud"}, "TAVLA_LOG_LEVEL"),
        ({"TAVLA_DATABASE_URL": "postgresql://u@h/db"}, "TAVLA_DATABASE_URL"),
    ],
)
def test_bad_values_are_rejected_naming_the_variable(env: dict[str, str], named: str) -> None:
    with pytest.raises(DevError, match=named):
        DevSettings.from_env(env)


def test_database_name_is_substituted_keeping_credentials_and_options() -> None:
    url = "postgresql+asyncpg://app:s3cret@db.internal:6432/tavla?ssl=require"
    assert with_database(url, "tavla_accounts") == (
        "postgresql+asyncpg://app:s3cret@db.internal:6432/tavla_accounts?ssl=require"
    )
    assert libpq_url(url) == "postgresql://app:s3cret@db.internal:6432/tavla?ssl=require"


@pytest.mark.parametrize("name", ["", "Tavla", "x; DROP DATABASE y", 'a"b', "1abc", "a" * 64])
def test_only_plain_database_names_are_accepted(name: str) -> None:
    with pytest.raises(ValueError, match="plain database name"):
        check_database_name(name)


def test_table_lines_up_columns() -> None:
    table = format_table([
        Row("postgres", "127.0.0.1:55432", "101", "/r/logs/postgres.log"),
        Row("gateway (envoy)", "http://127.0.0.1:8080", "99999", "/r/logs/envoy.log"),
    ])
    lines = table.splitlines()
    assert lines[0].split() == ["COMPONENT", "ADDRESS", "PID", "LOG"]
    assert len({line.index("/r/logs") for line in lines[1:]}) == 1
    assert lines[2].startswith("gateway (envoy)  http://127.0.0.1:8080")
