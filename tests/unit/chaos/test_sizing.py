"""The capacity model's arithmetic, against docs/capacity.md's hand-worked figures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from services.chaos import sizing
from services.cli import main


def _run(**game: Any) -> dict[str, Any]:
    """A bench line with one game service: 40 game-minutes in 150 s, 12 games ended."""
    figures = {
        "processes": 2,
        "cpu_s_per_1000_game_minutes_over_idle": 765.52,
        "idle_cpu_share_of_core": 0.0095,
        "db_xacts_per_game": 181.1 * 40 / 12,  # 181.1 a game-minute
        "idle_db_xacts_per_s": 5.0,  # the database's: 2.5 a process
    } | game
    return {
        "seconds": 150.0,
        "game_minutes": 40.0,
        "minutes_per_game": 40 / 12,
        "services": {"game": figures},
        "broker": {"events_per_game": 58.61 * 40 / 12},
    }


def test_the_game_at_ten_thousand_games_as_worked_by_hand() -> None:
    # 765.52 / 1000 x 10,000 / 60 = 127.59 cores of work; a pod carries 0.6 - 0.0095
    # = 0.5905; ceil(127.59 / 0.5905) = ceil(216.07) = 217 pods; 127.59 + 217 x 0.0095.
    size = sizing.size_service("game", 765.52, 0.0095, 10_000, sizing.POLICIES["game"])
    assert size.net_cores == pytest.approx(127.587, abs=1e-3)
    assert size.pods == 217
    assert size.cores_used == pytest.approx(129.65, abs=0.01)
    assert size.cores_requested == 217.0


def test_a_service_with_no_work_still_has_two_pods() -> None:
    size = sizing.size_service("geo", 0.0, 0.004, 200_000, sizing.POLICIES["geo"])
    assert (size.pods, size.cores_requested) == (2, 1.0)
    assert size.cores_used == pytest.approx(0.008)


def test_the_wallet_is_planned_at_its_floor_when_it_measured_less() -> None:
    # 20 / 1000 x 10,000 / 60 = 3.333 cores; a pod carries 0.6 - 0.0485 = 0.5515: 7 pods.
    size = sizing.size_service("wallet", 8.04, 0.0485, 10_000, sizing.POLICIES["wallet"])
    assert size.net_cores == pytest.approx(3.333, abs=1e-3)
    assert size.pods == 7


def test_the_database_rate_is_the_work_over_idle_plus_every_pods_pollers() -> None:
    # 181.1 a game-minute gross, less 2.5/s x 2 processes x 150 s over 40 game-minutes
    # (18.75) = 162.35; at 10,000 games: 162.35 x 10,000 / 60 + 217 pods x 2.5 = 27,600.8.
    run = _run()
    rates = sizing.database_rates(run, sizing.cluster(run, [10_000]))
    assert rates["game"][10_000] == pytest.approx(27_600.8, abs=0.5)


def test_the_tables_name_every_size_and_the_broker_rate() -> None:
    text = sizing.markdown(_run(), [10_000, 50_000])
    assert "| game | 1 core, 60% | 129.6 / 217 / 217.0 | " in text
    assert "| game | 181.1 | 162.3 | 2.5/s | 27,601/s | " in text
    assert "| all | | | | 27,601/s |" in text
    assert "9,768/s at 10,000 games" in text  # 58.61 x 10,000 / 60


def test_a_run_that_ended_no_game_is_refused_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = tmp_path / "run.json"
    line.write_text("[bench platform] starting\n" + json.dumps(_run() | {"minutes_per_game": None}))
    assert main(["capacity", str(line)]) == 2
    assert "ended no game" in capsys.readouterr().err


def test_a_service_without_a_pod_policy_is_named() -> None:
    run = _run()
    run["services"]["lobby"] = run["services"]["game"]
    with pytest.raises(ValueError, match="no pod policy for 'lobby'"):
        sizing.cluster(run)
