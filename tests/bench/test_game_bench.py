"""Game-service benchmark (`make bench`): scripted games over gRPC, closed and open loop.

Runs `tavla bench game` in-process against game-service processes on the session's
PostgreSQL and broker and prints the figures with their goals. Asserts only what
must hold at any speed: the promised JSON keys, no call failed, games finished,
and in the open loop that real-money games ran with their stakes held through a
wallet process (every fourth game) over two game processes taking turns.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from services.game import bench

KEYS = {"games", "calls_per_s", "moves_per_s", "p50_ms", "p99_ms", "errors", "games_finished"}


def _args(postgres_server: Any, kafka_broker: Any, **overrides: Any) -> argparse.Namespace:
    values: dict[str, Any] = {
        "games": 16, "seconds": 20.0, "address": None, "open_loop": False, "think_ms": 0.0,
        "replicas": 1, "ramp_seconds": 0.0, "database_url": postgres_server.url(),
        "bootstrap": kafka_broker.bootstrap,
    }  # fmt: skip
    values.update(overrides)
    return argparse.Namespace(**values)


def test_closed_loop_prints_its_figures_and_has_no_errors(
    postgres_server: Any, kafka_broker: Any
) -> None:
    result = bench.run(_args(postgres_server, kafka_broker))
    print(
        f"\ngame bench (closed loop): {result['moves_per_s']} moves/s "
        f"({result['moves_per_s'] / bench.GOAL_MOVES_PER_S:.2f}x the goal of "
        f"{bench.GOAL_MOVES_PER_S}), p99 {result['p99_ms']} ms "
        f"({result['p99_ms'] / bench.GOAL_P99_MS:.2f}x the bound of {bench.GOAL_P99_MS} ms)"
    )
    print(json.dumps(result))
    assert set(result) >= KEYS
    assert result["errors"] == 0, result["first_error"]
    assert result["games_finished"] > 0
    assert result["server_cpu_ms_per_call"] > 0


def test_open_loop_plays_held_real_money_games_over_two_replicas_without_errors(
    postgres_server: Any, kafka_broker: Any
) -> None:
    args = _args(
        postgres_server, kafka_broker, games=24, seconds=12.0, open_loop=True, think_ms=20.0,
        replicas=2, ramp_seconds=3.0,
    )  # fmt: skip
    result = bench.run(args)
    print(
        f"\ngame bench (open loop, {args.games} games at {args.think_ms:.0f} ms): "
        f"{result['calls_per_s']} calls/s, p99 {result['p99_ms']} ms (goal "
        f"{bench.GOAL_OPEN_P99_MS} ms at {bench.GOAL_OPEN_GAMES} games, "
        f"{bench.GOAL_OPEN_THINK_MS} ms), server CPU {result['server_cpu_ms_per_call']} ms/call"
    )
    print(json.dumps(result))
    assert set(result) >= KEYS
    assert result["errors"] == 0, result["first_error"]
    assert result["games_finished"] > 0
    assert result["replicas"] == 2
    assert result["usd_games"] > 0  # every fourth table plays for real money...
    assert result["hold_calls"] == 2 * result["usd_games"]  # ...with both stakes held first
    assert result["usd_finished"] > 0
    # Every finished real-money game was settled by the wallet from the game's events.
    assert result["usd_settled"] == result["usd_finished"]
    assert result["usd_rejected"] == 0
