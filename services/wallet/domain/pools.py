"""Settling a pool of holds: a tournament's entry fees and its prizes, from held money only.

A tournament holds each entrant's buy-in and entry fee (two holds per entrant, placed
for the tournament as their table). Settling a pool posts every one of its holds, so
the money returns to its players' accounts within the same batch, and then pays
``house_revenue`` to the house (``TOURNAMENT_FEE``) and each payout to its player
(``TOURNAMENT_PRIZE``), all out of what those holds held: the holds must sum to
exactly the revenue plus the payouts, so no balance outside the pool is ever touched
and the pool is paid out to the last minor unit.

Who pays whom: each holder contributes their holds; a payout to a holder first
offsets their own contribution, and what remains flows from the others' contributions,
taken in a fixed order (holders by account id; the house first, then the payees by
account id), so the same request always makes the same transfers, whose ids derive
from the caller's idempotency key: a retry replays.

**House money** (a freeroll's pool, an added prize): a house hold in the pool
(``domain/holds.py``'s ``place_house_hold``) contributes like an entrant's hold, its
holder being the house's prize fund: posting it returns the money to that fund, and
what it pays goes from the fund to the payees (``TOURNAMENT_HOUSE_PRIZE``). The house's
own money never pays its revenue: a pool with a house hold takes no ``house_revenue``.

**Tickets** (a satellite's prizes, which are never cash): a ticket's value is paid to
its winner out of the pool like a payout and, in the same batch, held again at once at
the target tournament (one hold for the target's buy-in, one for its fee), so the
winner's spendable balance never changes and the money waits, held in their name, in
the target's pool. The target's own registration, start and final then treat those
holds as any other entrant's.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from services.wallet.domain.errors import InvalidHoldState, InvalidSettlement
from services.wallet.domain.holds import (
    HOUSE_HOLDER,
    Hold,
    HoldStatus,
    place_hold,
    post_hold,
)
from services.wallet.domain.ledger import (
    AccountKind,
    Transfer,
    TransferCode,
    player_account_id,
    system_account_id,
)
from services.wallet.domain.money import Money
from services.wallet.domain.settlement import SettlementBatch

HOUSE = ""  # the house's place among the receivers


@dataclass(frozen=True, slots=True)
class PoolTicket:
    """A ticket won from the pool: its holds at the target, each ``(hold id, amount)``."""

    player_id: str
    table_id: str  # the target tournament
    holds: tuple[tuple[str, Money], ...]

    @property
    def value(self) -> int:
        return sum(amount.amount for _, amount in self.holds)


@dataclass(frozen=True, slots=True)
class PoolRequest:
    table_id: str
    house_revenue: Money
    payouts: Mapping[str, Money]  # player id -> prize
    key: str  # the caller's idempotency key: transfer ids derive from it
    tickets: tuple[PoolTicket, ...] = ()


def settled_already(holds: Sequence[Hold]) -> bool:
    """True when every hold of the pool was posted (a retry of a settled pool)."""
    return bool(holds) and all(hold.status is HoldStatus.POSTED for hold in holds)


def settle_pool(request: PoolRequest, holds: Sequence[Hold]) -> SettlementBatch:
    """Post every hold, then pay the house and the payees from them: one batch."""
    currency = request.house_revenue.currency
    _check_holds(request, holds, currency)
    contributed: dict[str, int] = defaultdict(int)
    for hold in holds:
        contributed[hold.player_id] += hold.amount.amount
    owed = {player: prize.amount for player, prize in request.payouts.items() if prize.amount}
    for ticket in request.tickets:
        owed[ticket.player_id] = owed.get(ticket.player_id, 0) + ticket.value
    if request.house_revenue.amount:
        owed[HOUSE] = request.house_revenue.amount
    total_owed = sum(owed.values())
    if total_owed != sum(contributed.values()):
        raise InvalidSettlement(
            f"the pool of table {request.table_id} holds {sum(contributed.values())} "
            f"{currency} minor units but {total_owed} are to be paid (house revenue plus "
            "payouts): a pool is paid out exactly"
        )
    changes = [post_hold(hold) for hold in holds]
    releases = [change.transfer for change in changes if change.transfer is not None]
    payments = _payments(request, currency, contributed, owed)
    # Each ticket's value, just paid to its winner, is held again at once at the target.
    tickets = [
        place_hold(hold_id, ticket.player_id, ticket.table_id, amount, available=amount)
        for ticket in request.tickets
        for hold_id, amount in ticket.holds
    ]
    return SettlementBatch(
        transfers=(
            *releases, *payments, *(t.transfer for t in tickets if t.transfer is not None)
        ),
        posted_holds=tuple(c.hold for c in changes),
        placed_holds=tuple(t.hold for t in tickets),
    )


def _check_holds(request: PoolRequest, holds: Sequence[Hold], currency: str) -> None:
    if not holds:
        raise InvalidSettlement("a pool needs at least one hold")
    for player, prize in request.payouts.items():
        if prize.currency != currency or prize.amount < 0:
            raise InvalidSettlement(
                f"the payout to {player} must be a non-negative amount in {currency}"
            )
    if request.house_revenue.amount < 0:
        raise InvalidSettlement("house revenue is a non-negative amount")
    if request.house_revenue.amount and any(hold.by_house for hold in holds):
        raise InvalidSettlement(
            "a pool holding house money (an added prize) takes no house revenue: settle the "
            "fees in a pool of their own"
        )
    if HOUSE_HOLDER in request.payouts:
        raise InvalidSettlement("the house is paid house revenue, not a payout")
    _check_tickets(request, currency)
    for hold in holds:
        if hold.table_id != request.table_id:
            raise InvalidSettlement(
                f"hold {hold.id} was placed for table {hold.table_id}, not {request.table_id}"
            )
        if hold.currency != currency:
            raise InvalidSettlement(f"hold {hold.id} is in {hold.currency}, not {currency}")
        if hold.status is not HoldStatus.OPEN:
            raise InvalidHoldState(
                f"hold {hold.id} is {hold.status.value}: a pool settles open holds only"
            )


def _check_tickets(request: PoolRequest, currency: str) -> None:
    winners = [ticket.player_id for ticket in request.tickets]
    if len(set(winners)) != len(winners):
        raise InvalidSettlement("tickets: at most one ticket per account in a pool")
    for ticket in request.tickets:
        if not ticket.holds or ticket.table_id == request.table_id:
            raise InvalidSettlement(
                f"the ticket of {ticket.player_id} needs holds at another table than the pool's"
            )
        for _, amount in ticket.holds:
            if amount.currency != currency or amount.amount <= 0:
                raise InvalidSettlement(
                    f"the ticket of {ticket.player_id} holds positive amounts in {currency}"
                )


def _payments(
    request: PoolRequest, currency: str, contributed: Mapping[str, int], owed: Mapping[str, int]
) -> list[Transfer]:
    # A payee's own contribution pays them first; only the differences move.
    givers = {p: c - owed.get(p, 0) for p, c in contributed.items() if c > owed.get(p, 0)}
    takers = {p: o - contributed.get(p, 0) for p, o in owed.items() if o > contributed.get(p, 0)}
    giving = sorted(givers.items())
    transfers: list[Transfer] = []
    for taker in sorted(takers):  # the house ("") first
        need = takers[taker]
        while need:
            giver, left = giving[0]
            amount = min(need, left)
            transfers.append(_transfer(request, currency, len(transfers), giver, taker, amount))
            need -= amount
            if amount == left:
                giving.pop(0)
            else:
                giving[0] = (giver, left - amount)
    return transfers


def _transfer(
    request: PoolRequest, currency: str, number: int, giver: str, taker: str, amount: int
) -> Transfer:
    to_house = taker == HOUSE
    from_house = giver == HOUSE_HOLDER  # house money in the pool pays from the prize fund
    code = TransferCode.TOURNAMENT_FEE if to_house else TransferCode.TOURNAMENT_PRIZE
    return Transfer(
        id=f"pool:{request.key}:{number}",
        debit_account_id=(
            system_account_id(AccountKind.HOUSE_PRIZES, currency)
            if from_house
            else player_account_id(giver, currency)
        ),
        credit_account_id=(
            system_account_id(AccountKind.HOUSE_COMMISSION, currency)
            if to_house
            else player_account_id(taker, currency)
        ),
        amount=Money(amount, currency),
        code=TransferCode.TOURNAMENT_HOUSE_PRIZE if from_house else code,
        reference=f"table:{request.table_id}",
    )
