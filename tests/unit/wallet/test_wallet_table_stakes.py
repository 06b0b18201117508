"""Table stakes: a game's settlement moves only held money, worked by hand.

$1.00 a point (100 cents), each player brought $3.00 (300), ratings 1500 and 1500 (no
rating increase: both below 1550). Joe resigns a gammon: W = 100 x 1 x 2 = 200 <= $20, so
4.9% per player = 9.8, rounded to 10 cents each, 20 in all, paid by Alex's winnings: Joe's
hold 300 -> 100, Alex's 300 -> 480, the house +20; neither available balance moves.
"""

from __future__ import annotations

from collections import Counter
from decimal import Decimal

import pytest

from services.wallet.domain.errors import UnbackedSettlement
from services.wallet.domain.holds import Hold, HoldStatus
from services.wallet.domain.ledger import TransferCode
from services.wallet.domain.money import Money
from services.wallet.domain.schedule import schedule_by_version
from services.wallet.domain.settlement import (
    Players,
    settle_money_game,
    settle_split,
    table_stakes_batch,
)
from services.wallet.domain.terms import MoneyGame, WinType
from tests.unit.wallet.test_wallet_settlement import net_changes

SCHEDULE = schedule_by_version("gammonempire-2026-01")


def usd(cents: int) -> Money:
    return Money(cents, "USD")


def holds(alex: int, joe: int) -> list[Hold]:
    return [
        Hold("h-alex", "alex", "t1", usd(alex), game_id="g1"),
        Hold("h-joe", "joe", "t1", usd(joe), game_id="g1"),
    ]


def test_a_game_moves_money_from_the_losers_hold_to_the_winners() -> None:
    settlement = settle_money_game(
        "g1:1",
        Players("alex", "joe"),
        MoneyGame(usd(100)),
        1,
        WinType.GAMMON,
        (1500, 1500),
        SCHEDULE,
    )
    batch = table_stakes_batch(settlement, holds(300, 300))
    assert net_changes(batch.transfers) == {
        "player:alex:USD": 0,
        "player:joe:USD": 0,
        "held_stakes:USD": -20,
        "house_commission:USD": 20,
    }
    after = {hold.player_id: hold for hold in batch.posted_holds}
    assert after["alex"].amount == usd(480) and after["joe"].amount == usd(100)
    assert all(h.status is HoldStatus.OPEN and h.game_id is None for h in after.values())
    codes = [t.code for t in batch.transfers]
    assert codes == [
        TransferCode.HOLD_POST,
        TransferCode.HOLD_POST,
        TransferCode.GAME_PAYOUT,
        TransferCode.COMMISSION,
        TransferCode.COMMISSION,
        TransferCode.HOLD_PLACE,
        TransferCode.HOLD_PLACE,
    ]
    # Each game of the session has its own transfer ids, so a replay moves nothing twice.
    assert batch.transfers[0].id == "hold:h-alex:g1:1:release"
    assert batch.transfers[-1].id == "hold:h-joe:g1:1:hold"


def test_the_last_game_posts_the_losers_hold_and_leaves_the_winner_both_stakes() -> None:
    # Joe has 100 left and loses a single game: 100 x 4.9% = 4.9 -> 5 each, 10 in all.
    settlement = settle_money_game(
        "g2:1",
        Players("alex", "joe"),
        MoneyGame(usd(100)),
        1,
        WinType.SINGLE,
        (1500, 1500),
        SCHEDULE,
    )
    batch = table_stakes_batch(settlement, holds(480, 100))
    after = {hold.player_id: hold for hold in batch.posted_holds}
    assert after["joe"].status is HoldStatus.POSTED
    assert after["alex"].status is HoldStatus.OPEN and after["alex"].amount == usd(570)
    changes: Counter[str] = net_changes(batch.transfers)
    assert changes["held_stakes:USD"] == -10  # 480 + 100 released, 570 held again
    assert changes["house_commission:USD"] == 10
    assert changes["player:alex:USD"] == changes["player:joe:USD"] == 0


def test_a_result_past_the_losers_hold_is_refused() -> None:
    settlement = settle_money_game(
        "g3:1",
        Players("alex", "joe"),
        MoneyGame(usd(100)),
        2,
        WinType.SINGLE,
        (1500, 1500),
        SCHEDULE,
    )
    with pytest.raises(UnbackedSettlement, match="never loses more than they have"):
        table_stakes_batch(settlement, holds(300, 150))


def test_a_split_pot_is_capped_by_the_amount_at_risk() -> None:
    # Cube 1, $1.00: a backgammon would be 300 but only 200 is at risk, so the pot is 200
    # each; 75% to Alex moves 200 x (2 x 0.75 - 1) = 100 from Joe.
    settlement = settle_split(
        "g4:1",
        "alex",
        "joe",
        MoneyGame(usd(100)),
        1,
        Decimal("0.75"),
        (1500, 1500),
        SCHEDULE,
        pot_each=usd(200),
    )
    assert settlement.loser_debit == usd(100)
