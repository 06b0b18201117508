"""Settling finished games and matches (the reference path), and the helpers the
grouped path (:mod:`services.wallet.grouped_settlement`) shares with it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from prometheus_client import Counter

from services.kit import table_stakes
from services.kit.clock import Clock, protobuf_timestamp
from services.wallet.domain.errors import InvalidSettlement
from services.wallet.domain.holds import Hold, HoldStatus
from services.wallet.domain.money import PLAY, Money
from services.wallet.domain.schedule import schedule_in_force
from services.wallet.domain.settlement import (
    Players,
    Settlement,
    require_backed,
    settle_match,
    settle_money_game,
    settle_split,
    settlement_batch,
    table_stakes_batch,
)
from services.wallet.domain.terms import Match, MoneyGame, WinType
from services.wallet.messages import TOPIC, money_message
from services.wallet.posting import Transaction, lock_ledger, post_locked
from services.wallet.store.holds import StoredHold
from services.wallet.store.settlements import SettlementRecord
from tavla.wallet.v1 import events_pb2, wallet_pb2

REJECTED = Counter(
    "tavla_wallet_settlements_rejected",
    "Finished games the wallet refused to settle (recorded as rejected, nothing moved), "
    "by reason (UNBACKED_SETTLEMENT: money not held for the game was asked for).",
    ["reason"],
)


@dataclass(frozen=True, slots=True)
class Seat:
    """One player of a finished game as the game service reported them."""

    player_id: str
    rating: Decimal
    hold_id: str


@dataclass(frozen=True)
class SettlementRequest:
    """A finished money game or match to settle (built from GameEnded / MatchEnded)."""

    settlement_id: str
    game_id: str
    game_number: int  # 0 for a match
    table_id: str
    terms: MoneyGame | Match
    seats: tuple[Seat, Seat]
    winner_id: str
    loser_id: str
    cube: int
    win_type: WinType
    shares: Mapping[str, Decimal]  # disconnection splits only
    occurred_at: datetime
    source_event_id: str
    # Table stakes: the most the game could put at risk (GameEnded); 0 at other tables.
    at_risk: int = 0

    @property
    def currency(self) -> str:
        return self.terms.stake.currency

    @property
    def table_stakes(self) -> bool:
        return self.at_risk > 0


class Settler:
    """Settles finished games inside the caller's transaction (the consumer's inbox one).

    Every rule check happens before the first write, so a refused settlement
    leaves nothing behind but its ``rejected`` record.
    """

    def __init__(self, clock: Clock) -> None:
        self._clock = clock

    async def settle(self, tx: Transaction, request: SettlementRequest) -> SettlementRecord:
        """Settle one finished game or match; the same game again returns the first result.

        The settlement row is the batch's idempotency record: it commits with the
        transfers, and is looked up only once the game's holds and accounts are
        locked, so a duplicate running alongside waits for the first and then
        finds it.
        """
        now = self._clock.now()
        settlement = domain_settlement(request)
        hold_ids = [seat.hold_id for seat in request.seats if seat.hold_id]
        locked = await tx.holds.get_many(hold_ids, lock=True)
        # A table-stakes game leaves its holds open for the next one: its record alone says
        # whether it was settled (the holds are locked, so a duplicate alongside waited).
        if paid_out(request, locked) or request.table_stakes:
            # Its holds (locked now, so a duplicate alongside waited) were posted: by this
            # game's settlement, reported again under another event id, or refused below.
            existing = await tx.settlements.get(request.settlement_id)
            if existing is not None:
                return existing
        check_holds(request, settlement, locked)
        open_holds = [s.hold for s in locked.values() if s.hold.status is HoldStatus.OPEN]
        if request.table_stakes:
            batch = table_stakes_batch(settlement, open_holds)
        else:
            batch = settlement_batch(settlement, open_holds)
        # Play-money tables hold nothing, so a player may have no account yet.
        seats = [seat.player_id for seat in request.seats]
        before = await lock_ledger(tx, batch.transfers, open_for=seats, known_transfers=False)
        existing = await tx.settlements.get(request.settlement_id)
        if existing is not None:
            return existing  # the same game reported again under another event id
        await post_locked(tx, before, batch.transfers, now)
        await tx.holds.save_many(batch.posted_holds, now)
        record = settlement_record(request, settlement, now)
        await tx.settlements.add(record)
        left = {hold.player_id: hold for hold in batch.posted_holds} if request.table_stakes else {}
        tx.publish(TOPIC, request.game_id, settled_event(request, settlement, now, left))
        return record

    async def reject(
        self, tx: Transaction, request: SettlementRequest, reason: str
    ) -> SettlementRecord:
        """Remember a result the wallet refused, so an operator can reconcile it by hand."""
        existing = await tx.settlements.get(request.settlement_id)
        if existing is not None:
            return existing  # refused (or settled) already under another event id
        record = rejected_record(request, reason, self._clock.now())
        await tx.settlements.add(record)
        return record


def rejected_record(request: SettlementRequest, reason: str, now: datetime) -> SettlementRecord:
    """The record of a result the wallet refused: no money moved, the reason kept."""
    return SettlementRecord(
        id=request.settlement_id,
        game_id=request.game_id,
        game_number=request.game_number,
        table_id=request.table_id,
        kind=_kind(request),
        currency=request.currency,
        winner_id=request.winner_id or None,
        loser_id=request.loser_id or None,
        win_sum=0,
        commission_total=0,
        rate="0",
        schedule_version="",
        disconnection=bool(request.shares),
        status="rejected",
        detail=reason[:1000],
        source_event_id=request.source_event_id,
        settled_at=now,
    )


def paid_out(request: SettlementRequest, locked: Mapping[str, StoredHold]) -> bool:
    """Whether every hold the game names exists and was posted by a settlement."""
    named = [seat.hold_id for seat in request.seats if seat.hold_id]
    return bool(named) and all(
        hold_id in locked and locked[hold_id].hold.status is HoldStatus.POSTED
        for hold_id in named
    )


def check_holds(
    request: SettlementRequest, settlement: Settlement, locked: Mapping[str, StoredHold]
) -> None:
    """Each hold the game names must exist and be its seat's, at its table; real money is
    paid only from the holds claimed for the game, none for more than it holds."""
    held: dict[str, Hold] = {}
    for seat in request.seats:
        if not seat.hold_id:
            continue
        stored = locked.get(seat.hold_id)
        if stored is None:
            raise InvalidSettlement(f"game {request.game_id} names unknown hold {seat.hold_id}")
        hold = stored.hold
        if hold.player_id != seat.player_id or hold.table_id != request.table_id:
            raise InvalidSettlement(
                f"hold {hold.id} belongs to {hold.player_id} at table {hold.table_id}, not to "
                f"{seat.player_id} at table {request.table_id} of game {request.game_id}"
            )
        held[seat.player_id] = hold
    if request.currency != PLAY:
        players = [seat.player_id for seat in request.seats]
        require_backed(settlement, request.game_id, players, held)


def _kind(request: SettlementRequest) -> str:
    """The record's kind; a table-stakes game's does not close its table (the audit's live
    tables): its holds stay open for the next game."""
    if isinstance(request.terms, Match):
        return "series"
    return "table_stakes" if request.table_stakes else "single"


def domain_settlement(request: SettlementRequest) -> Settlement:
    schedule = schedule_in_force(request.currency, request.occurred_at)
    first, second = request.seats
    ratings = (first.rating, second.rating)
    if request.shares:
        share = request.shares.get(first.player_id)
        if share is None or set(request.shares) != {first.player_id, second.player_id}:
            raise InvalidSettlement(
                f"the shares of game {request.game_id} name {sorted(request.shares)}, "
                f"not its players {first.player_id} and {second.player_id}"
            )
        return settle_split(
            request.settlement_id,
            first.player_id,
            second.player_id,
            request.terms,
            request.cube,
            share,
            ratings,
            schedule,
            pot_each=_table_stakes_pot(request),
        )
    seat_ids = {first.player_id, second.player_id}
    if {request.winner_id, request.loser_id} != seat_ids:
        raise InvalidSettlement(
            f"game {request.game_id} names winner {request.winner_id!r} and loser "
            f"{request.loser_id!r}, but its players are {sorted(seat_ids)}"
        )
    players = Players(request.winner_id, request.loser_id)
    if isinstance(request.terms, Match):
        return settle_match(request.settlement_id, players, request.terms, ratings, schedule)
    return settle_money_game(
        request.settlement_id,
        players,
        request.terms,
        request.cube,
        _counted_win_type(request),
        ratings,
        schedule,
    )


def _counted_win_type(request: SettlementRequest) -> WinType:
    """The result as it counts: at table stakes only as far as the amount at risk covers
    (the game reported it capped already; the wallet holds to the same rule)."""
    if not request.table_stakes:
        return request.win_type
    stake = request.terms.stake.amount
    counted = table_stakes.capped_multiplier(
        stake, request.cube, int(request.win_type), request.at_risk
    )
    return WinType(counted)


def _table_stakes_pot(request: SettlementRequest) -> Money | None:
    """A split table-stakes game: each side puts in what it could lose, a backgammon at
    the cube counted as far as the amount at risk covers."""
    if not request.table_stakes:
        return None
    stake = request.terms.stake.amount
    loss = table_stakes.capped_loss(stake, request.cube, int(WinType.BACKGAMMON), request.at_risk)
    return Money(loss, request.currency)


def settlement_record(
    request: SettlementRequest, settlement: Settlement, now: datetime
) -> SettlementRecord:
    """The record of a settled result: what moved, at which rate and schedule."""
    players = settlement.players
    return SettlementRecord(
        id=request.settlement_id,
        game_id=request.game_id,
        game_number=request.game_number,
        table_id=request.table_id,
        kind=_kind(request),
        currency=settlement.currency,
        winner_id=players.winner_id if players else None,
        loser_id=players.loser_id if players else None,
        win_sum=settlement.loser_debit.amount,
        commission_total=settlement.commission_total.amount,
        rate=str(settlement.quote.rate) if settlement.quote else "0",
        schedule_version=settlement.schedule_version,
        disconnection=bool(settlement.shares),
        status="settled",
        detail=None,
        source_event_id=request.source_event_id,
        settled_at=now,
    )


def settled_event(
    request: SettlementRequest,
    settlement: Settlement,
    now: datetime,
    table_holds: Mapping[str, Hold] | None = None,
) -> events_pb2.Settled:
    """The Settled event; ``table_holds`` (table stakes) are each player's hold afterwards."""
    quote = settlement.quote
    zero = Money.zero(settlement.currency)
    net = settlement.net_changes()
    counted = quote.adjustment.counted_ratings if quote else None
    players = []
    for index, seat in enumerate(request.seats):
        share = settlement.shares.get(seat.player_id)
        players.append(
            events_pb2.PlayerSettlement(
                account_id=seat.player_id,
                # The schedule counts ratings as decimals; the event's field is a double.
                rating=float(counted[index] if counted else seat.rating),
                commission=money_message(quote.per_player if quote else zero),
                net=money_message(net.get(seat.player_id, zero)),
                share=str(share) if share is not None else "",
                table_stake_left_minor_units=_left(table_holds, seat.player_id),
            )
        )
    winner = settlement.players
    return events_pb2.Settled(
        game_id=request.game_id,
        settlement_id=settlement.id,
        game_number=request.game_number,
        kind=wallet_pb2.SETTLEMENT_KIND_SERIES
        if isinstance(request.terms, Match)
        else wallet_pb2.SETTLEMENT_KIND_SINGLE_GAME,
        source_event_id=request.source_event_id,
        winner_account_id=winner.winner_id if winner else "",
        loser_account_id=winner.loser_id if winner else "",
        win_sum=money_message(settlement.loser_debit),
        rate=str(quote.rate) if quote else "0",
        commission_total=money_message(settlement.commission_total),
        winner_credit=money_message(settlement.winner_credit),
        loser_debit=money_message(settlement.loser_debit),
        players=players,
        schedule_version=settlement.schedule_version,
        disconnection=bool(settlement.shares),
        occurred_at=protobuf_timestamp(now),
        table_stakes=request.table_stakes,
    )


def _left(table_holds: Mapping[str, Hold] | None, player_id: str) -> int:
    hold = (table_holds or {}).get(player_id)
    if hold is None or hold.status is not HoldStatus.OPEN:
        return 0
    return hold.amount.amount
