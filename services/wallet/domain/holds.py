"""Two-phase stake holds: money set aside while a player sits at a table.

Placing a hold moves the player's largest possible loss at the current cube
from their account to the held-stakes account; when the cube turns the hold is
raised to cover the new largest loss; when the game ends it is posted (released
into the settlement batch that pays the result), or voided when the table
closes without one. Before a double or a take the game service asks
``can_cover``: a player who cannot cover the raised hold may not double or take.

Transfer ids derive from the hold id, so a retried operation replays instead of
holding twice.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum

from services.wallet.domain.errors import CurrencyMismatch, InsufficientFunds, InvalidHoldState
from services.wallet.domain.ledger import (
    AccountKind,
    Transfer,
    TransferCode,
    player_account_id,
    system_account_id,
)
from services.wallet.domain.money import Money
from services.wallet.domain.terms import GameTerms, largest_possible_loss, require_cube


class HoldStatus(StrEnum):
    OPEN = "open"
    POSTED = "posted"
    VOIDED = "voided"


@dataclass(frozen=True, slots=True)
class Hold:
    """A player's stake held for one table under ``terms`` at ``cube``."""

    id: str
    player_id: str
    table_id: str
    terms: GameTerms
    cube: int
    amount: Money
    status: HoldStatus = HoldStatus.OPEN

    @property
    def currency(self) -> str:
        return self.amount.currency


@dataclass(frozen=True, slots=True)
class HoldChange:
    """A hold's new state and the transfer that moves the money (None when none moves)."""

    hold: Hold
    transfer: Transfer | None


@dataclass(frozen=True, slots=True)
class CoverCheck:
    """Whether a player can cover the hold a cube value needs, and why not."""

    can_cover: bool
    required: Money
    shortfall: Money
    reason: str


def required_hold(terms: GameTerms, cube: int) -> Money:
    """What must be held at this cube: the player's largest possible loss."""
    return largest_possible_loss(terms, cube)


def _hold_transfer(hold: Hold, suffix: str, code: TransferCode, amount: Money) -> Transfer:
    player = player_account_id(hold.player_id, hold.currency)
    held = system_account_id(AccountKind.HELD_STAKES, hold.currency)
    to_held = code in (TransferCode.HOLD_PLACE, TransferCode.HOLD_RAISE)
    return Transfer(
        id=f"hold:{hold.id}:{suffix}",
        debit_account_id=player if to_held else held,
        credit_account_id=held if to_held else player,
        amount=amount,
        code=code,
        reference=f"table:{hold.table_id}",
    )


def _require_available_currency(available: Money, needed: Money) -> None:
    if available.currency != needed.currency:
        raise CurrencyMismatch(
            f"the table plays in {needed.currency} but the balance given is in {available.currency}"
        )


def place_hold(
    hold_id: str, player_id: str, table_id: str, terms: GameTerms, available: Money
) -> HoldChange:
    """Hold the stake when a player sits: enough for the largest loss at cube 1."""
    amount = required_hold(terms, 1)
    _require_available_currency(available, amount)
    if available < amount:
        raise InsufficientFunds(
            f"sitting at table {table_id} needs {amount} set aside (the most you can lose "
            f"at cube 1) but your balance is {available}; deposit {amount - available} more "
            "or choose a lower stake"
        )
    hold = Hold(hold_id, player_id, table_id, terms, 1, amount)
    return HoldChange(hold, _hold_transfer(hold, "place", TransferCode.HOLD_PLACE, amount))


def _require_open(hold: Hold, action: str) -> None:
    if hold.status is not HoldStatus.OPEN:
        raise InvalidHoldState(f"hold {hold.id} is already {hold.status.value}; cannot {action} it")


def can_cover(hold: Hold, new_cube: int, available: Money) -> CoverCheck:
    """Can this player afford the game at ``new_cube``, given their free balance?"""
    _require_open(hold, "raise")
    required = required_hold(hold.terms, require_cube(new_cube))
    _require_available_currency(available, required)
    extra = required - hold.amount
    shortfall = extra - available if extra > available else Money.zero(hold.currency)
    if shortfall.is_positive():
        reason = (
            f"at cube {new_cube} you could lose {required}; {hold.amount} is held and your "
            f"balance of {available} is {shortfall} short, so you cannot double or take"
        )
        return CoverCheck(False, required, shortfall, reason)
    return CoverCheck(True, required, shortfall, f"covered: {required} can be held")


def raise_hold(hold: Hold, new_cube: int, available: Money) -> HoldChange:
    """Raise the hold when the cube turns; refuses with the reason if it cannot be covered."""
    check = can_cover(hold, new_cube, available)
    if not check.can_cover:
        raise InsufficientFunds(check.reason)
    if new_cube < hold.cube:
        raise InvalidHoldState(f"hold {hold.id} is at cube {hold.cube}; the cube never goes down")
    extra = check.required - hold.amount
    raised = replace(hold, cube=new_cube, amount=check.required)
    if not extra.is_positive():
        # A match stake does not grow with the cube: only the cube value is recorded.
        return HoldChange(raised, None)
    transfer = _hold_transfer(hold, f"raise:{new_cube}", TransferCode.HOLD_RAISE, extra)
    return HoldChange(raised, transfer)


def post_hold(hold: Hold) -> HoldChange:
    """Release the hold into the settlement batch that pays the game's result."""
    _require_open(hold, "post")
    posted = replace(hold, status=HoldStatus.POSTED)
    return HoldChange(posted, _hold_transfer(hold, "post", TransferCode.HOLD_POST, hold.amount))


def void_hold(hold: Hold) -> HoldChange:
    """Give the whole hold back: the table closed without a result to settle."""
    _require_open(hold, "void")
    voided = replace(hold, status=HoldStatus.VOIDED)
    return HoldChange(voided, _hold_transfer(hold, "void", TransferCode.HOLD_VOID, hold.amount))
