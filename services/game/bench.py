"""``tavla bench game``: concurrent scripted games over gRPC against one game-service process.

It starts PostgreSQL, the broker and one ``tavla serve game`` process unless pointed
at a running service (``--address``) or at external servers (``--database-url``,
``--bootstrap``). N scripted games run concurrently for S seconds; each finished game
is replaced by a new one. Every player decision (roll, move, double, take) is one
timed gRPC call. The last line printed is one JSON object:
``{"moves_per_s", "p50_ms", "p99_ms", "errors", "games_finished", ...}`` where a
"move" is one checker play (a Move call: each also needs a Roll call before it)
and the latencies cover every call.

In the same run, with the same client count on the same machine, it measures the
floor: a bare grpc.aio server answering the health check, with no database and no
logic (``grpc_floor_calls_per_s``). The game's ``calls_per_s`` can be read against it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import random
import sys
import tempfile
import time
import uuid
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import psutil

from services.kit.devstack.net import free_port
from tavla.common.v1 import money_pb2
from tavla.game.v1 import game_pb2, game_pb2_grpc

GOAL_MOVES_PER_S = 1500
GOAL_P99_MS = 25.0
REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Tally:
    latencies: list[float] = field(default_factory=list)
    moves: int = 0
    calls: int = 0
    errors: int = 0
    games_finished: int = 0
    first_error: str = ""


def _meta(account: str) -> list[tuple[str, str]]:
    return [("x-tavla-account-id", account)]


def _new_game_request(rng: random.Random) -> game_pb2.CreateGameRequest:
    players = [
        game_pb2.Player(account_id=str(uuid.uuid4()), display_name=f"bench{i}", rating=1500.0)
        for i in (0, 1)
    ]
    rules = game_pb2.TableRules(
        kind=game_pb2.PLAY_KIND_MONEY_GAME,
        stake=money_pb2.Money(minor_units=100, currency="PLAY"),
        clock=game_pb2.ClockPreset(name="bench"),
    )
    return game_pb2.CreateGameRequest(
        table_id=f"bench-{rng.getrandbits(32):08x}", players=players, rules=rules
    )


async def _decide(stub: Any, game: game_pb2.Game, rng: random.Random) -> tuple[game_pb2.Game, bool]:
    """One scripted decision; returns the new state and whether it was a checker play."""
    meta = _meta(game.awaiting_account_id)
    gid, version = game.game_id, game.version
    if game.phase == game_pb2.TURN_PHASE_MOVE:
        play = rng.choice(game.legal_plays).notation
        request = game_pb2.MoveRequest(game_id=gid, expected_version=version, notation=play)
        return await stub.Move(request, metadata=meta), True
    if game.phase == game_pb2.TURN_PHASE_CUBE_RESPONSE:
        take = game_pb2.TakeRequest(game_id=gid, expected_version=version)
        return await stub.Take(take, metadata=meta), False
    cube_free = not game.cube_owner_account_id or game.cube_owner_account_id == (
        game.awaiting_account_id
    )
    if cube_free and game.cube_value < 8 and rng.random() < 0.02:
        double = game_pb2.DoubleRequest(game_id=gid, expected_version=version)
        return await stub.Double(double, metadata=meta), False
    roll = game_pb2.RollRequest(game_id=gid, expected_version=version)
    return await stub.Roll(roll, metadata=meta), False


async def _player_pair(stub: Any, deadline: float, tally: Tally, seed: int) -> None:
    """Play games back to back until the deadline."""
    rng = random.Random(seed)
    while time.perf_counter() < deadline:
        try:
            game = await stub.CreateGame(_new_game_request(rng))
            while game.status == game_pb2.GAME_STATUS_IN_PROGRESS:
                if time.perf_counter() >= deadline:
                    return
                started = time.perf_counter()
                game, moved = await _decide(stub, game, rng)
                tally.latencies.append(time.perf_counter() - started)
                tally.calls += 1
                tally.moves += moved
            tally.games_finished += 1
        except grpc.aio.AioRpcError as error:
            tally.errors += 1
            tally.first_error = tally.first_error or f"{error.code().name}: {error.details()}"


def _percentile(values: list[float], fraction: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


async def run_clients(
    address: str, games: int, seconds: float, server_pid: int | None = None
) -> dict[str, Any]:
    """Run ``games`` concurrent scripted games for ``seconds`` against ``address``."""
    tally = Tally()
    async with grpc.aio.insecure_channel(address) as channel:
        await asyncio.wait_for(channel.channel_ready(), timeout=60)
        stub = game_pb2_grpc.GameServiceStub(channel)
        cpu_before = _cpu_seconds(server_pid)
        started = time.perf_counter()
        deadline = started + seconds
        await asyncio.gather(*(_player_pair(stub, deadline, tally, i) for i in range(games)))
        elapsed = time.perf_counter() - started
        cpu = _cpu_seconds(server_pid) - cpu_before
    extra = {}
    if server_pid is not None and tally.calls:
        # Independent of what else the machine runs: 1000 / this = calls/s on one full core.
        extra["server_cpu_ms_per_call"] = round(cpu * 1000 / tally.calls, 3)
    return {
        "moves_per_s": round(tally.moves / elapsed, 1),
        "p50_ms": round(_percentile(tally.latencies, 0.50) * 1000, 2),
        "p99_ms": round(_percentile(tally.latencies, 0.99) * 1000, 2),
        "errors": tally.errors,
        "games_finished": tally.games_finished,
        "calls_per_s": round(tally.calls / elapsed, 1),
        "concurrent_games": games,
        "seconds": round(elapsed, 1),
        "first_error": tally.first_error,
        **extra,
    }


def _serve_floor(port: int) -> None:
    """A bare grpc.aio server (the standard health service), as in grpc's own examples."""
    from grpc_health.v1 import health_pb2_grpc
    from grpc_health.v1._async import HealthServicer

    async def serve() -> None:
        server = grpc.aio.server()
        health_pb2_grpc.add_HealthServicer_to_server(HealthServicer(), server)
        server.add_insecure_port(f"127.0.0.1:{port}")
        await server.start()
        await server.wait_for_termination()

    asyncio.run(serve())


async def _floor_clients(address: str, clients: int, seconds: float) -> int:
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    calls = 0
    async with grpc.aio.insecure_channel(address) as channel:
        await asyncio.wait_for(channel.channel_ready(), timeout=60)
        stub = health_pb2_grpc.HealthStub(channel)
        request = health_pb2.HealthCheckRequest()
        deadline = time.perf_counter() + seconds

        async def client() -> None:
            nonlocal calls
            while time.perf_counter() < deadline:
                await stub.Check(request)
                calls += 1

        await asyncio.gather(*(client() for _ in range(clients)))
    return calls


def grpc_floor(clients: int, seconds: float) -> dict[str, float]:
    """Unary calls per second a bare grpc.aio server and this client reach here."""
    port = free_port()
    server = multiprocessing.get_context("spawn").Process(target=_serve_floor, args=(port,))
    server.start()
    try:
        before = _cpu_seconds(server.pid)
        started = time.perf_counter()
        calls = asyncio.run(_floor_clients(f"127.0.0.1:{port}", clients, seconds))
        elapsed = time.perf_counter() - started
        cpu = _cpu_seconds(server.pid) - before
    finally:
        server.terminate()
        server.join(10)
    return {
        "grpc_floor_calls_per_s": round(calls / elapsed, 1),
        "grpc_floor_server_cpu_ms_per_call": round(cpu * 1000 / max(calls, 1), 3),
    }


def _start_stack(stack: ExitStack, args: argparse.Namespace) -> tuple[str, int]:
    """Start what is missing (PostgreSQL, broker, the game service); its address and pid."""
    from services.kit.devstack.broker import KafkaBroker
    from services.kit.devstack.postgres import PostgresServer, ensure_database, with_database
    from services.kit.devstack.supervisor import Supervisor

    run_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="tavla-bench-")))
    supervisor = stack.enter_context(Supervisor(run_dir / "logs"))
    server_url = args.database_url
    if not server_url:
        postgres = PostgresServer(run_dir / "postgres", free_port(), supervisor)
        postgres.start()
        server_url = postgres.url()
    bootstrap = args.bootstrap
    if not bootstrap:
        broker = KafkaBroker(free_port(), supervisor)
        broker.start()
        broker.create_topics_from_file()
        bootstrap = broker.bootstrap
    database = f"game_bench_{uuid.uuid4().hex[:8]}"
    ensure_database(server_url, database)
    port = free_port()
    env = dict(os.environ)
    env.update(
        TAVLA_DATABASE_URL=with_database(server_url, database),
        TAVLA_KAFKA_BOOTSTRAP=bootstrap,
        TAVLA_GRPC_PORT=str(port),
        TAVLA_METRICS_PORT="0",
        TAVLA_LOG_LEVEL="warning",
    )
    argv = [sys.executable, "-m", "services.cli", "serve", "game"]
    process = supervisor.start("game", argv, env=env, cwd=REPO_ROOT)
    return f"127.0.0.1:{port}", process.pid


def _cpu_seconds(pid: int | None) -> float:
    if pid is None:
        return 0.0
    times = psutil.Process(pid).cpu_times()
    return float(times.user + times.system)


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Run the benchmark; when it started the server, also the server's CPU time per call."""
    with ExitStack() as stack:
        address, pid = (args.address, None) if args.address else _start_stack(stack, args)
        result = asyncio.run(run_clients(address, args.games, args.seconds, pid))
    floor = grpc_floor(args.games, min(args.seconds, 5.0))
    return {**result, **floor}


def _handle(args: argparse.Namespace) -> int:
    result = run(args)
    print(
        f"goal: >= {GOAL_MOVES_PER_S} moves/s at p99 <= {GOAL_P99_MS} ms: "
        f"{result['moves_per_s'] / GOAL_MOVES_PER_S:.2f}x the rate, "
        f"p99 {result['p99_ms'] / GOAL_P99_MS:.2f}x the bound"
    )
    if result["moves_per_s"]:
        needed = GOAL_MOVES_PER_S * result["calls_per_s"] / result["moves_per_s"]
        print(
            f"the goal needs {needed:.0f} calls/s at this mix of calls; a bare grpc.aio "
            f"server reaches {result['grpc_floor_calls_per_s']:.0f} calls/s here"
        )
    print(json.dumps(result))
    return 0 if result["errors"] == 0 else 1


def register_bench(bench_subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``game`` to the ``tavla bench`` command."""
    parser = bench_subparsers.add_parser(
        "game", help="concurrent scripted games over gRPC against one game-service process"
    )
    parser.add_argument("--games", type=int, default=16, help="concurrent games (default 16)")
    parser.add_argument("--seconds", type=float, default=20.0, help="duration (default 20)")
    parser.add_argument("--address", help="a running game service (host:port); else start one")
    parser.add_argument("--database-url", help="an external PostgreSQL server URL (asyncpg)")
    parser.add_argument("--bootstrap", help="an external Kafka bootstrap address")
    parser.set_defaults(handler=_handle)


__all__ = ["register_bench", "run_clients"]
