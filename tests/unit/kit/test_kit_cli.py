"""The `tavla` command assembles every area's sub-commands and benchmarks."""

from __future__ import annotations

import argparse
import importlib

import pytest

from services.cli import COMMAND_MODULES, COMMAND_OWNERS, build_parser


@pytest.mark.parametrize(
    "argv",
    [
        ["serve", "accounts"],
        ["migrate", "wallet"],
        ["dev"],
        ["rules", "plays"],
        ["wallet", "audit"],
        ["bench", "rules"],
        ["bench", "game"],
        ["bench", "wallet"],
    ],
)
def test_every_documented_command_has_a_handler(argv: list[str]) -> None:
    assert callable(build_parser().parse_args(argv).handler)


def test_an_unknown_service_is_refused_by_the_parser(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(["serve", "poker"])
    assert exit_.value.code == 2
    assert "invalid choice: 'poker'" in capsys.readouterr().err


def test_each_command_is_owned_by_the_module_that_registers_it() -> None:
    """`tavla <command>` imports only its owner (COMMAND_OWNERS): the table names every
    command of every module, and no other."""
    registered = {}
    for name in COMMAND_MODULES:
        subparsers = argparse.ArgumentParser().add_subparsers()
        importlib.import_module(name).register(subparsers)
        registered.update(dict.fromkeys(subparsers.choices, name))
    assert registered == COMMAND_OWNERS


@pytest.mark.parametrize(
    "argv", [["serve", "accounts"], ["migrate", "wallet"], ["dev"], ["rules", "plays"]]
)
def test_a_command_parses_alike_with_its_owner_alone(argv: list[str]) -> None:
    assert vars(build_parser(argv[0]).parse_args(argv)) == vars(build_parser().parse_args(argv))
