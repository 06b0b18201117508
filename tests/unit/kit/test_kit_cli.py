"""The `tavla` command assembles every area's sub-commands and benchmarks."""

from __future__ import annotations

import pytest

from services.cli import build_parser


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
