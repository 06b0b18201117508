"""Stake holds: placed at the largest possible loss, raised with the cube, posted or voided."""

from __future__ import annotations

from dataclasses import replace

import pytest

from services.wallet.domain.errors import (
    CurrencyMismatch,
    InsufficientFunds,
    InvalidAmount,
    InvalidHoldState,
    InvalidSettlement,
    StakeNotHeld,
)
from services.wallet.domain.holds import (
    Hold,
    HoldStatus,
    can_cover,
    claim_stake_hold,
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


def seated(available: int = 1500) -> Hold:
    return place_hold("h1", "alice", "t1", usd(1500), usd(available)).hold


def test_a_money_game_holds_a_backgammon_at_the_cube_and_a_match_its_stake() -> None:
    assert required_hold(FIVE_DOLLAR_GAME, 1) == usd(1500)
    assert required_hold(FIVE_DOLLAR_GAME, 8) == usd(12000)
    assert required_hold(Match(usd(1000), 7), 64) == usd(1000)
    with pytest.raises(InvalidSettlement, match="cube value 3"):
        required_hold(FIVE_DOLLAR_GAME, 3)


def test_sitting_down_holds_the_stake() -> None:
    change = place_hold("h1", "alice", "t1", usd(1500), available=usd(2000), game_id="g1")
    assert change.hold.amount == usd(1500)
    assert change.hold.game_id == "g1"
    assert change.previous_amount == usd(0)
    assert change.transfer is not None
    assert change.transfer.id == "hold:h1:place"
    assert change.transfer.code is TransferCode.HOLD_PLACE
    assert (change.transfer.debit_account_id, change.transfer.credit_account_id) == (
        "player:alice:USD",
        "held_stakes:USD",
    )


def test_sitting_down_without_enough_says_how_much_is_missing() -> None:
    with pytest.raises(InsufficientFunds, match=r"deposit 5\.00 USD more or choose a lower stake"):
        place_hold("h1", "alice", "t1", usd(1500), available=usd(1000))
    with pytest.raises(InvalidAmount):
        place_hold("h1", "alice", "t1", usd(0), available=usd(1000))


def test_can_cover_counts_what_is_already_held() -> None:
    hold = seated()
    short = can_cover(hold, required_hold(FIVE_DOLLAR_GAME, 2), available=usd(1000))
    assert not short.can_cover
    assert short.required == usd(3000)
    assert short.available == usd(1000)
    assert short.shortfall == usd(500)
    assert "you are 5.00 USD short" in short.reason
    covered = can_cover(hold, usd(3000), available=usd(1500))
    assert covered.can_cover and covered.shortfall == usd(0)
    assert can_cover(None, usd(3000), usd(2999)).shortfall == usd(1)


def test_raising_moves_only_the_difference_and_refuses_what_cannot_be_covered() -> None:
    hold = seated()
    raised = raise_hold(hold, required_hold(FIVE_DOLLAR_GAME, 4), available=usd(5000))  # beaver
    assert raised.hold.amount == usd(6000)
    assert raised.previous_amount == usd(1500)
    assert raised.transfer is not None
    assert raised.transfer.amount == usd(4500)
    assert raised.transfer.id == "hold:h1:raise:6000"
    with pytest.raises(InsufficientFunds, match="cannot double or take"):
        raise_hold(hold, usd(6000), available=usd(4499))


def test_raising_to_the_same_total_moves_nothing() -> None:
    hold = place_hold("h1", "alice", "t1", usd(1000), usd(1000)).hold
    raised = raise_hold(hold, required_hold(Match(usd(1000), 5), 2), available=usd(0))
    assert raised.transfer is None
    assert raised.hold.amount == usd(1000)


def test_a_hold_never_shrinks_mid_game() -> None:
    with pytest.raises(InvalidHoldState, match="cannot shrink"):
        raise_hold(seated(), usd(1000), usd(0))


def test_post_and_void_release_the_whole_hold_once() -> None:
    hold = seated()
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
        raise_hold(voided.hold, usd(3000), usd(10_000))


def test_amounts_must_be_in_the_table_currency() -> None:
    with pytest.raises(CurrencyMismatch, match="plays in USD"):
        place_hold("h1", "alice", "t1", usd(1500), Money(10_000, "PLAY"))
    with pytest.raises(CurrencyMismatch):
        can_cover(seated(), Money(3000, "PLAY"), Money(3000, "PLAY"))


def test_a_game_starts_on_an_open_hold_of_that_player_at_that_table() -> None:
    hold = seated()
    claimed = claim_stake_hold(hold, "h1", "alice", "t1", "g1", usd(1500))
    assert claimed == replace(hold, game_id="g1")
    assert claim_stake_hold(claimed, "h1", "alice", "t1", "g1", usd(1500)) == claimed


@pytest.mark.parametrize(
    ("hold", "player", "table", "required", "reason"),
    [
        (None, "alice", "t1", usd(1500), "no hold 'h1'"),
        (seated(), "bob", "t1", usd(1500), "belongs to alice"),
        (seated(), "alice", "t2", usd(1500), "is for table t1"),
        (replace(seated(), status=HoldStatus.VOIDED), "alice", "t1", usd(1500), "already voided"),
        (replace(seated(), status=HoldStatus.POSTED), "alice", "t1", usd(1500), "already posted"),
        (replace(seated(), game_id="g0"), "alice", "t1", usd(1500), "staked on game g0"),
        (seated(), "alice", "t1", Money(1500, "EUR"), "in USD but the table plays in EUR"),
        (seated(), "alice", "t1", usd(1501), "holds 15.00 USD but the game needs 15.01 USD"),
    ],
)
def test_a_stake_not_held_as_the_game_needs_is_refused_saying_why(
    hold: Hold | None, player: str, table: str, required: Money, reason: str
) -> None:
    with pytest.raises(StakeNotHeld, match=reason):
        claim_stake_hold(hold, "h1", player, table, "g1", required)


def test_a_raise_never_moves_a_stake_to_another_game() -> None:
    hold = replace(seated(), game_id="g1")
    assert raise_hold(hold, usd(3000), usd(5000), game_id="g1").hold.game_id == "g1"
    with pytest.raises(StakeNotHeld, match="staked on game g1; it cannot back game g2"):
        raise_hold(hold, usd(3000), usd(5000), game_id="g2")
    # A hold no game claimed yet is bound by the game that raises it.
    assert raise_hold(seated(), usd(3000), usd(5000), game_id="g2").hold.game_id == "g2"
