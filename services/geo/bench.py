"""``tavla bench geo``: the location decision against maxminddb's bare lookups, and over gRPC.

Databases: a City-format one of ``--ranges`` IPv4 networks (default 1,000,000)
plus 50,000 IPv6 ones, with records the shape and size of GeoIP2 City's, and
an Anonymous-IP-format one of 200,000 networks (:mod:`services.geo.benchdata`;
built once into ``--cache-dir``, with progress, and reused).

In one run, on the same ``--addresses`` addresses (90% anywhere in the IPv4
space the networks cover, about 2% of them unplaced; 5% in anonymous networks;
5% IPv6), in ``--passes`` passes; within a pass the three kinds take turns
slice by slice (2,000 addresses each), so a busy neighbour on a shared machine
slows all three alike. The summary gives the median pass (by ratio):

- ``city_lookups_per_s``: ``Reader.get(address)`` on the City database alone,
  opened in ``MODE_MMAP_EXT`` (the C extension; the run stops if it is not).
- ``lookup_pairs_per_s``: a City ``get`` and an Anonymous-IP ``get`` per
  address, the bare lookups every decision needs. **The goal's ratio uses this
  rate**: a decision cannot do less than these two lookups, so that is the bare
  cost it is compared with. ``ratio_to_city_lookup`` (against the City lookup
  alone) is printed too.
- ``decisions_per_s``: ``GeoService.check_location`` (the service's real code
  path: parse, both databases, the rules, the decision), opened as ``tavla
  serve geo`` opens it (``services.geo.main.build_service``), with purposes and
  declared residences drawn at random.
- ``ratio`` = decisions_per_s / lookup_pairs_per_s (goal >= 0.5).

Then over gRPC: ``tavla serve geo`` as its own process (log level info, its own
service key, PostgreSQL and the broker; :mod:`services.kit.benchstack`) on the
same databases, called as the wallet with the wallet's service token,
``CheckLocation`` at an open-loop ``--rate`` calls/s (default 500) for
``--seconds`` after three seconds of warm-up. Each call is recorded through the
outbox before it is answered, as in production (the outbox rows are counted
afterwards). The calls come from ``--client-processes`` processes
(:mod:`services.geo.bench_load`); latency runs from the moment a call was due, so a
late send counts against it, and the client's own lateness is reported apart, with
whether it kept its rate; p50/p99 are over successful calls only (errors are counted
apart). The server's own view comes from its /metrics: its handling time, its group
commits, its garbage collector's passes and its loop's lag. The server's CPU per
call counts the service's process and its children (the outbox relay's process),
each also given apart. Goal: p99 <= 5 ms.

Figures are printed as JSON lines, each ``{"figure": ..., ...}``; the last line
is the summary object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import time
import uuid
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import maxminddb
import psutil
from sqlalchemy import text

from services.geo.bench_load import ClientRecord, Clients, LoadPlan, RequestFields, summarize
from services.geo.benchdata import (
    DEFAULT_RANGES,
    BenchDatabases,
    Plan,
    default_cache_dir,
    ensure_databases,
    sample_addresses,
    stderr_progress,
)
from services.geo.config import GeoSettings
from services.geo.domain.purposes import Purpose
from services.geo.main import build_service
from services.kit import logging as kit_logging
from services.kit.benchstack import BenchStack, ServiceProcess, cpu_seconds
from services.kit.db import make_engine
from services.kit.promscrape import HistogramCounts, parse_histogram, scrape
from tavla.geo.v1 import geo_pb2

GOAL_RATIO = 0.5
GOAL_P99_MS = 5.0
DEFAULT_RATE = 500.0
DEFAULT_CLIENT_PROCESSES = 2
# Unmeasured: the first second's calls queued behind the start (cold caches and
# connections, the client processes' own start) were still being answered a second later.
WARMUP_SECONDS = 3.0
# Who asks: residents of a place that allows everything, of restricted and
# unrestricted US states, a country whose regions do not matter, and nobody yet.
RESIDENCES = ("MT", "MT", "US-NJ", "US-NJ", "US-FL", "GB", "DE", "US", "")
PURPOSE_MESSAGES = {
    Purpose.REGISTER: geo_pb2.PURPOSE_REGISTER,
    Purpose.LOGIN: geo_pb2.PURPOSE_LOGIN,
    Purpose.DEPOSIT: geo_pb2.PURPOSE_DEPOSIT,
    Purpose.WITHDRAW: geo_pb2.PURPOSE_WITHDRAW,
    Purpose.PLAY_REAL: geo_pb2.PURPOSE_PLAY_REAL_MONEY,
    Purpose.PLAY_MONEY: geo_pb2.PURPOSE_PLAY_MONEY,
}


@dataclass(frozen=True, slots=True)
class Request:
    address: str
    purpose: Purpose
    declared: str


def plan_requests(addresses: list[str], seed: int = 3) -> list[Request]:
    rng = random.Random(seed)
    purposes = list(Purpose)
    return [Request(a, rng.choice(purposes), rng.choice(RESIDENCES)) for a in addresses]


def emit(figure: str, **values: Any) -> None:
    print(json.dumps({"figure": figure, **values}), flush=True)


# ------------------------------------------------------------------ in process


def open_extension_reader(path: Path) -> Any:
    """A reader on maxminddb's C extension (MODE_MMAP_EXT); refuses to measure anything else."""
    reader = maxminddb.open_database(str(path), maxminddb.MODE_MMAP_EXT)
    if type(reader).__module__ != "maxminddb.extension":
        raise SystemExit(f"maxminddb opened {path} with {type(reader)}, not the C extension")
    return reader


CHUNK = 2000  # addresses per slice: the three kinds take turns slice by slice


def _seconds(run: Callable[[int, int], None], low: int, high: int) -> float:
    started = time.perf_counter()
    run(low, high)
    return time.perf_counter() - started


def in_process_rates(
    databases: BenchDatabases, requests: list[Request], passes: int
) -> dict[str, Any]:
    """Rates of the bare lookups and of the decision, over the same addresses.

    The machine may be shared, so the three kinds take turns on every slice of
    ``CHUNK`` addresses (what slows one down slows the others alike); a pass is
    every slice once, and the ratios are the median pass's.
    """
    city = open_extension_reader(databases.city)
    anonymous = open_extension_reader(databases.anonymous)
    service = build_service(GeoSettings(databases.city, databases.anonymous))
    addresses = [request.address for request in requests]
    try:
        if not service.uses_c_extension():
            raise SystemExit("the geo service did not open its databases with the C extension")

        def city_only(low: int, high: int) -> None:
            get = city.get
            for address in addresses[low:high]:
                get(address)

        def pairs(low: int, high: int) -> None:
            get_city, get_anonymous = city.get, anonymous.get
            for address in addresses[low:high]:
                get_city(address)
                get_anonymous(address)

        def decisions(low: int, high: int) -> None:
            check = service.check_location
            for r in requests[low:high]:
                check(ip_address=r.address, purpose=r.purpose, declared=r.declared)

        runs = (("city_lookups_per_s", city_only), ("lookup_pairs_per_s", pairs),
                ("decisions_per_s", decisions))  # fmt: skip
        decisions(0, len(requests))  # warm: pure caches fill as in a running service
        passes_rates: list[dict[str, float]] = []
        for index in range(passes):
            spent = dict.fromkeys((name for name, _ in runs), 0.0)
            for low in range(0, len(addresses), CHUNK):
                for name, run in runs:
                    spent[name] += _seconds(run, low, low + CHUNK)
            rates = {name: len(addresses) / seconds for name, seconds in spent.items()}
            passes_rates.append(rates)
            emit("pass", number=index + 1, **{name: round(rate) for name, rate in rates.items()},
                 ratio=round(rates["decisions_per_s"] / rates["lookup_pairs_per_s"], 3),
                 ratio_to_city_lookup=round(
                     rates["decisions_per_s"] / rates["city_lookups_per_s"], 3))  # fmt: skip
    finally:
        service.close()
        city.close()
        anonymous.close()
    ratios = sorted(passes_rates, key=lambda r: r["decisions_per_s"] / r["lookup_pairs_per_s"])
    median = ratios[len(ratios) // 2]
    return {
        **{name: round(rate) for name, rate in median.items()},
        "ratio": round(median["decisions_per_s"] / median["lookup_pairs_per_s"], 3),
        "ratio_to_city_lookup": round(
            median["decisions_per_s"] / median["city_lookups_per_s"], 3
        ),
        "maxminddb_mode": "MODE_MMAP_EXT",
    }


# ------------------------------------------------------------------ over gRPC


def request_fields(requests: list[Request]) -> list[RequestFields]:
    """The calls' fields, for the client processes (each makes its own messages)."""
    return [
        (request.address, PURPOSE_MESSAGES[request.purpose], request.declared, str(uuid.uuid4()))
        for request in requests
    ]


CHECK_LOCATION = "/tavla.geo.v1.GeoService/CheckLocation"


@dataclass(frozen=True)
class ServerReading:
    """What the geo process said about itself at one moment: its CPU and its histograms."""

    service_cpu: float
    relay_cpu: float
    rpc: HistogramCounts
    gc_pause: HistogramCounts
    loop_lag: HistogramCounts
    commit: HistogramCounts

    @classmethod
    def take(cls, pid: int, metrics_port: int) -> ServerReading:
        text = scrape(metrics_port)
        service_cpu, relay_cpu = service_and_relay_cpu(pid)
        return cls(
            service_cpu,
            relay_cpu,
            parse_histogram(text, "tavla_rpc_duration_seconds",
                            {"service": "geo", "method": CHECK_LOCATION}),
            parse_histogram(text, "tavla_gc_pause_seconds", {"service": "geo"}),
            parse_histogram(text, "tavla_event_loop_lag_seconds", {"service": "geo"}),
            parse_histogram(text, "tavla_group_commit_seconds", {"service": "geo"}),
        )  # fmt: skip


def server_figures(before: ServerReading, after: ServerReading, calls: int) -> dict[str, Any]:
    """The server's own view of the window: CPU per call, its handling time (the kit
    interceptor's histogram, from the handler's start to its answer), its loop's pauses."""
    per_call = 1000 / max(calls, 1)
    service_cpu = after.service_cpu - before.service_cpu
    relay_cpu = after.relay_cpu - before.relay_cpu
    rpc = after.rpc.since(before.rpc)
    gc_pause = after.gc_pause.since(before.gc_pause)
    loop_lag = after.loop_lag.since(before.loop_lag)
    commit = after.commit.since(before.commit)
    return {
        "server_cpu_ms_per_call": round((service_cpu + relay_cpu) * per_call, 3),
        "service_process_cpu_ms_per_call": round(service_cpu * per_call, 3),
        "relay_process_cpu_ms_per_call": round(relay_cpu * per_call, 3),
        "server_calls": rpc.count,
        "server_p50_ms": round(rpc.quantile(0.50) * 1000, 2),
        "server_p99_ms": round(rpc.quantile(0.99) * 1000, 2),
        "server_share_within_goal": round(rpc.share_within(GOAL_P99_MS / 1000), 4),
        "server_group_commits": commit.count,
        "server_group_commit_p50_ms": round(commit.quantile(0.50) * 1000, 2),
        "server_group_commit_p99_ms": round(commit.quantile(0.99) * 1000, 2),
        "server_group_commits_over_5ms": commit.above(0.005),
        "server_gc_passes": gc_pause.count,
        "server_gc_ms": round(gc_pause.total * 1000, 1),
        "server_gc_passes_over_5ms": gc_pause.above(0.005),
        "server_loop_lag_samples": loop_lag.count,
        "server_loop_lag_p99_ms": round(loop_lag.quantile(0.99) * 1000, 2),
        "server_loop_lags_over_5ms": loop_lag.above(0.005),
    }


def over_grpc_window(
    bench: BenchStack, geo: ServiceProcess, requests: list[Request], args: argparse.Namespace
) -> dict[str, Any]:
    """``--rate`` calls a second from ``--client-processes`` processes (bench_load.py),
    with the server's own readings at the window's opening and after its last answer."""
    total = int((WARMUP_SECONDS + args.seconds) * args.rate)
    plan = LoadPlan(
        address=geo.address, gateway_address=bench.keys.gateway_addresses.get(geo.address),
        run_dir=str(bench.keys.run_dir), rate=args.rate, total=total,
        processes=args.client_processes, warmup_seconds=WARMUP_SECONDS,
    )  # fmt: skip
    clients = Clients(plan, request_fields(requests))
    try:
        load_before = os.getloadavg()[0]
        start = clients.start()
        time.sleep(max(0.0, start + WARMUP_SECONDS - time.monotonic()))
        before = ServerReading.take(geo.pid, geo.metrics_port)
        records = clients.records()
        after = ServerReading.take(geo.pid, geo.metrics_port)
    finally:
        clients.stop()
    result = summarize(plan, start, records)
    if args.trace:
        write_trace(args.trace, start, records)
    result.update(server_figures(before, after, int(result["grpc_calls_ok"])))
    result["load_average"] = [round(load_before, 1), round(os.getloadavg()[0], 1)]
    if not result["client_kept_rate"]:
        stderr_progress(
            f"the client did not keep its rate: sent {result['grpc_achieved_rate_per_s']}/s "
            f"of {args.rate:.0f}/s, sends late by {result['client_send_lag_p99_ms']} ms at "
            f"p99 (max {result['client_send_lag_max_ms']} ms): its latencies include its "
            "own delay"
        )
    return result


def service_and_relay_cpu(pid: int) -> tuple[float, float]:
    """CPU seconds so far of the service's process and of its children (the relay's
    process, when it runs in one): both are the server's cost of a call."""
    children = psutil.Process(pid).children(recursive=True)
    return cpu_seconds([pid]) or 1e-9, cpu_seconds([child.pid for child in children])


_RECORDED = text("SELECT count(*) FROM outbox WHERE topic = 'tavla.geo.v1' AND ce_type = :type")


async def recorded_decisions(url: str) -> int:
    """``LocationChecked`` events the geo process wrote to its outbox (one per answered call)."""
    engine = make_engine(url, pool_size=1)
    try:
        async with engine.connect() as connection:
            count = await connection.scalar(_RECORDED, {"type": "tavla.geo.v1.LocationChecked"})
    finally:
        await engine.dispose()
    return int(count or 0)


def write_trace(path: Path, start: float, records: list[ClientRecord]) -> None:
    """Every call as a CSV line (seconds from the schedule's start): when it was due,
    sent and answered, and its status, in the order they were due."""
    rows = sorted(
        (due - start, sent - start, answered - start, code)
        for record in records
        for due, sent, answered, code in zip(
            record.due, record.sent, record.answered, record.codes, strict=True
        )
    )
    with path.open("w") as out:
        out.write("due,sent,answered,code\n")
        out.writelines(f"{d:.6f},{s:.6f},{a:.6f},{c}\n" for d, s, a, c in rows)


def over_grpc(
    databases: BenchDatabases, requests: list[Request], args: argparse.Namespace
) -> dict[str, Any]:
    with ExitStack() as stack:
        bench = BenchStack(stack, database_url=args.database_url, bootstrap=args.bootstrap,
                           metrics=True)  # fmt: skip
        url = bench.new_database("geo_bench")
        geo = bench.start_service("geo", "geo", url, {
            "TAVLA_GEO_CITY_DB": str(databases.city),
            "TAVLA_GEO_ANONYMOUS_DB": str(databases.anonymous),
        })  # fmt: skip
        asyncio.run(bench.wait_serving(geo))
        stderr_progress(f"geo serving at {geo.address} (pid {geo.pid}); "
                        f"{args.rate:.0f} calls/s for {args.seconds:.0f} s from "
                        f"{args.client_processes} client processes")  # fmt: skip
        result = over_grpc_window(bench, geo, requests, args)
        if result["grpc_errors"]:
            print(bench.log_tail(geo, 60), file=sys.stderr)  # what the service said about them
        answered = result["grpc_calls_ok"] + _warmup_calls(result, args)
        result["recorded_decisions"] = asyncio.run(recorded_decisions(url))
        result["every_answer_recorded"] = result["recorded_decisions"] >= answered
        bench.stop_service(geo)
    return result


def _warmup_calls(result: dict[str, Any], args: argparse.Namespace) -> int:
    """Successful calls before the window opened (recorded too, not timed)."""
    total = int((WARMUP_SECONDS + args.seconds) * args.rate)
    return total - int(result["grpc_calls_ok"]) - int(result["grpc_errors"])


# ------------------------------------------------------------------ the run


def run(args: argparse.Namespace) -> dict[str, Any]:
    kit_logging.configure("bench", "warning")
    plan = Plan(ranges=args.ranges)
    databases = ensure_databases(args.cache_dir, plan)
    addresses = sample_addresses(plan, args.addresses)
    requests = plan_requests(addresses)
    emit("databases", city=str(databases.city), city_networks=databases.city_networks,
         anonymous=str(databases.anonymous),
         anonymous_networks=databases.anonymous_networks, addresses=len(addresses))  # fmt: skip
    result: dict[str, Any] = {"city_networks": databases.city_networks,
                              "anonymous_networks": databases.anonymous_networks,
                              "addresses": len(addresses)}  # fmt: skip
    result.update(in_process_rates(databases, requests, args.passes))
    emit("ratio", ratio=result["ratio"], compared_with="lookup_pairs_per_s",
         ratio_to_city_lookup=result["ratio_to_city_lookup"], goal=GOAL_RATIO)  # fmt: skip
    if not args.no_grpc:
        grpc_result = over_grpc(databases, requests, args)
        emit("grpc", **grpc_result)
        result.update(grpc_result)
    return result


def _handle(args: argparse.Namespace) -> int:
    result = run(args)
    line = (f"goal: ratio >= {GOAL_RATIO} (decisions / City+Anonymous-IP lookup pairs): "
            f"{result['ratio']}")  # fmt: skip
    if "grpc_p99_ms" in result:
        line += (f"; p99 <= {GOAL_P99_MS} ms at {result['grpc_rate_per_s']:.0f} calls/s: "
                 f"{result['grpc_p99_ms']} ms (the server's own p99 {result['server_p99_ms']} "
                 f"ms; the client {'kept' if result['client_kept_rate'] else 'did not keep'} "
                 f"its rate; load average {result['load_average']})")  # fmt: skip
    print(line, file=sys.stderr)
    print(json.dumps(result), flush=True)
    honest = result.get("grpc_errors", 0) == 0 and result.get("every_answer_recorded", True)
    return 0 if honest else 1


def register_bench(bench_subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``geo`` to the ``tavla bench`` command."""
    parser = bench_subparsers.add_parser(
        "geo", help="location decisions vs maxminddb's bare lookups; CheckLocation over gRPC"
    )
    parser.add_argument("--ranges", type=int, default=DEFAULT_RANGES,
                        help="IPv4 networks in the City database (default 1000000; "
                             "50000 IPv6 ones are added)")  # fmt: skip
    parser.add_argument("--cache-dir", type=Path, default=default_cache_dir(),
                        help="where the databases are built once and reused "
                             "(default $XDG_CACHE_HOME/tavla/bench-geo)")  # fmt: skip
    parser.add_argument("--addresses", type=int, default=200_000,
                        help="addresses looked up per pass (default 200000)")  # fmt: skip
    parser.add_argument("--passes", type=int, default=3, help="alternating passes (default 3)")
    parser.add_argument("--rate", type=float, default=DEFAULT_RATE,
                        help="open-loop CheckLocation calls per second (default 500)")  # fmt: skip
    parser.add_argument("--seconds", type=float, default=20.0,
                        help="the measured gRPC window (default 20)")  # fmt: skip
    parser.add_argument("--client-processes", type=int, default=DEFAULT_CLIENT_PROCESSES,
                        help="processes the calls are spread over (default 2)")  # fmt: skip
    parser.add_argument("--trace", type=Path,
                        help="write each call's due, sent, answered times to this CSV")  # fmt: skip
    parser.add_argument("--no-grpc", action="store_true", help="in-process figures only")
    parser.add_argument("--database-url", help="an external PostgreSQL server URL (asyncpg)")
    parser.add_argument("--bootstrap", help="an external Kafka bootstrap address")
    parser.set_defaults(handler=_handle)


__all__ = ["register_bench"]
