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

``match_7pt_s`` (whole-match analysis of a 7-point match at 0-ply) is null: match
analysis is not built yet. Figures are JSON lines ``{"figure": ...}``; the last line
is the summary ``{"positions_per_s", "gnubg_nn_per_s", "ratio", "match_7pt_s", ...}``.
"""

from __future__ import annotations

import argparse
import asyncio
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
from services.backgammon import position_id
from services.backgammon.board import STARTING_BOARD, Board
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


def run(args: argparse.Namespace) -> dict[str, Any]:
    kit_logging.configure("bench", "warning")
    boards = random_positions(args.positions, seed=args.seed)
    rates = in_process_rates(boards, args.passes)
    emit("in_process", **rates)
    grpc_figures: dict[str, Any] = {"positions_per_s": None}
    if not args.no_grpc:
        grpc_figures = over_grpc(boards, args)
        emit("grpc", **grpc_figures)
    return {
        "positions_per_s": grpc_figures.pop("positions_per_s"),
        "gnubg_nn_per_s": rates["gnubg_nn_per_s"],
        "ratio": rates["ratio"],
        "match_7pt_s": None,  # match analysis is not built yet
        "in_process_per_s": rates["in_process_per_s"],
        "goal_ratio": GOAL_RATIO,
        "positions": len(boards),
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
    parser.add_argument("--no-grpc", action="store_true", help="in-process figures only")
    parser.add_argument("--database-url", help="an external PostgreSQL server URL (asyncpg)")
    parser.add_argument("--bootstrap", help="an external Kafka bootstrap address")
    parser.set_defaults(handler=_handle)


__all__ = ["random_positions", "register_bench"]
