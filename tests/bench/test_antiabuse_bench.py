"""Anti-abuse benchmarks (`make bench`): the consumer's throughput on production's mix
against the game's event rate, its alerts' latency, the evaluation on a fresh tuning
population, and the goals asserted on the held-out population.

The throughput runs `tavla bench antiabuse` in-process on the session's PostgreSQL and
broker (the game's events, the real analysis service's MatchAnalysed, a shared /64 of
1000 accounts, table chat, then a live load with planted abusers) and prints its
figures, the ratio and the completing-event-to-alert percentiles. The evaluation runs
`tavla abuse eval` without a seed, as a user does: a fresh population each time (the
end-to-end test uses a fixed seed; a detector is judged on populations it was not
tuned on), and prints each detector's figures against the goal (recall at least 0.9 at
a false-positive rate at most 1 %). Neither asserts a speed or a score (the machine
varies): what must hold at any speed is asserted (the JSON keys, no failed call, the
backlog drained and seen on /metrics, nothing parked, every planted abuser alerted, no
alert for the shared /64).

The held-out population (``evaluation/heldout.py``: other parameters, 540 honest
accounts) is where the goals are asserted, on three fresh seeds each run, each on a
database of its own, pooled (one seed's dozen abusers and 650 accounts bound the rates
too loosely: the anti-abuse README): every detector's pooled recall at least 0.9 and its
pooled false-positive rate's upper 95 % Wilson bound at most 1 %, and no honest account
frozen by the default policy or in a pair restriction on any seed. Each seed's figures
and the pool's are printed; a detector that misses is named with its figures in the
failure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from services.antiabuse import bench
from services.antiabuse.evaluation.runner import evaluate_held_out_pooled
from services.kit.logging import configure
from tests.support.services import new_database

REPO = Path(__file__).resolve().parents[2]
GOAL_RECALL, GOAL_FALSE_POSITIVE_RATE = 0.9, 0.01
# One seed's dozen abusers and 650 honest accounts bound the rates too loosely (README).
HELD_OUT_SEEDS = 3


@pytest.mark.timeout(1800)  # a loaded machine: the load, its analysis, the drain, live
def test_the_consumer_keeps_up_with_the_game(postgres_server: Any, kafka_broker: Any) -> None:
    args = argparse.Namespace(
        games=8, think_ms=10.0, seconds=30.0, ramp_seconds=1.0, timeout=600.0,
        nat_accounts=1000, chat_per_game=4.0, planted=20, live_seconds=20.0, alert_timeout=300.0,
        database_url=postgres_server.url(), bootstrap=kafka_broker.bootstrap,
    )  # fmt: skip
    result = bench.run(args)
    print(f"\nanti-abuse bench: consumer {result['consumer_events_per_s']} events/s, game "
          f"{result['game_events_per_s']} events/s: ratio {result['ratio']} (goal: at least 2); "
          f"peak backlog {result['peak_lag']:.0f}; completing event to alert p99 "
          f"{result['alert_p99_s']} s (goal: at most 5), max {result['alert_max_s']} s")
    print(json.dumps(result))
    assert result["errors"] == 0, result["first_error"]
    assert result["live_errors"] == 0, result["live_first_error"]
    assert result["game_records"] > 0 and result["records"] >= result["game_records"]
    assert result["peak_lag"] > 0  # the backlog metric saw the pile it drained
    assert result["games_finished"] > 0  # GameEnded and Settled, not only moves
    assert result["analysed_records"] > 0  # the analysis service's MatchAnalysed in the mix
    assert result["parked"] == 0  # every event applied: only what succeeded is counted
    assert result["alerts_missing"] == 0  # each planted abuser alerted, however slowly
    assert result["nat_multi_accounting_alerts"] == 0  # 1000 strangers on one /64: no alert


@pytest.mark.timeout(2400)  # a whole tavla dev and a population played through it
def test_a_fresh_population_scored() -> None:
    env = {k: v for k, v in os.environ.items()
           if k not in ("TAVLA_DATABASE_URL", "TAVLA_KAFKA_BOOTSTRAP", "TAVLA_DEV_PORT_OFFSET")}
    done = subprocess.run([sys.executable, "-m", "services.cli", "abuse", "eval"], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=1800)
    print(done.stderr)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "seed " in done.stderr  # the fresh seed is printed: a run can be replayed
    result = json.loads(done.stdout.strip().splitlines()[-1])
    for name, figures in result["detectors"].items():
        met = (figures["recall"] >= GOAL_RECALL
               and figures["false_positive_rate"] <= GOAL_FALSE_POSITIVE_RATE)
        print(f"{name}: recall {figures['recall']} ({figures['recall'] / GOAL_RECALL:.2f}x the "
              f"goal), false-positive rate {figures['false_positive_rate']}, precision "
              f"{figures['precision']}: {'meets' if met else 'misses'} the goal")


@pytest.mark.timeout(3 * 3600)  # three months of 650 accounts through the consumer's handlers
def test_the_held_out_population_meets_the_goals(postgres_server: Any) -> None:
    seeds = [int.from_bytes(os.urandom(4), "big") % 2**31 for _ in range(HELD_OUT_SEEDS)]
    configure("antiabuse", "warning")  # a log line per alert would bury the figures

    def fresh_database() -> str:
        return str(postgres_server.url(new_database(postgres_server, "antiabuse_heldout")))

    result = asyncio.run(evaluate_held_out_pooled(
        seeds, fresh_database, lambda line: print(line, flush=True)))
    print(json.dumps(result))
    runs: list[dict[str, Any]] = result["runs"]  # type: ignore[assignment]
    assert [run["seed"] for run in runs] == seeds
    for run in runs:  # no honest account acted on, on any seed
        assert run["honest"] >= 500, run["seed"]
        assert run["honest_frozen"] == 0, run
        assert run["honest_restricted"] == 0, run
    detectors: dict[str, dict[str, Any]] = result["detectors"]  # type: ignore[assignment]
    misses = {
        name: {k: figures[k] for k in ("recall", "recall_95", "false_positive_rate_95",
                                        "positives", "true_positives", "negatives",
                                        "false_positives")}
        for name, figures in detectors.items()
        if figures["recall"] < GOAL_RECALL
        or figures["false_positive_rate_95"][1] > GOAL_FALSE_POSITIVE_RATE
    }
    assert not misses, f"seeds {seeds}: detectors missing the goal on the held-out " \
        f"population pooled over {len(seeds)} seeds: {misses}"
