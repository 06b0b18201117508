"""``tavla bench game``: scripted games over gRPC against game-service processes.

It starts PostgreSQL, the broker, an accounts process and ``tavla serve game``
(log level info, as deployed; :mod:`services.kit.benchstack`) unless pointed at
a running service (``--address``: a ``tavla dev`` stack, whose keys it reads from
``TAVLA_DEV_DIR`` or ``.tavla/``) or at external servers (``--database-url``,
``--bootstrap``). Every player decision (roll, move, double, take) is one timed
gRPC call made as the player, with an access token signed by the run dir's key
that the game verifies with the accounts service's JWKS; the benchmark creates
games (and places seat holds) as matchmaking, with matchmaking's service token.
Two modes:

Closed loop (the default; for comparison with earlier runs): ``--games`` games
play back to back with no pause between calls for ``--seconds``, each finished
game replaced by a new one (play money).

Open loop (``--open-loop --games G --think-ms T``): G concurrent games whose
players each wait T ms before every call, as people do. The tables open at random
moments over ``--ramp-seconds`` (players arrive; not all in one instant), then the
``--seconds`` window is measured (errors count from the start). A quarter of the games
are real money (USD): a wallet process (``tavla serve wallet``) runs too, both
seats' stakes are held through its ``PlaceHold`` before ``CreateGame``
(:func:`seat_holds`), doubles are checked with the wallet and takes raise the
holds, and the finished games are settled by the wallet's consumer (checked in the
wallet's database afterwards: ``usd_finished``, ``usd_settled``, ``usd_rejected``). Games are
spread over ``--replicas`` game processes (default 2) taking turns call by call,
so a call mostly lands on a process whose session cache does not hold the
game's current version (the read from PostgreSQL production's load balancer
causes); ``server_cpu_ms_per_call`` sums every replica's CPU.

The last line printed is one JSON object, first
``{"games", "calls_per_s", "moves_per_s", "p50_ms", "p99_ms", "errors",
"games_finished"}`` then details (server CPU per call, the mode, the first error).
A "move" is one checker play (a Move call); the latencies cover every call to the
game service, ``CreateGame`` included (the wallet's hold calls are the
matchmaker's and are counted apart). In the same run it measures the floor: a
bare grpc.aio server answering the health check with no database and no logic
(``grpc_floor_calls_per_s``, ``grpc_floor_server_cpu_ms_per_call``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import random
import time
import uuid
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

import grpc
from sqlalchemy import text

from services.backgammon import position_id
from services.backgammon.board import BAR, POINTS, Board
from services.kit.benchstack import (
    FUNDING_WALLET_ENV,
    BenchKeys,
    BenchStack,
    PlayerMetadata,
    cpu_seconds,
    percentile,
)
from services.kit.db import make_engine
from services.kit.devstack.net import free_port
from tavla.common.v1 import money_pb2
from tavla.game.v1 import game_pb2, game_pb2_grpc
from tavla.wallet.v1 import wallet_pb2_grpc

GOAL_MOVES_PER_S = 1500  # closed loop
GOAL_P99_MS = 25.0
# Open loop: 2,000 concurrent games at 2 s of thought per call, one process.
GOAL_OPEN_GAMES = 2000
GOAL_OPEN_THINK_MS = 2000
GOAL_OPEN_P99_MS = 50.0
USD_SHARE = 4  # every fourth game is played for real money
USD_STAKE = 100  # minor units
FUNDED_PLAYERS = 256


@dataclass
class Tally:
    latencies: list[float] = field(default_factory=list)
    moves: int = 0
    calls: int = 0
    errors: int = 0
    games_finished: int = 0
    usd_games: int = 0
    usd_finished: int = 0  # over the whole run: each should be settled by the wallet
    hold_calls: int = 0
    first_error: str = ""

    def error(self, error: grpc.aio.AioRpcError) -> None:
        self.errors += 1
        self.first_error = self.first_error or f"{error.code().name}: {error.details()}"


def _players(accounts: tuple[str, str], holds: tuple[str, str]) -> list[game_pb2.Player]:
    return [
        game_pb2.Player(account_id=account, display_name=f"bench{i}", rating=1500.0, hold_id=hold)
        for i, (account, hold) in enumerate(zip(accounts, holds, strict=True))
    ]


def new_game_request(
    rng: random.Random,
    accounts: tuple[str, str] | None = None,
    holds: tuple[str, str] = ("", ""),
    table_id: str = "",
) -> game_pb2.CreateGameRequest:
    """A money game: in USD when the seats' stakes are held, else PLAY (fresh accounts
    unless given: with a wallet, PLAY doubles are checked against PLAY balances)."""
    currency = "USD" if any(holds) else "PLAY"
    if accounts is None:
        accounts = (str(uuid.uuid4()), str(uuid.uuid4()))
    rules = game_pb2.TableRules(
        kind=game_pb2.PLAY_KIND_MONEY_GAME,
        stake=money_pb2.Money(minor_units=USD_STAKE, currency=currency),
        clock=game_pb2.ClockPreset(name="bench"),
    )
    return game_pb2.CreateGameRequest(
        table_id=table_id or f"bench-{rng.getrandbits(32):08x}",
        players=_players(accounts, holds),
        rules=rules,
    )


async def seat_holds(wallet: Any, table_id: str, accounts: tuple[str, str]) -> tuple[str, str]:
    """The matchmaker's part before a real-money game: both seats' stakes held in the wallet.

    Each hold covers the largest loss at cube 1 (stake x 3); the game raises them
    when a double is taken. Returns the hold ids ``CreateGame`` carries.
    """
    from services.wallet.bench import place_seat_hold

    first, second = await asyncio.gather(
        *(place_seat_hold(wallet, account, USD_STAKE * 3, table_id) for account in accounts)
    )
    return first, second


Chooser = Callable[[Sequence[game_pb2.LegalPlay], random.Random], str]


def random_play(plays: Sequence[game_pb2.LegalPlay], rng: random.Random) -> str:
    """Any legal play, at random (the games last about twice a played game's turns)."""
    return rng.choice(plays).notation


def simple_play(plays: Sequence[game_pb2.LegalPlay], rng: random.Random) -> str:
    """The legal play a simple player makes (:func:`simple_score` of the position it leaves;
    the first of equals): games between two of them last about as many turns as games
    between people (about 50 rolls, against about 100 between random players)."""
    best = max(plays, key=lambda play: simple_score(position_id.decode(play.result_position_id)))
    return best.notation


def simple_score(board: Board) -> float:
    """How a simple player likes a position it leaves (``board`` from its side): the
    opponent's checkers hit, its own borne off and points made, few blots the opponent
    can hit, and pips to go."""
    mine, theirs = board.player, board.opponent
    # The opponent's checker on its point j stands on the mover's point 23 - j and moves
    # towards the mover's higher points: a blot is exposed when one stands below it.
    lowest = next((23 - j for j in range(POINTS - 1, -1, -1) if theirs[j]), POINTS)
    exposed = sum(
        1 for i in range(POINTS) if mine[i] == 1 and (theirs[BAR] or lowest < i)
    )
    made = sum(1 for i in range(POINTS) if mine[i] >= 2)
    return (
        4 * theirs[BAR] + 2 * board.borne_off() - 2 * exposed + made - board.pip_count() / 20
    )


async def decide(
    stub: Any,
    game: game_pb2.Game,
    rng: random.Random,
    players: PlayerMetadata,
    choose: Chooser = random_play,
) -> tuple[game_pb2.Game, bool]:
    """One scripted decision, as the awaited player; the new state and whether it was a play.
    The play is ``choose``'s among the game's legal plays."""
    meta = players(game.awaiting_account_id)
    gid, version = game.game_id, game.version
    if game.phase == game_pb2.TURN_PHASE_MOVE:
        play = choose(game.legal_plays, rng)
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


# ------------------------------------------------------------------ closed loop


async def _player_pair(
    stub: Any, deadline: float, tally: Tally, seed: int, players: PlayerMetadata
) -> None:
    """Play games back to back until the deadline."""
    rng = random.Random(seed)
    while time.perf_counter() < deadline:
        try:
            game = await stub.CreateGame(new_game_request(rng))
            while game.status == game_pb2.GAME_STATUS_IN_PROGRESS:
                if time.perf_counter() >= deadline:
                    return
                started = time.perf_counter()
                game, moved = await decide(stub, game, rng, players)
                tally.latencies.append(time.perf_counter() - started)
                tally.calls += 1
                tally.moves += moved
            tally.games_finished += 1
        except grpc.aio.AioRpcError as error:
            tally.error(error)


async def run_clients(
    address: str, games: int, seconds: float, keys: BenchKeys, server_pid: int | None = None
) -> dict[str, Any]:
    """Closed loop: ``games`` concurrent scripted games for ``seconds`` against ``address``."""
    tally = Tally()
    players = keys.players()
    async with keys.channel(address, target="game", caller="matchmaking") as channel:
        await asyncio.wait_for(channel.channel_ready(), timeout=60)
        stub = game_pb2_grpc.GameServiceStub(channel)
        pids = [server_pid] if server_pid is not None else []
        cpu_before = cpu_seconds(pids)
        started = time.perf_counter()
        deadline = started + seconds
        await asyncio.gather(
            *(_player_pair(stub, deadline, tally, i, players) for i in range(games))
        )
        elapsed = time.perf_counter() - started
        cpu = cpu_seconds(pids) - cpu_before
    return _figures("closed", games, tally, elapsed, cpu if pids else None)


# ------------------------------------------------------------------ open loop


@dataclass
class OpenLoop:
    """What every open-loop game shares: the replicas' stubs, the wallet, the clock."""

    stubs: list[Any]
    players: PlayerMetadata
    wallet: Any  # a WalletServiceStub, or None without a wallet
    funded: list[str]
    think: float
    opens: float  # the measured window: tables start before it (the ramp)...
    deadline: float  # ...and it closes here
    tally: Tally

    def stub(self, call: int) -> Any:
        """The replicas take turns: call ``n`` of a game goes to replica ``n mod replicas``."""
        return self.stubs[call % len(self.stubs)]

    def record(self, started: float, moved: bool = False) -> None:
        """A call that succeeded; counted when it started inside the window."""
        if started >= self.opens:
            self.tally.latencies.append(time.perf_counter() - started)
            self.tally.calls += 1
            self.tally.moves += moved

    async def timed(self, call: Any, request: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        reply = await call(request, **kwargs)
        self.record(started)
        return reply


async def _open_game(loop: OpenLoop, rng: random.Random, usd: bool) -> Any:
    if loop.wallet is None or not loop.funded:
        return await loop.timed(loop.stub(rng.getrandbits(8)).CreateGame, new_game_request(rng))
    first, second = rng.sample(loop.funded, 2)
    if not usd:
        request = new_game_request(rng, (first, second))
        return await loop.timed(loop.stub(rng.getrandbits(8)).CreateGame, request)
    table_id = f"bench-usd-{uuid.uuid4().hex[:12]}"
    holds = await seat_holds(loop.wallet, table_id, (first, second))
    loop.tally.hold_calls += 2
    loop.tally.usd_games += 1
    request = new_game_request(rng, (first, second), holds, table_id)
    return await loop.timed(loop.stub(rng.getrandbits(8)).CreateGame, request)


async def _thinking_table(loop: OpenLoop, seed: int, usd: bool) -> None:
    """One table: games one after another, each call after ``think`` seconds of thought."""
    rng = random.Random(seed)
    # Tables open at random moments over the ramp, as players arrive, not all at once.
    await asyncio.sleep(rng.uniform(0, loop.opens - time.perf_counter()))
    while time.perf_counter() < loop.deadline:
        try:
            game = await _open_game(loop, rng, usd)
            call = 0
            while game.status == game_pb2.GAME_STATUS_IN_PROGRESS:
                await asyncio.sleep(loop.think)
                if time.perf_counter() >= loop.deadline:
                    return
                call += 1
                started = time.perf_counter()
                game, moved = await decide(loop.stub(call), game, rng, loop.players)
                loop.record(started, moved)
            loop.tally.games_finished += time.perf_counter() >= loop.opens
            loop.tally.usd_finished += usd and loop.wallet is not None and bool(loop.funded)
        except grpc.aio.AioRpcError as error:
            loop.tally.error(error)  # during the ramp too: every error counts
            await asyncio.sleep(loop.think)


async def run_open_loop(
    addresses: list[str],
    games: int,
    think_ms: float,
    seconds: float,
    *,
    keys: BenchKeys,
    wallet_address: str | None,
    funded: list[str],
    server_pids: list[int],
    ramp_seconds: float = 10.0,
) -> dict[str, Any]:
    """Open loop: ``games`` tables whose players think ``think_ms`` before every call.

    The tables open over ``ramp_seconds``; then the window of ``seconds`` is measured.
    """
    tally = Tally()
    # As matchmaking: CreateGame on the game replicas, PlaceHold on the wallet.
    channels = [keys.channel(address, target="game", caller="matchmaking") for address in addresses]
    wallet_channel = (
        keys.channel(wallet_address, target="wallet", caller="matchmaking")
        if wallet_address
        else None
    )
    try:
        for channel in channels:
            await asyncio.wait_for(channel.channel_ready(), timeout=60)
        wallet = wallet_pb2_grpc.WalletServiceStub(wallet_channel) if wallet_channel else None
        opens = time.perf_counter() + ramp_seconds
        loop = OpenLoop(
            stubs=[game_pb2_grpc.GameServiceStub(channel) for channel in channels],
            players=keys.players(), wallet=wallet, funded=funded, think=think_ms / 1000,
            opens=opens, deadline=opens + seconds, tally=tally,
        )  # fmt: skip
        tables = asyncio.gather(
            *(_thinking_table(loop, i, usd=i % USD_SHARE == 0) for i in range(games))
        )
        await asyncio.sleep(max(0.0, opens - time.perf_counter()))
        cpu_before, own_before = cpu_seconds(server_pids), cpu_seconds([os.getpid()])
        await tables
        elapsed = time.perf_counter() - opens
        cpu = cpu_seconds(server_pids) - cpu_before
        own = cpu_seconds([os.getpid()]) - own_before
    finally:
        for channel in channels:
            await channel.close(None)
        if wallet_channel is not None:
            await wallet_channel.close(None)
    result = _figures("open", games, tally, elapsed, cpu if server_pids else None)
    if tally.calls:  # the players' side shares the machine: what it costs is printed too
        result["client_cpu_ms_per_call"] = round(own * 1000 / tally.calls, 3)
    result.update(
        think_ms=think_ms, ramp_seconds=ramp_seconds, replicas=len(addresses),
        usd_games=tally.usd_games, usd_finished=tally.usd_finished,
        hold_calls=tally.hold_calls,
    )  # fmt: skip
    return result


def _figures(
    mode: str, games: int, tally: Tally, elapsed: float, server_cpu: float | None
) -> dict[str, Any]:
    result: dict[str, Any] = {
        "games": games,
        "calls_per_s": round(tally.calls / elapsed, 1),
        "moves_per_s": round(tally.moves / elapsed, 1),
        "p50_ms": round(percentile(tally.latencies, 0.50) * 1000, 2),
        "p99_ms": round(percentile(tally.latencies, 0.99) * 1000, 2),
        "errors": tally.errors,
        "games_finished": tally.games_finished,
        "mode": mode,
        "seconds": round(elapsed, 1),
        "first_error": tally.first_error,
    }
    if server_cpu is not None and tally.calls:
        # Independent of what else the machine runs: 1000 / this = calls/s on one full core.
        result["server_cpu_ms_per_call"] = round(server_cpu * 1000 / tally.calls, 3)
    return result


# ------------------------------------------------------------------ the grpc.aio floor


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
    # A bare channel to a bare server: the floor has no Tavla service, token or interceptor.
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
    assert server.pid is not None
    try:
        before = cpu_seconds([server.pid])
        started = time.perf_counter()
        calls = asyncio.run(_floor_clients(f"127.0.0.1:{port}", clients, seconds))
        elapsed = time.perf_counter() - started
        cpu = cpu_seconds([server.pid]) - before
    finally:
        server.terminate()
        server.join(10)
    return {
        "grpc_floor_calls_per_s": round(calls / elapsed, 1),
        "grpc_floor_server_cpu_ms_per_call": round(cpu * 1000 / max(calls, 1), 3),
    }


# ------------------------------------------------------------------ the run

_USD_SETTLEMENTS = text(
    "SELECT count(*) FILTER (WHERE status = 'settled'), count(*) "
    "FROM settlements WHERE table_id LIKE 'bench-usd-%'"
)


async def settled_by_wallet(url: str, result: dict[str, Any], wait: float = 30.0) -> dict[str, int]:
    """How many of the finished USD games the wallet settled (its consumer, from the events).

    The events travel after the game's commit (outbox relay, broker, the wallet's
    consumer), so this waits up to ``wait`` seconds for all of them.
    """
    engine = make_engine(url, pool_size=1)
    give_up = time.monotonic() + wait
    try:
        while True:
            async with engine.connect() as connection:
                settled, recorded = (await connection.execute(_USD_SETTLEMENTS)).one()
            if recorded >= result["usd_finished"] or time.monotonic() > give_up:
                return {"usd_settled": int(settled), "usd_rejected": int(recorded - settled)}
            await asyncio.sleep(0.5)
    finally:
        await engine.dispose()


@dataclass
class Servers:
    addresses: list[str]
    pids: list[int]
    keys: BenchKeys
    wallet_address: str | None = None
    wallet_url: str | None = None
    funded: list[str] = field(default_factory=list)


def _start_servers(stack: ExitStack, args: argparse.Namespace) -> Servers:
    """PostgreSQL, the broker, accounts, the wallet (open loop) and ``--replicas`` game
    processes."""
    bench = BenchStack(stack, database_url=args.database_url, bootstrap=args.bootstrap)
    game_env: dict[str, str] = {}
    servers = Servers([], [], bench.keys)
    waiting = []
    if args.open_loop:
        from services.wallet.bench import fund_players

        wallet_url = bench.new_database("wallet_bench")
        wallet = bench.start_service("wallet", "wallet", wallet_url, FUNDING_WALLET_ENV)
        asyncio.run(bench.wait_serving(wallet))
        funding = fund_players(
            bench.keys, wallet.address, wallet_url, FUNDED_PLAYERS, 16, ("USD", "PLAY")
        )
        servers.funded = asyncio.run(funding)
        servers.wallet_address, servers.wallet_url = wallet.address, wallet_url
        game_env["TAVLA_WALLET_ADDRESS"] = wallet.address
    game_url = bench.new_database("game_bench")
    replicas = args.replicas if args.open_loop else 1
    for index in range(replicas):
        game = bench.start_service(f"game-{index}", "game", game_url, game_env)
        servers.addresses.append(game.address)
        servers.pids.append(game.pid)
        waiting.append(game)
        if index == 0:  # one migrates first; the others find the tables in place
            asyncio.run(bench.wait_serving(game))
    asyncio.run(bench.wait_serving(*waiting))
    return servers


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Run the benchmark; when it started the servers, also their CPU time per call."""
    with ExitStack() as stack:
        servers = (
            Servers([args.address], [], BenchKeys.of_dev_stack())
            if args.address
            else _start_servers(stack, args)
        )
        if args.open_loop:
            result = asyncio.run(
                run_open_loop(
                    servers.addresses,
                    args.games,
                    args.think_ms,
                    args.seconds,
                    keys=servers.keys,
                    wallet_address=servers.wallet_address,
                    funded=servers.funded,
                    server_pids=servers.pids,
                    ramp_seconds=args.ramp_seconds,
                )
            )
            if servers.wallet_url:
                result.update(asyncio.run(settled_by_wallet(servers.wallet_url, result)))
        else:
            pid = servers.pids[0] if servers.pids else None
            result = asyncio.run(
                run_clients(servers.addresses[0], args.games, args.seconds, servers.keys, pid)
            )
    floor = grpc_floor(min(args.games, 64), min(args.seconds, 5.0))
    return {**result, **floor}


def _print_goal(result: dict[str, Any]) -> None:
    if result["mode"] == "open":
        print(
            f"goal: {GOAL_OPEN_GAMES} games at {GOAL_OPEN_THINK_MS} ms of thought, p99 <= "
            f"{GOAL_OPEN_P99_MS} ms, no errors: ran {result['games']} games at "
            f"{result['think_ms']:.0f} ms, p99 {result['p99_ms']} ms, {result['errors']} errors"
        )
    else:
        print(
            f"goal: >= {GOAL_MOVES_PER_S} moves/s at p99 <= {GOAL_P99_MS} ms: "
            f"{result['moves_per_s'] / GOAL_MOVES_PER_S:.2f}x the rate, "
            f"p99 {result['p99_ms'] / GOAL_P99_MS:.2f}x the bound"
        )
    if "server_cpu_ms_per_call" in result:
        print(
            f"server CPU {result['server_cpu_ms_per_call']} ms per call (a bare grpc.aio "
            f"server: {result['grpc_floor_server_cpu_ms_per_call']} ms); "
            f"{1000 / max(result['server_cpu_ms_per_call'], 1e-9):.0f} calls/s on one core"
        )


def _handle(args: argparse.Namespace) -> int:
    result = run(args)
    _print_goal(result)
    print(json.dumps(result))
    return 0 if result["errors"] == 0 else 1


def register_bench(bench_subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``game`` to the ``tavla bench`` command."""
    parser = bench_subparsers.add_parser(
        "game", help="scripted games over gRPC against game-service processes"
    )
    parser.add_argument("--games", type=int, default=16, help="concurrent games (default 16)")
    parser.add_argument("--seconds", type=float, default=20.0, help="duration (default 20)")
    parser.add_argument(
        "--open-loop",
        action="store_true",
        help="players think --think-ms before every call; a quarter of the games in USD",
    )
    parser.add_argument(
        "--think-ms", type=float, default=2000.0, help="open loop: thought per call (default 2000)"
    )
    parser.add_argument(
        "--ramp-seconds",
        type=float,
        default=10.0,
        help="open loop: tables open over this long before the measured window (default 10)",
    )
    parser.add_argument(
        "--replicas",
        type=int,
        default=2,
        help="open loop: game processes taking turns call by call (default 2; 1 = cache hits)",
    )
    parser.add_argument("--address", help="a running game service (host:port); else start one")
    parser.add_argument("--database-url", help="an external PostgreSQL server URL (asyncpg)")
    parser.add_argument("--bootstrap", help="an external Kafka bootstrap address")
    parser.set_defaults(handler=_handle)


__all__ = [
    "decide", "new_game_request", "register_bench", "run_clients", "run_open_loop", "seat_holds",
]
