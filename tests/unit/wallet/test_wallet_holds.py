"""Stake holds: placed at the largest possible loss, raised with the cube, posted or voided."""

from __future__ import annotations

import pytest

from services.wallet.domain.errors import (
    CurrencyMismatch,
    InsufficientFunds,
    InvalidHoldState,
    InvalidSettlement,
)
from services.wallet.domain.holds import (
    HoldStatus,
    can_cover,
    place_hold,
    post_hold,
    raise_hold,
    required_hold,
    void_hold,
)
from services.wallet.domain.ledger import TransferCode
from services.wallet.domain.money import Money
from services.wallet.domain.terms import Match, MoneyGame


def usd(cents: int) -> Money:
    return Money(cents, "USD")


FIVE_DOLLAR_GAME = MoneyGame(usd(500))


def test_a_money_game_holds_a_backgammon_at_the_cube() -> None:
    assert required_hold(FIVE_DOLLAR_GAME, 1) == usd(1500)
    assert required_hold(FIVE_DOLLAR_GAME, 8) == usd(12000)
    assert required_hold(Match(usd(1000), 7), 64) == usd(1000)


def test_sitting_down_holds_the_stake() -> None:
    change = place_hold("h1", "alice", "t1", FIVE_DOLLAR_GAME, available=usd(2000))
    assert change.hold.amount == usd(1500)
    assert change.hold.cube == 1
    assert change.transfer is not None
    assert change.transfer.id == "hold:h1:place"
    assert change.transfer.code is TransferCode.HOLD_PLACE
    assert (change.transfer.debit_account_id, change.transfer.credit_account_id) == (
        "player:alice:USD",
        "held_stakes:USD",
    )


def test_sitting_down_without_enough_says_how_much_is_missing() -> None:
    with pytest.raises(InsufficientFunds, match=r"deposit 5\.00 USD more or choose a lower stake"):
        place_hold("h1", "alice", "t1", FIVE_DOLLAR_GAME, available=usd(1000))


def test_can_cover_reports_the_shortfall_before_a_double() -> None:
    hold = place_hold("h1", "alice", "t1", FIVE_DOLLAR_GAME, usd(1500)).hold
    short = can_cover(hold, 2, available=usd(1000))
    assert not short.can_cover
    assert short.required == usd(3000)
    assert short.shortfall == usd(500)
    assert "cannot double or take" in short.reason
    assert can_cover(hold, 2, available=usd(1500)).can_cover


def test_raising_moves_only_the_difference_and_refuses_what_cannot_be_covered() -> None:
    hold = place_hold("h1", "alice", "t1", FIVE_DOLLAR_GAME, usd(1500)).hold
    raised = raise_hold(hold, 4, available=usd(5000))  # a beaver: 1 -> 4 at once
    assert raised.hold.amount == usd(6000)
    assert raised.hold.cube == 4
    assert raised.transfer is not None
    assert raised.transfer.amount == usd(4500)
    assert raised.transfer.id == "hold:h1:raise:4"
    with pytest.raises(InsufficientFunds, match="cannot double or take"):
        raise_hold(hold, 4, available=usd(4499))


def test_a_match_hold_does_not_grow_with_the_cube() -> None:
    hold = place_hold("h1", "alice", "t1", Match(usd(1000), 5), usd(1000)).hold
    raised = raise_hold(hold, 2, available=usd(0))
    assert raised.transfer is None
    assert raised.hold.amount == usd(1000)
    assert raised.hold.cube == 2


def test_the_cube_never_goes_down_and_must_be_a_cube_value() -> None:
    hold = raise_hold(
        place_hold("h1", "alice", "t1", FIVE_DOLLAR_GAME, usd(1500)).hold, 2, usd(1500)
    ).hold
    with pytest.raises(InvalidHoldState, match="never goes down"):
        raise_hold(hold, 1, usd(0))
    with pytest.raises(InvalidSettlement, match="cube value 3"):
        can_cover(hold, 3, usd(0))


def test_post_and_void_release_the_whole_hold_once() -> None:
    hold = place_hold("h1", "alice", "t1", FIVE_DOLLAR_GAME, usd(1500)).hold
    posted, voided = post_hold(hold), void_hold(hold)
    assert posted.hold.status is HoldStatus.POSTED
    assert voided.hold.status is HoldStatus.VOIDED
    assert posted.transfer is not None and voided.transfer is not None
    assert posted.transfer.amount == voided.transfer.amount == usd(1500)
    assert posted.transfer.credit_account_id == "player:alice:USD"
    assert voided.transfer.code is TransferCode.HOLD_VOID
    with pytest.raises(InvalidHoldState, match="already posted"):
        void_hold(posted.hold)
    with pytest.raises(InvalidHoldState, match="already voided"):
        raise_hold(voided.hold, 2, usd(10_000))


def test_the_balance_given_must_be_in_the_table_currency() -> None:
    with pytest.raises(CurrencyMismatch, match="plays in USD"):
        place_hold("h1", "alice", "t1", FIVE_DOLLAR_GAME, Money(10_000, "PLAY"))
