"""What ``tavla bench platform`` reads at each end of its window, and the figures between two.

A :class:`Reading` is taken from outside the services, as an operator's monitoring
would: each service process's CPU seconds (``psutil``, its worker processes
included), PostgreSQL's committed transactions and rows written per database
(``pg_stat_database``) and its WAL position, the broker's end offset of every topic
(the events produced so far), and each process's own Prometheus metrics
(``tavla_rpc_duration_seconds`` per method, the requests by status code, the
consumers' lag). :func:`p99_from_buckets` is Prometheus's
``histogram_quantile`` over the window's bucket counts: the servers' own latency, with
the resolution of their buckets (linear within a bucket).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import urllib.request
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import psutil
from aiokafka import AIOKafkaConsumer
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import text

from services.kit.db import make_engine

OK = "OK"
HEALTH_PREFIX = "/grpc.health."  # the probes' calls: not a public method
_XACTS = text(
    "SELECT datname, xact_commit, tup_inserted + tup_updated + tup_deleted "
    "FROM pg_stat_database WHERE datname IS NOT NULL"
)
_WAL = text("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')")


@dataclass
class Scrape:
    """One process's Prometheus metrics, as far as the figures need them."""

    # (service, method) -> upper bound -> cumulative count
    buckets: dict[tuple[str, str], dict[float, float]] = field(default_factory=dict)
    # (service, method, code) -> calls
    requests: dict[tuple[str, str, str], float] = field(default_factory=dict)
    lag: float = 0.0  # records on the broker its consumer groups have not applied yet


def parse_scrape(exposition: str) -> Scrape:
    scrape = Scrape()
    for family in text_string_to_metric_families(exposition):
        for sample in family.samples:
            labels = sample.labels
            if sample.name == "tavla_rpc_duration_seconds_bucket":
                key = (labels["service"], labels["method"])
                scrape.buckets.setdefault(key, {})[float(labels["le"])] = sample.value
            elif sample.name == "tavla_rpc_requests_total":
                scrape.requests[(labels["service"], labels["method"], labels["code"])] = (
                    sample.value
                )
            elif sample.name == "tavla_consumer_lag":
                scrape.lag += sample.value
    return scrape


def scrape(port: int) -> Scrape:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as reply:
        return parse_scrape(reply.read().decode())


def merge(scrapes: Iterable[Scrape]) -> Scrape:
    """The replicas of one service as one: counts added."""
    merged = Scrape()
    for one in scrapes:
        for key, bounds in one.buckets.items():
            into = merged.buckets.setdefault(key, {})
            for bound, count in bounds.items():
                into[bound] = into.get(bound, 0.0) + count
        for rkey, calls in one.requests.items():
            merged.requests[rkey] = merged.requests.get(rkey, 0.0) + calls
        merged.lag += one.lag
    return merged


def p99_from_buckets(before: Mapping[float, float], after: Mapping[float, float]) -> float | None:
    """The 0.99 quantile (seconds) of the calls between two readings of a cumulative
    histogram, as Prometheus's ``histogram_quantile``: linear within the bucket it falls
    in, the highest finite bound when it falls in the last (+Inf); None without calls."""
    counts = sorted((bound, after[bound] - before.get(bound, 0.0)) for bound in after)
    total = counts[-1][1] if counts else 0.0
    if total <= 0:
        return None
    rank = 0.99 * total
    lower, below = 0.0, 0.0
    for bound, cumulative in counts:
        if cumulative >= rank:
            if math.isinf(bound):
                return lower
            inside = cumulative - below
            return lower + (bound - lower) * ((rank - below) / inside if inside else 1.0)
        lower, below = bound, cumulative
    return lower


@dataclass
class Reading:
    """Everything read at one moment."""

    at: float  # time.monotonic()
    cpu: dict[str, float]  # process name -> CPU seconds so far (its children included)
    database: DatabaseCounts
    offsets: dict[str, int]  # topic -> events on it so far (end offsets, all partitions)
    scrapes: dict[str, Scrape]  # process name -> its metrics


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of the process and of every process under it now."""
    root = psutil.Process(pid)
    total = 0.0
    for process in [root, *root.children(recursive=True)]:
        with contextlib.suppress(psutil.NoSuchProcess):
            times = process.cpu_times()
            total += float(times.user + times.system)
    return total


@dataclass(frozen=True)
class DatabaseCounts:
    xacts: dict[str, int]  # database -> committed transactions so far
    rows_written: dict[str, int]  # database -> rows inserted, updated and deleted so far
    wal_bytes: int  # the server's write-ahead log position: bytes written so far


async def database_counts(server_url: str) -> DatabaseCounts:
    """``pg_stat_database`` per database and the WAL position (a fresh connection: a fresh
    statistics snapshot)."""
    engine = make_engine(server_url, pool_size=1)
    try:
        async with engine.connect() as connection:
            rows = (await connection.execute(_XACTS)).all()
            wal = (await connection.execute(_WAL)).scalar_one()
    finally:
        await engine.dispose()
    return DatabaseCounts(
        xacts={str(name): int(commits) for name, commits, _ in rows},
        rows_written={str(name): int(written) for name, _, written in rows},
        wal_bytes=int(wal),
    )


async def topic_offsets(bootstrap: str, topics: Iterable[str]) -> dict[str, int]:
    """The sum of every partition's end offset, per topic (as no consumer group)."""
    from aiokafka import TopicPartition

    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None)
    await consumer.start()
    try:
        partitions = [
            TopicPartition(topic, number)
            for topic in topics
            for number in sorted(consumer.partitions_for_topic(topic) or ())
        ]
        ends = await consumer.end_offsets(partitions)
    finally:
        await consumer.stop()
    offsets: dict[str, int] = defaultdict(int)
    for partition, end in ends.items():
        offsets[partition.topic] += end
    return dict(offsets)


async def read(
    at: float,
    processes: Mapping[str, tuple[int, int]],
    server_url: str,
    bootstrap: str,
    topics: Iterable[str],
) -> Reading:
    """A reading of ``processes`` (name -> (pid, metrics port)), the server and the broker."""
    cpu = {name: process_cpu(pid) for name, (pid, _) in processes.items()}
    scrapes = await asyncio.gather(
        *(asyncio.to_thread(scrape, port) for _, port in processes.values())
    )
    return Reading(
        at=at,
        cpu=cpu,
        database=await database_counts(server_url),
        offsets=await topic_offsets(bootstrap, topics),
        scrapes=dict(zip(processes, scrapes, strict=True)),
    )


def latency_p99_ms(before: Scrape, after: Scrape) -> dict[str, float]:
    """Per public method called in between (short name): its p99 in ms, from the servers."""
    figures: dict[str, float] = {}
    for (service, method), bounds in sorted(after.buckets.items()):
        if method.startswith(HEALTH_PREFIX):
            continue
        p99 = p99_from_buckets(before.buckets.get((service, method), {}), bounds)
        if p99 is not None:
            figures[method.rsplit("/", 1)[-1]] = round(p99 * 1000, 2)
    return figures


def calls_and_failures(before: Scrape, after: Scrape) -> tuple[int, dict[str, int]]:
    """Calls answered in between (health probes aside), and those not OK by method:code."""
    calls, failures = 0, {}
    for (service, method, code), count in after.requests.items():
        if method.startswith(HEALTH_PREFIX):
            continue
        delta = int(count - before.requests.get((service, method, code), 0.0))
        calls += delta
        if code != OK and delta:
            failures[f"{method.rsplit('/', 1)[-1]}:{code}"] = delta
    return calls, failures
