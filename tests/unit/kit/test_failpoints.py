"""Fail points: off by default, armed only by TAVLA_FAILPOINTS, and a kill is a real SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from services.kit import failpoints
from services.kit.config import ConfigError

REPO = Path(__file__).resolve().parents[3]
POINT = "game.command.after_commit"


@pytest.fixture(autouse=True)
def disarmed() -> Iterator[None]:
    yield
    failpoints.configure({})


def test_every_point_is_off_without_the_variable() -> None:
    assert failpoints.configure({}) == []
    for name in failpoints.KNOWN:
        failpoints.failpoint(name)  # would not return if it killed


@pytest.mark.parametrize(
    ("plan", "actions"),
    [
        ("kill", ["kill", "kill", "kill"]),
        ("off", ["off", "off", "off"]),
        ("2*off->kill", ["off", "off", "kill", "kill"]),
        ("1*off->1*kill", ["off", "kill", "off", "off"]),  # chain used up: off
        ("3*kill", ["kill", "kill", "kill", "off"]),
    ],
)
def test_a_plan_decides_each_hit_in_turn(plan: str, actions: list[str]) -> None:
    parsed = failpoints.parse(f"{POINT}={plan}")[POINT]
    assert [parsed.next_action() for _ in actions] == actions


def test_several_points_are_armed_at_once() -> None:
    armed = failpoints.configure(
        {
            "TAVLA_FAILPOINTS": (
                "game.command.after_commit=kill; wallet.settlement.after_db_commit=1*off->kill"
            )
        }
    )
    assert armed == ["game.command.after_commit", "wallet.settlement.after_db_commit"]


@pytest.mark.parametrize(
    ("value", "phrase"),
    [
        ("game.move.afterwards=kill", "no fail point named 'game.move.afterwards'"),
        (f"{POINT}", "is not name=plan"),
        (f"{POINT}=", "is not name=plan"),
        (f"{POINT}=explode", "unknown action 'explode'"),
        (f"{POINT}=0*off->kill", "needs a positive count"),
        (f"{POINT}=x*off->kill", "needs a positive count"),
    ],
)
def test_an_unknown_name_or_bad_plan_is_refused_naming_the_variable(
    value: str, phrase: str
) -> None:
    with pytest.raises(ConfigError) as error:
        failpoints.configure({"TAVLA_FAILPOINTS": value})
    assert "TAVLA_FAILPOINTS" in str(error.value)
    assert phrase in str(error.value)


def test_kill_is_a_real_sigkill_of_the_process_at_the_armed_hit() -> None:
    script = (
        "import sys\n"
        "from services.kit import failpoints\n"
        "failpoints.configure()\n"
        "for hit in (1, 2, 3):\n"
        f"    failpoints.failpoint({POINT!r})\n"
        "    print('passed', hit, flush=True)\n"
    )
    env = {**os.environ, "TAVLA_FAILPOINTS": f"{POINT}=2*off->kill"}
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert done.stdout.split("\n") == ["passed 1", "passed 2", ""]
    assert f"failpoint {POINT}: SIGKILL (hit 3)" in done.stderr


def test_tavla_serve_refuses_an_unknown_fail_point_before_touching_anything() -> None:
    env = {
        **os.environ,
        "TAVLA_DATABASE_URL": "postgresql+asyncpg://nobody@127.0.0.1:1/none",
        "TAVLA_KAFKA_BOOTSTRAP": "127.0.0.1:1",
        "TAVLA_FAILPOINTS": "wallet.settlement.after_commit=kill",
    }
    done = subprocess.run(
        [sys.executable, "-m", "services.cli", "serve", "wallet"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    assert "TAVLA_FAILPOINTS: no fail point named 'wallet.settlement.after_commit'" in done.stderr
