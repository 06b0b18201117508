"""``tavla bench antiabuse``: events per second through the real anti-abuse consumer on
production's mix, against the game service's event rate in the same run, and the time
from an abuser's completing event to its alert.

It starts PostgreSQL, the broker, accounts, geo, a wallet (the sandbox, funding
players) and a game process (:mod:`services.kit.benchstack`), then:

1. **Load.** ``tavla bench game``'s open loop plays ``--games`` concurrent money
   games (a quarter in dollars, their stakes held and then settled by the wallet)
   for ``--seconds``. Anti-abuse is not running yet: what it will read piles up.
   The game service's event rate is the records it put on ``tavla.game.v1`` over
   the phase (ramp included) divided by its length.
2. **The rest of the mix.** :mod:`.bench_mix`'s events go on the topics, signed
   by their producers' keys: ``--nat-accounts`` accounts registering and logging in
   on one shared /64, and ``--chat-per-game`` lines of table chat per finished game.
   The multi-accounting alerts naming one of those accounts are counted at the end
   (weak links alone: none expected).
3. **Drain, in production's order.** ``tavla serve antiabuse`` starts with its group
   at the beginning of every topic it reads. From its first fetch (its
   ``tavla_consumer_lag`` appears on ``/metrics``) until its group has committed past a
   marker record put at the end of every partition of those topics. It is stopped;
   ``tavla serve analysis`` analyses every game the load finished, as deployed (it
   reads the game's ends, fetches each record from the game service and publishes
   ``MatchAnalysed``), and is stopped once its group has committed past the load;
   anti-abuse starts again and drains the analyses the same way. So every login and
   game is applied before the analyses of the games, as in production (logins before
   the games they play, analyses after them): one consumer over every topic at once
   applied a player's analysis before or after the sightings that link the player by
   chance, and consulting's work varied 50-fold between runs. The consumer's rate is
   the records it went through divided by the two drains' time (each printed). The
   backlog metric is scraped throughout; its peak is printed.
4. **Live.** With anti-abuse caught up and running, a second load of
   ``--live-seconds`` plays while ``--planted`` abusers (harassers, pairs sharing a
   device) and more chat are published over the same time; each abuser's alert is
   read off ``tavla.compliance.alerts.v1``: the time from its completing event's
   sending to the alert's record (p50, p99, max; an abuser never alerted is counted
   as missing).

The records are counted by markers' offsets: the consumer's from 0 (a new group
reads every record of its topics, an earlier run's too), the game's between a
marker put before the load and one after it; the local broker's ListOffsets
answers short of the last batch, so nothing here asks it for end offsets. The
ratio consumer / game above 1 means anti-abuse keeps up with the game's whole
event rate (every event of a game, moves included, goes through its consumer,
which skips what it has no use for without a transaction). Events the consumer
parked (failed) are counted from its ``parked_events`` table and printed. The last
line is one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
import uuid
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import httpx
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from sqlalchemy import func, select

from services.antiabuse import bench_mix
from services.antiabuse.consumers import FACTS_GROUP, TOPICS
from services.game import bench as game_bench
from services.geo.devdata import malta_address
from services.kit.benchstack import (
    BENCH_RESIDENCE,
    FUNDING_WALLET_ENV,
    BenchKeys,
    BenchStack,
    PlayerMetadata,
    ServiceProcess,
    percentile,
)
from services.kit.client_signals import CLIENT_ADDRESS_HEADER
from services.kit.db import make_engine
from services.kit.devstack.net import free_port
from services.kit.events.envelope import Envelope
from services.kit.events.tables import parked_event_row
from tavla.common.v1 import money_pb2

GAME_TOPIC = "tavla.game.v1"
FUNDED_PLAYERS = 64  # the dollar games' players (two per table, drawn at random)
ANALYSIS_GROUP = "analysis.matches"  # the analysis service's consumer of game ends
ANALYSIS_TOPIC = "tavla.analysis.v1"


@dataclass
class StrangersKeys(BenchKeys):
    """Players who are strangers: each calls from a Malta /64 of its own, the same one
    at every service.

    ``BenchKeys`` gives every player one Malta address, which links them all here (an
    exact shared address, medium evidence): one component of every player, the
    multi-accounting detector's worst case rather than a site's day. The homes are the
    keys' own, not each ``players()`` call's: the wallet's funding and the game's load
    each make a call, and homes numbered per call in the order of its first requests
    gave one player's address at the wallet to another at the game, which linked most
    players to each other through third accounts.
    """

    homes: dict[str, str] = field(default_factory=dict)

    def players(self, residence: str = BENCH_RESIDENCE) -> PlayerMetadata:
        same_address = super().players(residence)
        homes = self.homes

        def metadata(account: str) -> list[tuple[str, str]]:
            home = homes.setdefault(account, malta_address(len(homes) % 0xFFFF + 1))
            return [(name, home if name == CLIENT_ADDRESS_HEADER else value)
                    for name, value in same_address(account)]

        return metadata


async def mark_ends(bootstrap: str, topics: list[str]) -> dict[TopicPartition, int]:
    """A marker record at the end of every partition of ``topics``: its offset each.

    The marker is a ``Money`` message, a type no consumer handles (skipped unapplied).
    """
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    marks: dict[TopicPartition, int] = {}
    try:
        for topic in topics:
            for partition in sorted(await producer.partitions_for(topic)):
                envelope = Envelope.wrap(
                    topic=topic, key=f"bench-mark-{uuid.uuid4().hex[:8]}",
                    message=money_pb2.Money(), source="bench", now=datetime.now(UTC),
                )  # fmt: skip
                sent = await producer.send_and_wait(
                    topic, envelope.payload, key=envelope.key.encode(),
                    headers=envelope.kafka_headers(), partition=partition,
                )  # fmt: skip
                marks[TopicPartition(topic, partition)] = sent.offset
    finally:
        await producer.stop()
    return marks


async def committed_past(bootstrap: str, group: str, marks: dict[TopicPartition, int]) -> bool:
    """The group committed offsets past every marker (asked without joining the group)."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group,
                                enable_auto_commit=False)
    await consumer.start()
    try:
        consumer.assign(list(marks))
        for partition, offset in marks.items():
            committed = await consumer.committed(partition)
            if committed is None or committed <= offset:
                return False
        return True
    finally:
        await consumer.stop()


async def scrape_lag(url: str) -> float | None:
    """The anti-abuse facts consumer's backlog on ``/metrics`` (None before its first fetch)."""
    try:
        async with httpx.AsyncClient(timeout=2) as client:
            text = (await client.get(url)).text
    except httpx.TransportError:
        return None
    found = [float(line.rpartition(" ")[2]) for line in text.splitlines()
             if line.startswith("tavla_consumer_lag{") and f'consumer="{FACTS_GROUP}"' in line]
    return sum(found) if found else None


async def drain(bootstrap: str, metrics_url: str, marks: dict[TopicPartition, int],
                within: float) -> dict[str, float]:
    """Seconds from the consumer's first fetch until it committed past ``marks``; peak lag."""
    deadline = time.monotonic() + within
    first_fetch: float | None = None
    peak = 0.0
    while time.monotonic() < deadline:
        lag = await scrape_lag(metrics_url)
        if lag is not None:
            first_fetch = first_fetch or time.monotonic()
            peak = max(peak, lag)
            if await committed_past(bootstrap, FACTS_GROUP, marks):
                return {"drain_seconds": time.monotonic() - first_fetch, "peak_lag": peak}
        await asyncio.sleep(0.2)
    raise TimeoutError(f"anti-abuse did not drain its backlog within {within:.0f}s")


async def parked_events(database_url: str) -> int:
    """Events the anti-abuse consumer parked (failed for good, or refused)."""
    engine = make_engine(database_url, pool_size=1)
    try:
        async with engine.connect() as connection:
            count = await connection.scalar(
                select(func.count()).select_from(parked_event_row)
                .where(parked_event_row.c.consumer == FACTS_GROUP)
            )  # fmt: skip
    finally:
        await engine.dispose()
    return int(count or 0)


def analyse_load(bench: BenchStack, game: ServiceProcess, within: float) -> float:
    """The real analysis service analyses every game the load finished: its seconds."""
    started = time.monotonic()
    analysis = bench.start_service("analysis", "analysis", bench.new_database("analysis_bench"),
                                   {"TAVLA_GAME_ADDRESS": game.address})  # fmt: skip
    asyncio.run(bench.wait_serving(analysis))
    marks = asyncio.run(mark_ends(bench.bootstrap, [GAME_TOPIC]))
    deadline = time.monotonic() + within
    while not asyncio.run(committed_past(bench.bootstrap, ANALYSIS_GROUP, marks)):
        if time.monotonic() > deadline:
            raise TimeoutError(f"analysis did not analyse the load within {within:.0f}s")
        time.sleep(1.0)
    time.sleep(2.0)  # its outbox publishes what the last analyses committed
    bench.stop_service(analysis)
    return time.monotonic() - started


async def live(bench: BenchStack, args: argparse.Namespace, game: ServiceProcess,
               wallet: ServiceProcess, keys: BenchKeys, funded: list[str],
               mix: bench_mix.Mix, metrics_url: str) -> dict[str, Any]:
    """A second load with anti-abuse running, the planted abusers published meanwhile."""
    peak = 0.0

    async def watch() -> None:
        nonlocal peak
        while True:
            peak = max(peak, await scrape_lag(metrics_url) or 0.0)
            await asyncio.sleep(0.5)

    watcher = asyncio.create_task(watch())
    async with bench_mix.Publisher(bench.bootstrap, keys) as publisher:
        load, _ = await asyncio.gather(
            game_bench.run_open_loop(
                [game.address], args.games, args.think_ms, args.live_seconds, keys=keys,
                wallet_address=wallet.address, funded=funded, server_pids=[game.pid],
                ramp_seconds=args.ramp_seconds,
            ),
            publisher.paced(mix, args.live_seconds),
        )  # fmt: skip
    await bench_mix.await_alerts(bench.bootstrap, mix.planted, args.alert_timeout)
    watcher.cancel()
    waits = bench_mix.latencies(mix.planted)
    return {
        "alert_p50_s": round(percentile(waits, 0.5), 2) if waits else None,
        "alert_p99_s": round(percentile(waits, 0.99), 2) if waits else None,
        "alert_max_s": round(waits[-1], 2) if waits else None,
        "alerts_timed": len(waits), "alerts_missing": len(mix.planted) - len(waits),
        "live_peak_lag": peak, "live_errors": load["errors"],
        "live_first_error": load["first_error"],
    }  # fmt: skip


def start_antiabuse(bench: BenchStack, url: str) -> tuple[ServiceProcess, str]:
    """``tavla serve antiabuse`` on ``url`` with a metrics port of its own: the process
    and its metrics address."""
    port = free_port()
    process = bench.start_service("antiabuse", "antiabuse", url,
                                  {"TAVLA_METRICS_PORT": str(port)})  # fmt: skip
    return process, f"http://127.0.0.1:{port}/metrics"


def run(args: argparse.Namespace) -> dict[str, Any]:
    with ExitStack() as stack:
        bench = BenchStack(stack, database_url=args.database_url, bootstrap=args.bootstrap)
        from services.wallet.bench import fund_players

        wallet_url = bench.new_database("wallet_bench")
        wallet = bench.start_service("wallet", "wallet", wallet_url, FUNDING_WALLET_ENV)
        asyncio.run(bench.wait_serving(wallet))
        # The bench's own gateway map: a player's call reaches each process through its
        # gateway port, the only hop a service believes a client address from.
        keys = StrangersKeys(bench.run_dir, gateway_addresses=bench.keys.gateway_addresses)
        funded = asyncio.run(fund_players(keys, wallet.address, wallet_url,
                                          FUNDED_PLAYERS, 8, ("USD", "PLAY")))
        game = bench.start_service("game", "game", bench.new_database("game_bench"),
                                   {"TAVLA_WALLET_ADDRESS": wallet.address})
        asyncio.run(bench.wait_serving(game))
        # Markers before and after the load: the game's records in between (the broker
        # may be shared and hold earlier runs' records; the consumer reads them all).
        before = asyncio.run(mark_ends(bench.bootstrap, [GAME_TOPIC]))
        started = time.monotonic()
        load = asyncio.run(game_bench.run_open_loop(
            [game.address], args.games, args.think_ms, args.seconds, keys=keys,
            wallet_address=wallet.address, funded=funded, server_pids=[game.pid],
            ramp_seconds=args.ramp_seconds,
        ))
        loaded = time.monotonic() - started
        print(f"load: {load['games_finished']} games finished in {loaded:.0f}s, "
              f"{load['errors']} errors", flush=True)
        time.sleep(2.0)  # the outboxes publish what the last calls committed
        game_marks = asyncio.run(mark_ends(bench.bootstrap, [GAME_TOPIC]))
        game_records = sum(game_marks[p] - before[p] - 1 for p in before)
        chat_lines = round(args.chat_per_game * load["games_finished"])
        backlog_mix, live_mix = bench_mix.build(
            args.nat_accounts, chat_lines, round(chat_lines * args.live_seconds / args.seconds),
            args.planted, int(time.time()),
        )  # fmt: skip

        async def publish_backlog() -> None:
            async with bench_mix.Publisher(bench.bootstrap, keys) as publisher:
                await publisher.send(backlog_mix.background)

        asyncio.run(publish_backlog())
        antiabuse_url = bench.new_database("antiabuse_bench")
        # Production's order: the logins and the games before their analyses. The load's
        # and the mix's events are drained first, the analyses after (one consumer over
        # every topic at once would apply a player's MatchAnalysed before or after the
        # sightings that link the player, by chance: consulting's work varied 50-fold).
        marks = asyncio.run(mark_ends(bench.bootstrap, list(TOPICS)))
        records = sum(marks.values())  # offsets from 0: the records before each marker
        print(f"drain: {records} records on anti-abuse's topics, {game_records} of them "
              "the game's; tavla serve antiabuse started", flush=True)
        antiabuse, metrics_url = start_antiabuse(bench, antiabuse_url)
        events = asyncio.run(drain(bench.bootstrap, metrics_url, marks, args.timeout))
        bench.stop_service(antiabuse)
        analysed = analyse_load(bench, game, args.timeout)
        print(f"analysis: the load's games analysed in {analysed:.0f}s", flush=True)
        later = asyncio.run(mark_ends(bench.bootstrap, list(TOPICS)))
        analyses = sum(later[p] - marks[p] - 1 for p in marks)
        antiabuse, metrics_url = start_antiabuse(bench, antiabuse_url)
        print(f"drain: {analyses} more records (the analyses); tavla serve antiabuse "
              "started again", flush=True)
        analysed_drain = asyncio.run(drain(bench.bootstrap, metrics_url, later, args.timeout))
        records += analyses
        drained = {"drain_seconds": events["drain_seconds"] + analysed_drain["drain_seconds"],
                   "peak_lag": max(events["peak_lag"], analysed_drain["peak_lag"])}
        print(f"live: {args.live_seconds:.0f}s of load with {args.planted} abusers planted",
              flush=True)
        timed = asyncio.run(live(bench, args, game, wallet, keys, funded, live_mix,
                                 metrics_url))  # fmt: skip
        parked = asyncio.run(parked_events(antiabuse_url))
        # The shared network is weak links only: it must raise no multi-accounting alert.
        alert_marks = asyncio.run(mark_ends(bench.bootstrap, [bench_mix.ALERTS_TOPIC]))
        network_alerts = asyncio.run(bench_mix.alerts_naming(
            bench.bootstrap, backlog_mix.shared_network, "multi_accounting", alert_marks))
        bench.stop_service(antiabuse)
    game_rate = game_records / loaded
    consumer_rate = records / drained["drain_seconds"]
    return {
        "consumer_events_per_s": round(consumer_rate, 1),
        "game_events_per_s": round(game_rate, 1),
        "ratio": round(consumer_rate / game_rate, 2) if game_rate else None,
        "records": records, "game_records": game_records,
        "analysed_records": sum(later[p] - 1 for p in later if p.topic == ANALYSIS_TOPIC),
        "analyses_drain_seconds": round(analysed_drain["drain_seconds"], 1),
        "nat_accounts": args.nat_accounts, "nat_multi_accounting_alerts": network_alerts,
        "chat_lines": chat_lines,
        "load_seconds": round(loaded, 1), "drain_seconds": round(drained["drain_seconds"], 1),
        "peak_lag": drained["peak_lag"], "games": args.games, "think_ms": args.think_ms,
        "games_finished": load["games_finished"], "errors": load["errors"],
        "first_error": load["first_error"], "parked": parked, **timed,
    }  # fmt: skip


def _handle(args: argparse.Namespace) -> int:
    result = run(args)
    print(f"game service: {result['game_events_per_s']} events/s on {GAME_TOPIC} "
          f"({result['game_records']} in {result['load_seconds']} s, {args.games} games)")
    print(f"anti-abuse consumer: {result['consumer_events_per_s']} events/s "
          f"({result['records']} records of its {len(TOPICS)} topics in "
          f"{result['drain_seconds']} s; peak backlog {result['peak_lag']:.0f}; "
          f"{result['parked']} parked)")
    print(f"of which the analyses: {result['analysed_records']} records in "
          f"{result['analyses_drain_seconds']} s")
    print(f"ratio consumer / game: {result['ratio']} (goal: at least 2)")
    print(f"multi-accounting alerts naming the {args.nat_accounts} accounts of the shared "
          f"/64: {result['nat_multi_accounting_alerts']} (weak links alone raise none)")
    print(f"completing event to alert: p50 {result['alert_p50_s']} s, p99 "
          f"{result['alert_p99_s']} s, max {result['alert_max_s']} s over "
          f"{result['alerts_timed']} abusers, {result['alerts_missing']} never alerted "
          f"(goal: p99 at most 5 s); live backlog peak {result['live_peak_lag']:.0f}")
    print(json.dumps(result))
    failed = result["errors"] or result["live_errors"] or result["parked"]
    return 1 if failed else 0


def register_bench(bench_subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``antiabuse`` to the ``tavla bench`` command."""
    parser = bench_subparsers.add_parser(
        "antiabuse", help="anti-abuse consumer events/s on production's mix against the "
        "game's event rate, and its alerts' latency"
    )
    parser.add_argument("--games", type=int, default=32, help="concurrent games (default 32)")
    parser.add_argument("--think-ms", type=float, default=20.0,
                        help="each player's pause before a call (default 20)")
    parser.add_argument("--seconds", type=float, default=30.0, help="load phase (default 30)")
    parser.add_argument("--ramp-seconds", type=float, default=2.0)
    parser.add_argument("--nat-accounts", type=int, default=1000,
                        help="accounts on one shared /64 (default 1000)")
    parser.add_argument("--chat-per-game", type=float, default=4.0,
                        help="table chat lines per finished game (default 4)")
    parser.add_argument("--planted", type=int, default=40,
                        help="abusers whose alerts are timed in the live phase (default 40)")
    parser.add_argument("--live-seconds", type=float, default=20.0,
                        help="live phase (default 20)")
    parser.add_argument("--alert-timeout", type=float, default=60.0,
                        help="longest wait for the planted abusers' alerts (default 60)")
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="longest the analysis or the drain may take (default 300)")
    parser.add_argument("--database-url", default=None, help="external PostgreSQL server")
    parser.add_argument("--bootstrap", default=None,
                        help="external broker (without a group antiabuse.facts on it)")
    parser.set_defaults(handler=_handle)
