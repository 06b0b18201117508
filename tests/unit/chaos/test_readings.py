"""The figures `tavla bench platform` derives from two readings of the servers' metrics.

Pure: the Prometheus exposition text is written here, and every expected value is
worked out by hand in the comments.
"""

from __future__ import annotations

import math

from services.chaos.readings import (
    calls_and_failures,
    latency_p99_ms,
    merge,
    p99_from_buckets,
    parse_scrape,
)

MOVE = "/tavla.game.v1.GameService/Move"
HEALTH = "/grpc.health.v1.Health/Check"


def _exposition(move_buckets: dict[str, int], moves_ok: int, moves_failed: int, lag: int) -> str:
    lines = [
        "# TYPE tavla_rpc_duration_seconds histogram",
        *(
            f'tavla_rpc_duration_seconds_bucket{{le="{le}",method="{MOVE}",service="game"}} {n}'
            for le, n in move_buckets.items()
        ),
        f'tavla_rpc_duration_seconds_bucket{{le="+Inf",method="{HEALTH}",service="game"}} 7',
        "# TYPE tavla_rpc_requests counter",
        f'tavla_rpc_requests_total{{code="OK",method="{MOVE}",service="game"}} {moves_ok}',
        f'tavla_rpc_requests_total{{code="ABORTED",method="{MOVE}",service="game"}} '
        f"{moves_failed}",
        f'tavla_rpc_requests_total{{code="OK",method="{HEALTH}",service="game"}} 7',
        "# TYPE tavla_consumer_lag gauge",
        f'tavla_consumer_lag{{consumer="c",service="game",topic="t"}} {lag}',
    ]
    return "\n".join(lines) + "\n"


def test_p99_is_interpolated_inside_the_bucket_it_falls_in() -> None:
    before = {0.01: 10.0, 0.025: 10.0, math.inf: 10.0}
    # 100 calls in between: 90 under 10 ms, 10 between 10 and 25 ms. Rank 99 is the 9th of
    # those 10: 10 ms + 15 ms x 9/10 = 23.5 ms.
    after = {0.01: 100.0, 0.025: 110.0, math.inf: 110.0}
    p99 = p99_from_buckets(before, after)
    assert p99 is not None and math.isclose(p99, 0.0235)


def test_p99_in_the_last_bucket_is_the_highest_finite_bound_and_no_calls_is_none() -> None:
    assert p99_from_buckets({}, {0.01: 0.0, 5.0: 1.0, math.inf: 100.0}) == 5.0
    assert p99_from_buckets({0.01: 3.0, math.inf: 3.0}, {0.01: 3.0, math.inf: 3.0}) is None


def test_the_window_s_calls_failures_and_latency_leave_the_health_probes_out() -> None:
    before = parse_scrape(_exposition({"0.01": 0, "0.025": 0, "+Inf": 0}, 0, 0, 0))
    after = parse_scrape(_exposition({"0.01": 198, "0.025": 200, "+Inf": 200}, 197, 3, 12))
    calls, failures = calls_and_failures(before, after)
    assert (calls, failures) == (200, {"Move:ABORTED": 3})
    # Rank 198 of 200 is the last call under 10 ms: 10 ms exactly.
    assert latency_p99_ms(before, after) == {"Move": 10.0}
    assert after.lag == 12


def test_replicas_merge_by_adding_their_counts() -> None:
    one = parse_scrape(_exposition({"0.01": 50, "+Inf": 100}, 100, 0, 2))
    two = parse_scrape(_exposition({"0.01": 150, "+Inf": 200}, 199, 1, 3))
    merged = merge([one, two])
    assert merged.buckets[("game", MOVE)] == {0.01: 200.0, math.inf: 300.0}
    assert merged.requests[("game", MOVE, "OK")] == 299.0
    assert merged.requests[("game", MOVE, "ABORTED")] == 1.0
    assert merged.lag == 5
