"""Game-service benchmark (`make bench`): concurrent scripted games over gRPC.

Runs `tavla bench game` in-process against one game-service process on the session's
PostgreSQL and broker, prints the figures with their ratio to the goal of issue 4
(1,500 moves/s at p99 <= 25 ms) and asserts only that no call failed and games finished.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from services.game import bench


def test_game_benchmark_prints_its_figures_and_has_no_errors(
    postgres_server: Any, kafka_broker: Any
) -> None:
    args = argparse.Namespace(
        games=16, seconds=20.0, address=None,
        database_url=postgres_server.url(), bootstrap=kafka_broker.bootstrap,
    )
    result = bench.run(args)
    print(
        f"\ngame bench: {result['moves_per_s']} moves/s "
        f"({result['moves_per_s'] / bench.GOAL_MOVES_PER_S:.2f}x the goal of "
        f"{bench.GOAL_MOVES_PER_S}), p99 {result['p99_ms']} ms "
        f"({result['p99_ms'] / bench.GOAL_P99_MS:.2f}x the bound of {bench.GOAL_P99_MS} ms)"
    )
    print(json.dumps(result))
    assert result["errors"] == 0, result["first_error"]
    assert result["games_finished"] > 0
