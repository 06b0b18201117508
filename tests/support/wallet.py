"""Helpers for wallet tests: run the service, fund players, build game results, audit."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import grpc
from aiokafka import AIOKafkaConsumer
from google.protobuf.message import Message
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker, create_async_engine

from services.kit.client_signals import ClientSignals
from services.kit.clock import Clock, ManualClock
from services.kit.events.consumer import EventConsumer
from services.kit.events.envelope import Envelope, ReceivedEvent
from services.kit.geo_gate import GEO_ADDRESS, GeoGate
from services.wallet import main as wallet_main
from services.wallet.consumers import accounts_consumer, settlement_consumer
from services.wallet.provider import SandboxConfig, SandboxProvider
from services.wallet.provider_config import PaymentSettings
from services.wallet.service import WalletService
from services.wallet.settlement import Settler
from services.wallet.store.unit_of_work import WalletUnitOfWork
from tavla.common.v1 import money_pb2
from tavla.game.v1 import events_pb2 as game_events
from tavla.game.v1 import game_pb2
from tavla.wallet.v1 import wallet_pb2, wallet_pb2_grpc
from tests.support.identity import DEFAULT_ADDRESS, DEFAULT_RESIDENCE, as_player, minter
from tests.support.services import RunningService, fast_settings, start_service

# A deposit refused as UNAVAILABLE is asked again this many times in all (0.5, 1, 2, 4 s apart).
FUND_ATTEMPTS = 5
GAME_STARTED_AT = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
# Confirm sandbox payments at once (the callback of a payment the sandbox was handed goes
# out when it comes due; its poll, at the default 0.5 s, finds the others), so tests wait
# little; every callback arrives twice, as real providers' webhooks sometimes do. The tests
# fund players in USD through the sandbox, so they allow it real money by name.
FAST_SANDBOX = SandboxConfig(delay=timedelta(0), duplicate_callbacks=True, real_money_unsafe=True)
# The sandbox as production would have it if someone chose it: play money only.
PLAY_ONLY_SANDBOX = SandboxConfig(delay=timedelta(0))


def sandbox_provider(clock: Clock) -> SandboxProvider:
    """The sandbox allowed real money by name, for tests that call the service directly."""
    return SandboxProvider(FAST_SANDBOX, clock)


# Where a player whose payments a test makes through the service object itself lives
# and calls from (as ``as_player`` does by default): keywords for deposit and withdraw.
FROM_MALTA: dict[str, Any] = {
    "residence": DEFAULT_RESIDENCE,
    "signals": ClientSignals(address=DEFAULT_ADDRESS),
}


def direct_service(
    unit_of_work: Callable[[], WalletUnitOfWork], clock: Clock, geo_address: str
) -> tuple[WalletService, GeoGate]:
    """The wallet's use cases called in-process (to set ledgers up), asking the geo service
    at ``geo_address`` as the running service does, and that gate (close it after)."""
    gate = GeoGate.from_env(minter("wallet"), {GEO_ADDRESS: geo_address})
    service = WalletService(unit_of_work, clock=clock, provider=sandbox_provider(clock), geo=gate)
    return service, gate


async def start_wallet(
    database_url: str,
    bootstrap: str,
    *,
    clock: Clock | None = None,
    sandbox: SandboxConfig = FAST_SANDBOX,
    payments: PaymentSettings | None = None,
    geo_address: str | None = None,
) -> RunningService:
    """The wallet in-process; ``geo_address`` is the geo service its deposits and
    withdrawals ask (the ``geo_service`` fixture's), None: none (real money refused)."""
    chosen = payments or PaymentSettings.sandboxed(sandbox)
    geo_env = {GEO_ADDRESS: geo_address} if geo_address else {}
    return await start_service(
        fast_settings("wallet", database_url, bootstrap),
        lambda runtime: wallet_main.wiring(runtime, chosen, geo_env),
        clock=clock,
    )


def new_id(prefix: str = "p") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def money(minor_units: int, currency: str = "USD") -> money_pb2.Money:
    return money_pb2.Money(minor_units=minor_units, currency=currency)


async def balance(
    stub: wallet_pb2_grpc.WalletServiceStub, player_id: str, currency: str = "USD"
) -> tuple[int, int]:
    """(available, held) in minor units."""
    response = await stub.GetBalances(
        wallet_pb2.GetBalancesRequest(), metadata=as_player(player_id)
    )
    for item in response.balances:
        if item.currency == currency:
            return item.available.minor_units, item.held.minor_units
    return 0, 0


async def fund(
    stub: wallet_pb2_grpc.WalletServiceStub,
    player_id: str,
    minor_units: int,
    currency: str = "USD",
    timeout: float = 20.0,
) -> None:
    """Deposit through the sandbox provider and wait until it is confirmed.

    UNAVAILABLE (the location check timed out on a loaded machine) is retried with the
    same idempotency key, as a client is told to: a test's funding is set-up, not what
    it checks, and the retry cannot deposit twice.
    """
    before, _ = await balance(stub, player_id, currency)
    request = wallet_pb2.DepositRequest(
        amount=money(minor_units, currency),
        idempotency_key=new_id("dep"),
        payment_method="sandbox",
    )
    for attempt in range(FUND_ATTEMPTS):
        try:
            await stub.Deposit(request, metadata=as_player(player_id))
            break
        except grpc.aio.AioRpcError as error:
            if error.code() != grpc.StatusCode.UNAVAILABLE or attempt == FUND_ATTEMPTS - 1:
                raise
            await asyncio.sleep(0.5 * 2**attempt)
    await wait_for_balance(stub, player_id, before + minor_units, currency, timeout)


async def top_up(stub: wallet_pb2_grpc.WalletServiceStub, player_id: str) -> int:
    """The player's free play money (10,000.00 PLAY), as the console's button gets it."""
    topped: wallet_pb2.TopUpPlayMoneyResponse = await stub.TopUpPlayMoney(
        wallet_pb2.TopUpPlayMoneyRequest(idempotency_key=new_id("top-up")),
        metadata=as_player(player_id),
    )
    return topped.balance.minor_units


async def wait_for_balance(
    stub: wallet_pb2_grpc.WalletServiceStub,
    player_id: str,
    expected: int,
    currency: str = "USD",
    timeout: float = 20.0,
) -> None:
    async with asyncio.timeout(timeout):
        while (await balance(stub, player_id, currency))[0] != expected:
            await asyncio.sleep(0.05)


async def place_hold(
    stub: wallet_pb2_grpc.WalletServiceStub,
    player_id: str,
    minor_units: int,
    table_id: str,
    currency: str = "USD",
) -> wallet_pb2.Hold:
    hold: wallet_pb2.Hold = await stub.PlaceHold(
        wallet_pb2.PlaceHoldRequest(
            account_id=player_id,
            amount=money(minor_units, currency),
            table_id=table_id,
            idempotency_key=new_id("hold"),
        )
    )
    return hold


async def claim_holds(
    stub: wallet_pb2_grpc.WalletServiceStub,
    table_id: str,
    game_id: str,
    sides: Sequence[Side],
    required: int,
    currency: str = "USD",
) -> None:
    """Bind both seats' holds to ``game_id`` as the game service does before it starts a
    game (real money settles only from holds claimed for its game)."""
    await stub.ClaimHolds(
        wallet_pb2.ClaimHoldsRequest(
            table_id=table_id,
            game_id=game_id,
            required=money(required, currency),
            seats=[wallet_pb2.SeatHold(account_id=s.player_id, hold_id=s.hold_id) for s in sides],
        )
    )


async def held_for_game(
    stub: wallet_pb2_grpc.WalletServiceStub,
    players: Sequence[str],
    amount: int,
    table_id: str,
    game_id: str,
    currency: str = "USD",
) -> list[Side]:
    """Each player's stake of ``amount`` held at the table and claimed for ``game_id``, as
    matchmaking and the game do before a game starts: the sides its result may name."""
    sides = []
    for player in players:
        placed = await place_hold(stub, player, amount, table_id, currency)
        sides.append(Side(player, hold_id=placed.hold_id))
    await claim_holds(stub, table_id, game_id, sides, amount, currency)
    return sides


@dataclass(frozen=True)
class Side:
    player_id: str
    rating: float = 1500.0
    hold_id: str = ""

    def message(self) -> game_pb2.Player:
        return game_pb2.Player(
            account_id=self.player_id,
            display_name=self.player_id,
            rating=self.rating,
            hold_id=self.hold_id,
        )


def game_ended(
    *,
    winner: Side,
    loser: Side,
    stake: int,
    cube: int = 1,
    result: int = game_pb2.RESULT_TYPE_SINGLE,
    currency: str = "USD",
    game_id: str | None = None,
    table_id: str | None = None,
    shares: Sequence[tuple[str, str]] = (),
    at: datetime = GAME_STARTED_AT,
) -> game_events.GameEnded:
    event = game_events.GameEnded(
        game_id=game_id or new_id("g"),
        version=10,
        table_id=table_id or new_id("t"),
        game_number=1,
        kind=game_pb2.PLAY_KIND_MONEY_GAME,
        winner_account_id=winner.player_id,
        loser_account_id=loser.player_id,
        result=result,  # type: ignore[arg-type]
        cube_value=cube,
        points=cube * result,
        reason=game_pb2.END_REASON_DISCONNECTION if shares else game_pb2.END_REASON_BORNE_OFF,
        stake=money(stake, currency),
        players=[winner.message(), loser.message()],
        shares=[game_events.SettlementShare(account_id=a, share=s) for a, s in shares],
        analysed=bool(shares),
    )
    event.occurred_at.FromDatetime(at)
    return event


def match_ended(
    *,
    winner: Side,
    loser: Side,
    stake: int,
    length: int,
    currency: str = "USD",
    game_id: str | None = None,
    table_id: str | None = None,
    at: datetime = GAME_STARTED_AT,
) -> game_events.MatchEnded:
    event = game_events.MatchEnded(
        game_id=game_id or new_id("m"),
        version=50,
        table_id=table_id or new_id("t"),
        match_length=length,
        winner_account_id=winner.player_id,
        loser_account_id=loser.player_id,
        final_score=[length, 0],
        reason=game_pb2.END_REASON_BORNE_OFF,
        stake=money(stake, currency),
        players=[winner.message(), loser.message()],
        games_played=length,
    )
    event.occurred_at.FromDatetime(at)
    return event


def received(
    message: Message, event_id: str | None = None, topic: str = "tavla.game.v1"
) -> ReceivedEvent:
    """The event as the consumer would receive it from Kafka."""
    envelope = Envelope.wrap(
        topic=topic,
        key=getattr(message, "game_id", ""),
        message=message,
        source="game",
        now=GAME_STARTED_AT,
    )
    return ReceivedEvent(
        event_id=event_id or envelope.event_id,
        ce_type=envelope.ce_type,
        source=envelope.headers["ce_source"],
        topic=envelope.topic,
        key=envelope.key,
        payload=envelope.payload,
        headers=envelope.headers,
    )


@dataclass
class DirectConsumer:
    """The settlement consumer on its own engine: tests hand it events without Kafka."""

    engine: AsyncEngine
    consumer: EventConsumer

    async def handle(self, message: Message, event_id: str | None = None) -> bool:
        return await self.consumer.handle(received(message, event_id))

    async def close(self) -> None:
        await self.engine.dispose()


def _fed_by_hand() -> AIOKafkaConsumer:
    raise RuntimeError("this consumer is fed by hand: call handle(), not run()")


def direct_accounts_consumer(database_url: str, clock: Clock) -> DirectConsumer:
    """The self-exclusion consumer, fed by hand."""
    engine = create_async_engine(database_url, pool_size=2, max_overflow=0)
    consumer = accounts_consumer(
        sessions=async_sessionmaker(engine, expire_on_commit=False),
        consumer_factory=_fed_by_hand,
        clock=clock,
    )
    return DirectConsumer(engine, consumer)


def direct_consumer(
    database_url: str, clock: Clock | None = None, pool: int = 10
) -> DirectConsumer:
    engine = create_async_engine(database_url, pool_size=pool, max_overflow=pool)
    clock = clock or ManualClock(GAME_STARTED_AT)
    consumer = settlement_consumer(
        sessions=async_sessionmaker(engine, expire_on_commit=False),
        consumer_factory=_fed_by_hand,
        settler=Settler(clock),
        clock=clock,
    )
    return DirectConsumer(engine, consumer)


def dollars(text: str) -> int:
    return int(Decimal(text) * 100)


@dataclass
class Wallet:
    """A running wallet, its stub, its clock, its database and a hand-fed settlement consumer."""

    service: RunningService
    stub: wallet_pb2_grpc.WalletServiceStub
    clock: ManualClock
    database: str
    url: str
    consumer: DirectConsumer


async def outbox_events(database_url: str, key: str) -> list[str]:
    """The ce_types recorded in the outbox under ``key``, in commit order."""
    engine = create_async_engine(database_url)
    try:
        async with engine.connect() as connection:
            rows = await connection.execute(
                text("SELECT ce_type FROM outbox WHERE key = :key ORDER BY seq"), {"key": key}
            )
            return [row.ce_type.rsplit(".", 1)[-1] for row in rows]
    finally:
        await engine.dispose()
