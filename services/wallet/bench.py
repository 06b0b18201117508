"""``tavla bench wallet``: settlements through the service against pgbench, same server.

The wallet's settlement path (inbox row, hold and account locks, the domain's
posting, transfers, balance updates, settlement record, Settled event
in the outbox, commit) runs from ``--clients`` concurrent clients handing
GameEnded events to the settlement consumer, for ``--seconds``. The events are
built before the clock starts (that is the game service's work). Then, on the
same PostgreSQL server with the same client count, pgbench runs its built-in
tpcb-like script (a bank transfer: three updates, a select, an insert) for the
same time. The last line printed is one JSON object::

    {"settlements_per_s", "pgbench_tps", "ratio", "audit"}

where ``ratio`` = settlements_per_s / pgbench_tps (goal: at least 0.5) and
``audit`` is "ok" when the ledger audit passes afterwards (else the breach
names). Without ``--database-url`` the bench starts its own PostgreSQL.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import multiprocessing
import random
import re
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from aiokafka import AIOKafkaConsumer
from sqlalchemy.ext.asyncio import async_sessionmaker

from services.kit import logging as kit_logging
from services.kit.clock import SystemClock
from services.kit.db import make_engine
from services.kit.devstack.net import free_port
from services.kit.events.envelope import Envelope, ReceivedEvent
from services.kit.migrate import upgrade_async
from services.wallet.audit_cli import audit_database
from services.wallet.consumers import settlement_consumer
from services.wallet.domain.money import Money
from services.wallet.domain.payments import CallbackOutcome, ProviderCallback
from services.wallet.provider import SandboxConfig, SandboxProvider
from services.wallet.service import WalletService
from services.wallet.settlement import Settler
from services.wallet.store.unit_of_work import WalletUnitOfWork
from tavla.common.v1 import money_pb2
from tavla.game.v1 import events_pb2 as game_events
from tavla.game.v1 import game_pb2

if TYPE_CHECKING:
    from multiprocessing.queues import Queue
    from multiprocessing.synchronize import Barrier as BarrierType

    SubParsers = argparse._SubParsersAction[argparse.ArgumentParser]

GOAL_RATIO = 0.5
_TPS = re.compile(r"^tps = ([0-9.]+)", re.MULTILINE)
# Enough money that no random walk of $1-$3 losses ever runs a player dry.
_FUNDS = 100_000_000
# Events built before the clock starts: above any rate seen here, within memory.
_PREBUILT_PER_SECOND = 4_000
_PREBUILT_MAX = 200_000


@dataclass(frozen=True)
class Figures:
    settlements: int
    seconds: float
    pgbench_tps: float
    audit: str

    @property
    def settlements_per_s(self) -> float:
        return self.settlements / self.seconds if self.seconds else 0.0

    def as_json(self) -> dict[str, object]:
        ratio = self.settlements_per_s / self.pgbench_tps if self.pgbench_tps else 0.0
        return {
            "settlements_per_s": round(self.settlements_per_s, 1),
            "pgbench_tps": round(self.pgbench_tps, 1),
            "ratio": round(ratio, 3),
            "audit": self.audit,
        }


def _game_ended(winner: str, loser: str, rng: random.Random) -> ReceivedEvent:
    ended = game_events.GameEnded(
        game_id=str(uuid.uuid4()),
        table_id=str(uuid.uuid4()),
        game_number=1,
        kind=game_pb2.PLAY_KIND_MONEY_GAME,
        winner_account_id=winner,
        loser_account_id=loser,
        result=rng.choice([game_pb2.RESULT_TYPE_SINGLE, game_pb2.RESULT_TYPE_GAMMON]),
        cube_value=1,
        reason=game_pb2.END_REASON_BORNE_OFF,
        stake=money_pb2.Money(minor_units=100, currency="USD"),
        players=[
            game_pb2.Player(account_id=winner, rating=1500.0),
            game_pb2.Player(account_id=loser, rating=1580.0),
        ],
    )
    envelope = Envelope.wrap(
        topic="tavla.game.v1", key=ended.game_id, message=ended, source="bench",
        now=datetime.now(UTC),
    )  # fmt: skip
    return ReceivedEvent(
        envelope.event_id, envelope.ce_type, "bench", envelope.topic, envelope.key,
        envelope.payload, envelope.headers,
    )  # fmt: skip


class _FinishedGames:
    """The GameEnded events the clients hand over, between random pairs of players.

    Building an event is the game service's work, not the wallet's: as many as
    the run is likely to settle are built before the clock starts (then more, on
    demand, should the run outpace that).
    """

    def __init__(self, players: list[str], seconds: float) -> None:
        self._players = players
        self._rng = random.Random(7)
        built = min(_PREBUILT_MAX, int(seconds * _PREBUILT_PER_SECOND))
        self._ready = collections.deque(self._build() for _ in range(built))

    def next(self) -> ReceivedEvent:
        return self._ready.popleft() if self._ready else self._build()

    def _build(self) -> ReceivedEvent:
        winner, loser = self._rng.sample(self._players, 2)
        return _game_ended(winner, loser, self._rng)


async def _fund(service: WalletService, players: list[str], clients: int) -> None:
    """Deposits through the service and the provider's confirmation callback."""

    async def deposit(player: str) -> None:
        view = await service.deposit(
            player_id=player, amount=Money(_FUNDS, "USD"), idempotency_key="bench", method="bench"
        )
        await service.provider_callback(
            ProviderCallback(view.payment.id, CallbackOutcome.CONFIRMED, f"bench-{player}")
        )

    for start in range(0, len(players), clients):
        await asyncio.gather(*(deposit(player) for player in players[start : start + clients]))


async def run_settlements(
    url: str,
    clients: int,
    seconds: float,
    players: int,
    ready: Callable[[], object] | None = None,
) -> tuple[int, float]:
    """Settle random games between ``players`` funded players from ``clients`` clients.

    ``ready`` (blocking) is called once the players are funded, to start every
    process's clients together.
    """
    engine = make_engine(url, pool_size=clients)
    clock = SystemClock()
    sessions = async_sessionmaker(engine, expire_on_commit=False)
    unit_of_work = partial(WalletUnitOfWork, sessions, source="wallet", clock=clock)
    service = WalletService(
        unit_of_work, clock=clock, provider=SandboxProvider(SandboxConfig(), clock)
    )
    ids = [f"bench-{uuid.uuid4().hex[:10]}" for _ in range(players)]
    await _fund(service, ids, clients)
    consumer = settlement_consumer(
        sessions=sessions, consumer_factory=_no_kafka, settler=Settler(clock), clock=clock
    )
    games = _FinishedGames(ids, seconds)
    if ready is not None:
        await asyncio.to_thread(ready)
    settled = 0
    deadline = time.perf_counter() + seconds

    async def client() -> None:
        nonlocal settled
        while time.perf_counter() < deadline:
            if await consumer.handle(games.next()):
                settled += 1

    started = time.perf_counter()
    try:
        await asyncio.gather(*(client() for _ in range(clients)))
    finally:
        elapsed = time.perf_counter() - started
        await engine.dispose()
    return settled, elapsed


def _worker(
    url: str,
    clients: int,
    seconds: float,
    players: int,
    barrier: BarrierType,
    results: Queue[tuple[int, float]],
) -> None:
    """One more wallet process (the service is stateless: replicas share the database)."""
    kit_logging.configure("wallet", "warning")
    results.put(asyncio.run(run_settlements(url, clients, seconds, players, barrier.wait)))


def settle_in_processes(
    url: str, processes: int, clients: int, seconds: float, players: int
) -> tuple[int, float]:
    """``clients`` clients spread over ``processes`` wallet processes; summed figures."""
    asyncio.run(upgrade_async("wallet", url))
    if processes == 1:
        return asyncio.run(run_settlements(url, clients, seconds, players))
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(processes)
    results: Queue[tuple[int, float]] = context.Queue()
    workers = [
        context.Process(
            target=_worker,
            args=(url, share, seconds, max(2, players // processes), barrier, results),
        )
        for share in _shares(clients, processes)
    ]
    for worker in workers:
        worker.start()
    # A worker that died never answers: give up after the run plus funding time.
    outcomes = [results.get(timeout=seconds + 300) for _ in workers]
    for worker in workers:
        worker.join()
    return sum(n for n, _ in outcomes), max(t for _, t in outcomes)


def _shares(total: int, parts: int) -> list[int]:
    return [total // parts + (1 if index < total % parts else 0) for index in range(parts)]


def _no_kafka() -> AIOKafkaConsumer:
    raise RuntimeError("the bench hands events to the consumer directly")


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


def _server(stack: ExitStack, database_url: str | None) -> str:
    if database_url:
        return database_url
    from services.kit.devstack.postgres import PostgresServer
    from services.kit.devstack.supervisor import Supervisor

    run_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="tavla-bench-")))
    supervisor = stack.enter_context(Supervisor(run_dir / "logs"))
    postgres = PostgresServer(run_dir / "postgres", free_port(), supervisor)
    postgres.start()
    return postgres.url()


def run(args: argparse.Namespace) -> Figures:
    from services.kit.devstack.postgres import ensure_database, libpq_url, with_database

    kit_logging.configure("wallet", "warning")  # a log line per settlement would be measured too
    with ExitStack() as stack:
        server = _server(stack, args.database_url)
        suffix = uuid.uuid4().hex[:8]
        wallet_db, pgbench_db = f"wallet_bench_{suffix}", f"pgbench_{suffix}"
        for name in (wallet_db, pgbench_db):
            ensure_database(server, name)
        wallet_url = with_database(server, wallet_db)
        settled, elapsed = settle_in_processes(
            wallet_url, args.processes, args.clients, args.seconds, args.players
        )
        print(
            f"wallet: {settled} settlements in {elapsed:.1f} s "
            f"({args.clients} clients, {args.processes} process(es))",
            file=sys.stderr,
        )
        breaches = asyncio.run(audit_database(wallet_url))
        audit = "ok" if not breaches else ",".join(sorted({b.name for b in breaches}))
        scale = args.pgbench_scale or args.clients
        tps = run_pgbench(
            libpq_url(with_database(server, pgbench_db)), args.clients, args.seconds, scale
        )
        print(f"pgbench tpcb-like: scale {scale}, {tps:.1f} tps", file=sys.stderr)
    return Figures(settled, elapsed, tps, audit)


def _handle(args: argparse.Namespace) -> int:
    figures = run(args)
    result = figures.as_json()
    print(f"goal: ratio >= {GOAL_RATIO}; reached {result['ratio']}")
    print(json.dumps(result))
    return 0 if figures.audit == "ok" else 1


def register_bench(bench_subparsers: SubParsers) -> None:
    """Add ``wallet`` to the ``tavla bench`` command."""
    parser = bench_subparsers.add_parser(
        "wallet", help="settlements through the wallet vs pgbench tpcb-like on the same server"
    )
    parser.add_argument("--seconds", type=float, default=10.0, help="each phase (default 10)")
    parser.add_argument("--clients", type=int, default=32, help="concurrent clients (default 32)")
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
        help="wallet processes sharing the clients (default 1; the service is stateless)",
    )
    parser.add_argument(
        "--pgbench-scale", type=int, default=0, help="pgbench scale (default: the client count)"
    )
    parser.add_argument("--database-url", help="an external PostgreSQL server URL (asyncpg)")
    parser.set_defaults(handler=_handle)
