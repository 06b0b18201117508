"""``tavla bench platform``: the whole mix on the real stack, measured per service.

The stack (:class:`services.kit.benchstack.BenchStack`, production's processes at
production's log level, one PostgreSQL, the Tansu broker): accounts, geo, analysis
(one worker), ``--replicas`` wallet and game processes, anti-abuse and matchmaking,
each ``tavla serve`` serving its Prometheus metrics. Analysis fetches finished
sessions from the first game process; game process *i* asks wallet process *i*.

The load, ``--games`` tables each playing money games one after another, as the
web client (``web/js/game.js``) plays them:

- seating as matchmaking does it (the load stands in for the lobby): a quarter of
  the tables in USD with both seats' stakes held through the wallet's ``PlaceHold``
  (wallet replicas in turn), then ``CreateGame`` with an idempotency key;
- each player ``--think-ms`` before every decision (roll, move, double 2 % of the time,
  take), each call to the next game replica in turn (Envoy balances per request); with
  ``--resign-after N``, a game not over after N decisions is resigned at the start of a
  turn and the opponent accepts (played out otherwise: random play makes long games);
- each seated player keeps a ``WatchGame`` stream open and sends a ``Heartbeat`` every
  5 s (:data:`HEARTBEAT_SECONDS`, the web client's);
- table chat at :data:`CHAT_PER_GAME_MINUTE` messages a game-minute, each by the player
  about to act;
- and what the services do by themselves: the wallet settles every money game from
  its ``GameEnded``, analysis analyses every finished game (fetching its record from
  the game), anti-abuse consumes every topic, matchmaking rates every result, the game
  re-checks real-money seats' locations with geo (its production interval).

The window: the tables open over the ramp (about one game's length, :attr:`Plan.ramp`), then
``--seconds`` are measured between two readings (:mod:`.readings`). Figures, per
service (replicas added up):

- ``cpu_s_per_1000_game_minutes``: CPU seconds over the game-minutes played in the
  window (a table counts while a game of it is in progress), x 1,000; and
  ``..._over_idle`` the same less what the processes cost with no load
  (``idle_cpu_share_of_core`` per process, read over 10 s before the tables open, 15 s
  after the players' deposits: their pollers and sweeps, a cost per pod rather than per
  game);
- ``db_xacts_per_game``: transactions committed in the service's database over the
  games that ended in the window (``idle_db_xacts_per_s``: with no load, read with the
  idle CPU), and the rows it wrote;
- ``events_per_game``: events its topic received over the games that ended (the
  anti-abuse service's figure is its topic's and the compliance alerts');
- ``p99_ms``: per public method called in the window, from the servers' own
  ``tavla_rpc_duration_seconds`` histograms (linear within a bucket, as Prometheus's
  ``histogram_quantile``);
- ``failed_calls`` (not OK, by method and status) and ``consumer_lag`` at the end
  (records its consumer groups had not applied: a consumer that did not keep up makes
  its CPU figure an underestimate).

Then the load stops and the checks of :mod:`.checks` run on every money game that
ended: each ``GameEnded`` published once and settled by the wallet exactly once, the
ledger audited (``duplicates``, ``lost``, ``audit``). Exit 1 on any failed call, lost
or duplicated settlement or broken audit.

The last line printed is one JSON object::

    {"games", "think_ms", "seconds", "replicas", "game_minutes", "games_ended",
     "minutes_per_game", "calls", "errors", "first_error", "client_p99_ms", ...,
     "services": {name: {"processes", "cpu_s_per_1000_game_minutes",
     "cpu_s_per_1000_game_minutes_over_idle", "idle_cpu_share_of_core",
     "db_xacts_per_game", "idle_db_xacts_per_s", "db_rows_written_per_game",
     "events_per_game", "p99_ms", "failed_calls", "consumer_lag", ...}},
     "database": {"xacts_per_s", "xacts_per_game", "rows_written_per_game",
     "wal_bytes_per_game", ...}, "broker": {"events_per_s", "events_per_game"},
     "settlement": {"games_settled", "lost", "duplicates", "audit", ...}}

``minutes_per_game`` is the game-minutes over the games ended: with the tables' games
at every stage (the ramp), how long a game lasts, which turns a figure per game into
one per game-minute.

docs/capacity.md turns these figures into the sizing of a cluster.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import sys
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

import grpc

from services.chaos import checks, readings
from services.chaos.load import TABLE_PREFIX
from services.game.bench import Chooser, decide, new_game_request, random_play, seat_holds
from services.kit.benchstack import (
    FUNDING_WALLET_ENV,
    REPO_ROOT,
    BenchKeys,
    BenchStack,
    ServiceProcess,
    percentile,
)
from services.kit.devstack.broker import read_topics
from services.kit.devstack.net import free_port
from tavla.game.v1 import game_pb2, game_pb2_grpc
from tavla.wallet.v1 import wallet_pb2_grpc

USD_SHARE = 4  # every fourth table plays for real money
HEARTBEAT_SECONDS = 5.0  # web/js/game.js HEARTBEAT_MS
CHAT_PER_GAME_MINUTE = 1.0  # both players together: a line now and then, not a conversation
# What players say at a table; each player goes through them in turn (moderation refuses a
# player's message repeated, as a person would not repeat it).
CHAT_LINES = (
    "hi", "good luck", "have fun", "nice roll", "well played", "thanks", "unlucky",
    "good game", "what a shot", "close one", "nice double", "take it", "brb",
    "one more?", "that was fast", "ouch", "lovely", "my turn at last", "gg",
)  # fmt: skip
# About how many decisions a money game takes (rolls and moves of both players): the
# ramp spreads the tables' first games over that many think periods.
DECISIONS_PER_GAME = 100
CALL_TIMEOUT_SECONDS = 10.0
DRAIN_SECONDS = 60.0  # how long endings may take to reach the wallet after the load stops
IDLE_SECONDS = 10.0  # each process's CPU with no load is read over this long first,
SETTLE_SECONDS = 15.0  # this long after the players were funded
# Each topic's producer (ARCHITECTURE.md: one topic per area).
TOPIC_OWNERS = {
    "tavla.accounts.v1": "accounts",
    "tavla.game.v1": "game",
    "tavla.matchmaking.v1": "matchmaking",
    "tavla.wallet.v1": "wallet",
    "tavla.geo.v1": "geo",
    "tavla.analysis.v1": "analysis",
    "tavla.antiabuse.v1": "antiabuse",
    "tavla.compliance.alerts.v1": "antiabuse",
}
# A stream's duration is the game's, not a latency: counted (``streams``), not in p99.
STREAMS = frozenset({"WatchGame"})
TOPICS_FILE = REPO_ROOT / "deploy" / "topics.txt"


def progress(message: str) -> None:
    print(f"[bench platform {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------ the stack


@dataclass
class Platform:
    bench: BenchStack
    processes: list[ServiceProcess]
    games: list[ServiceProcess]
    wallets: list[ServiceProcess]
    funded: list[str]

    @property
    def game_url(self) -> str:
        return self.games[0].database_url

    @property
    def wallet_url(self) -> str:
        return self.wallets[0].database_url


def start_platform(exits: ExitStack, replicas: int, players: int) -> Platform:
    """Every service as production runs it, ``replicas`` wallets and games; SERVING."""
    from services.wallet.bench import fund_players

    bench = BenchStack(exits, metrics=True)
    progress(f"starting PostgreSQL, the broker, accounts and geo in {bench.run_dir}")
    accounts, geo = bench.accounts, bench.geo
    game_ports = [free_port() for _ in range(replicas)]
    analysis_port = free_port()
    analysis = bench.start_service(
        "analysis", "analysis", bench.new_database("analysis_platform"),
        {"TAVLA_ANALYSIS_WORKERS": "1", "TAVLA_GAME_ADDRESS": f"127.0.0.1:{game_ports[0]}"},
        port=analysis_port,
    )  # fmt: skip
    wallet_url = bench.new_database("wallet_platform")
    # The first replica of each migrates its database; the others start once it has.
    wallets = [bench.start_service("wallet-0", "wallet", wallet_url, FUNDING_WALLET_ENV)]
    antiabuse = bench.start_service("antiabuse", "antiabuse", bench.new_database("antiabuse_pf"))
    asyncio.run(bench.wait_serving(wallets[0]))
    wallets += [
        bench.start_service(f"wallet-{i}", "wallet", wallet_url, FUNDING_WALLET_ENV)
        for i in range(1, replicas)
    ]
    game_url = bench.new_database("game_platform")

    def game(index: int) -> ServiceProcess:
        env = {
            "TAVLA_WALLET_ADDRESS": wallets[index % len(wallets)].address,
            "TAVLA_ANALYSIS_ADDRESS": f"127.0.0.1:{analysis_port}",
        }
        return bench.start_service(f"game-{index}", "game", game_url, env, port=game_ports[index])

    games = [game(0)]
    asyncio.run(bench.wait_serving(*wallets, games[0]))
    games += [game(index) for index in range(1, replicas)]
    matchmaking = bench.start_service(
        "matchmaking", "matchmaking", bench.new_database("matchmaking_pf"),
        {"TAVLA_WALLET_ADDRESS": wallets[0].address, "TAVLA_GAME_ADDRESS": games[0].address},
    )  # fmt: skip
    processes = [accounts, geo, analysis, *wallets, *games, antiabuse, matchmaking]
    asyncio.run(bench.wait_serving(*processes))
    progress(f"funding {players} players in USD and PLAY through the wallet")
    funded = asyncio.run(
        fund_players(bench.keys, wallets[0].address, wallet_url, players, 8, ("USD", "PLAY"))
    )
    return Platform(bench, processes, games, wallets, funded)


# ------------------------------------------------------------------ the load


@dataclass
class Tally:
    latencies: list[float] = field(default_factory=list)  # the load's calls in the window
    calls: int = 0
    errors: Counter[str] = field(default_factory=Counter)  # method: code -> calls
    first_error: str = ""
    games_opened: int = 0
    chat_lines: int = 0
    streams: int = 0

    def failed(self, method: str, error: grpc.aio.AioRpcError) -> None:
        self.errors[f"{method}:{error.code().name}"] += 1
        self.first_error = self.first_error or f"{method}: {error.code().name}: {error.details()}"


@dataclass
class Load:
    keys: BenchKeys
    funded: list[str]
    think: float
    opens: float  # the window: from here (time.monotonic)...
    closes: float  # ...to here; the tables stop at ``closes``
    games: list[Any] = field(default_factory=list)  # the replicas' stubs
    wallets: list[Any] = field(default_factory=list)
    tally: Tally = field(default_factory=Tally)
    game_seconds: float = 0.0  # in the window, summed over tables
    counter: int = 0
    said: Counter[str] = field(default_factory=Counter)  # account -> lines posted
    resign_after: int = 0  # decisions after which a game is resigned (0: played out)
    choose: Chooser = random_play  # which legal play a player makes

    def _next(self, stubs: list[Any]) -> Any:
        self.counter += 1
        return stubs[self.counter % len(stubs)]

    async def call(self, method: str, request: Any, **kwargs: Any) -> Any:
        """One game call, to the next replica in turn; timed when it starts in the window."""
        started = time.monotonic()
        try:
            reply = await getattr(self._next(self.games), method)(
                request, timeout=CALL_TIMEOUT_SECONDS, **kwargs
            )
        except grpc.aio.AioRpcError as error:
            self.tally.failed(method, error)
            raise
        if self.opens <= started < self.closes:
            self.tally.latencies.append(time.monotonic() - started)
            self.tally.calls += 1
        return reply

    def in_window(self, started: float, ended: float) -> None:
        self.game_seconds += max(0.0, min(ended, self.closes) - max(started, self.opens))

    async def table(self, index: int) -> None:
        rng = random.Random(index)
        await asyncio.sleep(rng.uniform(0.0, max(0.0, self.opens - time.monotonic())))
        usd = index % USD_SHARE == 0
        while time.monotonic() < self.closes:
            try:
                game = await self._open(rng, usd)
            except grpc.aio.AioRpcError as error:
                self.tally.failed("seating", error)
                await asyncio.sleep(self.think)
                continue
            started = time.monotonic()
            try:
                await self._play(game, rng)
            finally:
                self.in_window(started, time.monotonic())

    async def _open(self, rng: random.Random, usd: bool) -> game_pb2.Game:
        first, second = rng.sample(self.funded, 2)
        table_id = f"{TABLE_PREFIX}platform-{'usd' if usd else 'play'}-{uuid.uuid4().hex[:12]}"
        holds = ("", "")
        if usd:
            holds = await seat_holds(self._next(self.wallets), table_id, (first, second))
        request = new_game_request(rng, (first, second), holds, table_id)
        request.idempotency_key = table_id
        game: game_pb2.Game = await self.call("CreateGame", request)
        self.tally.games_opened += 1
        return game

    async def play(self, game: game_pb2.Game, rng: random.Random) -> None:
        """``game`` to its end as a table's two players play it (watching, heartbeats, chat,
        ``resign_after``); also the players of ``tavla bench tournaments``."""
        await self._play(game, rng)

    async def _play(self, game: game_pb2.Game, rng: random.Random) -> None:
        async with self._present(game):
            chat = CHAT_PER_GAME_MINUTE * self.think / 60.0  # per decision
            players = self.keys.players()
            decisions = 0
            while game.status == game_pb2.GAME_STATUS_IN_PROGRESS:
                await asyncio.sleep(self.think)
                if time.monotonic() >= self.closes:
                    return
                if rng.random() < chat:
                    await self._chat(game)
                decisions += 1
                try:
                    game = await self._decide(game, rng, decisions)
                except grpc.aio.AioRpcError:  # counted; the game as committed, and on
                    read = game_pb2.GetGameRequest(game_id=game.game_id)
                    meta = players(game.awaiting_account_id or game.players[0].account_id)
                    try:
                        game = await self.call("GetGame", read, metadata=meta)
                    except grpc.aio.AioRpcError:
                        return  # the table leaves this game and opens another

    async def _decide(self, game: game_pb2.Game, rng: random.Random, decisions: int) -> Any:
        """The awaited player's decision (:func:`services.game.bench.decide`); past
        ``resign_after`` decisions, a resignation at the start of a turn, which the opponent
        accepts."""
        players = self.keys.players()
        gid, version = game.game_id, game.version
        meta = players(game.awaiting_account_id)
        if game.phase == game_pb2.TURN_PHASE_RESIGN_RESPONSE:
            accept = game_pb2.AcceptResignRequest(game_id=gid, expected_version=version)
            return await self.call("AcceptResign", accept, metadata=meta)
        if (
            self.resign_after
            and decisions > self.resign_after
            and game.phase == game_pb2.TURN_PHASE_ROLL_OR_DOUBLE
        ):
            resign = game_pb2.ResignRequest(
                game_id=gid, expected_version=version, level=game_pb2.RESULT_TYPE_SINGLE
            )
            return await self.call("Resign", resign, metadata=meta)
        played, _ = await decide(_Calls(self), game, rng, players, self.choose)
        return played

    async def _chat(self, game: game_pb2.Game) -> None:
        speaker = game.awaiting_account_id
        line = CHAT_LINES[self.said[speaker] % len(CHAT_LINES)]
        self.said[speaker] += 1
        request = game_pb2.PostChatMessageRequest(game_id=game.game_id, text=line)
        with contextlib.suppress(grpc.aio.AioRpcError):  # counted by call()
            await self.call("PostChatMessage", request, metadata=self.keys.players()(speaker))
            self.tally.chat_lines += 1

    @contextlib.asynccontextmanager
    async def _present(self, game: game_pb2.Game) -> AsyncIterator[None]:
        """Both seats watch the game and send heartbeats while it is played."""
        seats = [player.account_id for player in game.players]
        tasks = [asyncio.create_task(self._watch(game.game_id, seat)) for seat in seats]
        tasks += [asyncio.create_task(self._heartbeats(game.game_id, seat)) for seat in seats]
        try:
            yield
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _watch(self, game_id: str, account: str) -> None:
        request = game_pb2.WatchGameRequest(game_id=game_id)
        stream = self._next(self.games).WatchGame(
            request, metadata=self.keys.players()(account)
        )
        self.tally.streams += 1
        try:
            async for _ in stream:
                pass
        except grpc.aio.AioRpcError as error:
            if error.code() != grpc.StatusCode.CANCELLED:
                self.tally.failed("WatchGame", error)
        finally:
            stream.cancel()

    async def _heartbeats(self, game_id: str, account: str) -> None:
        beat = game_pb2.HeartbeatRequest(game_id=game_id)
        meta = self.keys.players()(account)
        await asyncio.sleep(random.uniform(0.0, HEARTBEAT_SECONDS))
        while True:
            with contextlib.suppress(grpc.aio.AioRpcError):  # counted by call()
                await self.call("Heartbeat", beat, metadata=meta)
            await asyncio.sleep(HEARTBEAT_SECONDS)


class _Calls:
    """A game stub for :func:`services.game.bench.decide` whose calls go through the load."""

    def __init__(self, load: Load) -> None:
        self._load = load

    def __getattr__(self, method: str) -> Callable[..., Awaitable[Any]]:
        async def call(request: Any, **kwargs: Any) -> Any:
            return await self._load.call(method, request, **kwargs)

        return call


# ------------------------------------------------------------------ the run


@dataclass(frozen=True)
class Plan:
    games: int
    think_ms: float
    seconds: float
    replicas: int

    ramp_seconds: float | None = None
    resign_after: int = 0

    @property
    def ramp(self) -> float:
        """Tables open at random moments over about one game's length, so that by the window
        their games are at every stage and end at a steady rate (not all together)."""
        if self.ramp_seconds is not None:
            return self.ramp_seconds
        return max(2.0, DECISIONS_PER_GAME * self.think_ms / 1000)

    @property
    def players(self) -> int:
        return max(24, min(2 * self.games, 400))


@dataclass
class Window:
    load: Load
    first: readings.Reading
    last: readings.Reading
    games_ended: int  # GameEnded committed by the game between the two readings
    client_cpu: float  # CPU seconds the load itself used in between (it shares the machine)
    idle: dict[str, float]  # process name -> its share of a core with no load (before the tables)
    idle_xacts: dict[str, float]  # database -> transactions a second with no load


def _delta(first: dict[str, int], last: dict[str, int], key: str) -> int:
    return last.get(key, 0) - first.get(key, 0)


async def _ending_ids(game_url: str) -> set[str]:
    return {ending.event_id for ending in await checks.produced_endings(game_url)}


async def _measure(platform: Platform, plan: Plan) -> Window:
    bench = platform.bench
    topics = [spec.name for spec in read_topics(TOPICS_FILE)]
    processes = {p.name: (p.pid, p.metrics_port) for p in platform.processes}
    keys = bench.keys
    channels = [
        keys.channel(p.address, target="game", caller="matchmaking") for p in platform.games
    ]
    channels += [
        keys.channel(p.address, target="wallet", caller="matchmaking") for p in platform.wallets
    ]
    try:
        await asyncio.sleep(SETTLE_SECONDS)  # the consumers done with the funding's events
        idle_from = {name: readings.process_cpu(pid) for name, (pid, _) in processes.items()}
        idle_counts = await readings.database_counts(bench.server_url)
        await asyncio.sleep(IDLE_SECONDS)
        idle = {
            name: (readings.process_cpu(pid) - idle_from[name]) / IDLE_SECONDS
            for name, (pid, _) in processes.items()
        }
        idle_xacts = {
            database: _delta(idle_counts.xacts, counts.xacts, database) / IDLE_SECONDS
            for counts in [await readings.database_counts(bench.server_url)]
            for database in counts.xacts
        }
        opens = time.monotonic() + plan.ramp
        load = Load(
            keys=keys, funded=platform.funded, think=plan.think_ms / 1000,
            opens=opens, closes=opens + plan.seconds, resign_after=plan.resign_after,
            games=[game_pb2_grpc.GameServiceStub(c) for c in channels[: len(platform.games)]],
            wallets=[wallet_pb2_grpc.WalletServiceStub(c) for c in channels[len(platform.games) :]],
        )  # fmt: skip
        tables = asyncio.gather(*(load.table(index) for index in range(plan.games)))
        await asyncio.sleep(max(0.0, opens - time.monotonic()))
        ended_before = await _ending_ids(platform.game_url)
        first = await readings.read(
            time.monotonic(), processes, bench.server_url, bench.bootstrap, topics
        )
        # The load runs in this process; the services, PostgreSQL and the broker are its
        # children, so only this process's own time is the client's.
        client_before = time.process_time()
        await asyncio.sleep(max(0.0, load.closes - time.monotonic()))
        client_cpu = time.process_time() - client_before
        last = await readings.read(
            time.monotonic(), processes, bench.server_url, bench.bootstrap, topics
        )
        ended = len(await _ending_ids(platform.game_url) - ended_before)
        await tables
    finally:
        for channel in channels:
            await channel.close(None)
    return Window(load, first, last, ended, client_cpu, idle, idle_xacts)


def figures(plan: Plan, platform: Platform, window: Window) -> dict[str, Any]:
    """The JSON line's figures from two readings (see the module's docstring)."""
    load, first, last, games_ended = window.load, window.first, window.last, window.games_ended
    seconds = last.at - first.at
    game_minutes = load.game_seconds / 60.0
    per_game = max(games_ended, 1)
    databases = {p.service: p.database_url.rsplit("/", 1)[-1] for p in platform.processes}
    services: dict[str, Any] = {}
    for service in dict.fromkeys(p.service for p in platform.processes):
        names = [p.name for p in platform.processes if p.service == service]
        cpu = sum(last.cpu[name] - first.cpu[name] for name in names)
        idle = sum(window.idle[name] for name in names)  # what the processes cost unloaded
        database = databases[service]
        xacts = _delta(first.database.xacts, last.database.xacts, database)
        written = _delta(first.database.rows_written, last.database.rows_written, database)
        events = sum(
            last.offsets.get(topic, 0) - first.offsets.get(topic, 0)
            for topic, owner in TOPIC_OWNERS.items()
            if owner == service
        )
        before = readings.merge(first.scrapes[name] for name in names)
        after = readings.merge(last.scrapes[name] for name in names)
        calls, failures = readings.calls_and_failures(before, after)
        services[service] = {
            "processes": len(names),
            "cpu_s_per_1000_game_minutes": round(cpu / max(game_minutes, 1e-9) * 1000, 2),
            "cpu_s_per_1000_game_minutes_over_idle": round(
                max(0.0, cpu - idle * seconds) / max(game_minutes, 1e-9) * 1000, 2
            ),
            "cpu_share_of_core": round(cpu / seconds, 3),
            "idle_cpu_share_of_core": round(idle / len(names), 4),  # per process
            "db_xacts_per_game": round(xacts / per_game, 2),
            # Its pollers' transactions with no load (a cost per process, not per game).
            "idle_db_xacts_per_s": round(window.idle_xacts.get(database, 0.0), 1),
            "db_rows_written_per_game": round(written / per_game, 2),
            "events_per_game": round(events / per_game, 2),
            "calls_per_s": round(calls / seconds, 1),
            "p99_ms": {
                method: p99
                for method, p99 in readings.latency_p99_ms(before, after).items()
                if method not in STREAMS
            },
            "failed_calls": failures,
            "consumer_lag": int(after.lag),
        }
    ours = set(databases.values())
    xacts = sum(_delta(first.database.xacts, last.database.xacts, db) for db in ours)
    rows_before, rows_after = first.database.rows_written, last.database.rows_written
    written = sum(_delta(rows_before, rows_after, db) for db in ours)
    wal = last.database.wal_bytes - first.database.wal_bytes
    events = sum(last.offsets.get(t, 0) - first.offsets.get(t, 0) for t in TOPIC_OWNERS)
    return {
        "games": plan.games,
        "think_ms": plan.think_ms,
        "seconds": round(seconds, 1),
        "replicas": plan.replicas,
        "game_minutes": round(game_minutes, 2),
        "games_ended": games_ended,
        # Steady state: the tables' games at every stage, so a game lasts this long.
        "minutes_per_game": round(game_minutes / games_ended, 2) if games_ended else None,
        "calls": load.tally.calls,
        "client_p99_ms": round(percentile(load.tally.latencies, 0.99) * 1000, 2),
        "client_cpu_share_of_core": round(window.client_cpu / seconds, 3),
        "games_opened": load.tally.games_opened,
        "streams": load.tally.streams,
        "chat_lines": load.tally.chat_lines,
        "errors": sum(load.tally.errors.values()),
        "failed": dict(load.tally.errors),
        "first_error": load.tally.first_error,
        "services": services,
        "database": {
            "xacts_per_s": round(xacts / seconds, 1),
            "xacts_per_game": round(xacts / per_game, 2),
            "rows_written_per_game": round(written / per_game, 2),
            "wal_bytes_per_game": round(wal / per_game),
            "wal_bytes_per_s": round(wal / seconds),
        },
        "broker": {
            "events_per_s": round(events / seconds, 1),
            "events_per_game": round(events / per_game, 2),
        },
    }


def run(plan: Plan) -> dict[str, Any]:
    with ExitStack() as exits:
        platform = start_platform(exits, plan.replicas, plan.players)
        progress(
            f"load: {plan.games} tables, {plan.think_ms:.0f} ms of thought, ramp "
            f"{plan.ramp:.0f} s, window {plan.seconds:.0f} s, {plan.replicas} game and wallet "
            "replicas"
        )
        result = figures(plan, platform, asyncio.run(_measure(platform, plan)))
        progress("load stopped: checking every money game was settled once")
        verdict, records = asyncio.run(
            checks.settle_check(
                platform.game_url, platform.bench.bootstrap, platform.wallet_url, DRAIN_SECONDS
            )
        )
        result["settlement"] = {
            "games_settled": verdict.settled,
            "real_money_settled": sum(
                s.real_money and s.settled > 0 for s in records.settled.values()
            ),
            "lost": verdict.lost,
            "duplicates": verdict.duplicates,
            "rejected": verdict.rejected,
            "redelivered": verdict.redelivered,
            "audit": asyncio.run(checks.audit_now(platform.wallet_url)),
        }
        progress("stopping the stack")
    return result


def passed(result: dict[str, Any]) -> bool:
    settlement = result["settlement"]
    return bool(
        result["errors"] == 0
        and settlement["lost"] == 0
        and settlement["duplicates"] == 0
        and settlement["rejected"] == 0
        and settlement["audit"] == checks.AUDIT_OK
    )


def _handle(args: argparse.Namespace) -> int:
    plan = Plan(
        args.games, args.think_ms, args.seconds, args.replicas, args.ramp_seconds,
        args.resign_after,
    )  # fmt: skip
    result = run(plan)
    print(json.dumps(result), flush=True)
    return 0 if passed(result) else 1


def _count(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {text}")
    return value


def _amount(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, not {text}")
    return value


def register_bench(bench_subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``platform`` to the ``tavla bench`` command."""
    parser = bench_subparsers.add_parser(
        "platform",
        help="the whole mix on the real stack: per service CPU, database, events, p99",
        description=(
            "Start every service, play --games tables as the web client does (a quarter in "
            "USD with holds, chat, heartbeats, watch streams) with settlement, analysis, "
            "anti-abuse, ratings and geo re-checks behind, and print per service CPU seconds "
            "per 1,000 game-minutes, database transactions and events per game and p99 per "
            "method as one JSON line; see docs/capacity.md."
        ),
    )
    parser.add_argument("--games", type=_count, default=100,
                        help="concurrent tables (default 100)")  # fmt: skip
    parser.add_argument("--think-ms", type=_amount, default=2000.0,
                        help="players' thought per decision (default 2000)")  # fmt: skip
    parser.add_argument("--seconds", type=_amount, default=120.0,
                        help="the measured window (default 120)")  # fmt: skip
    parser.add_argument("--replicas", type=_count, default=1,
                        help="game and wallet processes each (default 1)")  # fmt: skip
    parser.add_argument("--ramp-seconds", type=_amount,
                        help="tables open over this long before the window (default: about "
                        f"one game, {DECISIONS_PER_GAME} x think)")  # fmt: skip
    parser.add_argument("--resign-after", type=_count, default=0, metavar="DECISIONS",
                        help="a game not over after this many decisions is resigned at the "
                        "start of a turn (default: played out)")  # fmt: skip
    parser.set_defaults(handler=_handle)


__all__ = ["Plan", "figures", "passed", "register_bench", "run"]
