"""`tavla bench platform`, short: the whole mix on two game and two wallet processes.

The command starts its own stack (PostgreSQL, the broker, every service; game and
wallet twice) and plays a few tables quickly (50 ms of thought, each game resigned after 20
decisions so that games end) for a few seconds.
Asserted from its JSON line: every figure docs/capacity.md reads is there for every
service; the mix ran (real-money games held and settled, games analysed, anti-abuse
and matchmaking consuming, chat, heartbeats, watch streams); and, two replicas of
the game and the wallet sharing the load, no call failed, no game's ending was lost
or settled twice and the ledger audits clean. The figures themselves are printed,
not asserted: on a shared machine they say as much about the neighbours.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SERVICES = {"accounts", "geo", "analysis", "wallet", "game", "antiabuse", "matchmaking"}
TOP = {
    "games", "think_ms", "seconds", "replicas", "game_minutes", "games_ended", "calls",
    "client_p99_ms", "errors", "first_error", "services", "database", "broker", "settlement",
}  # fmt: skip
PER_SERVICE = {
    "processes", "cpu_s_per_1000_game_minutes", "db_xacts_per_game", "events_per_game",
    "p99_ms", "failed_calls", "consumer_lag",
}  # fmt: skip


@pytest.mark.timeout(300)
def test_two_replicas_serve_the_mix_with_no_error_and_no_duplicate() -> None:
    command = [
        sys.executable, "-m", "services.cli", "bench", "platform",
        "--games", "8", "--think-ms", "50", "--seconds", "15", "--replicas", "2",
        "--resign-after", "20",  # games end (and are settled) within the window
    ]  # fmt: skip
    run = subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, timeout=280, check=False
    )
    assert run.stdout.strip(), run.stderr[-4000:]
    line = run.stdout.strip().splitlines()[-1]
    print("\n" + line)
    result = json.loads(line)
    assert set(result) >= TOP
    assert set(result["services"]) == SERVICES
    for name, service in result["services"].items():
        assert set(service) >= PER_SERVICE, name
        assert service["cpu_s_per_1000_game_minutes"] > 0, name
    services = result["services"]
    assert services["game"]["processes"] == services["wallet"]["processes"] == 2
    assert result["game_minutes"] > 0 and result["games_ended"] > 0
    # The mix: every player's call, the wallet's holds, the services' own work behind them.
    assert {"CreateGame", "Roll", "Move", "Heartbeat"} <= set(services["game"]["p99_ms"])
    assert "PlaceHold" in services["wallet"]["p99_ms"]
    assert result["streams"] > 0
    assert services["game"]["events_per_game"] > 0 and services["wallet"]["events_per_game"] > 0
    for consumer in ("analysis", "antiabuse", "matchmaking", "wallet"):
        assert services[consumer]["db_xacts_per_game"] > 0, consumer
    assert result["database"]["xacts_per_game"] > 0 and result["broker"]["events_per_game"] > 0
    # Two replicas each, no error and no duplicate.
    assert result["errors"] == 0, result["first_error"]
    assert all(not service["failed_calls"] for service in services.values()), services
    settlement = result["settlement"]
    assert settlement["games_settled"] > 0 and settlement["real_money_settled"] > 0
    assert settlement["lost"] == 0 and settlement["duplicates"] == 0, settlement
    assert settlement["rejected"] == 0 and settlement["audit"] == "ok", settlement
    assert run.returncode == 0, run.stderr[-4000:]
