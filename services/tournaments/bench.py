"""``tavla bench tournaments``: a scheduled knockout of ``--players`` on the real services,
from registration to the payout, checked and measured.

The stack (:class:`services.kit.benchstack.BenchStack`, production's processes at
production's log level, one PostgreSQL, the Tansu broker): accounts, geo, a wallet (the
sandbox provider players deposit bench dollars through), a game and the tournaments
service, each its own ``tavla serve`` process.

The event, as players and an operator make it:

- every player deposits USD through the wallet (:func:`services.wallet.bench.fund_players`);
- the operator creates a scheduled USD knockout with ``CreateTournament`` under the ``ops``
  service credential (as ``tavla tournament create`` does): buy-in :data:`BUY_IN`, fee
  :data:`FEE`, the ``standard`` prize table, matches to :data:`MATCH_LENGTH` point in every
  round (``domain/rules.py`` allows 1 to 25), the ``standard`` clock, minimum and maximum
  entrants ``--players``, registration closing once every player has had time to register
  (:func:`registration_seconds`) and the start :data:`START_AFTER_SECONDS` later;
- every player calls ``Register`` with their access token and a Malta address, so geo is
  asked and both holds are placed as for any player;
- the driver closes registration, draws the seating, takes the fees and creates each round's
  games through the game service; one lobby viewer polls ``GetTournament`` every
  :data:`POLL_SECONDS` (as the web client's tournament page does) and each match's two
  players play its game as ``tavla bench platform``'s tables do
  (:meth:`services.chaos.platform.Load.play`: both watch the game and send heartbeats, each
  decision by :func:`services.game.bench.decide`) to its end: each roll, each double and
  take the script makes, and each play the legal play a simple player makes
  (:func:`services.game.bench.simple_play`: about 50 rolls a game, as games between people
  take; random legal plays take about twice as many). Matches are to :data:`MATCH_LENGTH`
  point, so an event of 1,023 matches stays within minutes.

Checked once the tournament is FINISHED (paid), independently of the code under test:

- ``bracket_ok``: every entrant seated once; ``rounds`` = ceil(log2 players); every match
  finished by play (a bye aside) with a winner from its seats, each round's winners exactly
  the next round's players, every entrant but one out exactly once, the final's winner the
  champion, and one ``MatchDecided`` in the tournaments service's outbox per played match;
- ``payout_ok``: each player's balance now (by ``GetBalances``, as the player) against
  their balance before registering: nothing left held, the fee gone, and the prize their
  finish earns by the published ``standard`` table (:data:`STANDARD_SHARES`, copied from the
  service README by hand) on the pool of ``players x BUY_IN``: ``floor(pool x share /
  10000)`` per paid player and what is left over to the champion; and the fees, in the
  wallet's ledger, the house's revenue (``TOURNAMENT_FEE`` transfers, ``players x FEE``);
- ``audit``: the wallet's audit (``tavla wallet audit``'s check), ``"ok"`` when clean.

Measured from the ``CreateTournament`` to the payout: each process's CPU seconds (user
plus system, :func:`services.chaos.readings.process_cpu`), per played match, and the
tournaments service's over the game's (``cpu.ratio``; goal under :data:`GOAL_CPU_RATIO`).
The tournaments figure includes registration, the service's fixed cost per second while
registration is open and the lobby's polls; ``play_*`` is the same from the last registration to the
payout. ``game_calls_per_match``: the players' calls to the game (rolls, plays, cube,
heartbeats, chat, reads) per match, what the game's CPU per match pays for.

The last line printed is one JSON object::

    {"players", "matches", "rounds", "wall_s", "bracket_ok", "payout_ok", "audit",
     "registered", "bracket_faults", "errors", "first_error", "game_calls_per_match",
     "cpu": {"tournaments_s",
     "game_s", "tournaments_s_per_match", "game_s_per_match", "ratio", "play_tournaments_s",
     "play_game_s", "play_ratio", "goal_ratio"}}

Exit status 1 unless bracket, payout and audit all pass.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import heapq
import itertools
import json
import math
import random
import sys
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import grpc
from google.protobuf.timestamp_pb2 import Timestamp
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from services.chaos import checks, readings
from services.chaos.platform import Load
from services.game.bench import simple_play
from services.kit.benchstack import FUNDING_WALLET_ENV, BenchKeys, BenchStack, ServiceProcess
from services.wallet.domain.ledger import TransferCode
from tavla.game.v1 import game_pb2, game_pb2_grpc
from tavla.tournaments.v1 import events_pb2, tournaments_pb2, tournaments_pb2_grpc
from tavla.wallet.v1 import wallet_pb2, wallet_pb2_grpc

CURRENCY = "USD"
BUY_IN, FEE = 1_001, 99  # minor units: an odd pool, so the remainder rule is exercised
MATCH_LENGTH = 1
THINK_SECONDS = 0.05  # before each decision
POLL_SECONDS = 1.0
TABLE_ATTEMPTS = 30  # a table's first read of its game, a second apart
RETRIED = (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.UNAVAILABLE)
REGISTER_CLIENTS = 16  # players registering at once
# The players' game calls in flight at once (:class:`PacedGames`): enough to keep the game
# service busy on a loaded machine, where a call spends most of its time waiting for the
# database (16 served a third of the calls a second that 64 did), few enough that none
# waits in the game's queue past its deadline (1,024 players sent over a thousand at once).
GAME_CALLS_IN_FLIGHT = 64
# Served after every decision waiting: an open WatchGame stream already keeps a seat
# present, so a late heartbeat costs nobody a match, a late move can. (A chat line is
# said between a table's decisions, in turn with them, so it is never sent after the end.)
BACKGROUND_CALLS = frozenset({"Heartbeat"})
START_AFTER_SECONDS = 2.0  # from registration's close to the start
GOAL_CPU_RATIO = 0.05
FINISH_SECONDS_PER_ROUND = 300.0  # the run gives up after this long a round
BASIS_POINTS = 10_000
# The published "standard" table (services/tournaments/README.md, "Prize tables and
# payouts"), in basis points per finish, copied by hand: bracket size -> the share of the
# champion, of the runner-up, then of each semi-final loser, quarter-final loser, ...
STANDARD_SHARES: dict[int, tuple[int, ...]] = {
    2: (10_000,),
    4: (7_000, 3_000),
    8: (6_500, 3_500),
    16: (5_000, 2_500, 1_250),
    32: (4_000, 2_000, 1_000, 500),
    64: (3_000, 1_800, 900, 450, 200),
    128: (2_500, 1_500, 800, 400, 200, 75),
    256: (2_260, 1_300, 700, 350, 175, 80, 30),
    512: (1_992, 1_200, 650, 325, 160, 75, 30, 12),
    1024: (1_812, 1_100, 600, 300, 150, 70, 30, 12, 5),
}


def progress(message: str) -> None:
    print(f"[bench tournaments {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr,
          flush=True)  # fmt: skip


def registration_seconds(players: int) -> float:
    """How long registration stays open: time for every player on a busy machine."""
    return 20.0 + 0.25 * players


def _stamp(moment: datetime) -> Timestamp:
    value = Timestamp()
    value.FromDatetime(moment)
    return value


def create_request(players: int, now: datetime) -> tournaments_pb2.CreateTournamentRequest:
    closes = now + timedelta(seconds=registration_seconds(players))
    return tournaments_pb2.CreateTournamentRequest(
        name=f"Bench knockout {players}",
        rules=tournaments_pb2.Rules(
            scheduled=tournaments_pb2.Scheduled(
                registration_opens_at=_stamp(now - timedelta(minutes=1)),
                registration_closes_at=_stamp(closes),
                starts_at=_stamp(closes + timedelta(seconds=START_AFTER_SECONDS)),
                min_entrants=players,
                max_entrants=players,
            ),
            match_lengths=[MATCH_LENGTH],
            clock="standard",
            currency=CURRENCY,
            buy_in=BUY_IN,
            entry_fee=FEE,
            prize_table="standard",
        ),
        idempotency_key=uuid.uuid4().hex,
    )


# ------------------------------------------------------------------ the checks


def expected_prizes(
    bracket: Sequence[tournaments_pb2.Match], entrants: Sequence[str], pool: int
) -> dict[str, int]:
    """Each entrant's prize by the published table, from where they went out: the loser of
    round r of R finishes in group R - r + 1 (1: runner-up, 2: semi-finals, ...)."""
    rounds = max(m.round for m in bracket)
    shares = STANDARD_SHARES[2**rounds]
    group = {player: 0 for player in entrants}  # 0: the champion, never beaten
    for match in bracket:
        if match.decision != "bye":
            loser = next(p for p in match.players if p != match.winner_account_id)
            group[loser] = rounds - match.round + 1
    prizes = {
        player: pool * shares[g] // BASIS_POINTS if g < len(shares) else 0
        for player, g in group.items()
    }
    [champion] = [player for player, g in group.items() if g == 0]
    prizes[champion] += pool - sum(prizes.values())
    return prizes


def bracket_faults(
    tournament: tournaments_pb2.Tournament, entrants: Sequence[str], decided: Counter[str]
) -> list[str]:
    """What is wrong with the finished bracket (nothing when it is right)."""
    faults: list[str] = []
    bracket = list(tournament.bracket)
    if sorted(tournament.seating) != sorted(entrants):
        faults.append("the seating is not the entrants, each once")
    rounds = max((m.round for m in bracket), default=0)
    if rounds != math.ceil(math.log2(len(entrants))):
        faults.append(f"{rounds} rounds for {len(entrants)} entrants")
    played = [m for m in bracket if m.decision != "bye"]
    if len(played) != len(entrants) - 1:
        faults.append(f"{len(played)} matches played for {len(entrants)} entrants")
    for match in bracket:
        if match.state != tournaments_pb2.MATCH_STATE_FINISHED:
            faults.append(f"{match.match_id} is not finished")
        elif match.winner_account_id not in match.players:
            faults.append(f"{match.match_id} won by a player not in it")
        elif match.decision not in ("played", "bye"):
            faults.append(f"{match.match_id} decided by {match.decision}")
    for match in played:
        if decided[match.match_id] != 1:
            faults.append(f"{match.match_id} decided {decided[match.match_id]} times")
    for number in range(1, rounds):
        winners = {m.winner_account_id for m in bracket if m.round == number}
        following = {p for m in bracket if m.round == number + 1 for p in m.players}
        if winners != following:
            faults.append(f"round {number}'s winners are not round {number + 1}'s players")
    losses = Counter(p for m in played for p in m.players if p != m.winner_account_id)
    unbeaten = [p for p in entrants if losses[p] == 0]
    if any(count != 1 for count in losses.values()) or len(unbeaten) != 1:
        faults.append("not every entrant but one went out exactly once")
    final = [m for m in bracket if m.round == rounds]
    if len(final) != 1 or unbeaten != [final[0].winner_account_id]:
        faults.append("the champion is not the final's winner")
    return faults


_DECIDED = text("SELECT payload FROM outbox WHERE key = :key AND ce_type LIKE '%.MatchDecided'")
_FEES = text(
    "SELECT coalesce(sum(amount), 0) FROM transfers WHERE code = :code AND reference = :ref"
)


async def decided_matches(tournaments_url: str, tournament_id: str) -> Counter[str]:
    """How many ``MatchDecided`` the tournaments service recorded per match."""
    engine = create_async_engine(tournaments_url)
    try:
        async with engine.connect() as connection:
            rows = await connection.execute(_DECIDED, {"key": tournament_id})
            payloads = [bytes(row.payload) for row in rows]
    finally:
        await engine.dispose()
    return Counter(events_pb2.MatchDecided.FromString(p).match_id for p in payloads)


async def house_fees(wallet_url: str, tournament_id: str) -> int:
    engine = create_async_engine(wallet_url)
    try:
        async with engine.connect() as connection:
            ref = f"table:{tournament_id}"
            fees = await connection.scalar(_FEES, {"code": TransferCode.TOURNAMENT_FEE, "ref": ref})
    finally:
        await engine.dispose()
    return int(fees or 0)


# ------------------------------------------------------------------ the players


class CallSlots:
    """At most ``limit`` calls in flight; a freed slot goes to the waiting call of the
    lowest ``priority``, then the earliest."""

    def __init__(self, limit: int) -> None:
        self._free = limit
        self._waiting: list[tuple[int, int, asyncio.Future[None]]] = []
        self._arrivals = itertools.count()

    @contextlib.asynccontextmanager
    async def slot(self, priority: int) -> AsyncIterator[None]:
        if self._free > 0 and not self._waiting:
            self._free -= 1
        else:
            turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            heapq.heappush(self._waiting, (priority, next(self._arrivals), turn))
            try:
                await turn
            except asyncio.CancelledError:
                if turn.done() and not turn.cancelled():
                    self._release()  # handed the slot as it was cancelled: pass it on
                raise
        try:
            yield
        finally:
            self._release()

    def _release(self) -> None:
        while self._waiting:
            _, _, turn = heapq.heappop(self._waiting)
            if not turn.done():
                turn.set_result(None)  # the slot passes straight to it
                return
        self._free += 1


class PacedGames:
    """The players' game stub, their unary calls through :class:`CallSlots`.

    A load generator that sends every table's call at once overloads the service it
    measures: calls queue in the game process past their deadline, fail, and are sent
    again, and the failures (not the game) decide matches. Here a call waits on the
    client until a slot is free, and its deadline runs from when it is sent. Decisions
    come before heartbeats (:data:`BACKGROUND_CALLS`). WatchGame streams are
    not limited: they stay open for a whole game.
    """

    def __init__(self, stub: Any, slots: CallSlots) -> None:
        self._stub = stub
        self._slots = slots

    def WatchGame(self, *args: Any, **kwargs: Any) -> Any:
        return self._stub.WatchGame(*args, **kwargs)

    def __getattr__(self, method: str) -> Callable[..., Awaitable[Any]]:
        send = getattr(self._stub, method)
        priority = 1 if method in BACKGROUND_CALLS else 0

        async def paced(request: Any, **kwargs: Any) -> Any:
            async with self._slots.slot(priority):
                return await send(request, **kwargs)

        return paced


@dataclass
class Event:
    keys: BenchKeys
    lobby: Any  # a TournamentsServiceStub on an aio channel (players' calls)
    wallet: Any  # a WalletServiceStub on an aio channel
    load: Load
    errors: Counter[str] = field(default_factory=Counter)
    first_error: str = ""

    def failed(self, what: str, error: grpc.aio.AioRpcError) -> None:
        self.errors[f"{what}:{error.code().name}"] += 1
        self.first_error = self.first_error or f"{what}: {error.code().name}: {error.details()}"

    async def balances(self, players: Sequence[str]) -> dict[str, tuple[int, int]]:
        """(available, held) in USD of each player, asked as the player."""
        as_player = self.keys.players()
        asking = asyncio.Semaphore(REGISTER_CLIENTS)  # 1,024 calls at once: some cancelled

        async def one(player: str) -> tuple[int, int]:
            async with asking:
                reply = await self.wallet.GetBalances(
                    wallet_pb2.GetBalancesRequest(), metadata=as_player(player)
                )
            for item in reply.balances:
                if item.currency == CURRENCY:
                    return item.available.minor_units, item.held.minor_units
            return 0, 0

        return dict(zip(players, await asyncio.gather(*(one(p) for p in players)), strict=True))

    async def register(self, tournament_id: str, players: Sequence[str]) -> int:
        as_player = self.keys.players()
        queue = iter(players)
        registered = 0

        async def worker() -> None:
            nonlocal registered
            for player in queue:
                request = tournaments_pb2.RegisterRequest(tournament_id=tournament_id)
                try:
                    await self.lobby.Register(request, metadata=as_player(player))
                    registered += 1
                except grpc.aio.AioRpcError as error:
                    self.failed("Register", error)

        await asyncio.gather(*(worker() for _ in range(REGISTER_CLIENTS)))
        return registered

    async def play_out(
        self, tournament_id: str, viewer: str, give_up: float
    ) -> tournaments_pb2.Tournament:
        """Polls the lobby as ``viewer``; plays each match's game once it is created, until
        the tournament is no longer registering or running (or ``give_up``, monotonic)."""
        as_viewer = self.keys.players()(viewer)
        request = tournaments_pb2.GetTournamentRequest(tournament_id=tournament_id)
        started: set[str] = set()
        tables: list[asyncio.Task[None]] = []
        current_round = 0
        while True:
            tournament: tournaments_pb2.Tournament = await self.lobby.GetTournament(
                request, metadata=as_viewer
            )
            going = (tournaments_pb2.STATUS_REGISTERING, tournaments_pb2.STATUS_RUNNING)
            if tournament.status not in going or time.monotonic() > give_up:
                break
            for match in tournament.bracket:
                playing = match.state == tournaments_pb2.MATCH_STATE_PLAYING
                if playing and match.game_id and match.game_id not in started:
                    started.add(match.game_id)
                    tables.append(asyncio.create_task(self._table(match)))
            latest = max((m.round for m in tournament.bracket if m.game_id), default=0)
            if latest != current_round:
                current_round = latest
                progress(f"round {latest}: {len(started)} matches started so far")
            await asyncio.sleep(POLL_SECONDS)
        await asyncio.gather(*tables)
        return tournament

    async def _table(self, match: tournaments_pb2.Match) -> None:
        """The match's two players: the game as created, then played to its end. A busy game
        service's timeout on the first read is tried again, as a player's client does: a
        player who gave up would lose the match as a no-show."""
        request = game_pb2.GetGameRequest(game_id=match.game_id)
        for attempt in range(TABLE_ATTEMPTS):
            try:
                game: game_pb2.Game = await self.load.call(
                    "GetGame", request, metadata=self.keys.players()(match.players[0])
                )
                break
            except grpc.aio.AioRpcError as error:
                if attempt + 1 == TABLE_ATTEMPTS or error.code() not in RETRIED:
                    self.failed("play", error)
                    return
                await asyncio.sleep(1.0)
        try:
            await self.load.play(game, random.Random(match.match_id))
        except grpc.aio.AioRpcError as error:
            self.failed("play", error)


# ------------------------------------------------------------------ the run


@dataclass(frozen=True)
class Stack:
    bench: BenchStack
    wallet: ServiceProcess
    game: ServiceProcess
    tournaments: ServiceProcess


def start_stack(exits: ExitStack) -> Stack:
    bench = BenchStack(exits)
    progress(f"starting PostgreSQL, the broker, accounts and geo in {bench.run_dir}")
    wallet = bench.start_service(
        "wallet", "wallet", bench.new_database("wallet_tour"), FUNDING_WALLET_ENV
    )
    asyncio.run(bench.wait_serving(wallet))
    game = bench.start_service(
        "game", "game", bench.new_database("game_tour"), {"TAVLA_WALLET_ADDRESS": wallet.address}
    )
    asyncio.run(bench.wait_serving(game))
    tournaments = bench.start_service(
        "tournaments", "tournaments", bench.new_database("tournaments_tour"),
        {"TAVLA_WALLET_ADDRESS": wallet.address, "TAVLA_GAME_ADDRESS": game.address},
    )  # fmt: skip
    asyncio.run(bench.wait_serving(tournaments))
    return Stack(bench, wallet, game, tournaments)


async def run_event(stack: Stack, players: Sequence[str]) -> dict[str, Any]:
    keys = stack.bench.keys
    ops = keys.channel(stack.tournaments.address, target="tournaments", caller="ops")
    # Players' calls: their access token admits them, not the channel's service token.
    lobby = keys.channel(stack.tournaments.address, target="tournaments", caller="matchmaking")
    games = keys.channel(stack.game.address, target="game", caller="matchmaking")
    wallet = keys.channel(stack.wallet.address, target="wallet", caller="matchmaking")
    slots = CallSlots(GAME_CALLS_IN_FLIGHT)
    try:
        load = Load(
            keys=keys, funded=list(players), think=THINK_SECONDS, opens=time.monotonic(),
            closes=math.inf,
            games=[PacedGames(game_pb2_grpc.GameServiceStub(games), slots)],
            choose=simple_play,
        )  # fmt: skip
        event = Event(
            keys, tournaments_pb2_grpc.TournamentsServiceStub(lobby),
            wallet_pb2_grpc.WalletServiceStub(wallet), load,
        )  # fmt: skip
        before = await event.balances(players)
        cpu_before = _cpu(stack)
        began = time.monotonic()
        operator: Any = tournaments_pb2_grpc.TournamentsServiceStub(ops)
        created = await operator.CreateTournament(create_request(len(players), datetime.now(UTC)))
        tid = created.tournament_id
        progress(f"tournament {tid}: {len(players)} players registering")
        registered = await event.register(tid, players)
        progress(f"{registered} registered; waiting for the start")
        cpu_registered = _cpu(stack)
        rounds = math.ceil(math.log2(len(players)))
        give_up = time.monotonic() + registration_seconds(len(players)) + START_AFTER_SECONDS
        give_up += FINISH_SECONDS_PER_ROUND * rounds
        finished = await event.play_out(tid, players[0], give_up)
        wall = time.monotonic() - began
        cpu_after = _cpu(stack)
        progress(f"tournament {tournaments_pb2.Status.Name(finished.status)}: checking")
        after = await event.balances(players)
        decided = await decided_matches(stack.tournaments.database_url, tid)
        fees = await house_fees(stack.wallet.database_url, tid)
        audit = await checks.audit_now(stack.wallet.database_url)
    finally:
        for channel in (ops, lobby, games, wallet):
            await channel.close(None)
    paid = finished.status == tournaments_pb2.STATUS_FINISHED
    faults = bracket_faults(finished, players, decided) if paid else ["not finished"]
    payout_ok = (
        paid
        and not faults
        and fees == len(players) * FEE
        and _paid_by_table(finished, players, before, after)
    )
    matches = sum(m.decision == "played" for m in finished.bracket)
    per = max(matches, 1)
    whole = {name: cpu_after[name] - cpu_before[name] for name in cpu_after}
    play = {name: cpu_after[name] - cpu_registered[name] for name in cpu_after}
    return {
        "players": len(players),
        "matches": matches,
        "rounds": max((m.round for m in finished.bracket), default=0),
        "wall_s": round(wall, 1),
        "bracket_ok": not faults,
        "payout_ok": bool(payout_ok),
        "audit": audit,
        "registered": registered,
        "bracket_faults": faults[:5],
        "errors": sum(event.errors.values()) + sum(load.tally.errors.values()),
        "first_error": event.first_error or load.tally.first_error,
        "game_calls_per_match": round(load.tally.calls / per, 1),
        "cpu": {
            "tournaments_s": round(whole["tournaments"], 2),
            "game_s": round(whole["game"], 2),
            "tournaments_s_per_match": round(whole["tournaments"] / per, 4),
            "game_s_per_match": round(whole["game"] / per, 4),
            "ratio": _ratio(whole),
            # From the last registration to the payout (the draw, the rounds, the prizes).
            "play_tournaments_s": round(play["tournaments"], 2),
            "play_game_s": round(play["game"], 2),
            "play_ratio": _ratio(play),
            "goal_ratio": GOAL_CPU_RATIO,
        },
    }


def _ratio(cpu: dict[str, float]) -> float | None:
    return round(cpu["tournaments"] / cpu["game"], 4) if cpu["game"] > 0 else None


def _paid_by_table(
    finished: tournaments_pb2.Tournament,
    players: Sequence[str],
    before: dict[str, tuple[int, int]],
    after: dict[str, tuple[int, int]],
) -> bool:
    """Every player: nothing held, and their available balance moved by the prize their
    finish earns by the published table less the buy-in and fee."""
    prizes = expected_prizes(finished.bracket, players, len(players) * BUY_IN)
    return all(after[p] == (before[p][0] - BUY_IN - FEE + prizes[p], before[p][1]) for p in players)


def _cpu(stack: Stack) -> dict[str, float]:
    return {
        "tournaments": readings.process_cpu(stack.tournaments.pid),
        "game": readings.process_cpu(stack.game.pid),
    }


def run(players: int) -> dict[str, Any]:
    from services.wallet.bench import fund_players

    with ExitStack() as exits:
        stack = start_stack(exits)
        progress(f"funding {players} players in USD through the wallet")
        funded = asyncio.run(
            fund_players(
                stack.bench.keys, stack.wallet.address, stack.wallet.database_url, players, 8
            )
        )
        result = asyncio.run(run_event(stack, funded))
        progress("stopping the stack")
    return result


def passed(result: dict[str, Any]) -> bool:
    return bool(result["bracket_ok"] and result["payout_ok"] and result["audit"] == checks.AUDIT_OK)


def _handle(args: argparse.Namespace) -> int:
    result = run(args.players)
    print(json.dumps(result), flush=True)
    return 0 if passed(result) else 1


def _field(text: str) -> int:
    value = int(text)
    if not 2 <= value <= max(STANDARD_SHARES):
        raise argparse.ArgumentTypeError(f"must be 2 to {max(STANDARD_SHARES)}, not {text}")
    return value


def register_bench(bench_subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``tournaments`` to the ``tavla bench`` command."""
    parser = bench_subparsers.add_parser(
        "tournaments",
        help="a scheduled knockout on the real services, registration to payout",
        description=(
            "Start accounts, geo, wallet, game and tournaments; register --players funded "
            "players in a scheduled USD knockout of 1-point matches, play every match to its "
            "end through the game service, and print one JSON line: players, matches, rounds, "
            "wall_s, bracket_ok, payout_ok (checked against the published prize table), the "
            "wallet's audit, and the tournaments and game processes' CPU per match."
        ),
    )
    parser.add_argument("--players", type=_field, default=1024,
                        help="entrants, 2 to 1024 (default 1024)")  # fmt: skip
    parser.set_defaults(handler=_handle)


__all__ = ["expected_prizes", "passed", "register_bench", "run"]
