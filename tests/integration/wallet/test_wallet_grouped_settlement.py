"""Grouped settlement agrees with the reference path, row for row, on real PostgreSQL.

The same funded players, holds and finished games (settled, duplicated, refused,
split, play money, cancelled) go to three wallets: the reference consumer (one
transaction per event through ``Settler``), the grouped consumer (the games
arrive together, so they share a group), and the grouped consumer whose groups
all fail (so every game falls back to the reference path). The ledgers,
holds, settlement records, inbox rows and Settled events must be the same.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from functools import partial
from typing import Any

import pytest
import structlog
from prometheus_client import REGISTRY
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker, create_async_engine
from structlog.testing import LogCapture

from services.kit.clock import ManualClock
from services.kit.events.consumer import Delivery, EventConsumer
from services.kit.events.envelope import Envelope, ReceivedEvent
from services.wallet import consumers as consumers_module
from services.wallet import grouped_settlement as grouped_module
from services.wallet.audit_cli import audit_database
from services.wallet.consumers import settlement_consumer
from services.wallet.domain.money import Money
from services.wallet.domain.payments import CallbackOutcome, ProviderCallback
from services.wallet.grouped_settlement import GroupedSettlementConsumer, GroupWriter
from services.wallet.ids import derived_id
from services.wallet.settlement import Settler
from services.wallet.store.unit_of_work import WalletUnitOfWork
from tavla.game.v1 import events_pb2 as game_events
from tavla.game.v1 import game_pb2
from tests.support.kafka import event_verifier, kafka_headers
from tests.support.services import RunningService, migrated_database
from tests.support.wallet import (
    FROM_MALTA,
    GAME_STARTED_AT,
    Side,
    direct_service,
    game_ended,
    match_ended,
    new_id,
    received,
)

GAMMON = game_pb2.RESULT_TYPE_GAMMON

# Row snapshots compared between the wallets: everything but the columns that
# differ by construction (a row's version counter, the outbox's own event ids).
SNAPSHOT = {
    "transfers": "SELECT * FROM transfers ORDER BY id",
    "entries": "SELECT * FROM entries ORDER BY transfer_id, account_id",
    "balances": """
        SELECT a.id, a.kind, a.currency, a.owner,
               a.credits - a.debits + COALESCE(sum(s.credits - s.debits), 0) AS balance
        FROM ledger_accounts AS a LEFT JOIN system_balance_shards AS s ON s.account_id = a.id
        GROUP BY a.id ORDER BY a.id""",
    "holds": "SELECT * FROM holds ORDER BY id",
    "settlements": "SELECT * FROM settlements ORDER BY id",
    "inbox": "SELECT event_id, consumer, ce_type, processed_at FROM inbox ORDER BY event_id",
    # Each key's events in commit order (the order between keys may differ).
    "outbox": "SELECT topic, key, ce_type, payload, created_at FROM outbox ORDER BY key, seq",
}


class Scene:
    """Who plays, what they hold, and the events of the finished games, in delivery order."""

    def __init__(self) -> None:
        self.funds: list[tuple[str, int, str]] = []
        # player, amount, table, currency, the game it is claimed for
        self.holds: list[tuple[str, int, str, str, str]] = []
        self.events: list[ReceivedEvent] = []

    def seat(
        self, funds: int, hold: int, table: str, currency: str = "USD", game: str = ""
    ) -> Side:
        player = new_id()
        self.funds.append((player, funds, currency))
        if hold:
            self.holds.append((player, hold, table, currency, game))
        hold_id = derived_id("hold", player, _hold_key(player)) if hold else ""
        return Side(player, 1500.0, hold_id=hold_id)


def scene(*, order_free: bool = False) -> Scene:
    """``order_free``: leave out the games whose outcome depends on which comes first
    (the same game under two event ids)."""
    s = Scene()
    t1, t2, t3, t4 = (new_id("t") for _ in range(4))
    g1, g2, g3 = (new_id("g") for _ in range(3))  # the games at t1, t2, t3 hold stakes
    a, b = s.seat(5000, 1500, t1, game=g1), s.seat(5000, 1500, t1, game=g1)
    c, d = s.seat(5000, 1000, t2, game=g2), s.seat(5000, 1000, t2, game=g2)
    e, f = s.seat(5000, 1500, t3, game=g3), s.seat(5000, 1500, t3, game=g3)
    g, h = s.seat(5000, 0, "", "PLAY"), Side(new_id())  # h has no account yet
    poor, rich = s.seat(600, 0, ""), s.seat(5000, 0, "")
    k, m = s.seat(3000, 1500, t4), s.seat(3000, 1500, t4)
    won = game_ended(winner=a, loser=b, stake=500, result=GAMMON, table_id=t1, game_id=g1)
    again = received(won)
    s.events += [again, again]  # the same event twice
    if not order_free:
        s.events.append(received(won))  # the same game again, under another event id
    match = match_ended(winner=c, loser=d, stake=1000, length=3, table_id=t2, game_id=g2)
    s.events.append(received(match))
    shares = [(e.player_id, "0.6"), (f.player_id, "0.4")]
    split = game_ended(winner=e, loser=f, stake=500, table_id=t3, shares=shares, game_id=g3)
    s.events.append(received(split))
    s.events.append(received(game_ended(winner=h, loser=g, stake=1000, currency="PLAY")))
    # Two real-money games of one player without holds: both refused, balances untouched.
    games = 2
    s.events += [received(game_ended(winner=rich, loser=poor, stake=500)) for _ in range(games)]
    stranger_hold = Side(rich.player_id, 1500.0, hold_id="no-such-hold")
    s.events.append(received(game_ended(winner=stranger_hold, loser=poor, stake=100)))
    not_a_seat = game_ended(winner=a, loser=rich, stake=100)
    not_a_seat.winner_account_id = new_id()
    s.events.append(received(not_a_seat))
    in_match = game_ended(winner=a, loser=b, stake=500)
    in_match.kind = game_pb2.PLAY_KIND_MATCH
    s.events.append(received(in_match))
    cancelled = game_events.GameCancelled(
        game_id=new_id("g"),
        table_id=t4,
        reason="both left",
        players=[k.message(), m.message()],
    )
    s.events.append(received(cancelled))
    return s


def _hold_key(player: str) -> str:
    return f"seat-{player}"


async def _wallet_database(postgres_server: Any) -> str:
    url: str = postgres_server.url(
        await migrated_database(postgres_server, "wallet_agree", "wallet")
    )
    return url


async def _set_up(url: str, s: Scene, clock: ManualClock, geo_address: str) -> None:
    """Fund the players (from Malta, asking geo) and place the holds (their ids derive
    from player and key)."""
    engine = create_async_engine(url)
    sessions = async_sessionmaker(engine, expire_on_commit=False)
    uow = partial(WalletUnitOfWork, sessions, source="wallet", clock=clock)
    service, geo = direct_service(uow, clock, geo_address)
    try:
        for player, amount, currency in s.funds:
            view = await service.deposit(
                player_id=player,
                amount=Money(amount, currency),
                idempotency_key="k",
                method="m",
                **FROM_MALTA,
            )
            confirmed = ProviderCallback(view.payment.id, CallbackOutcome.CONFIRMED, f"r-{player}")
            await service.provider_callback(confirmed)
        for player, amount, table, currency, game in s.holds:
            await service.place_hold(
                player_id=player,
                amount=Money(amount, currency),
                table_id=table,
                game_id=game,  # as if claimed for it (ClaimHolds binds it the same way)
                idempotency_key=_hold_key(player),
            )
    finally:
        await geo.close()
        await engine.dispose()


@pytest.fixture
async def agreeing(
    postgres_server: Any, geo_service: RunningService
) -> AsyncIterator[Callable[..., Any]]:
    engines: list[AsyncEngine] = []

    async def run(s: Scene, *, grouped: bool) -> tuple[str, list[bool], EventConsumer]:
        url = await _wallet_database(postgres_server)
        clock = ManualClock(GAME_STARTED_AT)
        await _set_up(url, s, clock, geo_service.address)
        engine = create_async_engine(url, pool_size=4, max_overflow=4)
        engines.append(engine)
        consumer = settlement_consumer(
            sessions=async_sessionmaker(engine, expire_on_commit=False),
            consumer_factory=lambda: pytest.fail("fed by hand"),
            settler=Settler(clock),
            clock=clock,
            grouped=grouped,
        )
        events = s.events
        if grouped:  # all at once: they share groups
            outcomes = list(await asyncio.gather(*(consumer.handle(e) for e in events)))
        else:
            outcomes = [await consumer.handle(e) for e in events]
        return url, outcomes, consumer

    yield run
    for engine in engines:
        await engine.dispose()


async def _snapshot(url: str) -> dict[str, list[tuple[Any, ...]]]:
    engine = create_async_engine(url)
    try:
        async with engine.connect() as connection:
            return {
                name: [tuple(row) for row in await connection.execute(text(query))]
                for name, query in SNAPSHOT.items()
            }
    finally:
        await engine.dispose()


def _groups(outcome: str) -> float:
    value = REGISTRY.get_sample_value("tavla_wallet_settlement_groups_total", {"outcome": outcome})
    return value or 0.0


async def test_grouped_settlement_writes_what_the_reference_path_writes(
    agreeing: Callable[..., Any],
) -> None:
    s = scene()
    committed, failed = _groups("committed"), _groups("failed")
    reference_url, reference_outcomes, reference = await agreeing(s, grouped=False)
    grouped_url, grouped_outcomes, grouped = await agreeing(s, grouped=True)
    assert not isinstance(reference, GroupedSettlementConsumer)
    assert isinstance(grouped, GroupedSettlementConsumer)
    assert _groups("committed") > committed and _groups("failed") == failed
    assert grouped_outcomes == reference_outcomes
    assert reference_outcomes.count(False) == 1  # the one duplicated event
    reference_rows, grouped_rows = await _snapshot(reference_url), await _snapshot(grouped_url)
    for table, rows in reference_rows.items():
        assert grouped_rows[table] == rows, table
    statuses = sorted(row[13] for row in reference_rows["settlements"])
    assert statuses == ["rejected"] * 4 + ["settled"] * 4
    assert await audit_database(grouped_url) == ()


@pytest.mark.parametrize("grouped", [True, False], ids=["grouped", "reference"])
async def test_a_settled_game_is_logged_at_debug_level_and_a_refused_one_at_error(
    agreeing: Callable[..., Any], monkeypatch: pytest.MonkeyPatch, grouped: bool
) -> None:
    capture = LogCapture()
    every_level = structlog.make_filtering_bound_logger(logging.DEBUG)
    logger = structlog.wrap_logger(None, processors=[capture], wrapper_class=every_level)
    for module in (grouped_module, consumers_module):
        monkeypatch.setattr(module, "log", logger)
    url, _, _ = await agreeing(scene(), grouped=grouped)
    settled = [line for line in capture.entries if line["event"] == "settled"]
    rejected = [line for line in capture.entries if line["event"] == "settlement_rejected"]
    assert settled and {line["log_level"] for line in settled} == {"debug"}
    async with create_async_engine(url).connect() as connection:
        refused = await connection.scalar(
            text("SELECT count(*) FROM settlements WHERE status = 'rejected'")
        )
    assert refused == 4 and len(rejected) >= refused
    assert {line["log_level"] for line in rejected} == {"error"}


async def test_a_failed_group_settles_each_game_on_the_reference_path(
    agreeing: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    s = scene(order_free=True)  # the fallen-back games run concurrently, in no set order
    reference_url, reference_outcomes, _ = await agreeing(s, grouped=False)

    async def broken(self: GroupWriter) -> None:
        raise RuntimeError("the database refused the group")

    monkeypatch.setattr(GroupWriter, "_write", broken)
    failed = _groups("failed")
    fallback_url, fallback_outcomes, _ = await agreeing(s, grouped=True)
    assert _groups("failed") > failed
    # The two copies of the duplicated event race on the fallback path: either one wins.
    assert sorted(fallback_outcomes) == sorted(reference_outcomes)
    assert await _snapshot(fallback_url) == await _snapshot(reference_url)
    assert await audit_database(fallback_url) == ()


async def test_a_writer_leaves_no_transaction_open_when_it_gives_its_connection_up(
    agreeing: Callable[..., Any],
) -> None:
    """Each group's COMMIT begins the writer's next transaction; an unused one is rolled back."""
    url, outcomes, _ = await agreeing(scene(), grouped=True)
    assert outcomes.count(True) == len(outcomes) - 1
    engine = create_async_engine(url)
    query = text(
        "SELECT state, query FROM pg_stat_activity "
        "WHERE datname = current_database() AND pid <> pg_backend_pid()"
    )
    try:
        # Writers keep their connection for a while, waiting for more games.
        for _ in range(50):
            async with engine.connect() as connection:  # activity is read once a transaction
                sessions = [tuple(row) for row in await connection.execute(query)]
            if all(state != "idle in transaction" for state, _ in sessions):
                break
            await asyncio.sleep(0.1)
    finally:
        await engine.dispose()
    assert sessions and all(state != "idle in transaction" for state, _ in sessions), sessions


def _signed(message: Any, offset: int) -> Delivery:
    """The event as the game's relay publishes it (signed), at ``offset`` of one partition."""
    envelope = Envelope.wrap(topic="tavla.game.v1", key=message.game_id, message=message,
                             source="game", now=GAME_STARTED_AT)  # fmt: skip
    event = ReceivedEvent.from_kafka(
        envelope.topic, envelope.key.encode(), envelope.payload, kafka_headers(envelope)
    )
    return Delivery.of(event, offset=offset)


async def test_one_game_the_database_refuses_fails_no_other_game_of_its_group(
    postgres_server: Any, geo_service: RunningService
) -> None:
    s = Scene()
    tables = [new_id("t") for _ in range(4)]
    game_ids = [new_id("g") for _ in tables]
    pairs = [
        (s.seat(5000, 1500, table, game=game), s.seat(5000, 1500, table, game=game))
        for table, game in zip(tables, game_ids, strict=True)
    ]
    url = await _wallet_database(postgres_server)
    clock = ManualClock(GAME_STARTED_AT)
    await _set_up(url, s, clock, geo_service.address)
    poisoned = pairs[0][0].player_id
    engine = create_async_engine(url, pool_size=4, max_overflow=4)
    try:
        # The database refuses any change to this winner's account (amounts past int64
        # never get this far: the domain refuses them first, as a recorded rejection).
        async with engine.begin() as connection:
            await connection.execute(text(
                "ALTER TABLE ledger_accounts ADD CONSTRAINT poisoned"
                f" CHECK (id <> 'player:{poisoned}:USD') NOT VALID"
            ))  # fmt: skip
        consumer = settlement_consumer(
            sessions=async_sessionmaker(engine, expire_on_commit=False),
            consumer_factory=lambda: pytest.fail("fed by hand"),
            settler=Settler(clock),
            clock=clock,
        )
        assert isinstance(consumer, GroupedSettlementConsumer)
        consumer.trust(event_verifier())
        games = [
            game_ended(winner=winner, loser=loser, stake=500, table_id=table, game_id=game)
            for (winner, loser), table, game in zip(pairs, tables, game_ids, strict=True)
        ]
        failed = _groups("failed")
        await consumer.handle_batch([_signed(game, n) for n, game in enumerate(games)])
        async with engine.connect() as connection:
            statuses = dict(
                (await connection.execute(text("SELECT game_id, status FROM settlements"))).all()
            )
            parked = (await connection.execute(
                text("SELECT key, reason FROM parked_events WHERE consumer = 'wallet.settlement'")
            )).all()  # fmt: skip
    finally:
        await engine.dispose()
    assert _groups("failed") > failed  # the group the poison was in fell back to one by one
    assert [statuses.get(game.game_id) for game in games[1:]] == ["settled"] * 3
    # The poison moved nothing: parked for an operator (or recorded as refused).
    assert statuses.get(games[0].game_id) != "settled"
    assert [tuple(row) for row in parked] == [(games[0].game_id, "handler")] or (
        statuses.get(games[0].game_id) == "rejected"
    )
