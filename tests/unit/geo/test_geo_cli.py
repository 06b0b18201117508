"""``tavla geo check``: JSON out, exit 2 with one line for bad input.

The parser is assembled here as ``services.cli`` assembles it (``register``),
so the test does not depend on the command being listed there yet.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from services.geo import cli
from services.geo.devdata import write_anonymous, write_city


def tavla(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="tavla")
    cli.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    result: int = args.handler(args)
    return result


@pytest.fixture(scope="module")
def databases(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    directory = tmp_path_factory.mktemp("geo-cli")
    city = write_city(directory / "city.mmdb")
    anonymous = write_anonymous(directory / "anonymous.mmdb")
    return ["--city-db", str(city), "--anonymous-db", str(anonymous)]


def run(args: list[str], databases: list[str], capsys: pytest.CaptureFixture[str]) -> object:
    assert tavla(["geo", "check", *args, *databases]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_florida_address_is_blocked_for_deposit(
    databases: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    out = run(
        ["--ip", "192.0.2.10", "--purpose", "deposit", "--declared", "US-NJ"], databases, capsys
    )
    assert out == {
        "decision": "block",
        "reasons": ["location_restricted"],
        "country": "US",
        "region": "US-FL",
    }


def test_a_malta_resident_in_malta_may_play_for_real_money(
    databases: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    out = run(
        ["--ip", "198.51.100.7", "--purpose", "play_real", "--declared", "MT"], databases, capsys
    )
    assert out == {"decision": "allow", "reasons": [], "country": "MT", "region": ""}


def test_a_vpn_at_login_is_reviewed(
    databases: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    out = run(
        ["--ip", "192.0.2.130", "--purpose", "login", "--declared", "US-NJ"], databases, capsys
    )
    assert out == {
        "decision": "review",
        "reasons": ["anonymous_vpn"],
        "country": "US",
        "region": "US-NJ",
    }


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--ip", "192.0.2.300", "--purpose", "deposit"], "ip_address"),
        (["--ip", "192.0.2.1", "--purpose", "deposit", "--declared", "FL"], "declared_residence"),
    ],
)
def test_malformed_input_is_exit_2_with_one_line(
    args: list[str], message: str, databases: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert tavla(["geo", "check", *args, *databases]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert message in captured.err and captured.err.count("\n") == 1


def test_a_missing_database_is_exit_2_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nowhere.mmdb"
    argv = ["geo", "check", "--ip", "192.0.2.1", "--purpose", "deposit", "--city-db", str(missing)]
    assert tavla(argv) == 2
    err = capsys.readouterr().err
    assert "nowhere.mmdb" in err and err.count("\n") == 1
