"""`tavla wallet quote` through the real `tavla` entry point."""

from __future__ import annotations

import json

import pytest

from services.cli import main

SCHEDULE = ["--schedule", "gammonempire-2026-01"]


def quote(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, str]:
    assert main(["wallet", "quote", *argv]) == 0
    result: dict[str, str] = json.loads(capsys.readouterr().out)
    return result


def test_single_game_example(capsys: pytest.CaptureFixture[str]) -> None:
    result = quote(
        capsys, "--kind", "single", "--stake", "5", "--cube", "1", "--result", "gammon",
        "--ratings", "1500", "1500", *SCHEDULE,
    )  # fmt: skip
    assert result == {
        "rate": "0.049",
        "commission_per_player": "0.49",
        "commission_total": "0.98",
        "winner_credit": "9.02",
        "loser_debit": "10.00",
        "schedule": "gammonempire-2026-01",
    }


def test_match_example_with_the_schedule_in_force(capsys: pytest.CaptureFixture[str]) -> None:
    result = quote(
        capsys, "--kind", "series", "--stake", "10", "--length", "3", "--ratings", "1500", "1500"
    )
    assert result["rate"] == "0.059"
    assert result["commission_per_player"] == "0.59"
    assert result["winner_credit"] == "8.82"
    assert result["loser_debit"] == "10.00"
    assert result["schedule"] == "gammonempire-2026-01"


def test_rating_adjustments_and_cap_show_in_the_quote(capsys: pytest.CaptureFixture[str]) -> None:
    result = quote(
        capsys, "--kind", "single", "--stake", "250", "--cube", "2", "--result", "backgammon",
        "--ratings", "1800", "1760", *SCHEDULE,
    )  # fmt: skip
    assert result["rate"] == "0.0145"  # 2.9% halved: both above 1700
    assert result["commission_per_player"] == "5.00"  # $21.75 capped: both above 1650
    assert result["winner_credit"] == "1490.00"
    assert result["loser_debit"] == "1500.00"


def test_play_money_quote_is_free(capsys: pytest.CaptureFixture[str]) -> None:
    result = quote(
        capsys, "--kind", "single", "--stake", "10", "--ratings", "1300", "1900",
        "--currency", "PLAY",
    )  # fmt: skip
    assert result["commission_total"] == "0.00"
    assert result["schedule"] == "play-money-free"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--kind", "series", "--stake", "10"], "needs --length"),
        (["--kind", "series", "--stake", "10", "--length", "3", "--cube", "2"], "--cube"),
        (["--kind", "single", "--stake", "10", "--length", "3"], "--length is for a series"),
        (["--kind", "single", "--stake", "ten"], "not a decimal amount"),
        (["--kind", "single", "--stake", "1.001"], "more than 2 decimal places"),
        (["--kind", "single", "--stake", "-5"], "must be more than zero"),
        (["--kind", "single", "--stake", "5", "--cube", "3"], "cube value 3"),
        (["--kind", "series", "--stake", "5", "--length", "0"], "1 point or more"),
        (["--kind", "single", "--stake", "5", "--currency", "XYZ"], "not held by the wallet"),
        (["--kind", "single", "--stake", "5", "--schedule", "v0"], "no commission schedule"),
    ],
)
def test_bad_input_exits_2_with_a_message(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert main(["wallet", "quote", *argv, "--ratings", "1500", "1500"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert message in captured.err


def test_bad_rating_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["wallet", "quote", "--kind", "single", "--stake", "5", "--ratings", "1500", "x"]
    assert main(argv) == 2
    assert "rating 'x'" in capsys.readouterr().err


def test_argparse_errors_also_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["wallet", "quote", "--kind", "double", "--stake", "5", "--ratings", "1", "2"])
    assert exit_info.value.code == 2
    assert "invalid choice" in capsys.readouterr().err
