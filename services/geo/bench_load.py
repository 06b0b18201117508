"""The open-loop client of ``tavla bench geo``: CheckLocation calls from several processes.

A client written in Python on the same cores as the server can delay its own
calls: its event loop may be busy, its garbage collector may pause it, the
machine may not run it. Such a delay must count against the latency (the call
was due; a real caller would have waited) yet be told apart from the server's.
So:

- the calls are spread over ``processes`` fresh processes (spawned, with nothing
  but the client in their heap), each sending every ``processes``-th call of one
  schedule (call ``i`` is due at ``start + i / rate``) on its own connection,
  whatever the calls before it are doing (open loop: no coordinated omission);
- each process collects its garbage and freezes it before the first call, and
  runs the window with the collector off (a window's garbage is small);
- each call records when it was due, when it was sent and when its answer came;
  its latency runs from when it was due, or from when it was sent if that was
  earlier (a timer may wake up to a millisecond early, so a call is sent when
  less than that is left);
- each process records its own loop's lag (a task that sleeps 5 ms and notes how
  late it woke), so a stall of the client is seen as the client's.

What comes back is per call: due, sent and answered times and the status.
"""

from __future__ import annotations

import asyncio
import gc
import multiprocessing
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import grpc

from services.kit.benchstack import BenchKeys, percentile
from tavla.geo.v1 import geo_pb2, geo_pb2_grpc

# Sent this early at most: an asyncio timer wakes up to a millisecond late (epoll's unit).
EARLY_SECONDS = 0.001
LOOP_LAG_INTERVAL = 0.005
CALL_TIMEOUT_SECONDS = 10.0
# A client whose sends were this late at the 99th percentile did not keep its rate.
KEPT_LAG_SECONDS = 0.001
KEPT_RATE_SHARE = 0.99

# (ip_address, purpose number, declared residence, account id)
RequestFields = tuple[str, int, str, str]


@dataclass(frozen=True)
class LoadPlan:
    """The schedule every client process shares (times are ``time.monotonic()``,
    the same clock in every process)."""

    address: str
    gateway_address: str | None
    run_dir: str
    rate: float
    total: int
    processes: int
    warmup_seconds: float


@dataclass
class ClientRecord:
    """One process's calls (parallel lists) and its loop's lag samples."""

    due: list[float] = field(default_factory=list)
    sent: list[float] = field(default_factory=list)
    answered: list[float] = field(default_factory=list)
    codes: list[str] = field(default_factory=list)
    loop_lags: list[float] = field(default_factory=list)
    first_error: str = ""


def client_process(plan: LoadPlan, index: int, requests: list[RequestFields],
                   pipe: Connection) -> None:  # fmt: skip
    """A client process's life: connect, say ready, get the start time, run, send the record."""
    record = asyncio.run(_client(plan, index, requests, pipe))
    pipe.send(record)
    pipe.close()


async def _client(
    plan: LoadPlan, index: int, requests: list[RequestFields], pipe: Connection
) -> ClientRecord:
    keys = BenchKeys(Path(plan.run_dir))
    if plan.gateway_address:
        keys.gateway_addresses[plan.address] = plan.gateway_address
    messages = [
        geo_pb2.CheckLocationRequest(
            ip_address=ip,
            purpose=geo_pb2.Purpose.ValueType(purpose),
            declared_residence=declared,
            account_id=account,
        )
        for ip, purpose, declared, account in requests
    ]
    async with keys.channel(plan.address, target="geo", caller="wallet") as channel:
        await asyncio.wait_for(channel.channel_ready(), timeout=60)
        stub = geo_pb2_grpc.GeoServiceStub(channel)
        await stub.CheckLocation(messages[0], timeout=CALL_TIMEOUT_SECONDS)  # connection warm
        pipe.send("ready")
        start: float = await asyncio.to_thread(pipe.recv)
        gc.collect()
        gc.freeze()
        gc.disable()
        try:
            return await _send_all(plan, index, start, stub, messages)
        finally:
            gc.enable()


async def _send_all(
    plan: LoadPlan, index: int, start: float, stub: Any, messages: Sequence[Any]
) -> ClientRecord:
    record = ClientRecord()
    clock = time.monotonic
    loop = asyncio.get_running_loop()
    lag_task = loop.create_task(_watch_lag(record.loop_lags))
    pending: set[asyncio.Task[None]] = set()

    async def call(slot: int, message: Any) -> None:
        code = "OK"
        try:
            await stub.CheckLocation(message, timeout=CALL_TIMEOUT_SECONDS)
        except grpc.aio.AioRpcError as error:
            code = error.code().name
            record.first_error = record.first_error or f"{code}: {error.details()}"
        record.answered[slot] = clock()
        record.codes[slot] = code

    for number in range(index, plan.total, plan.processes):
        due = start + number / plan.rate
        wait = due - clock() - EARLY_SECONDS
        if wait > 0:
            await asyncio.sleep(wait)
        slot = len(record.due)
        record.due.append(due)
        record.sent.append(clock())
        record.answered.append(0.0)
        record.codes.append("")
        task = loop.create_task(call(slot, messages[number % len(messages)]))
        pending.add(task)
        task.add_done_callback(pending.discard)
    if pending:
        await asyncio.wait(pending)
    lag_task.cancel()
    return record


async def _watch_lag(lags: list[float]) -> None:
    loop = asyncio.get_running_loop()
    while True:
        due = loop.time() + LOOP_LAG_INTERVAL
        await asyncio.sleep(LOOP_LAG_INTERVAL)
        lags.append(max(0.0, loop.time() - due))


class Clients:
    """The client processes of one run: started, connected, then let go on one schedule."""

    def __init__(self, plan: LoadPlan, requests: list[RequestFields]) -> None:
        context = multiprocessing.get_context("spawn")  # a fresh heap, and no forked gRPC state
        self.plan = plan
        self._pipes: list[Connection] = []
        self._processes: list[Any] = []
        for index in range(plan.processes):
            ours, theirs = context.Pipe()
            process = context.Process(
                target=client_process, args=(plan, index, requests, theirs), daemon=True
            )
            process.start()
            self._pipes.append(ours)
            self._processes.append(process)

    def start(self, lead_seconds: float = 0.3) -> float:
        """Wait until every process is connected; call 0 is due ``lead_seconds`` later."""
        for pipe in self._pipes:
            if pipe.recv() != "ready":
                raise RuntimeError("a client process did not connect")
        start = time.monotonic() + lead_seconds
        for pipe in self._pipes:
            pipe.send(start)
        return start

    def records(self) -> list[ClientRecord]:
        records = [pipe.recv() for pipe in self._pipes]
        for process in self._processes:
            process.join(timeout=30)
        return records

    def stop(self) -> None:
        for process in self._processes:
            if process.is_alive():
                process.terminate()
                process.join(timeout=10)


def summarize(plan: LoadPlan, start: float, records: list[ClientRecord]) -> dict[str, Any]:
    """The client's figures over the calls due in the measured window."""
    opens = start + plan.warmup_seconds
    latencies, from_sent, lags = [], [], []
    errors: dict[str, int] = {}
    first_sent, last_sent, in_window = float("inf"), 0.0, 0
    for record in records:
        for due, sent, answered, code in zip(record.due, record.sent, record.answered,
                                             record.codes, strict=True):  # fmt: skip
            if due < opens:
                continue
            in_window += 1
            first_sent, last_sent = min(first_sent, sent), max(last_sent, sent)
            lags.append(max(0.0, sent - due))
            if code != "OK":
                errors[code] = errors.get(code, 0) + 1
                continue
            latencies.append(answered - min(due, sent))
            from_sent.append(answered - sent)
    scheduled = (in_window - 1) / plan.rate
    sending = last_sent - first_sent if in_window > 1 else 0.0
    achieved = (in_window - 1) / sending if sending > 0 else 0.0
    loop_lags = [lag for record in records for lag in record.loop_lags]
    lag_p99 = percentile(lags, 0.99)
    kept = lag_p99 <= KEPT_LAG_SECONDS and achieved >= KEPT_RATE_SHARE * plan.rate
    return {
        "grpc_rate_per_s": plan.rate,
        "grpc_achieved_rate_per_s": round(achieved, 1),
        "grpc_seconds": round(scheduled, 1),
        "client_processes": plan.processes,
        "grpc_calls_ok": len(latencies),
        "grpc_errors": sum(errors.values()),
        "errors_by_code": errors,
        "first_error": next((r.first_error for r in records if r.first_error), ""),
        "grpc_p50_ms": _ms(percentile(latencies, 0.50)),
        "grpc_p99_ms": _ms(percentile(latencies, 0.99)),
        "grpc_max_ms": _ms(max(latencies, default=0.0)),
        "grpc_from_sent_p50_ms": _ms(percentile(from_sent, 0.50)),
        "grpc_from_sent_p99_ms": _ms(percentile(from_sent, 0.99)),
        "client_send_lag_p50_ms": _ms(percentile(lags, 0.50)),
        "client_send_lag_p99_ms": _ms(lag_p99),
        "client_send_lag_max_ms": _ms(max(lags, default=0.0)),
        "client_loop_lag_p99_ms": _ms(percentile(loop_lags, 0.99)),
        "client_loop_lag_max_ms": _ms(max(loop_lags, default=0.0)),
        "client_kept_rate": kept,
    }


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 2)
