"""The free play-money top-up's rules: up to 10,000.00 PLAY, held stakes included, once an hour."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from services.wallet.domain.errors import PlayMoneyTopUpRefused, PlayMoneyTopUpTooSoon
from services.wallet.domain.ledger import (
    Ledger,
    TransferCode,
    open_accounts,
    play_money_issue_account,
    player_account,
    post,
)
from services.wallet.domain.money import Money
from services.wallet.domain.play_money import plan_top_up

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def play(minor: int) -> Money:
    return Money(minor, "PLAY")


@pytest.mark.parametrize(
    ("owned", "credited"),
    [(0, 1_000_000), (250_000, 750_000), (999_999, 1)],  # 10,000.00 - owned, by hand
)
def test_a_top_up_fills_up_to_the_ceiling(owned: int, credited: int) -> None:
    plan = plan_top_up("t", "ann", play(owned), None, T0)
    assert plan.transfer.amount == play(credited)
    assert plan.transfer.debit_account_id == "play_money_issue:PLAY"
    assert plan.transfer.credit_account_id == "player:ann:PLAY"
    assert plan.transfer.code is TransferCode.PLAY_MONEY_TOP_UP
    assert plan.next_top_up_at == T0 + timedelta(hours=1)


@pytest.mark.parametrize("owned", [1_000_000, 1_500_000])
def test_a_player_at_or_above_the_ceiling_gets_nothing(owned: int) -> None:
    with pytest.raises(PlayMoneyTopUpRefused, match=r"10000\.00 PLAY"):
        plan_top_up("t", "ann", play(owned), None, T0)


def test_once_an_hour_on_the_clock() -> None:
    last = T0 - timedelta(minutes=59, seconds=59)
    with pytest.raises(PlayMoneyTopUpTooSoon, match="2026-12-01T09:00:01"):
        plan_top_up("t", "ann", play(0), last, T0)
    plan_top_up("t", "ann", play(0), T0 - timedelta(hours=1), T0)


def test_only_play_money() -> None:
    with pytest.raises(PlayMoneyTopUpRefused, match="only play money"):
        plan_top_up("t", "ann", Money(0, "USD"), None, T0)


def test_the_top_up_posts_balanced_from_an_account_allowed_below_zero() -> None:
    ledger = open_accounts(Ledger(), [player_account("ann", "PLAY"), play_money_issue_account()])
    plan = plan_top_up("t", "ann", play(0), None, T0)
    after = post(ledger, [plan.transfer]).ledger
    assert after.balance("player:ann:PLAY") == play(1_000_000)
    assert after.balance("play_money_issue:PLAY") == play(-1_000_000)
