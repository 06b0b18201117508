"""``tavla bench analysis``: positions evaluated per second, against gnubg-nn's own rate.

Positions: ``--positions`` boards (default 2,000) from seeded random play from the
opening (:func:`random_positions`), money game, centred cube, evaluated at 0-ply.

In process, in ``--passes`` passes over the same positions, taking turns slice by
slice (a busy neighbour on the shared machine slows both alike); the median pass:

- ``gnubg_nn_per_s``: ``gnubg_nn.probabilities(board, 0)``, the net's bare
  evaluation (cubeless chances only), on boards already decoded.
  Both in-process figures use the net loaded without gnubg-nn's evaluation cache
  (``net_load(weights, 0)``): with it, the second of the two to see a slice would
  time cache lookups the first had warmed. The served process keeps the cache (as
  production does).
- ``in_process_per_s``: what one worker process does per request
  (``services.analysis.worker.evaluate``): decode both gnubg ids, the net (or the
  exact bear-off figures), the cubeful equities and the cube decision.
- ``ratio`` = in_process_per_s / gnubg_nn_per_s: one worker against the bare net
  (goal >= 0.8).

Over gRPC: ``tavla serve analysis`` as its own process (production's log level, its
own service key, PostgreSQL and the broker: :mod:`services.kit.benchstack`) with
``TAVLA_ANALYSIS_WORKERS=--workers`` (default: the CPUs available), called as the
game service with ``--concurrency`` EvaluatePosition calls in flight (default 4 per
worker) for ``--seconds``: ``positions_per_s`` is the answered calls per second
(through the gRPC server, the bounded queue and the worker pool).

Match analysis: a 7-point match played by the rules library near the net's best
(:func:`services.analysis.samples.net_match`, ``--seed``), exported as the game service
exports it (Jellyfish ``.mat``), then analysed at 0-ply as the service does it
(:func:`services.analysis.matches.analyse_record`: its games in parallel on a pool of
``--workers`` spawned processes, every checker play, cube decision and the luck of
every roll), ``--match-passes`` times: ``match_7pt_s`` is the median wall time
(goal < 1 s); ``match_7pt_in_process_s`` the same analysis in this one process.

Figures are JSON lines ``{"figure": ...}``; the last line is the summary
``{"positions_per_s", "gnubg_nn_per_s", "ratio", "match_7pt_s", ...}``.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import random
import statistics
import sys
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import gnubg_nn
import grpc

from services.analysis import worker
from services.analysis.config import available_cpus, default_cache_dir
from services.analysis.domain.match_analysis import analyse
from services.analysis.domain.matread import MatRecord, parse
from services.analysis.matches import analyse_record
from services.analysis.pool import EvaluationPool
from services.analysis.samples import net_match
from services.backgammon import position_id
from services.backgammon.board import STARTING_BOARD, Board
from services.backgammon.match import MatchRules
from services.backgammon.matfile import MatHeader, export_match
from services.backgammon.plays import legal_plays
from services.kit import logging as kit_logging
from services.kit.benchstack import BenchStack
from tavla.analysis.v1 import analysis_pb2, analysis_pb2_grpc

GOAL_RATIO = 0.8
WEIGHTS = Path(gnubg_nn.__file__).parent / "data" / "gnubg.weights"
CHUNK = 200


def random_positions(count: int, seed: int) -> list[Board]:
    """Boards (not finished) after 2..60 random legal half-moves from the opening."""
    rng = random.Random(seed)
    boards: list[Board] = []
    while len(boards) < count:
        board = STARTING_BOARD
        for _ in range(rng.randrange(2, 60)):
            plays = legal_plays(board, (rng.randint(1, 6), rng.randint(1, 6)))
            if plays:
                board = rng.choice(plays).result
            if board.is_over():
                break
            board = board.swapped()
        if not board.is_over():
            boards.append(board)
    return boards


def emit(figure: str, **values: Any) -> None:
    print(json.dumps({"figure": figure, **values}), flush=True)


def in_process_rates(boards: list[Board], passes: int) -> dict[str, float]:
    ids = [position_id.encode(board) for board in boards]
    gnubg_boards = [board.to_gnubg() for board in boards]
    # Both sides evaluate with the same net loaded without gnubg-nn's evaluation cache:
    # with it, whichever ran a slice second would time cache lookups the first warmed.
    gnubg_nn.net_use(gnubg_nn.net_load(str(WEIGHTS), 0))
    worker.start(str(default_cache_dir()))  # the bear-off database, as a worker loads it
    worker.evaluate(ids[0], "", 0)

    def net(low: int, high: int) -> None:
        probabilities = gnubg_nn.probabilities
        for board in gnubg_boards[low:high]:
            probabilities(board, 0)

    def ours(low: int, high: int) -> None:
        evaluate = worker.evaluate
        for pid in ids[low:high]:
            evaluate(pid, "", 0)

    ratios, rates = [], []
    for number in range(passes):
        spent = {"net": 0.0, "ours": 0.0}
        for low in range(0, len(ids), CHUNK):
            for name, run in (("net", net), ("ours", ours)):
                spent[name] += _seconds(run, low, low + CHUNK)
        rate = {name: len(ids) / seconds for name, seconds in spent.items()}
        emit("pass", number=number, gnubg_nn_per_s=rate["net"], in_process_per_s=rate["ours"])
        ratios.append(rate["ours"] / rate["net"])
        rates.append(rate)
    median = rates[ratios.index(statistics.median_low(ratios))]
    return {
        "gnubg_nn_per_s": round(median["net"], 1),
        "in_process_per_s": round(median["ours"], 1),
        "ratio": round(median["ours"] / median["net"], 3),
    }


def _seconds(run: Callable[[int, int], None], low: int, high: int) -> float:
    started = time.perf_counter()
    run(low, high)
    return time.perf_counter() - started


async def closed_loop(
    bench: BenchStack, address: str, ids: list[str], concurrency: int, seconds: float
) -> dict[str, Any]:
    answered = errors = 0
    first_error = ""
    async with bench.keys.channel(address, target="analysis", caller="game") as channel:
        await asyncio.wait_for(channel.channel_ready(), timeout=60)
        stub = analysis_pb2_grpc.AnalysisServiceStub(channel)
        for pid in ids[:concurrency]:  # warm-up: every worker answers once
            await stub.EvaluatePosition(analysis_pb2.EvaluatePositionRequest(position_id=pid))
        deadline = time.perf_counter() + seconds

        async def caller(offset: int) -> None:
            nonlocal answered, errors, first_error
            index = offset
            while time.perf_counter() < deadline:
                request = analysis_pb2.EvaluatePositionRequest(position_id=ids[index % len(ids)])
                index += concurrency
                try:
                    await stub.EvaluatePosition(request, timeout=30)
                    answered += 1
                except grpc.aio.AioRpcError as error:
                    errors += 1
                    first_error = first_error or f"{error.code().name}: {error.details()}"

        started = time.perf_counter()
        await asyncio.gather(*(caller(i) for i in range(concurrency)))
        elapsed = time.perf_counter() - started
    return {
        "positions_per_s": round(answered / elapsed, 1),
        "grpc_calls_ok": answered,
        "grpc_errors": errors,
        "first_error": first_error,
    }


def over_grpc(boards: list[Board], args: argparse.Namespace) -> dict[str, Any]:
    ids = [position_id.encode(board) for board in boards]
    concurrency = args.concurrency or 4 * args.workers
    with ExitStack() as stack:
        bench = BenchStack(stack, database_url=args.database_url, bootstrap=args.bootstrap)
        url = bench.new_database("analysis_bench")
        env = {
            "TAVLA_ANALYSIS_WORKERS": str(args.workers),
            "TAVLA_ANALYSIS_QUEUE": str(concurrency),
        }
        analysis = bench.start_service("analysis", "analysis", url, env)
        asyncio.run(bench.wait_serving(analysis))
        print(f"analysis serving at {analysis.address} (pid {analysis.pid}), {args.workers} "
              f"workers, {concurrency} calls in flight", file=sys.stderr)  # fmt: skip
        result = asyncio.run(closed_loop(bench, analysis.address, ids, concurrency, args.seconds))
        if result["grpc_errors"]:
            print(bench.log_tail(analysis, 60), file=sys.stderr)
        bench.stop_service(analysis)
    return {"workers": args.workers, "concurrency": concurrency, **result}


def sample_record(seed: int) -> MatRecord:
    """A 7-point match as the game service would export it, read back."""
    rules = MatchRules(length=7)
    games = net_match(rules, random.Random(seed), max_games=50)
    header = MatHeader("Tavla", "alice", "bob", dt.date(2026, 12, 1))
    return parse(export_match(header, rules, games))


async def _pool_seconds(record: MatRecord, workers: int, passes: int) -> list[float]:
    pool = EvaluationPool(workers, 64, default_cache_dir())
    try:
        await pool.warm_up()
        await analyse_record(pool, record)  # warm: every worker has analysed once
        spent = []
        for _ in range(passes):
            started = time.perf_counter()
            await analyse_record(pool, record)
            spent.append(time.perf_counter() - started)
        return spent
    finally:
        pool.close()


def match_figures(args: argparse.Namespace) -> dict[str, Any]:
    record = sample_record(args.seed)
    decisions = analyse(record, worker.engine(), 0)
    started = time.perf_counter()
    analyse(record, worker.engine(), 0)
    in_process = time.perf_counter() - started
    pooled = asyncio.run(_pool_seconds(record, args.workers, args.match_passes))
    return {
        "match_7pt_s": round(statistics.median(pooled), 3),
        "match_7pt_in_process_s": round(in_process, 3),
        "match_7pt_games": len(record.games),
        "match_7pt_decisions": len(decisions),
        "match_7pt_workers": args.workers,
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    kit_logging.configure("bench", "warning")
    boards = random_positions(args.positions, seed=args.seed)
    rates = in_process_rates(boards, args.passes)
    emit("in_process", **rates)
    match = match_figures(args)
    emit("match", **match)
    grpc_figures: dict[str, Any] = {"positions_per_s": None}
    if not args.no_grpc:
        grpc_figures = over_grpc(boards, args)
        emit("grpc", **grpc_figures)
    return {
        "positions_per_s": grpc_figures.pop("positions_per_s"),
        "gnubg_nn_per_s": rates["gnubg_nn_per_s"],
        "ratio": rates["ratio"],
        "match_7pt_s": match.pop("match_7pt_s"),
        "in_process_per_s": rates["in_process_per_s"],
        "goal_ratio": GOAL_RATIO,
        "positions": len(boards),
        **match,
        **grpc_figures,
    }


def _handle(args: argparse.Namespace) -> int:
    print(json.dumps(run(args)), flush=True)
    return 0


def register_bench(bench_subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``analysis`` to the ``tavla bench`` command."""
    parser = bench_subparsers.add_parser(
        "analysis", help="positions evaluated per second (in-process and over gRPC) vs gnubg-nn"
    )
    parser.add_argument("--positions", type=int, default=2000, help="positions (default 2000)")
    parser.add_argument("--passes", type=int, default=3, help="alternating passes (default 3)")
    parser.add_argument("--seed", type=int, default=11, help="random play seed (default 11)")
    parser.add_argument("--workers", type=int, default=available_cpus(),
                        help="served TAVLA_ANALYSIS_WORKERS (default: CPUs)")  # fmt: skip
    parser.add_argument("--concurrency", type=int, default=0,
                        help="gRPC calls in flight (default 4 per worker)")  # fmt: skip
    parser.add_argument("--seconds", type=float, default=10.0,
                        help="the measured gRPC window (default 10)")  # fmt: skip
    parser.add_argument("--match-passes", type=int, default=3,
                        help="timed analyses of the 7-point match (default 3)")  # fmt: skip
    parser.add_argument("--no-grpc", action="store_true", help="in-process figures only")
    parser.add_argument("--database-url", help="an external PostgreSQL server URL (asyncpg)")
    parser.add_argument("--bootstrap", help="an external Kafka bootstrap address")
    parser.set_defaults(handler=_handle)


__all__ = ["random_positions", "register_bench"]
