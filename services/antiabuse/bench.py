"""``tavla bench antiabuse``: events per second through the real anti-abuse consumer,
against the game service's event rate in the same run.

It starts PostgreSQL, the broker, accounts, geo, a wallet (the sandbox, funding
players) and a game process (:mod:`services.kit.benchstack`), then two phases:

1. **Load.** ``tavla bench game``'s open loop plays ``--games`` concurrent money
   games (a quarter in dollars, their stakes held and then settled by the wallet)
   for ``--seconds``. Anti-abuse is not running yet: what it will read piles up.
   The game service's event rate is the records it put on ``tavla.game.v1`` over
   the phase (ramp included) divided by its length.
2. **Drain.** ``tavla serve antiabuse`` starts with its group at the beginning of
   every topic it reads. From its first fetch (its ``tavla_consumer_lag`` appears on
   ``/metrics``) until its group has committed past a marker record put at the end
   of every partition of those topics: the consumer's rate is the records it went
   through divided by that time. The backlog metric is scraped throughout; its peak
   is printed.

The records are counted by markers' offsets: the consumer's from 0 (a new group
reads every record of its topics, an earlier run's too), the game's between a
marker put before the load and one after it; the local broker's ListOffsets
answers short of the last batch, so nothing here asks it for end offsets. The
ratio consumer / game above 1 means anti-abuse keeps up with the game's whole
event rate (every event of a game, moves included, goes through its consumer,
which skips what it has no use for without a transaction). The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
import uuid
from contextlib import ExitStack
from datetime import UTC, datetime
from typing import Any

import httpx
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from services.antiabuse.consumers import FACTS_GROUP, TOPICS
from services.game import bench as game_bench
from services.geo.devdata import malta_address
from services.kit.benchstack import (
    BENCH_RESIDENCE,
    FUNDING_WALLET_ENV,
    BenchKeys,
    BenchStack,
    PlayerMetadata,
)
from services.kit.client_signals import CLIENT_ADDRESS_HEADER
from services.kit.devstack.net import free_port
from services.kit.events.envelope import Envelope
from tavla.common.v1 import money_pb2

GAME_TOPIC = "tavla.game.v1"
FUNDED_PLAYERS = 64  # the dollar games' players (two per table, drawn at random)


class StrangersKeys(BenchKeys):
    """Players who are strangers: each calls from a Malta /64 of its own.

    ``BenchKeys`` gives every player one Malta address, which links them all here (an
    exact shared address, medium evidence): one component of every player, the
    multi-accounting detector's worst case rather than a site's day.
    """

    def players(self, residence: str = BENCH_RESIDENCE) -> PlayerMetadata:
        same_address = super().players(residence)
        homes: dict[str, str] = {}

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


def run(args: argparse.Namespace) -> dict[str, Any]:
    with ExitStack() as stack:
        bench = BenchStack(stack, database_url=args.database_url, bootstrap=args.bootstrap)
        from services.wallet.bench import fund_players

        wallet_url = bench.new_database("wallet_bench")
        wallet = bench.start_service("wallet", "wallet", wallet_url, FUNDING_WALLET_ENV)
        asyncio.run(bench.wait_serving(wallet))
        keys = StrangersKeys(bench.run_dir)
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
        marks = asyncio.run(mark_ends(bench.bootstrap, list(TOPICS)))
        records = sum(marks.values())  # offsets from 0: the records before each marker
        game_records = sum(marks[p] - before[p] - 1 for p in before)

        metrics_port = free_port()
        antiabuse = bench.start_service("antiabuse", "antiabuse", bench.new_database(
            "antiabuse_bench"), {"TAVLA_METRICS_PORT": str(metrics_port)})
        print(f"drain: {records} records on anti-abuse's topics, {game_records} of them "
              "the game's; tavla serve antiabuse started", flush=True)
        drained = asyncio.run(drain(bench.bootstrap, f"http://127.0.0.1:{metrics_port}/metrics",
                                    marks, args.timeout))
        bench.stop_service(antiabuse)
    game_rate = game_records / loaded
    consumer_rate = records / drained["drain_seconds"]
    return {
        "consumer_events_per_s": round(consumer_rate, 1),
        "game_events_per_s": round(game_rate, 1),
        "ratio": round(consumer_rate / game_rate, 2) if game_rate else None,
        "records": records, "game_records": game_records,
        "load_seconds": round(loaded, 1), "drain_seconds": round(drained["drain_seconds"], 1),
        "peak_lag": drained["peak_lag"], "games": args.games, "think_ms": args.think_ms,
        "games_finished": load["games_finished"], "errors": load["errors"],
        "first_error": load["first_error"],
    }  # fmt: skip


def _handle(args: argparse.Namespace) -> int:
    result = run(args)
    print(f"game service: {result['game_events_per_s']} events/s on {GAME_TOPIC} "
          f"({result['game_records']} in {result['load_seconds']} s, {args.games} games)")
    print(f"anti-abuse consumer: {result['consumer_events_per_s']} events/s "
          f"({result['records']} records of its {len(TOPICS)} topics in "
          f"{result['drain_seconds']} s; peak backlog {result['peak_lag']:.0f})")
    print(f"ratio consumer / game: {result['ratio']} (above 1: it keeps up)")
    print(json.dumps(result))
    return 0 if result["errors"] == 0 else 1


def register_bench(bench_subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``antiabuse`` to the ``tavla bench`` command."""
    parser = bench_subparsers.add_parser(
        "antiabuse", help="anti-abuse consumer events/s against the game's event rate"
    )
    parser.add_argument("--games", type=int, default=32, help="concurrent games (default 32)")
    parser.add_argument("--think-ms", type=float, default=20.0,
                        help="each player's pause before a call (default 20)")
    parser.add_argument("--seconds", type=float, default=30.0, help="load phase (default 30)")
    parser.add_argument("--ramp-seconds", type=float, default=2.0)
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="longest the drain may take (default 300)")
    parser.add_argument("--database-url", default=None, help="external PostgreSQL server")
    parser.add_argument("--bootstrap", default=None,
                        help="external broker (without a group antiabuse.facts on it)")
    parser.set_defaults(handler=_handle)
