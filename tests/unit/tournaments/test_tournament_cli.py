"""``tavla tournament payouts``: JSON out, exit 2 with one line.

The first test runs the command as a real process; the others call the same entry
point in this one (a process start costs seconds of imports on a busy machine).
Expected payouts are worked by hand in test_tournament_prizes.py (65/35 of 8000 and
1001; 12.5% of 1003; satellite tickets of 220 from 1000).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from services.cli import main


@dataclass(frozen=True)
class Done:
    returncode: int | str | None
    stdout: str
    stderr: str


@pytest.fixture
def tavla(capsys: pytest.CaptureFixture[str]) -> Callable[..., Done]:
    """``tavla tournament payouts ARGS`` in this process."""

    def run(*args: str) -> Done:
        try:
            code: int | str | None = main(["tournament", "payouts", *args])
        except SystemExit as exit_:
            code = exit_.code
        captured = capsys.readouterr()
        return Done(code, captured.out, captured.err)

    return run


def test_the_command_runs_as_a_process() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "services.cli", "tournament", "payouts",
         "--pool", "8000", "--currency", "USD", "--table", "standard", "--places", "2"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert paid(done.stdout) == {1: 8000}


def paid(output: str) -> dict[int, int]:
    return {p["place"]: p["amount"] for p in json.loads(output)["payouts"] if p["amount"]}


def test_eight_seats_of_1000_pay_5200_and_2800(tavla: Callable[..., Done]) -> None:
    done = tavla("--pool", "8000", "--currency", "USD", "--table", "standard", "--places", "8")
    assert done.returncode == 0, done.stderr
    output = json.loads(done.stdout)
    assert {k: output[k] for k in ("pool", "currency", "table", "places")} == {
        "pool": 8000, "currency": "USD", "table": "standard", "places": 8,
    }
    assert output["payouts"][:4] == [
        {"place": 1, "finish": "1", "amount": 5200},
        {"place": 2, "finish": "2", "amount": 2800},
        {"place": 3, "finish": "3-4", "amount": 0},
        {"place": 4, "finish": "3-4", "amount": 0},
    ]
    assert [p["place"] for p in output["payouts"]] == list(range(1, 9))


def test_an_odd_pool_gives_the_leftover_unit_to_the_winner(tavla: Callable[..., Done]) -> None:
    done = tavla("--pool", "1001", "--currency", "USD", "--table", "standard", "--places", "8")
    assert done.returncode == 0, done.stderr
    assert paid(done.stdout) == {1: 651, 2: 350}


def test_sixteen_places_in_play_money(tavla: Callable[..., Done]) -> None:
    done = tavla("--pool", "1003", "--currency", "PLAY", "--table", "standard", "--places", "16")
    assert done.returncode == 0, done.stderr
    assert paid(done.stdout) == {1: 503, 2: 250, 3: 125, 4: 125}


def test_a_satellite_pays_tickets_and_the_rest_in_cash_to_the_next_finish(
    tavla: Callable[..., Done],
) -> None:
    # 1000 buys 4 tickets of 220 (the semi-finalists) and leaves 120: the quarter-final
    # losers (5-8) win 30 each.
    done = tavla("--pool", "1000", "--currency", "EUR", "--table", "tickets", "--places", "16",
                 "--ticket-price", "220")
    assert done.returncode == 0, done.stderr
    output = json.loads(done.stdout)
    assert (output["tickets"], output["ticket_price"], output["remainder"]) == (4, 220, 120)
    assert [p["place"] for p in output["payouts"] if p["ticket"]] == [1, 2, 3, 4]
    # Won by the four players left after the quarter-finals, who share 1st-4th.
    assert [p["finish"] for p in output["payouts"][:5]] == ["1-4"] * 4 + ["5-8"]
    assert {p["place"]: p["amount"] for p in output["payouts"] if p["amount"]} == {
        5: 30, 6: 30, 7: 30, 8: 30
    }


def test_a_satellite_remainder_that_does_not_divide_leaves_its_units_to_first(
    tavla: Callable[..., Done],
) -> None:
    # 2201 buys 2 tickets of 1000 and leaves 201: 100 to each semi-final loser, 1 to 1st.
    done = tavla("--pool", "2201", "--currency", "USD", "--table", "tickets", "--places", "8",
                 "--ticket-price", "1000")
    assert done.returncode == 0, done.stderr
    output = json.loads(done.stdout)
    assert {p["place"]: p["amount"] for p in output["payouts"] if p["amount"]} == {
        1: 1, 3: 100, 4: 100
    }


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (("--table", "65-35", "--places", "8"), "there is no prize table '65-35'"),
        (("--table", "standard", "--places", "1"), "2 to 1024 entrants, not 1"),
        (("--table", "standard", "--places", "2000"), "2 to 1024 entrants, not 2000"),
        (("--table", "tickets", "--places", "8"), "needs --ticket-price"),
        (("--table", "standard", "--places", "8", "--ticket-price", "5"), "tickets' table only"),
    ],
)
def test_a_bad_table_or_places_is_one_line_and_status_2(
    tavla: Callable[..., Done], args: tuple[str, ...], reason: str
) -> None:
    done = tavla("--pool", "8000", "--currency", "USD", *args)
    assert done.returncode == 2
    assert done.stdout == ""
    assert reason in done.stderr
    assert done.stderr.count("\n") == 1


@pytest.mark.parametrize(
    ("pool", "currency", "reason"),
    [
        ("-1", "USD", "the prize pool must be 0 to"),
        ("9223372036854775808", "USD", "the prize pool must be 0 to"),
        ("8000", "dollars", "neither an ISO-4217 code nor 'PLAY'"),
    ],
)
def test_a_bad_pool_or_currency_is_refused(
    tavla: Callable[..., Done], pool: str, currency: str, reason: str
) -> None:
    done = tavla("--pool", pool, "--currency", currency, "--table", "standard", "--places", "8")
    assert done.returncode == 2
    assert reason in done.stderr
