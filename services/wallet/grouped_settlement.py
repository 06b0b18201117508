"""Grouped settlement: concurrent GameEnded / MatchEnded events settled in one transaction.

The settlement consumer hands every finished game here; games that arrive while
a group is being written wait and go together in the next one (group commit).
A group is one transaction of a few statements on the driver (see
:mod:`services.wallet.grouped_sql`): claim the inbox rows, lock the holds and
the player accounts in the wallet's global order, read the settlements already
recorded, then write everything in one statement and commit.

The domain decides everything, exactly as on the reference path
(:class:`services.wallet.service.Settler`): the commission and amounts
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
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import asyncpg  # type: ignore[import-untyped]
from prometheus_client import Counter, Histogram
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from services.kit.clock import Clock
from services.kit.events.consumer import ConsumerFactory, EventConsumer, Handler
from services.kit.events.envelope import REQUEST_ID_HEADER, Envelope, ReceivedEvent
from services.kit.logging import bind_request_id, get_logger
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
    entries_of,
    player_account,
    post,
)
from services.wallet.domain.money import Money
from services.wallet.domain.settlement import Settlement, settlement_batch
from services.wallet.service import (
    TOPIC,
    SettlementRequest,
    check_holds,
    domain_settlement,
    rejected_record,
    settled_event,
    settlement_record,
)
from services.wallet.store import (
    SettlementRecord,
    StoredHold,
    content_hash,
    is_player_account_id,
    shard_of,
)
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

    def __post_init__(self) -> None:
        self.done = asyncio.get_running_loop().create_future()


def prepare(event: ReceivedEvent, request: SettlementRequest, now: datetime, source: str) -> Game:
    """Price the game and build its record and event before it queues (no lock is held)."""
    try:
        settlement = domain_settlement(request)
    except WalletError as error:
        return Game(event, request, now, None, error, None, None, contextvars.copy_context())
    record = settlement_record(request, settlement, "settled", None, now)
    message = settled_event(request, settlement, now)
    envelope = Envelope.wrap(
        topic=TOPIC, key=request.game_id, message=message, source=source, now=now
    )
    return Game(event, request, now, settlement, None, record, envelope, contextvars.copy_context())


class SettlementGroups:
    """Queues games and writes them in groups, at most ``in_flight`` groups at a time.

    A writer keeps its connection while games keep coming. Concurrent groups of
    one process mostly share players (and so wait on each other's locks), so the
    default is one group in flight: the next group's games are priced while it
    is written.
    """

    def __init__(
        self,
        engine: AsyncEngine,
        *,
        consumer: str,
        max_group: int = 128,
        in_flight: int = 1,
    ) -> None:
        self._engine = engine
        self._consumer = consumer
        self._max_group = max_group
        self._in_flight = in_flight
        self._writers = 0
        self._waiting: list[Game] = []
        self._tasks: set[asyncio.Task[None]] = set()

    async def settle(self, game: Game) -> Outcome:
        self._waiting.append(game)
        self._start_writer()
        return await game.done

    def _start_writer(self) -> None:
        if self._waiting and self._writers < self._in_flight:
            self._writers += 1
            task = asyncio.create_task(self._write_groups())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _write_groups(self) -> None:
        try:
            async with self._engine.connect() as connection:
                raw = await connection.get_raw_connection()
                driver: asyncpg.Connection = raw.driver_connection
                while self._waiting:
                    group = self._waiting[: self._max_group]
                    del self._waiting[: self._max_group]
                    if not await self._write_group(driver, group):
                        break  # the connection may be broken: the next writer takes a new one
        except Exception as error:  # no connection: the waiting games go the reference way
            log.warning("settlement_writer_failed", error=repr(error))
            self._resolve(self._waiting, None)
            self._waiting = []
        finally:
            self._writers -= 1
            self._start_writer()  # games that came while this writer was closing

    @staticmethod
    def _resolve(games: Sequence[Game], outcome: Outcome) -> None:
        for game in games:
            if not game.done.done():
                game.done.set_result(outcome)

    async def _write_group(self, driver: asyncpg.Connection, games: Sequence[Game]) -> bool:
        GROUP_SIZE.observe(len(games))
        try:
            async with driver.transaction():
                outcomes = await GroupWriter(driver).settle(games, self._consumer)
        except Exception as error:  # every game is retried alone on the reference path
            log.warning("settlement_group_failed", games=len(games), error=repr(error))
            GROUPS.labels("failed").inc()
            outcomes, written = [None] * len(games), False
        else:
            GROUPS.labels("committed").inc()
            written = True
        for game, outcome in zip(games, outcomes, strict=True):
            if not game.done.done():
                game.done.set_result(outcome)
        return written


class GroupWriter:
    """One group's transaction: read and lock, let the domain decide game by game, write."""

    def __init__(self, connection: asyncpg.Connection) -> None:
        self._db = connection
        self._holds: dict[str, StoredHold] = {}
        self._known: dict[str, SettlementRecord] = {}
        self._before = Ledger()
        self._ledger = Ledger()
        self._applied: list[tuple[Transfer, datetime]] = []
        self._posted: dict[str, tuple[Hold, datetime]] = {}
        self._records: list[SettlementRecord] = []
        self._events: list[Envelope] = []

    async def settle(self, games: Sequence[Game], consumer: str) -> list[Outcome]:
        fresh = await self._claim_inbox(games, consumer)
        if fresh:
            await self._lock(fresh)
            for game in fresh:
                game.context.run(self._settle_one, game)
            await self._write()
        return [game in fresh for game in games]

    async def _claim_inbox(self, games: Sequence[Game], consumer: str) -> list[Game]:
        """The games whose event is new; an event id twice in the group counts once."""
        ordered = sorted({game.event.event_id: game for game in reversed(games)}.items())
        rows = await self._db.fetch(
            sql.INBOX,
            [event_id for event_id, _ in ordered],
            consumer,
            [game.event.ce_type for _, game in ordered],
            [game.now for _, game in ordered],
        )
        claimed = {row["event_id"] for row in rows}
        first = {id(game) for _, game in ordered}
        return [g for g in games if id(g) in first and g.event.event_id in claimed]

    async def _lock(self, games: Sequence[Game]) -> None:
        hold_ids = sorted({s.hold_id for g in games for s in g.request.seats if s.hold_id})
        if hold_ids:
            rows = await self._db.fetch(sql.LOCK_HOLDS, hold_ids)
            self._holds = {row["id"]: _stored_hold(row) for row in rows}
        accounts, owners = self._accounts(games)
        self._before = await self._lock_accounts(accounts)
        missing = sorted(set(owners) - set(self._before.accounts))
        if missing:  # play-money tables hold nothing, so a player may have no account yet
            opened = [player_account(owners[i], _currency(i)) for i in missing]
            await self._db.execute(
                sql.OPEN_ACCOUNTS,
                [a.id for a in opened],
                [a.currency for a in opened],
                [a.owner for a in opened],
            )
            self._before = await self._lock_accounts(accounts)
        self._ledger = self._before
        ids = sorted({game.request.settlement_id for game in games})
        rows = await self._db.fetch(sql.KNOWN_SETTLEMENTS, ids)
        self._known = {row["id"]: SettlementRecord(*row) for row in rows}

    def _accounts(self, games: Sequence[Game]) -> tuple[set[str], dict[str, str]]:
        """Every account the games' transfers may touch, and the players' (id -> owner)."""
        accounts: set[str] = set()
        owners: dict[str, str] = {}
        for game in games:
            if game.settlement is None:
                continue
            for transfer in _planned_transfers(game, self._holds):
                accounts |= {transfer.debit_account_id, transfer.credit_account_id}
                for side in (transfer.debit_account_id, transfer.credit_account_id):
                    owner = _seat_owner(side, game)
                    if owner is not None:
                        owners[side] = owner
        return accounts, owners

    async def _lock_accounts(self, account_ids: Iterable[str]) -> Ledger:
        ids = set(account_ids)
        players = sorted(i for i in ids if is_player_account_id(i))
        rows = await self._db.fetch(sql.LOCK_ACCOUNTS, players, sorted(ids - set(players)))
        return Ledger(
            accounts={
                r["id"]: Account(r["id"], AccountKind(r["kind"]), r["currency"], r["owner"])
                for r in rows
            },
            balances={
                r["id"]: Balance(r["id"], r["currency"], r["debits"], r["credits"]) for r in rows
            },
        )

    def _settle_one(self, game: Game) -> None:
        """The reference path's decisions (Settler.settle, then reject on a refusal)."""
        request = game.request
        existing = self._known.get(request.settlement_id)
        try:
            if game.refusal is not None:
                raise game.refusal
            assert game.settlement is not None and game.record is not None
            check_holds(request, self._holds)
            batch = settlement_batch(game.settlement, _open_holds(request, self._holds))
            if existing is not None:
                log.info("settled", settlement=existing.id, status=existing.status)
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
        log.info("settled", settlement=game.record.id, status=game.record.status)

    def _refuse(self, game: Game, existing: SettlementRecord | None, error: WalletError) -> None:
        request = game.request
        log.error(
            "settlement_rejected",
            settlement=request.settlement_id,
            reason=error.reason,
            error=str(error),
        )
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
            *self._entry_columns(),
            *self._balance_columns(),
            *self._hold_columns(),
            *_columns(self._records, sql.SETTLEMENT_COLUMNS),
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

    def _entry_columns(self) -> list[list[Any]]:
        legs = [entry for transfer, _ in self._applied for entry in entries_of(transfer)]
        return [
            [e.transfer_id for e in legs],
            [e.account_id for e in legs],
            [e.amount.amount for e in legs],
            [e.amount.currency for e in legs],
        ]

    def _balance_columns(self) -> list[Any]:
        """Player deltas (rows locked already), then system deltas on one shard each."""
        deltas = self._deltas()
        players = sorted(i for i in deltas if is_player_account_id(i))
        systems = sorted(set(deltas) - set(players))
        shard = shard_of(self._applied[0][0].id) if self._applied else 0
        return [
            players,
            [deltas[i][0] for i in players],
            [deltas[i][1] for i in players],
            systems,
            [deltas[i][0] for i in systems],
            [deltas[i][1] for i in systems],
            shard,
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
        events = self._events
        return [
            [e.event_id for e in events],
            [e.topic for e in events],
            [e.key for e in events],
            [e.ce_type for e in events],
            [e.payload for e in events],
            [json.dumps(e.headers) for e in events],
            [e.created_at for e in events],
        ]

    def _deltas(self) -> dict[str, tuple[int, int]]:
        deltas: dict[str, tuple[int, int]] = {}
        for account_id, after in self._ledger.balances.items():
            old = self._before.balances.get(account_id)
            debits = after.debits - (old.debits if old else 0)
            credits = after.credits - (old.credits if old else 0)
            if debits or credits:
                deltas[account_id] = (debits, credits)
        return deltas


def _stored_hold(row: Any) -> StoredHold:
    hold = Hold(
        id=row["id"],
        player_id=row["player_id"],
        table_id=row["table_id"],
        amount=Money(row["amount"], row["currency"]),
        status=HoldStatus(row["status"]),
        game_id=row["game_id"],
    )
    return StoredHold(hold, row["idempotency_key"], row["created_at"])


def _open_holds(request: SettlementRequest, holds: dict[str, StoredHold]) -> list[Hold]:
    named = sorted({seat.hold_id for seat in request.seats if seat.hold_id})
    return [holds[i].hold for i in named if holds[i].hold.status is HoldStatus.OPEN]


def _planned_transfers(game: Game, holds: dict[str, StoredHold]) -> tuple[Transfer, ...]:
    """The transfers the game would post, to know which accounts to lock (empty if refused)."""
    assert game.settlement is not None
    try:
        check_holds(game.request, holds)
        return settlement_batch(game.settlement, _open_holds(game.request, holds)).transfers
    except WalletError:
        return ()


def _seat_owner(account_id: str, game: Game) -> str | None:
    """The seat whose player account this is (opened if missing), else None."""
    for seat in game.request.seats:
        if account_id == player_account(seat.player_id, game.request.currency).id:
            return seat.player_id
    return None


def _currency(account_id: str) -> str:
    return account_id.rsplit(":", 1)[-1]


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
    ) -> None:
        super().__init__(
            service=service,
            name=name,
            sessions=sessions,
            consumer_factory=consumer_factory,
            handlers=handlers,
            clock=clock,
        )
        self._requests = requests
        self._groups = SettlementGroups(engine, consumer=self.name)

    async def handle(self, event: ReceivedEvent) -> bool:
        request = self._requests(event)
        if request is None:
            return await super().handle(event)
        if REQUEST_ID_HEADER in event.headers:
            bind_request_id(event.headers[REQUEST_ID_HEADER])
        game = prepare(event, request, self._clock.now(), self._service)
        outcome = await self._groups.settle(game)
        if outcome is None:
            return await super().handle(event)
        applied = "applied" if outcome else "duplicate"
        EVENTS_CONSUMED.labels(self._service, event.topic, applied).inc()
        return outcome
