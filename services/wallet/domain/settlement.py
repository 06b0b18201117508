"""Settlement: from a game or match result to the transfers that pay it.

The loser pays the win sum (stake x cube x result for a money game, the stake
for a match) to the winner, and the winner pays both players' commission to the
house, so the loser's debit equals the winner's credit plus the commission.
When a disconnected game is not resumed it is analysed and the money split by
the players' shares. Play money pays no commission. Each settlement records the
schedule version it used.

Real money moves only from stakes held for the game: ``require_backed`` refuses a
result unless each seat's hold was claimed for that game (``ClaimHolds``) and is
still there, and no player pays more than their hold; nothing is ever taken from
an available balance.

``settlement_batch`` puts the releases of both players' holds in front of the
payments, so the service posts one all-or-nothing batch per finished game.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal

from services.wallet.domain.commission import (
    CommissionQuote,
    Rating,
    quote_amount,
    quote_match,
    quote_single_game,
)
from services.wallet.domain.errors import InvalidSettlement, UnbackedSettlement
from services.wallet.domain.holds import (
    Hold,
    HoldStatus,
    carry_over,
    carry_over_transfer,
    post_hold,
)
from services.wallet.domain.ledger import (
    AccountKind,
    Transfer,
    TransferCode,
    player_account_id,
    system_account_id,
)
from services.wallet.domain.money import Money, round_half_up
from services.wallet.domain.schedule import CommissionSchedule
from services.wallet.domain.terms import GameTerms, Match, MoneyGame, WinType, largest_possible_loss


@dataclass(frozen=True, slots=True)
class Players:
    """The two sides of a settlement: who pays and who is paid."""

    winner_id: str
    loser_id: str

    def __post_init__(self) -> None:
        if self.winner_id == self.loser_id:
            raise InvalidSettlement(f"player {self.winner_id} cannot play against themselves")


@dataclass(frozen=True, slots=True)
class Settlement:
    """What a finished game pays; ``players`` is None when a split evens out."""

    id: str
    players: Players | None
    currency: str
    schedule_version: str
    quote: CommissionQuote | None
    transfers: tuple[Transfer, ...]
    shares: Mapping[str, Decimal] = field(default_factory=dict)  # disconnection splits only

    def net_changes(self) -> dict[str, Money]:
        """Each player's balance change: the winner's credit and the loser's debit."""
        if self.players is None:
            return {}
        return {
            self.players.winner_id: self.winner_credit,
            self.players.loser_id: -self.loser_debit,
        }

    @property
    def loser_debit(self) -> Money:
        return self.quote.loser_debit if self.quote else Money.zero(self.currency)

    @property
    def winner_credit(self) -> Money:
        return self.quote.winner_credit if self.quote else Money.zero(self.currency)

    @property
    def commission_total(self) -> Money:
        return self.quote.total if self.quote else Money.zero(self.currency)


def _payment_transfers(
    settlement_id: str, players: Players, quote: CommissionQuote, code: TransferCode
) -> tuple[Transfer, ...]:
    currency = quote.amount.currency
    winner = player_account_id(players.winner_id, currency)
    payout = Transfer(
        id=f"settle:{settlement_id}:payout",
        debit_account_id=player_account_id(players.loser_id, currency),
        credit_account_id=winner,
        amount=quote.amount,
        code=code,
        reference=f"settlement:{settlement_id}",
    )
    if not quote.per_player.is_positive():
        return (payout,)
    # One commission transfer per player, both paid by the winner, so statements show each.
    commissions = tuple(
        Transfer(
            id=f"settle:{settlement_id}:commission:{player_id}",
            debit_account_id=winner,
            credit_account_id=system_account_id(AccountKind.HOUSE_COMMISSION, currency),
            amount=quote.per_player,
            code=TransferCode.COMMISSION,
            reference=f"settlement:{settlement_id}",
        )
        for player_id in (players.winner_id, players.loser_id)
    )
    return (payout, *commissions)


def _settlement(
    settlement_id: str, players: Players, quote: CommissionQuote, code: TransferCode
) -> Settlement:
    return Settlement(
        id=settlement_id,
        players=players,
        currency=quote.amount.currency,
        schedule_version=quote.schedule_version,
        quote=quote,
        transfers=_payment_transfers(settlement_id, players, quote, code),
    )


def settle_money_game(
    settlement_id: str,
    players: Players,
    game: MoneyGame,
    cube: int,
    win_type: WinType,
    ratings: tuple[Rating, Rating],
    schedule: CommissionSchedule,
) -> Settlement:
    """A money game won ``win_type`` at ``cube``: the loser pays stake x cube x result."""
    quote = quote_single_game(schedule, game, cube, win_type, ratings)
    return _settlement(settlement_id, players, quote, TransferCode.GAME_PAYOUT)


def settle_match(
    settlement_id: str,
    players: Players,
    match: Match,
    ratings: tuple[Rating, Rating],
    schedule: CommissionSchedule,
) -> Settlement:
    """A finished match: the loser pays the match stake, whatever the score."""
    quote = quote_match(schedule, match, ratings)
    return _settlement(settlement_id, players, quote, TransferCode.MATCH_PAYOUT)


def settle_split(
    settlement_id: str,
    first_id: str,
    second_id: str,
    terms: GameTerms,
    cube: int,
    first_share: Decimal,
    ratings: tuple[Rating, Rating],
    schedule: CommissionSchedule,
    pot_each: Money | None = None,
) -> Settlement:
    """An abandoned game split by analysis.

    Each player puts in their largest possible loss at ``cube``; ``first_share``
    (0 to 1) is the first player's share of that pot, e.g. their match-winning
    chance, or (1 + equity / 3) / 2 for a money game's cubeless equity. Only the
    difference changes hands, and commission is charged on it. ``pot_each`` replaces
    the largest loss where less is at risk (table stakes: what the poorer player has left).
    """
    if not isinstance(first_share, Decimal) or not Decimal(0) <= first_share <= Decimal(1):
        raise InvalidSettlement(f"a share is a decimal from 0 to 1, got {first_share!r}")
    pot_each = pot_each or largest_possible_loss(terms, cube)
    net_to_first = round_half_up(pot_each.amount * (2 * first_share - 1))
    shares = {first_id: first_share, second_id: 1 - first_share}
    if net_to_first == 0:
        currency = pot_each.currency
        return Settlement(settlement_id, None, currency, schedule.version, None, (), shares)
    players = Players(first_id, second_id) if net_to_first > 0 else Players(second_id, first_id)
    amount = Money(abs(net_to_first), pot_each.currency)
    quote = quote_amount(schedule, terms, amount, ratings)
    settlement = _settlement(settlement_id, players, quote, TransferCode.DISCONNECT_SPLIT)
    return replace(settlement, shares=shares)


@dataclass(frozen=True, slots=True)
class SettlementBatch:
    """The transfers to post in one batch and the holds as they stand afterwards."""

    transfers: tuple[Transfer, ...]
    posted_holds: tuple[Hold, ...]
    placed_holds: tuple[Hold, ...] = ()  # new holds the batch places (a pool's tickets)


def settlement_batch(settlement: Settlement, holds: Sequence[Hold]) -> SettlementBatch:
    """Post every hold of the table, then pay: one batch the ledger applies all or nothing."""
    for hold in holds:
        if hold.currency != settlement.currency:
            raise InvalidSettlement(
                f"hold {hold.id} is in {hold.currency} but settlement {settlement.id} "
                f"is in {settlement.currency}"
            )
    changes = [post_hold(hold) for hold in holds]
    releases = tuple(change.transfer for change in changes if change.transfer is not None)
    return SettlementBatch(
        transfers=(*releases, *settlement.transfers),
        posted_holds=tuple(change.hold for change in changes),
    )


def table_stakes_batch(settlement: Settlement, holds: Sequence[Hold]) -> SettlementBatch:
    """A table-stakes game: both table holds released, the result paid between the players
    (commission to the house as in any game), and what each has left held again at once.

    Money leaves the holds only as the loser's payment and the commission, and every
    player's available balance ends where it began; the holds stay open (unbound from the
    game) for the next game, a hold with nothing left is posted.
    """
    nets = settlement.net_changes()
    releases: list[Transfer] = []
    holds_again: list[Transfer] = []
    after: list[Hold] = []
    for hold in holds:
        if hold.currency != settlement.currency:
            raise InvalidSettlement(
                f"hold {hold.id} is in {hold.currency} but settlement {settlement.id} "
                f"is in {settlement.currency}"
            )
        left = hold.amount + nets.get(hold.player_id, Money.zero(hold.currency))
        if left.amount < 0:
            raise UnbackedSettlement(
                f"{hold.player_id} would pay {-nets[hold.player_id]} from a table stake of "
                f"{hold.amount}: a player never loses more than they have at the table"
            )
        change = carry_over(hold, left, settlement.id)
        assert change.transfer is not None  # a release always moves the hold's amount
        releases.append(change.transfer)
        again = carry_over_transfer(change, settlement.id)
        if again is not None:
            holds_again.append(again)
        after.append(change.hold)
    return SettlementBatch(
        transfers=(*releases, *settlement.transfers, *holds_again), posted_holds=tuple(after)
    )


def require_backed(
    settlement: Settlement, game_id: str, player_ids: Sequence[str], holds: Mapping[str, Hold]
) -> None:
    """Refuse a real-money result that is not paid from the holds claimed for ``game_id``.

    ``holds`` maps each seat's player to the hold the game names for them. Every seat
    needs one, bound to this game by ``ClaimHolds`` and still open (a posted hold was
    paid out by a settlement already: the caller answers a repeat of that one before
    asking), and no player's loss may exceed their hold.
    """
    for player_id in player_ids:
        hold = holds.get(player_id)
        if hold is None:
            raise UnbackedSettlement(
                f"game {game_id} names no stake hold for {player_id}: real money is settled "
                "only from the stakes held for the game, never from a balance"
            )
        if hold.game_id != game_id:
            bound = f"game {hold.game_id}" if hold.game_id else "no game"
            raise UnbackedSettlement(
                f"game {game_id}: hold {hold.id} of {player_id} is bound to {bound}, not to "
                "this one (the game claims its stakes with ClaimHolds before it starts)"
            )
        if hold.status is not HoldStatus.OPEN:
            done = "released" if hold.status is HoldStatus.VOIDED else "paid out already"
            raise UnbackedSettlement(
                f"game {game_id}: hold {hold.id} of {player_id} was {done}; nothing is held"
            )
    for player_id, change in settlement.net_changes().items():
        held = holds[player_id].amount
        if -change.amount > held.amount:
            raise UnbackedSettlement(
                f"game {game_id} asks {player_id} to pay {-change} but only {held} is held "
                "for it: a player never loses more than their hold"
            )
