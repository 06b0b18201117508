"""The runbook's commands are real: each `tavla ...` parses with the `tavla` command's own
parser, and each `helm --set` names a key the chart's values.yaml has.

A renamed sub-command, flag or value key makes this fail, so docs/runbook.md cannot
quietly drift from the code. The Kubernetes object names the runbook uses are the
chart's (checked in tests/integration/test_helm_chart.py for release "tavla").
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml

from services.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
RUNBOOK = ROOT / "docs" / "runbook.md"
VALUES = ROOT / "charts" / "tavla" / "values.yaml"
COMMANDS = ("serve", "migrate", "events", "accounts", "wallet", "dev", "gateway", "geo",
            "rating", "rules", "dice", "analysis", "bench", "chaos")  # fmt: skip
# Placeholders a reader fills in, and what stands in for them here.
PLACEHOLDERS = {"<service>": "wallet", "<account id>": "acct-1", "--email E ": "--email e@x.io "}


def tavla_commands() -> list[str]:
    text = RUNBOOK.read_text()
    found = re.findall(rf"(?<![\w/-])tavla ((?:{'|'.join(COMMANDS)})\b[^`\n|)(]*)", text)
    commands = []
    for command in found:
        command = command.strip().rstrip(".,;:")
        for placeholder, value in PLACEHOLDERS.items():
            command = command.replace(placeholder, value)
        commands.append(command)
    return sorted(set(commands))


def test_the_runbook_names_the_commands_an_operator_needs() -> None:
    commands = " | ".join(tavla_commands())
    for needed in ("wallet audit", "wallet reconcile", "events tail", "events parked",
                   "events replay", "events discard", "geo check",
                   "accounts grant-role", "migrate"):  # fmt: skip
        assert needed in commands, needed


@pytest.mark.parametrize("command", tavla_commands())
def test_every_tavla_command_in_the_runbook_parses(command: str) -> None:
    try:
        build_parser().parse_args(shlex.split(command))
    except SystemExit as error:
        pytest.fail(f"`tavla {command}` does not parse (exit {error.code})")


def test_every_helm_set_names_a_chart_value() -> None:
    values = yaml.safe_load(VALUES.read_text())
    keys = re.findall(r"--set ([\w.]+)=", RUNBOOK.read_text())
    assert len(keys) >= 4
    for key in keys:
        node = values
        for part in key.split("."):
            assert isinstance(node, dict) and part in node, f"--set {key}: no such value"
            node = node[part]
