"""The open-loop game load the faults are injected under, with every call's outcome kept.

The players of ``tavla bench game --open-loop`` (:func:`services.game.bench.decide`):
``tables`` tables, each playing money games one after another, every call after
``think`` seconds of thought, a quarter of the tables in USD with both seats'
stakes held through the wallet's ``PlaceHold`` first. Unlike the benchmark, a
table rides a fault out as a client of a real site would: a failed call is
retried after a pause (creating a game and placing a hold carry idempotency
keys, so a retry never makes a second one), and a failed decision re-reads the
game (``GetGame``) before deciding again, so a game whose process died mid-move
goes on from what was committed.

Every game call is kept as a :class:`Sample` (start on the system's monotonic
clock, duration, success) for the recovery measure.

Players' calls go to each process's gateway port with the gateway's certificate,
as Envoy's do, so real-money games are played (a service believes the client
address a real-money call needs only from there).

Disconnections: :meth:`Load.fall_silent` asks some tables, once a play has been
made in their game (a game left before anyone played is cancelled, not settled),
to let the player whose turn it is go quiet while the opponent keeps sending heartbeats; the game
marks the quiet player disconnected after its presence silence, its reconnect
window runs out, and the game ends by disconnection with the analysis service's
shares (:attr:`Load.disconnected` lists those games).

The load plays in a process of its own (:class:`LoadProcess`), which the fault
driver asks over a pipe for the samples so far, for the moment a call is under
way, or for some tables to fall silent.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import random
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, TypeVar

import grpc

from services.game.bench import decide, new_game_request, seat_holds
from services.kit.benchstack import BenchKeys
from tavla.game.v1 import game_pb2, game_pb2_grpc
from tavla.wallet.v1 import wallet_pb2_grpc

USD_SHARE = 4  # every fourth table plays for real money, as in the benchmark
TABLE_PREFIX = "chaos-"  # every table of a run: the checks look only at these
CALL_TIMEOUT_SECONDS = 10.0  # a call to a paused process fails instead of hanging the table
RETRY_PAUSE_SECONDS = 0.2  # at least this long between retries of a failed call
T = TypeVar("T")


@dataclass(frozen=True)
class Sample:
    """One game call: when it started (``time.monotonic``), how long it took, whether it
    succeeded."""

    started: float
    seconds: float
    ok: bool


class _TimedStub:
    """A game stub whose every call is timed, counted in flight and kept as a sample."""

    def __init__(self, load: Load, replica: int) -> None:
        self._load, self._replica = load, replica

    def __getattr__(self, method: str) -> Callable[..., Awaitable[Any]]:
        async def call(request: Any, **kwargs: Any) -> Any:
            return await self._load.call(self._replica, method, request, **kwargs)

        return call


@dataclass
class Load:
    """The players' side: the replicas' stubs, the wallet, the samples."""

    addresses: list[str]
    wallet_address: str
    keys: BenchKeys
    funded: list[str]
    think: float
    samples: list[Sample] = field(default_factory=list)
    errors: int = 0
    first_error: str = ""
    disconnected: list[str] = field(default_factory=list)
    silence_wanted: int = 0
    stopping: bool = False
    in_flight: list[int] = field(default_factory=list)
    _stubs: list[Any] = field(default_factory=list)
    _wallet: Any = None

    # ------------------------------------------------------------ the driver's side

    def fall_silent(self, tables: int) -> None:
        """Ask ``tables`` tables to play their current game out by a disconnection."""
        self.silence_wanted += tables

    async def await_in_flight(self, replica: int, within: float) -> int:
        """Once a call to ``replica`` is under way (or ``within`` seconds passed): how many."""
        give_up = time.monotonic() + within
        while time.monotonic() < give_up:
            if self.in_flight and self.in_flight[replica]:
                break
            await asyncio.sleep(0.001)  # a call lasts milliseconds: look that often
        return self.in_flight[replica] if self.in_flight else 0

    # ------------------------------------------------------------ the players' side

    async def run(self, tables: int) -> None:
        """Play until :attr:`stopping`; tables open over the first think periods."""
        channels = [
            self.keys.channel(address, target="game", caller="matchmaking")
            for address in self.addresses
        ]
        wallet = self.keys.channel(self.wallet_address, target="wallet", caller="matchmaking")
        try:
            self._stubs = [game_pb2_grpc.GameServiceStub(channel) for channel in channels]
            self._wallet = wallet_pb2_grpc.WalletServiceStub(wallet)
            self.in_flight = [0] * len(channels)
            await asyncio.gather(*(self._table(i) for i in range(tables)))
        finally:
            for channel in [*channels, wallet]:
                await channel.close(None)

    async def call(self, replica: int, method: str, request: Any, **kwargs: Any) -> Any:
        index = replica % len(self._stubs)
        self.in_flight[index] += 1
        started = time.monotonic()
        try:
            reply = await getattr(self._stubs[index], method)(
                request, timeout=CALL_TIMEOUT_SECONDS, **kwargs
            )
        except grpc.aio.AioRpcError as error:
            self.samples.append(Sample(started, time.monotonic() - started, False))
            self.errors += 1
            failure = f"{method}: {error.code().name}: {error.details()}"
            self.first_error = self.first_error or failure
            raise
        finally:
            self.in_flight[index] -= 1
        self.samples.append(Sample(started, time.monotonic() - started, True))
        return reply

    async def _table(self, index: int) -> None:
        rng = random.Random(index)
        await asyncio.sleep(rng.uniform(0, 4 * self.think + 0.5))  # players arrive
        usd = index % USD_SHARE == 0
        while not self.stopping:
            game = await self._open_game(rng, usd)
            if game is not None:
                await self._play(game, rng)

    async def _retrying(self, attempt: Callable[[], Awaitable[T]]) -> T | None:
        """``attempt()`` until it succeeds; None once the load is stopping."""
        while not self.stopping:
            try:
                return await attempt()
            except grpc.aio.AioRpcError:
                await asyncio.sleep(max(self.think, RETRY_PAUSE_SECONDS))
        return None

    async def _open_game(self, rng: random.Random, usd: bool) -> game_pb2.Game | None:
        """As matchmaking: the seats' holds (USD) then ``CreateGame``, each retried as is."""
        accounts = tuple(rng.sample(self.funded, 2))
        pair = (accounts[0], accounts[1])
        table_id = f"{TABLE_PREFIX}{'usd' if usd else 'play'}-{uuid.uuid4().hex[:12]}"
        holds: tuple[str, str] | None = ("", "")
        if usd:
            holds = await self._retrying(lambda: seat_holds(self._wallet, table_id, pair))
        if holds is None:
            return None
        request = new_game_request(rng, pair, holds, table_id)
        request.idempotency_key = table_id  # a retry gets the game already made
        replica = rng.getrandbits(8)
        return await self._retrying(lambda: self.call(replica, "CreateGame", request))

    async def _play(self, game: game_pb2.Game, rng: random.Random) -> None:
        players = self.keys.players()
        call = 0
        played = False  # a game nobody has played in is cancelled, not settled, when left
        while game.status == game_pb2.GAME_STATUS_IN_PROGRESS and not self.stopping:
            if played and self.silence_wanted > 0:
                self.silence_wanted -= 1
                await self._disconnect(game)
                return
            await asyncio.sleep(self.think)
            call += 1
            try:
                game, moved = await decide(_TimedStub(self, call), game, rng, players)
                played = played or moved
            except grpc.aio.AioRpcError:
                fresh = await self._reread(game, call)
                if fresh is None:
                    return
                game = fresh

    async def _reread(self, game: game_pb2.Game, call: int) -> game_pb2.Game | None:
        """The game as committed (a failed call may have been applied before its process died)."""
        meta = self.keys.players()(game.awaiting_account_id or game.players[0].account_id)
        request = game_pb2.GetGameRequest(game_id=game.game_id)
        replica = call + 1
        return await self._retrying(lambda: self.call(replica, "GetGame", request, metadata=meta))

    async def _disconnect(self, game: game_pb2.Game) -> None:
        """The awaited player goes quiet; the opponent stays (heartbeats) until the game ends."""
        quiet = game.awaiting_account_id
        present = next(p.account_id for p in game.players if p.account_id != quiet)
        meta = self.keys.players()(present)
        beat = game_pb2.HeartbeatRequest(game_id=game.game_id)
        read = game_pb2.GetGameRequest(game_id=game.game_id)
        call = 0
        while game.status == game_pb2.GAME_STATUS_IN_PROGRESS and not self.stopping:
            await asyncio.sleep(max(self.think, RETRY_PAUSE_SECONDS))
            call += 1
            try:
                await self.call(call, "Heartbeat", beat, metadata=meta)
                game = await self.call(call, "GetGame", read, metadata=meta)
            except grpc.aio.AioRpcError:
                continue  # a fault under way: the next beat tries again
        if game.status != game_pb2.GAME_STATUS_IN_PROGRESS:
            self.disconnected.append(game.game_id)


@dataclass(frozen=True)
class LoadConfig:
    """What the load process needs (picklable: the keys are read again from the run dir)."""

    addresses: list[str]
    wallet_address: str
    gateway_addresses: dict[str, str]  # a process's address -> its gateway port's (mTLS)
    run_dir: Path
    funded: list[str]
    think: float
    tables: int


@dataclass(frozen=True)
class Summary:
    errors: int
    first_error: str
    disconnected: list[str]


class LoadProcess:
    """The load in a process of its own, asked over a pipe.

    Not a thread of the fault driver's: the driver restarts services, and a fork
    (``subprocess`` with a ``preexec_fn``, as the supervisor starts children) while
    other threads are inside gRPC calls can leave the child hung before its exec.
    """

    def __init__(self) -> None:
        """Starts the process, which imports what it plays with (a second or two of CPU)
        and waits for :meth:`start`: made before the stack, it is ready when the stack is."""
        context = multiprocessing.get_context("spawn")
        self._pipe, child = context.Pipe()
        self._process = context.Process(
            target=_serve, args=(child,), name="chaos-load", daemon=True
        )
        self._process.start()
        self._samples: list[Sample] = []

    def start(self, config: LoadConfig, within: float = 60.0) -> None:
        """Play; returns once its channels are open and the tables are opening."""
        self._pipe.send(config)
        if not self._pipe.poll(within):
            raise TimeoutError(f"the load process did not start within {within:.0f}s")
        self._pipe.recv()

    def _ask(self, *command: Any) -> Any:
        self._pipe.send(command)
        return self._pipe.recv()

    def samples(self) -> list[Sample]:
        """Every game call so far."""
        self._samples += self._ask("samples")
        return list(self._samples)

    def summary(self) -> Summary:
        errors, first_error, disconnected = self._ask("summary")
        return Summary(errors, first_error, disconnected)

    def fall_silent(self, tables: int) -> None:
        self._ask("fall_silent", tables)

    def await_in_flight(self, replica: int, within: float) -> int:
        """Once a call to ``replica`` is under way (or ``within`` seconds passed): how many."""
        calls: int = self._ask("await_in_flight", replica, within)
        return calls

    def stop(self, within: float = 30.0) -> Summary:
        self.samples()
        summary = self.summary()
        self._pipe.send(("stop",))
        self._process.join(within)
        self.close()
        return summary

    def close(self) -> None:
        """Gone, whatever it was doing (the run failed before or after it played)."""
        if self._process.is_alive():
            self._process.kill()
        self._process.join()


def _serve(pipe: Connection) -> None:
    config: LoadConfig = pipe.recv()
    asyncio.run(_serve_async(config, pipe))


async def _serve_async(config: LoadConfig, pipe: Connection) -> None:
    """Play, and answer the driver's questions between calls."""
    keys = BenchKeys(config.run_dir)
    # Players' calls go where Envoy's do, the gateway ports: a service believes the client
    # address (and so lets a real-money game be played) only from there.
    keys.gateway_addresses.update(config.gateway_addresses)
    load = Load(
        addresses=config.addresses, wallet_address=config.wallet_address,
        keys=keys, funded=config.funded, think=config.think,
    )  # fmt: skip
    playing = asyncio.create_task(load.run(config.tables))
    pipe.send("started")
    sent = 0
    while True:
        if not pipe.poll():
            await asyncio.sleep(0.005)
            continue
        command, *arguments = pipe.recv()
        if command == "stop":
            load.stopping = True
            await asyncio.wait_for(playing, timeout=2 * CALL_TIMEOUT_SECONDS)
            return
        if command == "samples":
            samples = load.samples[sent:]
            sent += len(samples)
            pipe.send(samples)
        elif command == "summary":
            pipe.send((load.errors, load.first_error, list(load.disconnected)))
        elif command == "fall_silent":
            load.fall_silent(arguments[0])
            pipe.send(None)
        elif command == "await_in_flight":
            pipe.send(await load.await_in_flight(*arguments))


__all__ = ["TABLE_PREFIX", "LoadConfig", "LoadProcess", "Sample", "Summary"]
