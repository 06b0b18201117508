"""The command-line contract: `tavla rules plays`, `tavla dice verify`, the `bench` registry."""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path

import pytest

from services.backgammon import cli, dice, position_id
from services.cli import BENCH_MODULES, COMMAND_MODULES
from tests.unit.backgammon.bg_testdata import make_board


def run_plays(*lines: str) -> list[dict[str, object]]:
    out = io.StringIO()
    assert cli.run_plays([line + "\n" for line in lines], out) == 0
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_plays_answers_each_line_in_order_with_results_and_moves() -> None:
    request = {"position_id": "4HPwATDgc/ABMA", "dice": [3, 1]}
    (answer,) = run_plays(json.dumps(request))
    assert answer["position_id"] == "4HPwATDgc/ABMA" and answer["dice"] == [3, 1]
    plays = answer["plays"]
    assert isinstance(plays, list) and len(plays) == 16
    made_5_point = make_board({24: 2, 13: 5, 8: 2, 6: 4, 5: 2}, {24: 2, 13: 5, 8: 3, 6: 5})
    assert {"result": position_id.encode(made_5_point), "move": "8/5 6/5"} in plays


def test_plays_gives_an_empty_list_when_no_play_exists() -> None:
    # Player on roll has a checker on the bar against a closed board.
    closed = "27YBAAAA/n8ACA"
    (answer,) = run_plays(json.dumps({"position_id": closed, "dice": [6, 6]}))
    assert answer["plays"] == []


def test_invalid_lines_give_an_error_and_the_command_goes_on() -> None:
    answers = run_plays(
        "not json",
        json.dumps({"position_id": "4HPwATDgc/ABMA", "dice": [7, 1]}),
        json.dumps({"position_id": "short", "dice": [1, 2]}),
        json.dumps({"dice": [1, 2]}),
        json.dumps({"position_id": "4HPwATDgc/ABMA", "dice": [1, 2]}),
    )
    assert [set(a) for a in answers[:4]] == [{"error"}] * 4
    assert "JSON" in str(answers[0]["error"])
    assert "1..6" in str(answers[1]["error"])
    assert "14 characters" in str(answers[2]["error"])
    assert "position_id" in str(answers[3]["error"])
    assert answers[4]["plays"]


def build_parser() -> argparse.ArgumentParser:
    """Only this area's commands: other areas' modules may be mid-change in the shared tree."""
    parser = argparse.ArgumentParser(prog="tavla")
    subparsers = parser.add_subparsers(dest="command", required=True)
    cli.register(subparsers)
    cli.register_bench(subparsers.add_parser("bench").add_subparsers(dest="benchmark"))
    return parser


def test_commands_are_registered_in_the_tavla_parser() -> None:
    assert "services.backgammon.cli" in COMMAND_MODULES
    assert "services.backgammon.cli" in BENCH_MODULES
    parser = build_parser()
    for argv in (["rules", "plays"], ["dice", "verify", "x.json"], ["bench", "rules"]):
        args = parser.parse_args(argv)
        assert callable(args.handler)


def test_dice_verify_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    seed = bytes(range(32))
    record = {
        "commitment": dice.commitment(seed),
        "server_seed": seed.hex(),
        "client_seed": "me",
        "rolls": [list(r) for r in dice.rolls(seed, "me", 12)],
    }
    good = tmp_path / "good.json"
    good.write_text(json.dumps(record))
    args = build_parser().parse_args(["dice", "verify", str(good)])
    assert args.handler(args) == 0
    assert "OK: 12 rolls" in capsys.readouterr().out
    record["rolls"][3] = [record["rolls"][3][0] % 6 + 1, record["rolls"][3][1]]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(record))
    args = build_parser().parse_args(["dice", "verify", str(bad)])
    assert args.handler(args) == 1
    assert "roll 3" in capsys.readouterr().out
