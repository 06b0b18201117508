"""Grouped settlement: concurrent GameEnded / MatchEnded events settled in one transaction.

The settlement consumer hands every finished game here; games that arrive while
a group is being written wait and go together in the next one (group commit).
A group is one transaction of a few statements on the driver (see
:mod:`services.wallet.grouped_sql`): claim the inbox rows, lock the holds and
the player accounts in the wallet's global order, read the settlements already
recorded, then write everything in one statement and commit.

The domain decides everything, exactly as on the reference path
(:class:`services.wallet.settlement.Settler`): the commission and amounts
(``domain_settlement``), the holds' checks and postings, and ``post`` over the
locked ledger slice, game after game, so two games of one player in a group see
each other's balances. A game the domain refuses gets its ``rejected`` record in
the group, as on the reference path; it does not disturb the others. Should a
group's transaction fail (a database error, a conflict the checks did not
foresee), every game of it is settled again on the reference path, one by one,
so no game fails because of another.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

import asyncpg  # type: ignore[import-untyped]
from prometheus_client import Counter, Histogram
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from services.kit.clock import Clock
from services.kit.events.consumer import ConsumerFactory, EventConsumer, Handler
from services.kit.events.envelope import Envelope, ReceivedEvent
from services.kit.logging import get_logger
from services.kit.metrics import EVENTS_CONSUMED
from services.wallet import grouped_sql as sql
from services.wallet.domain.errors import WalletError
from services.wallet.domain.holds import Hold, HoldStatus
from services.wallet.domain.ledger import (
    Account,
    AccountKind,
    Balance,
    Ledger,
    Transfer,
    player_account,
    post,
    system_account_id,
)
from services.wallet.domain.settlement import Settlement, settlement_batch
from services.wallet.messages import TOPIC
from services.wallet.settlement import (
    REJECTED,
    SettlementRequest,
    check_holds,
    domain_settlement,
    paid_out,
    rejected_record,
    settled_event,
    settlement_record,
)
from services.wallet.store.holds import StoredHold, hold_from_row
from services.wallet.store.ledger import (
    SHARDS,
    balance_deltas,
    content_hash,
    is_player_account_id,
)
from services.wallet.store.settlements import SETTLEMENT_COLUMNS, SettlementRecord
from tavla.game.v1 import events_pb2 as game_events

log = get_logger(__name__)

GAME_ENDED = game_events.GameEnded.DESCRIPTOR.full_name
MATCH_ENDED = game_events.MatchEnded.DESCRIPTOR.full_name

GROUPS = Counter(
    "tavla_wallet_settlement_groups",
    "Settlement groups, by outcome (committed, or failed: its games settle one by one).",
    ["outcome"],
)
GROUP_SIZE = Histogram(
    "tavla_wallet_settlement_group_size",
    "Finished games per settlement group.",
    buckets=(1, 2, 4, 8, 16, 32, 64, 128),
)

# Records fetched at a time: eight full groups. A fetch's games all settle before its
# offsets are committed and the next fetch's games are priced, and each fetch ends in
# a tail of small groups (games whose players are in the group being written wait for
# the next one). At 256 a backlog settled in groups of 41 to 42 games (95 to 98 groups
# for 4,000 games), at 1,024 in groups of 89 to 95 (42 to 45), for a third less of the
# settling process's CPU per game (see the README's benchmark section).
FETCH_BATCH = 1024

# How long a writer with nothing to write keeps its connection for the next games:
# checking one out again costs a round trip (the pool's ping) and some work.
IDLE_SECONDS = 0.5

# What a game's settlement came to: True applied, False a duplicate event,
# None: the group failed, settle it on the reference path.
Outcome = bool | None


@dataclass(eq=False)
class Game:
    """One finished game waiting for its group, priced and with its record and event built.

    ``now`` is the game's settlement time: its transfers, hold changes, record,
    event and inbox row carry it, as the reference path's one ``now`` per game.
    """

    event: ReceivedEvent
    request: SettlementRequest
    now: datetime
    settlement: Settlement | None
    refusal: WalletError | None  # the domain refused to price it: it gets a rejected record
    record: SettlementRecord | None  # what a settled game records, and its Settled event
    settled: Envelope | None
    context: contextvars.Context  # the caller's (request id for logs)
    done: asyncio.Future[Outcome] = field(init=False)
    players: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        self.done = asyncio.get_running_loop().create_future()
        self.players = frozenset(seat.player_id for seat in self.request.seats)


def prepare(event: ReceivedEvent, request: SettlementRequest, now: datetime, source: str) -> Game:
    """Price the game and build its record and event before it queues (no lock is held)."""
    try:
        settlement = domain_settlement(request)
    except WalletError as error:
        return Game(event, request, now, None, error, None, None, contextvars.copy_context())
    record = settlement_record(request, settlement, now)
    message = settled_event(request, settlement, now)
    envelope = Envelope.wrap(
        topic=TOPIC, key=request.game_id, message=message, source=source, now=now
    )
    return Game(event, request, now, settlement, None, record, envelope, contextvars.copy_context())


class SettlementGroups:
    """Queues games and writes them in groups, at most ``in_flight`` groups at a time.

    Groups in flight together never share a player: a game whose player is in
    a group being written waits for the next one, so this process's groups do
    not queue on each other's row locks (other processes' do, in lock order).
    Idle writers split the waiting games between them, so one group's domain
    work runs while another's statements run in PostgreSQL. Each group adds to
    its own system balance shard, in turn. A writer keeps its connection for
    ``IDLE_SECONDS`` after its last group, for the games its callers send next.
    """

    def __init__(
        self,
        engine: AsyncEngine,
        *,
        consumer: str,
        max_group: int = 128,
        in_flight: int = 2,
    ) -> None:
        self._engine = engine
        self._consumer = consumer
        self._max_group = max_group
        self._in_flight = in_flight
        self._writers = 0
        self._writing = 0
        self._waiting: list[Game] = []
        self._busy: set[str] = set()  # players of the groups being written
        self._shard = 0
        self._arrived = asyncio.Event()  # a game was queued: idle writers look again
        self._tasks: set[asyncio.Task[None]] = set()

    async def settle(self, game: Game) -> Outcome:
        self._waiting.append(game)
        self._arrived.set()
        self._start_writer()
        return await game.done

    def _start_writer(self) -> None:
        if self._writers < self._in_flight and self._takeable():
            self._writers += 1
            task = asyncio.create_task(self._write_groups())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def _takeable(self) -> bool:
        return any(not (game.players & self._busy) for game in self._waiting)

    def _take(self) -> list[Game]:
        """This writer's share of the waiting games that share no player with a busy group."""
        idle = max(1, self._writers - self._writing)
        limit = min(self._max_group, -(-len(self._waiting) // idle))
        taken: list[Game] = []
        left: list[Game] = []
        for game in self._waiting:
            fits = len(taken) < limit and not (game.players & self._busy)
            (taken if fits else left).append(game)
        self._waiting = left
        for game in taken:
            self._busy |= game.players
        return taken

    async def _write_groups(self) -> None:
        group = self._take()
        try:
            if group:
                async with self._connection() as transactions:
                    while group:
                        written = await self._write_group(transactions, group)
                        # A failed group may have broken the connection: a new writer takes over.
                        group = await self._next_group() if written else []
        except Exception as error:  # no connection: this group goes the reference way
            log.warning("settlement_writer_failed", error=repr(error))
            self._done(group, [None] * len(group))
        finally:
            self._writers -= 1
            self._start_writer()  # games that wait for this writer's players, or came late

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[_Transactions]:
        """A pooled connection for a writer's groups, discarded if its state is not known."""
        async with self._engine.connect() as connection:
            raw = await connection.get_raw_connection()
            transactions = _Transactions(raw.driver_connection)
            try:
                yield transactions
            finally:
                if not await transactions.close():
                    await connection.invalidate()

    async def _next_group(self) -> list[Game]:
        """The next group, waiting a little for games rather than giving up the connection."""
        group = self._take()
        while not group:
            self._arrived.clear()
            try:
                await asyncio.wait_for(self._arrived.wait(), IDLE_SECONDS)
            except TimeoutError:
                return []
            group = self._take()
        return group

    def _done(self, games: Sequence[Game], outcomes: Sequence[Outcome]) -> None:
        for game, outcome in zip(games, outcomes, strict=True):
            self._busy -= game.players
            if not game.done.done():
                game.done.set_result(outcome)

    async def _write_group(self, transactions: _Transactions, games: Sequence[Game]) -> bool:
        GROUP_SIZE.observe(len(games))
        self._writing += 1
        self._shard = (self._shard + 1) % SHARDS
        try:
            async with transactions.group():
                writer = GroupWriter(transactions.driver, self._shard)
                outcomes: list[Outcome] = await writer.settle(games, self._consumer)
        except Exception as error:  # every game is retried alone on the reference path
            log.warning("settlement_group_failed", games=len(games), error=repr(error))
            GROUPS.labels("failed").inc()
            outcomes, written = [None] * len(games), False
        except BaseException:  # cancelled (shutdown): rolled back, nobody may wait forever
            self._done(games, [None] * len(games))
            raise
        else:
            GROUPS.labels("committed").inc()
            written = True
        finally:
            self._writing -= 1
        self._done(games, outcomes)
        return written


class _Transactions:
    """A writer's transactions on its connection: each group's COMMIT begins the next one.

    The next group's BEGIN (with its planner settings) rides in the same round
    trip as the last group's COMMIT. A transaction begun but not yet used holds
    no lock and no snapshot; the writer rolls it back when it gives the
    connection up. A COMMIT whose answer is lost leaves the group's fate unknown:
    its games then go the reference way, where the inbox row tells whether they
    were applied, and the connection, in an unknown state, is discarded.
    """

    def __init__(self, driver: asyncpg.Connection) -> None:
        self.driver = driver
        self._state: Literal["idle", "open", "unknown"] = "idle"

    @asynccontextmanager
    async def group(self) -> AsyncIterator[None]:
        if self._state != "open":
            await self._run(sql.BEGIN)
        try:
            yield
        except BaseException:
            with suppress(Exception):
                await self._run("ROLLBACK", then="idle")
            raise
        await self._run(sql.COMMIT_AND_BEGIN)

    async def close(self) -> bool:
        """Roll back the unused transaction; False if the connection's state is not known."""
        if self._state == "open":
            with suppress(Exception):
                await self._run("ROLLBACK", then="idle")
        return self._state == "idle"

    async def _run(self, statement: str, then: Literal["idle", "open"] = "open") -> None:
        self._state = "unknown"
        await self.driver.execute(statement)
        self._state = then


class GroupWriter:
    """One group's transaction: read and lock, let the domain decide game by game, write."""

    def __init__(self, connection: asyncpg.Connection, shard: int) -> None:
        self._db = connection
        self._shard = shard
        self._holds: dict[str, StoredHold] = {}
        self._known: dict[str, SettlementRecord] = {}
        self._before = Ledger()
        self._ledger = Ledger()
        self._applied: list[tuple[Transfer, datetime]] = []
        self._posted: dict[str, tuple[Hold, datetime]] = {}
        self._records: list[SettlementRecord] = []
        self._events: list[Envelope] = []

    async def settle(self, games: Sequence[Game], consumer: str) -> list[Outcome]:
        """Settle the games whose event is new; an event id twice in the group counts once."""
        first = {game.event.event_id: game for game in reversed(games)}
        row = await self._db.fetchrow(sql.LOCK_GROUP, *_lock_arguments(first, consumer))
        claimed = set(row["claimed"])
        fresh = [g for g in games if first[g.event.event_id] is g and g.event.event_id in claimed]
        self._holds = {hold["id"]: hold_from_row(hold) for hold in row["held"]}
        self._before = self._ledger = _ledger(row)
        self._known = {record["id"]: _settlement(record) for record in row["known"]}
        for game in fresh:
            game.context.run(self._settle_one, game)
        await self._write()
        return [game in fresh for game in games]

    def _settle_one(self, game: Game) -> None:
        """The reference path's decisions (Settler.settle, then reject on a refusal)."""
        request = game.request
        existing = self._known.get(request.settlement_id)
        try:
            if game.refusal is not None:
                raise game.refusal
            assert game.settlement is not None and game.record is not None
            if existing is not None and paid_out(request, self._holds):
                log.debug("settled", settlement=existing.id, status=existing.status)
                return  # the same game reported again under another event id
            check_holds(request, game.settlement, self._holds)
            batch = settlement_batch(game.settlement, _open_holds(request, self._holds))
            if existing is not None:
                log.debug("settled", settlement=existing.id, status=existing.status)
                return  # the same game reported again under another event id
            posting = post(self._ledger, batch.transfers)
        except WalletError as error:
            self._refuse(game, existing, error)
            return
        self._ledger = Ledger(posting.ledger.accounts, posting.ledger.balances)
        self._applied.extend((transfer, game.now) for transfer in posting.applied)
        for hold in batch.posted_holds:
            stored = self._holds[hold.id]
            self._holds[hold.id] = StoredHold(hold, stored.idempotency_key, stored.created_at)
            self._posted[hold.id] = (hold, game.now)
        self._remember(game.record)
        if game.settled is not None:
            self._events.append(game.settled)
        # A settled game's line is for debugging: its record and Settled event are what an
        # operator reads, and the line was about 3 % of the settling process's CPU.
        # Refusals are logged at error level (_refuse).
        log.debug("settled", settlement=game.record.id, status=game.record.status)

    def _refuse(self, game: Game, existing: SettlementRecord | None, error: WalletError) -> None:
        request = game.request
        log.error(
            "settlement_rejected",
            settlement=request.settlement_id,
            reason=error.reason,
            error=str(error),
        )
        REJECTED.labels(error.reason).inc()
        if existing is None:  # refused (or settled) already under another event id otherwise
            self._remember(rejected_record(request, f"{error.reason}: {error}", game.now))

    def _remember(self, record: SettlementRecord) -> None:
        self._known[record.id] = record
        self._records.append(record)

    async def _write(self) -> None:
        if not self._records:
            return
        await self._db.execute(
            sql.WRITE,
            *self._transfer_columns(),
            *self._balance_columns(),
            *self._hold_columns(),
            *_columns(self._records, SETTLEMENT_COLUMNS),
            *self._event_columns(),
        )

    def _transfer_columns(self) -> list[list[Any]]:
        applied = [transfer for transfer, _ in self._applied]
        return [
            [t.id for t in applied],
            [t.debit_account_id for t in applied],
            [t.credit_account_id for t in applied],
            [t.amount.amount for t in applied],
            [t.amount.currency for t in applied],
            [int(t.code) for t in applied],
            [t.reference for t in applied],
            [content_hash(t) for t in applied],
            [posted_at for _, posted_at in self._applied],
        ]

    def _balance_columns(self) -> list[Any]:
        """Player deltas (rows locked already), then system deltas on one shard each."""
        deltas = balance_deltas(self._before, self._ledger)
        players = sorted(i for i in deltas if is_player_account_id(i))
        systems = sorted(set(deltas) - set(players))
        return [
            players,
            [deltas[i][0] for i in players],
            [deltas[i][1] for i in players],
            systems,
            [deltas[i][0] for i in systems],
            [deltas[i][1] for i in systems],
            self._shard,
        ]

    def _hold_columns(self) -> list[list[Any]]:
        posted = [self._posted[i] for i in sorted(self._posted)]
        return [
            [h.id for h, _ in posted],
            [h.amount.amount for h, _ in posted],
            [h.status.value for h, _ in posted],
            [h.game_id for h, _ in posted],
            [at for _, at in posted],
        ]

    def _event_columns(self) -> list[list[Any]]:
        return Envelope.outbox_columns(self._events)


def _lock_arguments(first: dict[str, Game], consumer: str) -> list[Any]:
    """LOCK_GROUP's arguments (see migration 0004): every account the games may touch."""
    events = sorted(first)
    games = [first[event_id] for event_id in events]
    holds: set[str] = set()
    players: dict[str, Account] = {}
    systems: set[str] = set()
    for game in games:
        if game.settlement is None:
            continue  # refused already: it touches no account
        named = [seat.hold_id for seat in game.request.seats if seat.hold_id]
        holds.update(named)
        currency = game.request.currency
        if named or game.settlement.transfers:  # the reference path opens the seats' accounts
            for seat in game.request.seats:
                seat_account = player_account(seat.player_id, currency)
                players[seat_account.id] = seat_account
        if named:
            systems.add(system_account_id(AccountKind.HELD_STAKES, currency))
        for transfer in game.settlement.transfers:
            for account in (transfer.debit_account_id, transfer.credit_account_id):
                if not is_player_account_id(account):
                    systems.add(account)
    opened = sorted(players)
    return [
        events,
        consumer,
        [game.event.ce_type for game in games],
        [game.now for game in games],
        sorted(holds),
        opened,
        sorted(systems),
        opened,
        [players[account].currency for account in opened],
        [players[account].owner for account in opened],
        sorted({game.request.settlement_id for game in games}),
    ]


def _ledger(row: Any) -> Ledger:
    columns = zip(
        row["account_ids"], row["kinds"], row["currencies"], row["owners"],
        row["debits"], row["credits"], strict=True,
    )  # fmt: skip
    accounts: dict[str, Account] = {}
    balances: dict[str, Balance] = {}
    for account_id, kind, currency, owner, debits, credits in columns:
        accounts[account_id] = Account(account_id, AccountKind(kind), currency, owner)
        balances[account_id] = Balance(account_id, currency, debits, credits)
    return Ledger(accounts, balances)


def _settlement(row: Any) -> SettlementRecord:
    return SettlementRecord(**{name: row[name] for name in SETTLEMENT_COLUMNS})


def _open_holds(request: SettlementRequest, holds: dict[str, StoredHold]) -> list[Hold]:
    named = sorted({seat.hold_id for seat in request.seats if seat.hold_id})
    return [holds[i].hold for i in named if holds[i].hold.status is HoldStatus.OPEN]


def _columns(records: Sequence[SettlementRecord], names: Sequence[str]) -> list[list[Any]]:
    return [[getattr(record, name) for record in records] for name in names]


class GroupedSettlementConsumer(EventConsumer):
    """The settlement consumer whose GameEnded / MatchEnded go through settlement groups.

    Everything else (cancelled games, unreadable or non-money results, and any
    game whose group failed) runs on the kit's one-event-per-transaction path.
    """

    def __init__(
        self,
        *,
        service: str,
        name: str,
        sessions: async_sessionmaker[AsyncSession],
        consumer_factory: ConsumerFactory,
        handlers: Mapping[str, Handler],
        clock: Clock,
        engine: AsyncEngine,
        requests: Callable[[ReceivedEvent], SettlementRequest | None],
        batch_size: int = FETCH_BATCH,
    ) -> None:
        super().__init__(
            service=service,
            name=name,
            sessions=sessions,
            consumer_factory=consumer_factory,
            handlers=handlers,
            clock=clock,
            batch_size=batch_size,
        )
        self._requests = requests
        self._groups = SettlementGroups(engine, consumer=self.name)

    async def apply(self, event: ReceivedEvent) -> bool:
        request = self._requests(event)
        if request is None:
            return await super().apply(event)
        game = prepare(event, request, self._clock.now(), self._service)
        outcome = await self._groups.settle(game)
        if outcome is None:
            return await super().apply(event)
        applied = "applied" if outcome else "duplicate"
        EVENTS_CONSUMED.labels(self._service, event.topic, applied).inc()
        return outcome
