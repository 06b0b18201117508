"""``tavla bench wallet``: settlements by the running wallet service against pgbench, same server.

The wallet does production's work here, nothing of it in the benchmark's process.
Its processes start as production's do (:mod:`services.kit.benchstack`): their
own service keys from the run dir, an accounts process whose JWKS they verify
players' access tokens with, loopback binds, the sandbox payment provider named.

1. Setup (not timed; the players', the matchmaker's and the game's work). A
   wallet process (``tavla serve wallet``, log level info; the sandbox allowed
   USD, as only this one is) takes each player's ``Deposit`` (called with their
   access token) and the sandbox confirms it. Then, for each of ``--games``
   games, it takes both players' stake holds through ``PlaceHold`` (called as
   matchmaking; stake x 3, the largest loss at cube 1) and raises both through
   ``RaiseHold`` (called as game) to stake x 2 x 3 (a double was taken). Then it
   stops (SIGTERM), and the games' ``GameEnded`` events (cube 2, naming the
   holds, random single, gammon or backgammon) are produced to the broker topic
   ``tavla.game.v1`` keyed by game, with the CloudEvents headers the game's
   outbox relay writes.
2. Settlement (timed). ``--processes`` wallet processes start on that backlog:
   the real settlement consumer fetches, settles in groups, commits its offsets;
   the outbox relay publishes the Settled events. The window opens at the first
   settlement group's timestamp (that group is not counted) and closes
   ``--seconds`` later, or at the last settlement if the backlog ran out first.
   Only rows of ``settlements`` with ``status = 'settled'`` in the window count.
3. pgbench's tpcb-like script on the same PostgreSQL server, ``--clients``
   clients at scale >= clients, for the same time.

The last line printed is one JSON object::

    {"settlements_per_s", "pgbench_tps", "ratio", "audit", "holds", "settled", "rejected"}

``ratio`` = settlements_per_s / pgbench_tps (goal: at least 0.5); ``audit`` is
"ok" when the ledger audit passes afterwards (else the breach names); ``holds``
is true only when every game of the run had both stakes held, raised, before its
GameEnded was produced; ``settled`` and ``rejected`` count the run's settlement
records by status (all of them, not only the window's).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from google.protobuf.timestamp_pb2 import Timestamp
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from services.kit import logging as kit_logging
from services.kit.benchstack import FUNDING_WALLET_ENV, BenchKeys, BenchStack, ServiceProcess
from services.kit.db import make_engine
from services.kit.events.connection import KafkaConnection
from services.kit.events.envelope import Envelope
from services.kit.events.kafka import make_producer
from services.kit.events.signing import EventSigner
from services.kit.migrate import upgrade_async
from services.wallet.audit_cli import audit_database
from services.wallet.consumers import GAME_TOPIC
from tavla.common.v1 import money_pb2
from tavla.game.v1 import events_pb2 as game_events
from tavla.game.v1 import game_pb2
from tavla.wallet.v1 import wallet_pb2, wallet_pb2_grpc

if TYPE_CHECKING:
    SubParsers = argparse._SubParsersAction[argparse.ArgumentParser]

GOAL_RATIO = 0.5
_TPS = re.compile(r"^tps = ([0-9.]+)", re.MULTILINE)
# Enough money that no run of $6 losses ever runs a player dry, in one deposit the
# default money bounds accept in every currency (10,000.00: PLAY's maximum).
_FUNDS = 1_000_000
STAKE = 100  # minor units, USD
CUBE = 2  # every game had a double taken
PLACED = STAKE * 3  # the largest loss at cube 1: what a player's seat holds
RAISED = STAKE * CUBE * 3  # the largest loss at cube 2: the hold after the take
_RESULTS = (
    game_pb2.RESULT_TYPE_SINGLE,
    game_pb2.RESULT_TYPE_GAMMON,
    game_pb2.RESULT_TYPE_BACKGAMMON,
)


@dataclass(frozen=True)
class Game:
    """One finished game of the run: its players (winner first) and their holds."""

    game_id: str
    table_id: str
    winner: str
    loser: str
    winner_hold: str
    loser_hold: str
    result: int


@dataclass(frozen=True)
class Window:
    settled_in_window: int
    seconds: float
    settled: int
    rejected: int


@dataclass(frozen=True)
class Figures:
    window: Window
    pgbench_tps: float
    audit: str
    holds: bool

    @property
    def settlements_per_s(self) -> float:
        w = self.window
        return w.settled_in_window / w.seconds if w.seconds > 0 else 0.0

    def as_json(self) -> dict[str, object]:
        ratio = self.settlements_per_s / self.pgbench_tps if self.pgbench_tps else 0.0
        return {
            "settlements_per_s": round(self.settlements_per_s, 1),
            "pgbench_tps": round(self.pgbench_tps, 1),
            "ratio": round(ratio, 3),
            "audit": self.audit,
            "holds": self.holds,
            "settled": self.window.settled,
            "rejected": self.window.rejected,
        }


# ------------------------------------------------------------------ setup (not timed)


async def fund_players(
    keys: BenchKeys,
    address: str,
    url: str,
    players: int,
    clients: int,
    currencies: Sequence[str] = ("USD",),
) -> list[str]:
    """Each player deposits through the wallet process's ``Deposit`` (their access token)
    and the sandbox provider confirms it; returns the player ids once all are confirmed.

    The wallet at ``address`` must run the sandbox with real currencies allowed
    (:data:`FUNDING_WALLET_ENV`) when ``currencies`` names any.
    """
    ids = [f"bench-{uuid.uuid4().hex[:10]}" for _ in range(players)]
    as_player = keys.players()
    queue = iter(ids)
    # Players' calls; the channel's service token is not what admits them (their token is).
    async with keys.channel(address, target="wallet", caller="matchmaking") as channel:
        stub = wallet_pb2_grpc.WalletServiceStub(channel)

        async def worker() -> None:
            for player in queue:
                for currency in currencies:
                    await stub.Deposit(
                        wallet_pb2.DepositRequest(
                            amount=money_pb2.Money(minor_units=_FUNDS, currency=currency),
                            idempotency_key=f"bench-{currency}",
                            payment_method="sandbox",
                        ),
                        metadata=as_player(player),
                    )

        await asyncio.gather(*(worker() for _ in range(clients)))
    await _confirmed(url, ids, len(currencies))
    return ids


_DEPOSITS = text(
    "SELECT count(*) FILTER (WHERE status = 'confirmed'), count(*) FILTER (WHERE status = "
    "'failed') FROM payments WHERE kind = 'deposit' AND player_id = ANY(:ids)"
)


async def _confirmed(url: str, ids: list[str], per_player: int, within: float = 120.0) -> None:
    """Until the provider confirmed every deposit (the wallet's poller applies them)."""
    engine = make_engine(url, pool_size=1)
    give_up = time.monotonic() + within
    try:
        while True:
            async with engine.connect() as connection:
                confirmed, failed = (await connection.execute(_DEPOSITS, {"ids": ids})).one()
            if failed:
                raise RuntimeError(f"{failed} bench deposits failed at the sandbox provider")
            if confirmed >= per_player * len(ids):
                return
            if time.monotonic() > give_up:
                raise TimeoutError(
                    f"{confirmed} of {per_player * len(ids)} deposits confirmed after {within:.0f}s"
                )
            await asyncio.sleep(0.2)
    finally:
        await engine.dispose()


def plan_games(players: Sequence[str], count: int, run_id: str, seed: int = 7) -> list[Game]:
    """``count`` games between random pairs of ``players``, tables named for the run."""
    rng = random.Random(seed)
    games = []
    for index in range(count):
        winner, loser = rng.sample(list(players), 2)
        games.append(
            Game(
                game_id=str(uuid.uuid4()),
                table_id=f"bench-{run_id}-{index}",
                winner=winner,
                loser=loser,
                winner_hold="",
                loser_hold="",
                result=rng.choice(_RESULTS),
            )
        )
    return games


async def hold_stakes(matchmaker: Any, game_service: Any, game: Game) -> Game:
    """What the matchmaker and the game do before a game ends: place both stakes, raise them.

    ``matchmaker`` and ``game_service`` are wallet stubs calling as those services
    (``PlaceHold`` is the matchmaker's, ``RaiseHold`` the game's when a double is
    taken). The one place the benchmark holds stakes (``tavla bench game`` places
    its own real-money games' holds the same way through :func:`place_seat_hold`).
    """
    winner_hold, loser_hold = await asyncio.gather(
        place_seat_hold(matchmaker, game.winner, PLACED, game.table_id, game.game_id),
        place_seat_hold(matchmaker, game.loser, PLACED, game.table_id, game.game_id),
    )
    for hold_id in (winner_hold, loser_hold):
        await game_service.RaiseHold(
            wallet_pb2.RaiseHoldRequest(
                hold_id=hold_id,
                new_amount=money_pb2.Money(minor_units=RAISED, currency="USD"),
                game_id=game.game_id,
                idempotency_key=f"{game.game_id}:raise:{hold_id}",
            )
        )
    return Game(
        game.game_id, game.table_id, game.winner, game.loser, winner_hold, loser_hold, game.result
    )


async def place_seat_hold(
    stub: Any,
    account_id: str,
    minor_units: int,
    table_id: str,
    game_id: str = "",
    currency: str = "USD",
) -> str:
    """One seat's stake hold through the wallet's ``PlaceHold``: its hold id."""
    hold = await stub.PlaceHold(
        wallet_pb2.PlaceHoldRequest(
            account_id=account_id,
            amount=money_pb2.Money(minor_units=minor_units, currency=currency),
            table_id=table_id,
            game_id=game_id,
            idempotency_key=f"seat:{table_id}:{account_id}",
        )
    )
    hold_id: str = hold.hold_id
    return hold_id


async def hold_all(keys: BenchKeys, address: str, games: list[Game], clients: int) -> list[Game]:
    """Every game's holds, ``clients`` games at a time, through the wallet's gRPC API
    (as matchmaking and as game, with their service tokens)."""
    held: list[Game] = []
    queue = iter(games)
    matchmaking = keys.channel(address, target="wallet", caller="matchmaking")
    game_service = keys.channel(address, target="wallet", caller="game")
    async with matchmaking, game_service:
        matchmaker = wallet_pb2_grpc.WalletServiceStub(matchmaking)
        raiser = wallet_pb2_grpc.WalletServiceStub(game_service)

        async def worker() -> None:
            for game in queue:
                held.append(await hold_stakes(matchmaker, raiser, game))

        await asyncio.gather(*(worker() for _ in range(clients)))
    return held


def game_ended(game: Game, now: datetime) -> game_events.GameEnded:
    occurred = Timestamp()
    occurred.FromDatetime(now)
    return game_events.GameEnded(
        game_id=game.game_id,
        table_id=game.table_id,
        game_number=1,
        kind=game_pb2.PLAY_KIND_MONEY_GAME,
        winner_account_id=game.winner,
        loser_account_id=game.loser,
        result=game.result,  # type: ignore[arg-type]
        cube_value=CUBE,
        reason=game_pb2.END_REASON_BORNE_OFF,
        stake=money_pb2.Money(minor_units=STAKE, currency="USD"),
        players=[
            game_pb2.Player(account_id=game.winner, rating=1500.0, hold_id=game.winner_hold),
            game_pb2.Player(account_id=game.loser, rating=1580.0, hold_id=game.loser_hold),
        ],
        occurred_at=occurred,
    )


async def produce_results(bootstrap: str, games: list[Game], signer: EventSigner) -> None:
    """The games' GameEnded events on ``tavla.game.v1``, as the game's outbox relay sends them
    (signed with the game's key: the wallet parks any other)."""
    producer = make_producer(KafkaConnection(bootstrap), service="game", idempotence=False)
    await producer.start()
    try:
        now = datetime.now(UTC)
        sends = []
        for game in games:
            envelope = Envelope.wrap(
                topic=GAME_TOPIC, key=game.game_id, message=game_ended(game, now),
                source="game", now=now,
            )  # fmt: skip
            sends.append(
                await producer.send(
                    GAME_TOPIC,
                    value=envelope.payload,
                    key=game.game_id.encode(),
                    headers=envelope.kafka_headers(signer),
                )
            )
        await asyncio.gather(*sends)  # every event acknowledged by the broker
    finally:
        await producer.stop()


# ------------------------------------------------------------------ settlement (timed)

_PROGRESS = text("SELECT count(*), min(settled_at) FROM settlements WHERE table_id LIKE :tables")
_WINDOW = text(
    """
    SELECT
        count(*) FILTER (WHERE status = 'settled' AND settled_at > :start AND settled_at <= :end),
        count(*) FILTER (WHERE status = 'settled'),
        count(*) FILTER (WHERE status <> 'settled'),
        max(settled_at)
    FROM settlements WHERE table_id LIKE :tables
    """
)


async def measure(url: str, run_id: str, games: int, seconds: float, startup: float) -> Window:
    """Wait until the run's games are settled or the window closed; the window's figures."""
    engine = make_engine(url, pool_size=1)
    tables = f"bench-{run_id}-%"
    try:
        first = await _wait(engine, tables, games, seconds, startup)
        async with engine.connect() as connection:
            row = (
                await connection.execute(
                    _WINDOW,
                    {"tables": tables, "start": first, "end": first + timedelta(seconds=seconds)},
                )
            ).one()
    finally:
        await engine.dispose()
    in_window, settled, rejected, last = row
    span = window_span(first, last, seconds, int(settled) + int(rejected), games)
    if span < seconds:
        print(
            f"the backlog of {games} games ran out {span:.1f} s into the {seconds:.0f} s "
            "window: the rate is over that span (raise --games for a full window)",
            file=sys.stderr,
        )
    return Window(int(in_window), span, int(settled), int(rejected))


def window_span(
    first: datetime, last: datetime | None, seconds: float, recorded: int, games: int
) -> float:
    """How long the window lasted: all of it while games were left to settle, else up to
    the last settlement (the backlog ran out). A window that closes while the process is
    between two settlements (fetching, pricing the next batch) is no shorter for it: the
    pause is part of the rate."""
    if last is None:
        return 0.0
    if recorded < games:
        return seconds
    return min(seconds, (last - first).total_seconds())


async def _wait(
    engine: AsyncEngine, tables: str, games: int, seconds: float, startup: float
) -> datetime:
    """The first settlement's timestamp, once the window after it has passed (or all settled)."""
    give_up = time.monotonic() + startup
    while True:
        async with engine.connect() as connection:
            done, first = (await connection.execute(_PROGRESS, {"tables": tables})).one()
        if first is not None:
            closes = first.timestamp() + seconds + 0.5  # settled_at is this machine's clock
            if done >= games or time.time() > closes:
                return first  # type: ignore[no-any-return]
        elif time.monotonic() > give_up:
            raise TimeoutError(f"no game was settled {startup:.0f} s after the wallet started")
        await asyncio.sleep(0.25)


_HELD = text(
    """
    SELECT count(*) FROM holds
    WHERE id = ANY(:ids) AND table_id LIKE :tables AND amount = :raised
        AND game_id IS NOT NULL AND status = 'open'
    """
)


async def every_game_held(url: str, games: list[Game], run_id: str) -> bool:
    """True when both holds of every game exist, open and raised (checked before settling)."""
    ids = [hold for game in games for hold in (game.winner_hold, game.loser_hold) if hold]
    if len(ids) != 2 * len(games) or len(set(ids)) != len(ids):
        return False
    engine = make_engine(url, pool_size=1)
    try:
        async with engine.connect() as connection:
            found = await connection.scalar(
                _HELD,
                {"ids": ids, "tables": f"bench-{run_id}-%", "raised": RAISED},
            )
    finally:
        await engine.dispose()
    return bool(found == len(ids))


# ------------------------------------------------------------------ pgbench and the run


def run_pgbench(dsn: str, clients: int, seconds: float, scale: int) -> float:
    """pgbench's tpcb-like script on ``dsn``: returns its transactions per second."""
    from services.kit.devstack.postgres import binary

    init = [binary("pgbench"), "-i", "-q", "-s", str(scale), dsn]
    subprocess.run(init, check=True, capture_output=True, text=True, timeout=600)
    run = [
        binary("pgbench"), "-b", "tpcb-like", "-c", str(clients), "-j", "2",
        "-T", str(max(1, round(seconds))), "-n", dsn,
    ]  # fmt: skip
    result = subprocess.run(run, check=True, capture_output=True, text=True, timeout=seconds + 600)
    match = _TPS.search(result.stdout)
    if match is None:
        raise RuntimeError(f"pgbench printed no tps line:\n{result.stdout}\n{result.stderr}")
    return float(match.group(1))


def _settle(
    bench: BenchStack, url: str, run_id: str, games: int, args: argparse.Namespace
) -> Window:
    started = time.monotonic()
    processes: list[ServiceProcess] = [
        bench.start_service(f"wallet-{index}", "wallet", url) for index in range(args.processes)
    ]
    try:
        window = asyncio.run(measure(url, run_id, games, args.seconds, startup=180.0))
    except TimeoutError:
        print(bench.log_tail(processes[0]), file=sys.stderr)
        raise
    print(
        f"wallet: {window.settled_in_window} settled in a {window.seconds:.1f} s window "
        f"({args.processes} process(es); {time.monotonic() - started:.0f} s from their start "
        f"to the window's end; logs in {bench.run_dir / 'logs'})",
        file=sys.stderr,
    )
    for process in processes:
        bench.stop_service(process)
    return window


def run(args: argparse.Namespace) -> Figures:
    from services.kit.devstack.postgres import libpq_url

    kit_logging.configure("bench", "warning")  # the benchmark's own process; services log at info
    scale = args.pgbench_scale or args.clients
    if scale < args.clients:
        raise SystemExit(f"--pgbench-scale {scale} is below --clients {args.clients}: pgbench "
                         "would measure its own branch-row contention, not the server")  # fmt: skip
    with ExitStack() as stack:
        bench = BenchStack(stack, database_url=args.database_url, bootstrap=args.bootstrap)
        wallet_url = bench.new_database("wallet_bench")
        asyncio.run(upgrade_async("wallet", wallet_url))
        run_id = uuid.uuid4().hex[:8]
        setup = bench.start_service("wallet-setup", "wallet", wallet_url, FUNDING_WALLET_ENV)
        asyncio.run(bench.wait_serving(setup))
        players = asyncio.run(
            fund_players(bench.keys, setup.address, wallet_url, args.players, args.clients)
        )
        planned = plan_games(players, args.games, run_id)
        held = asyncio.run(hold_all(bench.keys, setup.address, planned, args.clients))
        bench.stop_service(setup)
        # Checked now, while nothing settles: every game's holds are in place before its end.
        holds = asyncio.run(every_game_held(wallet_url, held, run_id))
        asyncio.run(produce_results(bench.bootstrap, held, bench.keys.event_signer("game")))
        print(f"setup: {len(held)} games' holds placed and raised, results produced",
              file=sys.stderr)  # fmt: skip
        window = _settle(bench, wallet_url, run_id, len(held), args)
        breaches = asyncio.run(audit_database(wallet_url))
        audit = "ok" if not breaches else ",".join(sorted({b.name for b in breaches}))
        pgbench_url = bench.new_database("pgbench")
        tps = run_pgbench(libpq_url(pgbench_url), args.clients, args.seconds, scale)
        print(f"pgbench tpcb-like: scale {scale}, {args.clients} clients, {tps:.1f} tps",
              file=sys.stderr)  # fmt: skip
    return Figures(window, tps, audit, holds)


def _handle(args: argparse.Namespace) -> int:
    figures = run(args)
    result = figures.as_json()
    print(f"goal: ratio >= {GOAL_RATIO}; reached {result['ratio']}")
    print(json.dumps(result))
    honest = figures.audit == "ok" and figures.holds and figures.window.rejected == 0
    return 0 if honest else 1


def register_bench(bench_subparsers: SubParsers) -> None:
    """Add ``wallet`` to the ``tavla bench`` command."""
    parser = bench_subparsers.add_parser(
        "wallet", help="settlements by the wallet service vs pgbench tpcb-like on the same server"
    )
    parser.add_argument(
        "--seconds", type=float, default=10.0, help="the settlement window and pgbench's run"
    )
    parser.add_argument(
        "--games",
        type=int,
        default=20_000,
        help="finished games in the backlog (default 20000: more than a 10 s window settles)",
    )
    parser.add_argument(
        "--clients",
        type=int,
        default=32,
        help="pgbench clients, also the setup's concurrency (default 32)",
    )
    parser.add_argument(
        "--players",
        type=int,
        default=1024,
        help="funded players, two picked at random per game (default 1024)",
    )
    parser.add_argument(
        "--processes",
        type=int,
        default=1,
        help="wallet processes in the settlement consumer group (default 1)",
    )
    parser.add_argument(
        "--pgbench-scale", type=int, default=0, help="pgbench scale, >= clients (default: clients)"
    )
    parser.add_argument("--database-url", help="an external PostgreSQL server URL (asyncpg)")
    parser.add_argument("--bootstrap", help="an external Kafka bootstrap address")
    parser.set_defaults(handler=_handle)
