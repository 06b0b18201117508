"""What a lobby seating sends to matchmaking's database, counted on the real PostgreSQL
(the seating with stand-ins for geo, the wallet and the game): a round trip is a
statement or a BEGIN/COMMIT. And the one-statement hold record refuses an attempt that
lost its seat meanwhile, giving the holds back."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from typing import Any

import pytest
from sqlalchemy import event
from sqlalchemy.ext.asyncio import async_sessionmaker

from services.kit.clock import SystemClock
from services.kit.db import make_engine
from services.kit.errors import FailedPrecondition
from services.kit.geo_gate import GeoGate
from services.matchmaking.domain.tables import Kind, Rules, Sitter, Status, Table
from services.matchmaking.ports import HoldOrder
from services.matchmaking.seating import Seating
from services.matchmaking.store import MatchmakingUnitOfWork
from tavla.game.v1 import game_pb2
from tests.support.services import migrated_database

PLAY_RULES = Rules(
    kind=Kind.MONEY_GAME,
    match_length=0,
    stake_minor=100,
    currency="PLAY",
    cube_cap=64,
    beaver=False,
    jacoby=False,
    crawford=True,
    clock="standard",
)


@dataclass
class Wallet:
    """Places holds named after their keys; ``during_holds`` runs inside the call."""

    released: list[str] = field(default_factory=list)
    during_holds: Any = None

    async def can_cover(self, account_id: str, amount_minor: int, currency: str) -> None:
        return None

    async def place_holds(self, table_id: str, orders: Sequence[HoldOrder]) -> list[str]:
        if self.during_holds is not None:
            await self.during_holds()
        return [f"hold-{order.key}" for order in orders]

    async def release_hold(self, hold_id: str, reason: str) -> None:
        self.released.append(hold_id)

    async def quote(self, quote: Any, authorization: str) -> None:
        return None


class Games:
    async def create_game(
        self,
        table_id: str,
        players: Sequence[game_pb2.Player],
        rules: game_pb2.TableRules,
        key: str,
    ) -> str:
        return f"game-{key}"


@dataclass
class Seated:
    seating: Seating
    wallet: Wallet
    uow: Any
    statements: list[tuple[str, bool]]  # each statement sent, and whether as a batch
    plain: list[str]  # what asyncpg logs: its plain queries (BEGIN, COMMIT) and batches


@pytest.fixture
async def seated(postgres_server: Any) -> AsyncIterator[Seated]:
    name = await migrated_database(postgres_server, "mm_trips", "matchmaking")
    engine = make_engine(postgres_server.url(name), pool_size=2)
    statements: list[tuple[str, bool]] = []
    plain: list[str] = []

    def statement(conn: Any, cursor: Any, text: str, params: Any, context: Any,
                  executemany: bool) -> None:
        statements.append((text, executemany))

    def connected(dbapi_connection: Any, record: Any) -> None:
        # asyncpg logs its plain queries (BEGIN, COMMIT, ROLLBACK), not the prepared ones.
        dbapi_connection.driver_connection.add_query_logger(lambda q: plain.append(q.query))

    event.listen(engine.sync_engine, "before_cursor_execute", statement)
    event.listen(engine.sync_engine, "connect", connected)
    clock = SystemClock()
    uow = partial(
        MatchmakingUnitOfWork,
        async_sessionmaker(engine, expire_on_commit=False),
        source="matchmaking",
        clock=clock,
    )
    wallet = Wallet()
    seating = Seating(uow, geo=GeoGate(None), wallet=wallet, games=Games(), clock=clock)
    try:
        yield Seated(seating, wallet, uow, statements, plain)
    finally:
        await engine.dispose()


async def open_table(seated: Seated) -> str:
    table = Table.open(
        table_id=str(uuid.uuid4()),
        owner=Sitter(f"owner-{uuid.uuid4().hex[:8]}", "MT", "198.51.100.7", ""),
        rules=PLAY_RULES,
        now=datetime.now(UTC),
    )
    async with seated.uow() as uow:
        await uow.tables.add(table, "key", datetime.now(UTC))
        await uow.commit()
    return table.table_id


def joiner() -> Sitter:
    return Sitter(f"joiner-{uuid.uuid4().hex[:8]}", "MT", "198.51.100.7", "")


def kinds(statements: list[tuple[str, bool]]) -> list[str]:
    """Each statement by what it is (a batch is one round trip: asyncpg pipelines it)."""
    named = []
    for text, batch in statements:
        if text.startswith("WITH attempt_holds"):
            named.append("record holds")
        elif text.startswith("WITH changed_table"):
            named.append("save")
        elif text.startswith("INSERT INTO outbox"):
            named.append("events (a batch)" if batch else "event")
        elif "FOR UPDATE" in text and "self_exclusions" in text:
            named.append("claim read")
        elif "FOR UPDATE" in text:
            named.append("lock")
        else:
            named.append(text[:60])
    return named


async def test_a_lobby_seating_is_ten_round_trips_in_two_transactions_and_one_statement(
    seated: Seated,
) -> None:
    table_id = await open_table(seated)
    await asyncio.sleep(0.1)  # asyncpg reports its queries soon after they ran
    seated.statements.clear()
    seated.plain.clear()
    started = await seated.seating.join(table_id, joiner())
    await asyncio.sleep(0.1)
    assert started.status is Status.PLAYING
    assert kinds(seated.statements) == [
        # the claim: the table locked with its seats, both self-exclusions and ratings
        # and the pair's standing restriction in one read; the claimed table saved
        "claim read", "save",
        # both hold ids recorded: one statement, a transaction of its own
        "record holds",
        # the start: the row locked (the seats are the attempt's), saved, both events
        "lock", "save", "events (a batch)",
    ]  # fmt: skip
    # The claim's transaction and the start's; the hold record sends neither.
    control = [query.split()[0].rstrip(";") for query in seated.plain]
    assert sorted(c for c in control if c in ("BEGIN", "COMMIT", "ROLLBACK")) == [
        "BEGIN", "BEGIN", "COMMIT", "COMMIT"
    ]


async def test_holds_are_not_recorded_for_an_attempt_that_lost_its_seat(seated: Seated) -> None:
    table_id = await open_table(seated)

    async def given_to_another_attempt() -> None:
        """What a recovery that gave the attempt up would leave: the seat free again."""
        async with seated.uow() as uow:
            table = await uow.tables.get(table_id, lock=True)
            assert table is not None and table.attempt is not None
            await uow.tables.save(table.given_back(table.attempt.attempt_id), datetime.now(UTC))
            await uow.commit()

    seated.wallet.during_holds = given_to_another_attempt
    with pytest.raises(FailedPrecondition, match="was given to another player"):
        await seated.seating.join(table_id, joiner())
    async with seated.uow() as uow:
        table = await uow.tables.get(table_id)
    assert table is not None and table.status is Status.OPEN
    assert [seat.hold_id for seat in table.seats] == [""]  # nothing recorded
    assert len(seated.wallet.released) == 2  # both holds the attempt placed given back
