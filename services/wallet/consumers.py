"""The wallet's consumers: settlement from the game service's GameEnded (money games)
and MatchEnded, hold releases on GameCancelled, and self-exclusion from the accounts
service's AccountSelfExcluded.

The kit's EventConsumer runs each handler inside the inbox transaction, so an
event's effect and its inbox row commit together (exactly once per ``ce_id``).
The settlement id derives from the game (``<game_id>:<game_number>`` for a
money game, ``<game_id>:match`` for a match) and names every transfer, so the
same result reported again under another event id settles nothing twice.
A result the wallet refuses (a rule breach, never an outage) is recorded as a
rejected settlement and logged instead of blocking the partition forever.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from google.protobuf.message import DecodeError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from services.kit.clock import Clock
from services.kit.events.consumer import ConsumerFactory, EventConsumer
from services.kit.events.envelope import ReceivedEvent
from services.kit.logging import get_logger
from services.wallet.domain.errors import InvalidSettlement, WalletError
from services.wallet.domain.money import Money
from services.wallet.domain.terms import Match, MoneyGame, WinType
from services.wallet.grouped_settlement import GroupedSettlementConsumer
from services.wallet.holds import release_cancelled
from services.wallet.limits import record_self_exclusion
from services.wallet.settlement import REJECTED, Seat, SettlementRequest, Settler
from services.wallet.store.unit_of_work import InboxTransaction
from tavla.accounts.v1 import events_pb2 as account_events
from tavla.common.v1 import money_pb2
from tavla.game.v1 import events_pb2 as game_events
from tavla.game.v1 import game_pb2

log = get_logger(__name__)

GAME_TOPIC = "tavla.game.v1"
SETTLEMENT_GROUP = "wallet.settlement"
GAME_ENDED = game_events.GameEnded.DESCRIPTOR.full_name
MATCH_ENDED = game_events.MatchEnded.DESCRIPTOR.full_name
GAME_CANCELLED = game_events.GameCancelled.DESCRIPTOR.full_name

_WIN_TYPES = {
    game_pb2.RESULT_TYPE_SINGLE: WinType.SINGLE,
    game_pb2.RESULT_TYPE_GAMMON: WinType.GAMMON,
    game_pb2.RESULT_TYPE_BACKGAMMON: WinType.BACKGAMMON,
}


class SettlementHandlers:
    """The consumer's handlers: decode, build the request, settle in the inbox transaction."""

    def __init__(self, settler: Settler, clock: Clock, source: str = "wallet") -> None:
        self._settler = settler
        self._clock = clock
        self._source = source

    async def game_ended(self, session: AsyncSession, event: ReceivedEvent) -> None:
        ended = game_events.GameEnded.FromString(event.payload)
        if ended.kind != game_pb2.PLAY_KIND_MONEY_GAME:
            return  # games inside a match settle with the MatchEnded that follows
        await self._settle(
            session, event, lambda: game_request(ended, event.event_id, self._clock.now())
        )

    async def game_cancelled(self, session: AsyncSession, event: ReceivedEvent) -> None:
        cancelled = game_events.GameCancelled.FromString(event.payload)
        tx = InboxTransaction(session, source=self._source, clock=self._clock)
        hold_ids = [player.hold_id for player in cancelled.players if player.hold_id]
        reason = f"game cancelled: {cancelled.reason}" if cancelled.reason else "game cancelled"
        released = await release_cancelled(
            tx, cancelled.table_id, hold_ids, reason, self._clock.now()
        )
        await tx.flush()
        log.info("cancelled_game_released", game=cancelled.game_id, holds=released)

    async def match_ended(self, session: AsyncSession, event: ReceivedEvent) -> None:
        ended = game_events.MatchEnded.FromString(event.payload)
        if unstaked(ended):
            log.info("unstaked_match_not_settled", game=ended.game_id)
            return
        await self._settle(
            session, event, lambda: match_request(ended, event.event_id, self._clock.now())
        )

    async def _settle(
        self,
        session: AsyncSession,
        event: ReceivedEvent,
        build: Callable[[], SettlementRequest],
    ) -> None:
        tx = InboxTransaction(session, source=self._source, clock=self._clock)
        try:
            request = build()
        except WalletError as error:
            log.error("settlement_unreadable", event_id=event.event_id, error=str(error))
            return
        try:
            record = await self._settler.settle(tx, request)
        except WalletError as error:
            # Every check runs before the first write, so nothing of it reached the database.
            log.error(
                "settlement_rejected",
                settlement=request.settlement_id,
                reason=error.reason,
                error=str(error),
            )
            REJECTED.labels(error.reason).inc()
            record = await self._settler.reject(tx, request, f"{error.reason}: {error}")
        await tx.flush()
        log.debug("settled", settlement=record.id, status=record.status)  # as a group's games


def unstaked(ended: game_events.MatchEnded) -> bool:
    """A match staked on nothing (a tournament's: its money is the tournament's own, held
    and paid through SettlePool) has nothing to settle."""
    return ended.stake.minor_units == 0


def _stake(message: money_pb2.Money) -> Money:
    return Money(int(message.minor_units), message.currency)


def _share(text: str, player: str) -> Decimal:
    try:
        share = Decimal(text)
    except InvalidOperation:
        raise InvalidSettlement(f"share {text!r} of {player} is not a decimal") from None
    if not share.is_finite():
        raise InvalidSettlement(f"share {text!r} of {player} is not finite")
    return share


def _seats(players: Sequence[game_pb2.Player], game_id: str) -> tuple[Seat, Seat]:
    if len(players) != 2:
        raise InvalidSettlement(f"game {game_id} reports {len(players)} players, not 2")
    first, second = (
        # Ratings travel as doubles: through str() they become the decimal the client meant.
        Seat(player.account_id, Decimal(str(player.rating)), player.hold_id)
        for player in players
    )
    return first, second


def _occurred(ended: game_events.GameEnded | game_events.MatchEnded, now: datetime) -> datetime:
    """When the game ended: the schedule in force then prices it (now, if the event lacks it)."""
    if ended.HasField("occurred_at"):
        return ended.occurred_at.ToDatetime(tzinfo=UTC)
    return now


def _shares(reason: int, shares: Sequence[game_events.SettlementShare]) -> dict[str, Decimal]:
    if reason != game_pb2.END_REASON_DISCONNECTION or not shares:
        return {}
    return {share.account_id: _share(share.share, share.account_id) for share in shares}


def game_request(ended: game_events.GameEnded, event_id: str, now: datetime) -> SettlementRequest:
    win_type = _WIN_TYPES.get(ended.result)
    shares = _shares(ended.reason, ended.shares)
    if win_type is None and not shares:
        raise InvalidSettlement(f"game {ended.game_id} ended without a result type")
    return SettlementRequest(
        settlement_id=f"{ended.game_id}:{ended.game_number}",
        game_id=ended.game_id,
        game_number=ended.game_number,
        table_id=ended.table_id,
        terms=MoneyGame(_stake(ended.stake)),
        seats=_seats(ended.players, ended.game_id),
        winner_id=ended.winner_account_id,
        loser_id=ended.loser_account_id,
        cube=ended.cube_value or 1,
        win_type=win_type or WinType.SINGLE,
        shares=shares,
        occurred_at=_occurred(ended, now),
        source_event_id=event_id,
        at_risk=ended.table_stakes_at_risk_minor_units,
    )


def match_request(ended: game_events.MatchEnded, event_id: str, now: datetime) -> SettlementRequest:
    return SettlementRequest(
        settlement_id=f"{ended.game_id}:match",
        game_id=ended.game_id,
        game_number=0,
        table_id=ended.table_id,
        terms=Match(_stake(ended.stake), ended.match_length),
        seats=_seats(ended.players, ended.game_id),
        winner_id=ended.winner_account_id,
        loser_id=ended.loser_account_id,
        cube=1,
        win_type=WinType.SINGLE,
        shares=_shares(ended.reason, ended.shares),
        occurred_at=_occurred(ended, now),
        source_event_id=event_id,
    )


def settlement_request(event: ReceivedEvent, now: datetime) -> SettlementRequest | None:
    """What a GameEnded of a money game or a MatchEnded asks the wallet to settle.

    None for anything else, including results that cannot be read: the handlers
    above deal with those (and log them) one event at a time.
    """
    try:
        if event.ce_type == GAME_ENDED:
            ended = game_events.GameEnded.FromString(event.payload)
            if ended.kind != game_pb2.PLAY_KIND_MONEY_GAME:
                return None
            if ended.table_stakes_at_risk_minor_units:
                return None  # table stakes carry their holds over: the reference path only
            return game_request(ended, event.event_id, now)
        if event.ce_type == MATCH_ENDED:
            match = game_events.MatchEnded.FromString(event.payload)
            return None if unstaked(match) else match_request(match, event.event_id, now)
    except (WalletError, DecodeError):
        return None
    return None


def settlement_consumer(
    *,
    sessions: async_sessionmaker[AsyncSession],
    consumer_factory: ConsumerFactory,
    settler: Settler,
    clock: Clock,
    service: str = "wallet",
    grouped: bool = True,
) -> EventConsumer:
    """The consumer of the game service's results.

    ``grouped`` (the default, on asyncpg): finished games settle in groups
    (:mod:`services.wallet.grouped_settlement`); otherwise each event is its own
    transaction through :class:`Settler` (the reference path, also every grouped
    game's fallback).
    """
    handlers = SettlementHandlers(settler, clock, service)
    common: dict[str, Any] = {
        "service": service,
        "name": "settlement",
        "sessions": sessions,
        "consumer_factory": consumer_factory,
        "handlers": {
            GAME_ENDED: handlers.game_ended,
            MATCH_ENDED: handlers.match_ended,
            GAME_CANCELLED: handlers.game_cancelled,
        },
        "clock": clock,
    }
    engine = sessions.kw.get("bind")
    if not grouped or not isinstance(engine, AsyncEngine) or engine.dialect.driver != "asyncpg":
        return EventConsumer(**common)
    return GroupedSettlementConsumer(
        **common,
        engine=engine,
        requests=lambda event: settlement_request(event, clock.now()),
    )


ACCOUNTS_TOPIC = "tavla.accounts.v1"
ACCOUNTS_GROUP = "wallet.accounts"
SELF_EXCLUDED = account_events.AccountSelfExcluded.DESCRIPTOR.full_name


class AccountHandlers:
    """Facts from the accounts service the wallet must enforce: self-exclusion."""

    def __init__(self, clock: Clock, source: str = "wallet") -> None:
        self._clock = clock
        self._source = source

    async def self_excluded(self, session: AsyncSession, event: ReceivedEvent) -> None:
        fact = account_events.AccountSelfExcluded.FromString(event.payload)
        tx = InboxTransaction(session, source=self._source, clock=self._clock)
        at = _stamp(fact, "occurred_at") or self._clock.now()
        await record_self_exclusion(tx, fact.account_id, _stamp(fact, "until"), at)


def _stamp(fact: account_events.AccountSelfExcluded, name: str) -> datetime | None:
    if not fact.HasField(name):  # type: ignore[arg-type]
        return None
    stamp: datetime = getattr(fact, name).ToDatetime(tzinfo=UTC)
    return stamp


def accounts_consumer(
    *,
    sessions: async_sessionmaker[AsyncSession],
    consumer_factory: ConsumerFactory,
    clock: Clock,
    service: str = "wallet",
) -> EventConsumer:
    handlers = AccountHandlers(clock, service)
    return EventConsumer(
        service=service,
        name="accounts",
        sessions=sessions,
        consumer_factory=consumer_factory,
        handlers={SELF_EXCLUDED: handlers.self_excluded},
        clock=clock,
    )
