"""``tavla rating update`` run as a real process: JSON out, exit 2 with one line for bad input.

Expected figures are derived by hand in tests/unit/matchmaking/test_ratings_domain.py's
cases: two new players (+10/-10) and the 4-point upset (1000 beats 2000: +400/11, -200/11).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def tavla(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "services.cli", "rating", "update", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_two_new_players_one_game() -> None:
    done = tavla("--ratings", "1500", "1500", "--experience", "0", "0",
                 "--length", "1", "--winner", "1")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"ratings": [1510.0, 1490.0], "changes": [10.0, -10.0]}


def test_an_upset_rounded_to_two_decimals() -> None:
    # 2000 (experience 250) loses a 4-point match to 1000 (experience 0):
    # -200/11 = -18.1818... -> -18.18; +400/11 = 36.3636... -> 36.36.
    done = tavla("--ratings", "2000", "1000", "--experience", "250", "0",
                 "--length", "4", "--winner", "2")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"ratings": [1981.82, 1036.36], "changes": [-18.18, 36.36]}


GOOD = {"--ratings": ["1500", "1500"], "--experience": ["0", "0"], "--length": ["1"],
        "--winner": ["1"]}


@pytest.mark.parametrize(
    ("option", "values", "message"),
    [
        ("--length", ["-3"], "at least 1"),
        ("--length", ["0"], "at least 1"),
        ("--length", ["two"], "not a whole number"),
        ("--winner", ["3"], "the winner is 1 or 2"),
        ("--winner", ["0"], "the winner is 1 or 2"),
        ("--ratings", ["1500", "abc"], "not a number"),
        ("--ratings", ["nan", "1500"], "not a finite number"),
        ("--experience", ["-1", "0"], "cannot be negative"),
        ("--ratings", ["1500"], "expected 2 arguments"),
        ("--winner", None, "required: --winner"),
    ],
)
def test_bad_input_is_one_line_and_status_2(
    option: str, values: list[str] | None, message: str
) -> None:
    options = dict(GOOD)
    if values is None:
        del options[option]
    else:
        options[option] = values
    done = tavla(*[word for name, given in options.items() for word in (name, *given)])
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("tavla rating update: ")
    assert message in lines[0]
    assert "Traceback" not in done.stderr
