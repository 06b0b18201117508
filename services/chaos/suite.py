"""``tavla chaos``: the fault suite.

It starts the real stack as ``tavla bench game --open-loop`` does
(:class:`services.kit.benchstack.BenchStack`: PostgreSQL, the Tansu broker, and
accounts, geo, analysis, wallet and game as ``tavla serve`` processes), funds
players through the wallet, runs the open-loop load (:mod:`.load`, a quarter of
the tables in USD), measures the normal p99 of a game call over ``--seconds`` (or
until the first game ends, if later: every fault then meets endings in transit),
then injects the faults one after another:

- ``broker_pause``: the broker stopped (SIGSTOP) for ``--pause-seconds``, then SIGCONT;
- ``postgres_kill``: PostgreSQL SIGKILLed (its whole process group) and started again
  on its data (crash recovery);
- ``wallet_kill``: the wallet SIGKILLed while a game's ending is between the broker and
  its settlement (else after 10 s of looking), then started again;
- ``game_kill``: a game process SIGKILLed while a call to it is under way, then started
  again;
- ``analysis_pause``: the analysis service stopped (SIGSTOP) while some tables'
  players disconnect, so their reconnect windows close with analysis away; SIGCONT
  after ``--pause-seconds`` (at least long enough for the windows to close).

After each fault: ``recovery_s``, the seconds from the fault's end (process resumed,
or restarted and SERVING) to the start of the first ``RECOVERY_WINDOW_SECONDS`` window
whose game calls all succeeded with a p99 under the normal figure (null when none
began within ``--recovery-seconds``); then the checks of :mod:`.checks` on every
game ended so far. The normal figure is the p99 of the quiet window; a window
after a fault counts as back to normal under :func:`normal_bound` of it (x1.5, and
at least 10 ms more: a window of two seconds holds a few hundred calls, whose p99 is
noisier than the long window's, and the machine may be shared). ``p99_after_ms`` is
the p99 of the calls of the recovery period.

The PostgreSQL server commits synchronously here (``synchronous_commit=on``; the dev
default is off): an asynchronous commit lives in the server's WAL buffers until the WAL
writer runs, so a killed server would lose commits the services were told were done,
which is not the fault being tested. Production runs synchronous commits.

The last line printed is one JSON object::

    {"faults": [{"name", "games_settled", "lost", "duplicates", "audit", "recovery_s",
                 ...}], "p99_normal_ms", "final": {...}, ...}

``games_settled`` counts the games ended so far and settled by the wallet
(``real_money_settled`` those in USD); ``final``
is the same check once the load stopped. Exit 0 when every fault and the final check
lost nothing, duplicated nothing, audited clean and recovered; 1 otherwise. Progress
goes to stderr as it goes. ``--short`` is the form ``make test`` runs (a small load,
short pauses).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import signal
import sys
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

import psutil

from services.chaos import checks
from services.chaos.load import LoadConfig, LoadProcess, Sample
from services.kit.benchstack import (
    FUNDING_WALLET_ENV,
    BenchStack,
    ServiceProcess,
    percentile,
)

NORMAL_MARGIN = 1.5
NORMAL_SLACK_SECONDS = 0.010
RECOVERY_WINDOW_SECONDS = 2.0
RECOVERY_STEP_SECONDS = 0.25
MIN_WINDOW_CALLS = 5  # a window with fewer calls says nothing about p99
IN_FLIGHT_LOOK_SECONDS = 10.0  # how long to wait for the moment a kill should hit
# synchronous commits: see the module's docstring
DURABLE_POSTGRES = {"synchronous_commit": "on"}


@dataclass(frozen=True)
class Plan:
    games: int  # concurrent tables
    seconds: float  # the quiet window the normal p99 is measured over
    pause_seconds: float  # how long a paused process stays paused
    think_ms: float
    replicas: int
    recovery_seconds: float  # how long after a fault p99 has to come back
    drain_seconds: float  # how long endings in transit may take to settle
    silence_seconds: float  # the game's presence silence (disconnections)
    reconnect_seconds: float  # the game's reconnect window (shortened: a test setting)
    disconnections: int
    players: int  # funded players the tables draw their seats from
    # The consumers' session timeout (None: production's 10 s): how long the broker waits
    # for a killed member before its partitions go to the restarted process.
    session_timeout_ms: int | None = None


LONG = Plan(
    games=200, seconds=30.0, pause_seconds=30.0, think_ms=1000.0, replicas=2,
    recovery_seconds=30.0, drain_seconds=90.0, silence_seconds=5.0, reconnect_seconds=5.0,
    disconnections=8, players=256,
)  # fmt: skip
# What `make test` runs: a small load, 3 s pauses, one game process, and the 3 s session
# timeout of the suite's other `tavla serve` processes (tests/support/processes.py).
SHORT = Plan(
    games=12, seconds=2.0, pause_seconds=3.0, think_ms=100.0, replicas=1,
    recovery_seconds=10.0, drain_seconds=30.0, silence_seconds=1.5, reconnect_seconds=1.0,
    disconnections=2, players=24, session_timeout_ms=3000,
)  # fmt: skip


def plan_of(args: argparse.Namespace) -> Plan:
    given = {
        "games": args.games, "seconds": args.seconds,
        "pause_seconds": args.pause_seconds, "think_ms": args.think_ms,
    }  # fmt: skip
    overrides = {name: value for name, value in given.items() if value is not None}
    return dataclasses.replace(SHORT if args.short else LONG, **overrides)


def progress(message: str) -> None:
    print(f"[chaos {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------ recovery (pure)


def window_p99(samples: list[Sample], start: float, length: float) -> float | None:
    """The p99 of the calls started in [start, start + length): None when one failed
    or too few were made."""
    calls = [s for s in samples if start <= s.started < start + length]
    if len(calls) < MIN_WINDOW_CALLS or not all(s.ok for s in calls):
        return None
    return percentile([s.seconds for s in calls], 0.99)


def recovery_seconds(
    samples: list[Sample], since: float, normal: float, until: float, within: float
) -> float | None:
    """Seconds from ``since`` to the first window (fully before ``until``) of successful
    calls with p99 <= ``normal``; None when none starts within ``within``."""
    start = since
    while start <= since + within and start + RECOVERY_WINDOW_SECONDS <= until:
        p99 = window_p99(samples, start, RECOVERY_WINDOW_SECONDS)
        if p99 is not None and p99 <= normal:
            return round(start - since, 2)
        start += RECOVERY_STEP_SECONDS
    return None


def normal_bound(p99: float) -> float:
    """The p99 a window after a fault must come back under: the quiet window's, with room
    for a short window's noise on a shared machine (x1.5, and at least 10 ms more)."""
    return max(p99 * NORMAL_MARGIN, p99 + NORMAL_SLACK_SECONDS)


# ------------------------------------------------------------------ the stack


@dataclass
class Stack:
    bench: BenchStack
    plan: Plan
    wallet: ServiceProcess
    analysis: ServiceProcess
    games: list[ServiceProcess]
    game_url: str
    funded: list[str] = field(default_factory=list)

    @property
    def bootstrap(self) -> str:
        return self.bench.bootstrap

    def restart(self, service: ServiceProcess) -> ServiceProcess:
        restarted = self.bench.restart_service(service)
        asyncio.run(self.bench.wait_serving(restarted))
        return restarted


def start_stack(exits: ExitStack, plan: Plan) -> Stack:
    from services.wallet.bench import fund_players

    service_env: dict[str, str] = {}
    if plan.session_timeout_ms is not None:
        service_env["TAVLA_KAFKA_SESSION_TIMEOUT_MS"] = str(plan.session_timeout_ms)
    bench = BenchStack(exits, postgres_settings=DURABLE_POSTGRES, service_env=service_env)
    progress(f"starting PostgreSQL, the broker and the services in {bench.run_dir}")
    # All five start together (each then waits for what it needs: see start_shared).
    shared = bench.start_shared()
    analysis = bench.start_service(
        "analysis", "analysis", bench.new_database("analysis_chaos"),
        {"TAVLA_ANALYSIS_WORKERS": "1"},
    )  # fmt: skip
    wallet_url = bench.new_database("wallet_chaos")
    wallet = bench.start_service("wallet", "wallet", wallet_url, FUNDING_WALLET_ENV)
    game_url = bench.new_database("game_chaos")
    game_env = {
        "TAVLA_WALLET_ADDRESS": wallet.address,
        "TAVLA_ANALYSIS_ADDRESS": analysis.address,
        "TAVLA_GAME_PRESENCE_SILENCE_SECONDS": str(plan.silence_seconds),
        "TAVLA_GAME_PRESENCE_SWEEP_SECONDS": "0.5",
        "TAVLA_GAME_RECONNECT_SECONDS_UNSAFE": str(plan.reconnect_seconds),
    }
    # The first game process starts (and migrates) while the players are funded.
    games = [bench.start_service("game-0", "game", game_url, game_env)]
    asyncio.run(bench.wait_serving(*shared, analysis, wallet))
    progress(f"funding {plan.players} players in USD and PLAY through the wallet")
    funded = asyncio.run(
        fund_players(bench.keys, wallet.address, wallet_url, plan.players, 8, ("USD", "PLAY"))
    )
    asyncio.run(bench.wait_serving(games[0]))
    games += [
        bench.start_service(f"game-{index}", "game", game_url, game_env)
        for index in range(1, plan.replicas)
    ]
    asyncio.run(bench.wait_serving(*games))
    return Stack(bench, plan, wallet, analysis, games, game_url, funded)


# ------------------------------------------------------------------ the faults


def _signal_tree(process: ServiceProcess | int, signum: int) -> None:
    """``signum`` to the process and every process under it (its workers, PostgreSQL's
    backends, which each lead a session of their own); after SIGKILL, until all are gone."""
    root = psutil.Process(process if isinstance(process, int) else process.pid)
    tree = [root, *root.children(recursive=True)]
    for member in tree:
        with contextlib.suppress(psutil.NoSuchProcess):
            member.send_signal(signum)
    if signum == signal.SIGKILL:
        psutil.wait_procs(tree, timeout=10)


def _pause(pid: int, seconds: float) -> None:
    _signal_tree(pid, signal.SIGSTOP)
    try:
        time.sleep(seconds)
    finally:
        _signal_tree(pid, signal.SIGCONT)


def broker_pause(stack: Stack, load: LoadProcess) -> dict[str, Any]:
    broker = stack.bench.broker
    assert broker is not None and broker.process is not None  # started by the stack
    _pause(broker.process.pid, stack.plan.pause_seconds)
    return {}


def postgres_kill(stack: Stack, load: LoadProcess) -> dict[str, Any]:
    postgres = stack.bench.postgres
    assert postgres is not None and postgres.process is not None
    _signal_tree(postgres.process.pid, signal.SIGKILL)
    started = time.monotonic()
    postgres.restart()
    asyncio.run(stack.bench.wait_serving(stack.wallet, stack.analysis, *stack.games))
    return {"restart_s": round(time.monotonic() - started, 2)}


def wallet_kill(stack: Stack, load: LoadProcess) -> dict[str, Any]:
    in_flight = asyncio.run(_await_settlement_in_flight(stack))
    _signal_tree(stack.wallet, signal.SIGKILL)
    stack.wallet = stack.restart(stack.wallet)
    return {"settlements_in_flight": in_flight}


async def _await_settlement_in_flight(stack: Stack) -> int:
    """Until some ending is produced but not yet settled (the wallet is settling it)."""
    give_up = time.monotonic() + IN_FLIGHT_LOOK_SECONDS
    async with (
        checks.database(stack.game_url) as game,
        checks.database(stack.wallet.database_url) as wallet,
    ):
        while True:
            produced = await checks.produced_endings(game)
            settled = await checks.wallet_settlements(wallet)
            waiting = sum(1 for ending in produced if ending.settlement_id not in settled)
            if waiting or time.monotonic() > give_up:
                return waiting
            await asyncio.sleep(0.02)


def game_kill(stack: Stack, load: LoadProcess) -> dict[str, Any]:
    calls = load.await_in_flight(0, IN_FLIGHT_LOOK_SECONDS)
    _signal_tree(stack.games[0], signal.SIGKILL)
    stack.games[0] = stack.restart(stack.games[0])
    return {"calls_in_flight": calls}


def analysis_pause(stack: Stack, load: LoadProcess) -> dict[str, Any]:
    plan = stack.plan
    before = len(load.summary().disconnected)
    # Paused long enough for the quiet players' silence and reconnect windows to run out.
    seconds = max(plan.pause_seconds, plan.silence_seconds + plan.reconnect_seconds + 2.0)
    _signal_tree(stack.analysis, signal.SIGSTOP)
    try:
        load.fall_silent(plan.disconnections)
        time.sleep(seconds)
    finally:
        _signal_tree(stack.analysis, signal.SIGCONT)
    give_up = time.monotonic() + plan.drain_seconds
    disconnected = load.summary().disconnected
    while len(disconnected) - before < plan.disconnections and time.monotonic() < give_up:
        time.sleep(0.2)
        disconnected = load.summary().disconnected
    games = set(disconnected[before:])
    endings = asyncio.run(checks.produced_endings(stack.game_url))
    ended = [e for e in endings if e.game_id in games]
    return {
        "paused_s": round(seconds, 1),
        "disconnections": len(games),
        "by_disconnection": sum(e.disconnection for e in ended),
        "analysed": sum(e.disconnection and e.analysed for e in ended),
        "reasons": sorted(e.reason for e in ended),  # what ended the quiet players' games
    }


Fault = Callable[[Stack, LoadProcess], dict[str, Any]]
FAULTS: tuple[tuple[str, Fault], ...] = (
    ("broker_pause", broker_pause),
    ("postgres_kill", postgres_kill),
    ("wallet_kill", wallet_kill),
    ("game_kill", game_kill),
    ("analysis_pause", analysis_pause),
)


# ------------------------------------------------------------------ the run


def check(stack: Stack, plan: Plan, *, command: bool = False) -> dict[str, Any]:
    """The checks of :mod:`.checks` on every game ended so far; the audit by the
    ``tavla wallet audit`` command itself when ``command``."""
    wallet_url = stack.wallet.database_url
    started = time.monotonic()
    verdict, records = asyncio.run(
        checks.settle_check(stack.game_url, stack.bootstrap, wallet_url, plan.drain_seconds)
    )
    settle_wait = time.monotonic() - started
    audit = (
        checks.audit_command(wallet_url) if command else asyncio.run(checks.audit_now(wallet_url))
    )
    report: dict[str, Any] = {
        "games_settled": verdict.settled,
        "real_money_settled": sum(s.real_money and s.settled > 0 for s in records.settled.values()),
        "lost": verdict.lost,
        "duplicates": verdict.duplicates,
        "audit": audit,
        "games_ended": verdict.games,
        "rejected": verdict.rejected,
        "redelivered": verdict.redelivered,
        # How long the games ended so far took to be settled, counted from the check's start.
        "settle_wait_s": round(settle_wait, 2),
    }
    if verdict.examples:
        report["examples"] = list(verdict.examples)
    return report


async def games_ended(stack: Stack, within: float) -> int:
    """Once some game has ended (else after ``within`` seconds): how many have."""
    give_up = time.monotonic() + within
    async with checks.database(stack.game_url) as game:
        while True:
            ended = len(await checks.produced_endings(game))
            if ended or time.monotonic() > give_up:
                return ended
            await asyncio.sleep(0.5)


def run_fault(
    name: str, fault: Fault, stack: Stack, load: LoadProcess, normal: float
) -> dict[str, Any]:
    """Inject ``fault``, check the games and the books, then measure the recovery (its
    window has mostly passed while the checks ran)."""
    progress(f"{name}: injecting")
    errors_before = load.summary().errors
    details = fault(stack, load)
    recovered_at = time.monotonic()
    report: dict[str, Any] = {"name": name, **check(stack, stack.plan)}
    within = stack.plan.recovery_seconds
    give_up = recovered_at + within + RECOVERY_WINDOW_SECONDS
    while True:
        recovery = recovery_seconds(load.samples(), recovered_at, normal, time.monotonic(), within)
        if recovery is not None or time.monotonic() > give_up:
            break
        time.sleep(0.25)
    after = [s.seconds for s in load.samples() if recovered_at <= s.started < give_up]
    report.update(
        recovery_s=recovery,
        p99_after_ms=round(percentile(after, 0.99) * 1000, 2),
        call_errors=load.summary().errors - errors_before,
        **details,
    )
    progress(f"{name}: {json.dumps(report)}")
    return report


def run(args: argparse.Namespace) -> dict[str, Any]:
    plan = plan_of(args)
    with ExitStack() as exits:
        load = LoadProcess()  # its process imports what it needs while the stack starts
        exits.callback(load.close)
        stack = start_stack(exits, plan)
        load.start(
            LoadConfig(
                addresses=[game.address for game in stack.games],
                wallet_address=stack.wallet.address,
                gateway_addresses=dict(stack.bench.keys.gateway_addresses),
                run_dir=stack.bench.run_dir,
                funded=stack.funded,
                think=plan.think_ms / 1000,
                tables=plan.games,
            )
        )
        progress(f"load: {plan.games} tables, {plan.think_ms:.0f} ms of thought per call")
        try:
            ramp = 4 * plan.think_ms / 1000 + 1.0  # the tables open over this (load.py)
            time.sleep(ramp)
            quiet_from = time.monotonic()
            time.sleep(plan.seconds)
            # The faults meet endings in transit.
            ended = asyncio.run(games_ended(stack, within=plan.drain_seconds))
            quiet = [s for s in load.samples() if s.started >= quiet_from]
            p99 = percentile([s.seconds for s in quiet], 0.99)
            normal = normal_bound(p99)
            progress(f"normal: {len(quiet)} calls, p99 {p99 * 1000:.1f} ms; {ended} games ended")
            faults = [run_fault(name, fault, stack, load, normal) for name, fault in FAULTS]
        finally:
            calls = len(load.samples())
            summary = load.stop()
        progress("load stopped: the final check")
        final = check(stack, plan, command=True)
        progress(f"final: {json.dumps(final)}; stopping the stack")
    return {
        "faults": faults,
        "p99_normal_ms": round(p99 * 1000, 2),
        "normal_bound_ms": round(normal * 1000, 2),
        "final": final,
        "games": plan.games,
        "think_ms": plan.think_ms,
        "pause_seconds": plan.pause_seconds,
        "replicas": plan.replicas,
        "calls": calls,
        "call_errors": summary.errors,
        "first_error": summary.first_error,
    }


def passed(result: dict[str, Any]) -> bool:
    reports = [*result["faults"], result["final"]]
    return all(
        r["lost"] == 0
        and r["duplicates"] == 0
        and r["audit"] == checks.AUDIT_OK
        and r["rejected"] == 0
        for r in reports
    ) and all(r["recovery_s"] is not None for r in result["faults"])


def _handle(args: argparse.Namespace) -> int:
    result = run(args)
    print(json.dumps(result))
    return 0 if passed(result) else 1


def _positive(kind: Callable[[str], float]) -> Callable[[str], float]:
    def parse(text: str) -> float:
        value = kind(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be more than 0, not {text}")
        return value

    return parse


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "chaos",
        help="faults (broker paused, PostgreSQL/wallet/game killed, analysis paused) under "
        "the open-loop game load; prints one JSON line",
        description=(
            "Start PostgreSQL, the broker and the services, play the open-loop game load "
            "(a quarter of the tables in USD) and inject each fault; after each, check that "
            "every finished game was published and settled once, audit the ledger and "
            "measure how soon p99 came back. Prints one JSON line; see docs/chaos.md."
        ),
    )
    parser.add_argument("--short", action="store_true", help="the short form make test runs")
    options = (
        ("--games", int, "concurrent tables (default 200; short 12)"),
        ("--seconds", float, "the quiet window measuring normal p99 (default 30; short 2)"),
        (
            "--pause-seconds",
            float,
            "how long broker and analysis stay paused (default 30; short 3)",
        ),
        ("--think-ms", float, "players' thought per call (default 1000; short 100)"),
    )
    for flag, kind, text in options:
        parser.add_argument(flag, type=_positive(kind), help=text)
    parser.set_defaults(handler=_handle)


__all__ = ["FAULTS", "recovery_seconds", "register", "run", "window_p99"]
