"""``tavla bench game``: concurrent scripted games over gRPC against one game-service process.

It starts PostgreSQL, the broker, one ``tavla serve accounts`` process (whose JWKS
the game service verifies access tokens with) and one ``tavla serve game`` process
unless pointed at a running service (``--address``, with the keys of the ``tavla dev``
run dir in ``TAVLA_DEV_DIR`` or ``.tavla/``) or at external servers (``--database-url``,
``--bootstrap``). Players call with access tokens signed by the accounts service's
key, games are created with matchmaking's service token, as in production.

N scripted games run concurrently for S seconds; each finished game is replaced
by a new one. Every player decision (roll, move, double, take) is one
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
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import jwt
import psutil

from services.kit.client import service_channel
from services.kit.devstack.keys import (
    ServiceKeys,
    ensure_service_keys,
    ensure_signing_keys,
    load_private_key,
)
from services.kit.devstack.net import free_port
from services.kit.keys import key_id
from services.kit.service_tokens import ServiceTokenMinter
from tavla.common.v1 import money_pb2
from tavla.game.v1 import game_pb2, game_pb2_grpc

Meta = Callable[[str], list[tuple[str, str]]]
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


@dataclass(frozen=True)
class BenchKeys:
    """The keys of a run dir: access tokens as accounts signs them, matchmaking's service key."""

    run_dir: Path

    def player_metadata(self) -> Meta:
        key = load_private_key(ensure_signing_keys(self.run_dir).private_key_file)
        kid = key_id(key.public_key())
        minted: dict[str, list[tuple[str, str]]] = {}

        def meta(account: str) -> list[tuple[str, str]]:
            if account not in minted:
                now = int(time.time())
                claims = {"iss": "tavla", "aud": "tavla-api", "sub": account, "iat": now,
                          "exp": now + 3600, "jti": uuid.uuid4().hex}
                token = jwt.encode(claims, key, algorithm="ES256", headers={"kid": kid})
                minted[account] = [("authorization", f"Bearer {token}")]
            return minted[account]

        return meta

    def matchmaking(self) -> ServiceTokenMinter:
        keys = ServiceKeys(self.run_dir / "service-keys")
        return ServiceTokenMinter(
            "matchmaking", load_private_key(keys.private_key_file("matchmaking"))
        )


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


async def _decide(
    stub: Any, game: game_pb2.Game, rng: random.Random, players: Meta
) -> tuple[game_pb2.Game, bool]:
    """One scripted decision; returns the new state and whether it was a checker play."""
    meta = players(game.awaiting_account_id)
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


async def _player_pair(
    stub: Any, deadline: float, tally: Tally, seed: int, players: Meta
) -> None:
    """Play games back to back until the deadline."""
    rng = random.Random(seed)
    while time.perf_counter() < deadline:
        try:
            game = await stub.CreateGame(_new_game_request(rng))
            while game.status == game_pb2.GAME_STATUS_IN_PROGRESS:
                if time.perf_counter() >= deadline:
                    return
                started = time.perf_counter()
                game, moved = await _decide(stub, game, rng, players)
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
    address: str, games: int, seconds: float, keys: BenchKeys, server_pid: int | None = None
) -> dict[str, Any]:
    """Run ``games`` concurrent scripted games for ``seconds`` against ``address``."""
    tally = Tally()
    players = keys.player_metadata()
    channel = service_channel(address, target="game", credentials=keys.matchmaking())
    async with channel:
        await asyncio.wait_for(channel.channel_ready(), timeout=60)
        stub = game_pb2_grpc.GameServiceStub(channel)
        cpu_before = _cpu_seconds(server_pid)
        started = time.perf_counter()
        deadline = started + seconds
        await asyncio.gather(
            *(_player_pair(stub, deadline, tally, i, players) for i in range(games))
        )
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


def _start_stack(stack: ExitStack, args: argparse.Namespace) -> tuple[str, int, BenchKeys]:
    """Start what is missing (PostgreSQL, broker, accounts, the game service);
    the game's address and pid, and the keys."""
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
    service_keys = ensure_service_keys(run_dir, ["accounts", "game", "matchmaking"])
    ports = {"accounts": free_port(), "game": free_port()}
    for service in ("accounts", "game"):
        database = f"{service}_bench_{uuid.uuid4().hex[:8]}"
        ensure_database(server_url, database)
        env = dict(os.environ)
        env.update(
            TAVLA_DATABASE_URL=with_database(server_url, database),
            TAVLA_KAFKA_BOOTSTRAP=bootstrap,
            TAVLA_GRPC_PORT=str(ports[service]),
            TAVLA_GRPC_BIND="127.0.0.1",
            TAVLA_METRICS_PORT="0",
            TAVLA_LOG_LEVEL="warning",
            TAVLA_SERVICE_KEY_FILE=str(service_keys.private_key_file(service)),
            TAVLA_SERVICE_PUBLIC_KEYS_DIR=str(service_keys.public_keys_dir),
            TAVLA_ACCOUNTS_ADDRESS=f"127.0.0.1:{ports['accounts']}",
            TAVLA_JWT_PRIVATE_KEY_FILE=str(ensure_signing_keys(run_dir).private_key_file),
        )
        argv = [sys.executable, "-m", "services.cli", "serve", service]
        process = supervisor.start(service, argv, env=env, cwd=REPO_ROOT)
    return f"127.0.0.1:{ports['game']}", process.pid, BenchKeys(run_dir)


def _dev_keys() -> BenchKeys:
    """The keys of the running `tavla dev` (for ``--address``)."""
    return BenchKeys(Path(os.environ.get("TAVLA_DEV_DIR") or REPO_ROOT / ".tavla").resolve())


def _cpu_seconds(pid: int | None) -> float:
    if pid is None:
        return 0.0
    times = psutil.Process(pid).cpu_times()
    return float(times.user + times.system)


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Run the benchmark; when it started the server, also the server's CPU time per call."""
    with ExitStack() as stack:
        if args.address:
            address, pid, keys = args.address, None, _dev_keys()
        else:
            address, pid, keys = _start_stack(stack, args)
        result = asyncio.run(run_clients(address, args.games, args.seconds, keys, pid))
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
