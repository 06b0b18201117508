"""Two-phase stake holds: money set aside while a player sits at a table.

Placing a hold moves the player's largest possible loss (``required_hold``:
stake x cube x 3 for a money game, the stake for a match) from their account to
the held-stakes account; when the cube turns the hold is raised to the new
largest loss; when the game ends it is posted (released into the settlement
batch that pays the result), or voided when the table closes without one.
Before a double or a take the game service asks ``can_cover``: a player who
cannot cover the raised hold may not double or take.

Before a real-money game is created, ``claim_stake_hold`` checks each seat's
hold (open, that player's, at that table, in the table's currency, covering the
largest loss at the start, not staked on another game) and binds it to the game.

**House holds** (``place_house_hold``): the house's money added to a tournament's
prize pool (a freeroll's, or an added prize), held at the tournament like an
entrant's buy-in but from the house's prize fund (``house_prizes:<CUR>``, which may
go below zero) and never a player's: its holder is ``HOUSE_HOLDER``, an id no player
account may take. Posting or voiding it returns the money to that fund (codes
``ADDED_PRIZE_*``); it is never raised nor claimed for a game.

Amounts are totals, as in the gRPC API, so callers need not know the rule.
Transfer ids derive from the hold id, so a retried operation replays instead of
holding twice.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum

from services.wallet.domain.errors import (
    CurrencyMismatch,
    InsufficientFunds,
    InvalidHoldState,
    StakeNotHeld,
)
from services.wallet.domain.ledger import (
    AccountKind,
    Transfer,
    TransferCode,
    player_account_id,
    system_account_id,
)
from services.wallet.domain.money import Money, require_positive
from services.wallet.domain.terms import GameTerms, largest_possible_loss

# The holder of a house hold: not an account id (the wallet refuses it as one).
HOUSE_HOLDER = "~house"

# A house hold's transfers: the player codes' twins, between the prize fund and held stakes.
_HOUSE_CODES = {
    TransferCode.HOLD_PLACE: TransferCode.ADDED_PRIZE_HOLD,
    TransferCode.HOLD_POST: TransferCode.ADDED_PRIZE_POST,
    TransferCode.HOLD_VOID: TransferCode.ADDED_PRIZE_RELEASE,
}


class HoldStatus(StrEnum):
    OPEN = "open"
    POSTED = "posted"
    VOIDED = "voided"


@dataclass(frozen=True, slots=True)
class Hold:
    """``amount`` of a player's money set aside for one table (and, once started, one game)."""

    id: str
    player_id: str
    table_id: str
    amount: Money
    status: HoldStatus = HoldStatus.OPEN
    game_id: str | None = None

    @property
    def currency(self) -> str:
        return self.amount.currency

    @property
    def by_house(self) -> bool:
        """True for house money in a pool (``place_house_hold``), not a player's stake."""
        return self.player_id == HOUSE_HOLDER


@dataclass(frozen=True, slots=True)
class HoldChange:
    """A hold's new state, what it held before, and the transfer that moves the money."""

    hold: Hold
    previous_amount: Money
    transfer: Transfer | None  # None when no money moves


@dataclass(frozen=True, slots=True)
class CoverCheck:
    """Whether a player can have ``required`` held in total, and why not."""

    can_cover: bool
    required: Money
    available: Money
    shortfall: Money  # required - (available + already held); zero when covered
    reason: str


def required_hold(terms: GameTerms, cube: int) -> Money:
    """What must be held at this cube: the player's largest possible loss."""
    return largest_possible_loss(terms, cube)


def holder_account_id(hold: Hold) -> str:
    """Where a hold's money comes from and returns to: its player's account, or the
    house's prize fund for a house hold."""
    if hold.by_house:
        return system_account_id(AccountKind.HOUSE_PRIZES, hold.currency)
    return player_account_id(hold.player_id, hold.currency)


def _hold_transfer(hold: Hold, suffix: str, code: TransferCode, amount: Money) -> Transfer:
    player = holder_account_id(hold)
    held = system_account_id(AccountKind.HELD_STAKES, hold.currency)
    to_held = code in (TransferCode.HOLD_PLACE, TransferCode.HOLD_RAISE)
    if hold.by_house:
        code = _HOUSE_CODES[code]
    return Transfer(
        id=f"hold:{hold.id}:{suffix}",
        debit_account_id=player if to_held else held,
        credit_account_id=held if to_held else player,
        amount=amount,
        code=code,
        reference=f"table:{hold.table_id}",
    )


def _same_currency(available: Money, needed: Money) -> None:
    if available.currency != needed.currency:
        raise CurrencyMismatch(
            f"the table plays in {needed.currency} but the balance given is in {available.currency}"
        )


def can_cover(hold: Hold | None, required: Money, available: Money) -> CoverCheck:
    """Can the player have ``required`` held in total? What is already held counts."""
    _same_currency(available, required)
    held = Money.zero(required.currency)
    if hold is not None:
        _require_open(hold, "raise")
        _same_currency(hold.amount, required)
        held = hold.amount
    missing = required - held - available
    if missing.is_positive():
        reason = (
            f"{required} must be held to cover the largest possible loss; with {held} held "
            f"and a balance of {available} you are {missing} short"
        )
        return CoverCheck(False, required, available, missing, reason)
    covered = f"covered: {required} can be held"
    return CoverCheck(True, required, available, Money.zero(required.currency), covered)


def place_hold(
    hold_id: str,
    player_id: str,
    table_id: str,
    amount: Money,
    available: Money,
    game_id: str | None = None,
) -> HoldChange:
    """Hold ``amount`` (see ``required_hold``) when a player sits down at a table."""
    require_positive(amount, "a hold")
    check = can_cover(None, amount, available)
    if not check.can_cover:
        raise InsufficientFunds(
            f"sitting at table {table_id} needs {amount} set aside but your balance is "
            f"{available}; deposit {check.shortfall} more or choose a lower stake"
        )
    hold = Hold(hold_id, player_id, table_id, amount, game_id=game_id)
    transfer = _hold_transfer(hold, "place", TransferCode.HOLD_PLACE, amount)
    return HoldChange(hold, Money.zero(amount.currency), transfer)


def place_house_hold(hold_id: str, table_id: str, amount: Money) -> HoldChange:
    """Hold ``amount`` of the house's prize fund at ``table_id`` (a tournament's pool).

    The fund may go below zero (it stands for the house's prize budget, outside the
    ledger), so there is no balance to cover; the operator's bound on an added prize is
    the caller's check."""
    require_positive(amount, "an added prize")
    hold = Hold(hold_id, HOUSE_HOLDER, table_id, amount)
    transfer = _hold_transfer(hold, "place", TransferCode.HOLD_PLACE, amount)
    return HoldChange(hold, Money.zero(amount.currency), transfer)


def _require_open(hold: Hold, action: str) -> None:
    if hold.status is not HoldStatus.OPEN:
        raise InvalidHoldState(f"hold {hold.id} is already {hold.status.value}; cannot {action} it")


def raise_hold(
    hold: Hold, new_amount: Money, available: Money, game_id: str | None = None
) -> HoldChange:
    """Grow the hold to ``new_amount`` in total when the cube turns; refuse what cannot be covered.

    A hold never shrinks while the game runs: asking for less than is held is refused;
    nor does it move to another game than the one it is staked on.
    """
    if hold.by_house:
        raise InvalidHoldState(f"hold {hold.id} is house money in a pool; it is never raised")
    if game_id and hold.game_id and game_id != hold.game_id:
        raise StakeNotHeld(
            f"hold {hold.id} is staked on game {hold.game_id}; it cannot back game {game_id}"
        )
    check = can_cover(hold, new_amount, available)
    if new_amount < hold.amount:
        raise InvalidHoldState(
            f"hold {hold.id} holds {hold.amount}; it cannot shrink to {new_amount} mid-game"
        )
    if not check.can_cover:
        raise InsufficientFunds(f"{check.reason}, so you cannot double or take")
    raised = replace(hold, amount=new_amount, game_id=game_id or hold.game_id)
    extra = new_amount - hold.amount
    if not extra.is_positive():
        # A match stake does not grow with the cube: nothing moves.
        return HoldChange(raised, hold.amount, None)
    # The new total names the transfer: totals only grow, so a retry replays it.
    suffix = f"raise:{new_amount.amount}"
    return HoldChange(
        raised, hold.amount, _hold_transfer(hold, suffix, TransferCode.HOLD_RAISE, extra)
    )


def post_hold(hold: Hold) -> HoldChange:
    """Release the hold into the settlement batch that pays the game's result."""
    _require_open(hold, "post")
    posted = replace(hold, status=HoldStatus.POSTED)
    transfer = _hold_transfer(hold, "post", TransferCode.HOLD_POST, hold.amount)
    return HoldChange(posted, hold.amount, transfer)


def void_hold(hold: Hold) -> HoldChange:
    """Give the whole hold back: the table closed without a result to settle."""
    _require_open(hold, "void")
    voided = replace(hold, status=HoldStatus.VOIDED)
    transfer = _hold_transfer(hold, "void", TransferCode.HOLD_VOID, hold.amount)
    return HoldChange(voided, hold.amount, transfer)


def carry_over(hold: Hold, left: Money, settlement_id: str) -> HoldChange:
    """Table stakes: after a game's settlement the player's table hold holds what they have
    left at the table, for the next game.

    The hold is released into the settlement's batch (``release``, before the payment) and
    what is left is held again at once (``hold``, after it), so the ledger shows the game's
    payout between the two players while their available balances end where they began:
    only held money moves. The hold is unbound from the game (the next game claims it);
    with nothing left it is posted. Transfer ids carry the settlement id, so a replay of
    the same game moves nothing twice and every game of the session has its own.
    """
    _require_open(hold, "carry over")
    if left.amount < 0:
        raise InvalidHoldState(f"hold {hold.id} holds {hold.amount}; it cannot pay {-left} more")
    release = _hold_transfer(
        hold, f"{settlement_id}:release", TransferCode.HOLD_POST, hold.amount
    )
    if not left.is_positive():
        posted = replace(hold, status=HoldStatus.POSTED, game_id=None)
        return HoldChange(posted, hold.amount, release)
    carried = replace(hold, amount=left, game_id=None)
    return HoldChange(carried, hold.amount, release)


def carry_over_transfer(change: HoldChange, settlement_id: str) -> Transfer | None:
    """The transfer holding again what a carried-over hold keeps (None once it is posted)."""
    hold = change.hold
    if hold.status is not HoldStatus.OPEN:
        return None
    return _hold_transfer(hold, f"{settlement_id}:hold", TransferCode.HOLD_PLACE, hold.amount)


def claim_stake_hold(
    hold: Hold | None, hold_id: str, player_id: str, table_id: str, game_id: str, required: Money
) -> Hold:
    """The hold bound to ``game_id`` for this seat, or ``StakeNotHeld`` saying why not.

    ``required`` is what the hold must cover when the game starts (``required_hold`` at
    cube 1). A hold already bound to another game is spent on it: one stake never backs
    two games. Claiming again for the same game returns the hold as it is.
    """
    seat = f"{player_id}'s stake at table {table_id}"
    if hold is None:
        raise StakeNotHeld(f"{seat}: no hold {hold_id!r}; place it with PlaceHold first")
    problem = _stake_problem(hold, player_id, table_id, game_id, required)
    if problem is not None:
        raise StakeNotHeld(f"{seat}: hold {hold.id} {problem}")
    return replace(hold, game_id=game_id)


def _stake_problem(
    hold: Hold, player_id: str, table_id: str, game_id: str, required: Money
) -> str | None:
    if hold.by_house or hold.player_id != player_id:
        return f"belongs to {hold.player_id}"
    if hold.table_id != table_id:
        return f"is for table {hold.table_id}"
    if hold.status is not HoldStatus.OPEN:
        return f"is already {hold.status.value}"
    if hold.game_id and hold.game_id != game_id:
        return f"is already staked on game {hold.game_id}"
    if hold.currency != required.currency:
        return f"is in {hold.currency} but the table plays in {required.currency}"
    if hold.amount < required:
        return f"holds {hold.amount} but the game needs {required} held to start"
    return None
