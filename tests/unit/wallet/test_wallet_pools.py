"""A pool of holds settled: a tournament's fees to the house and prizes to its winners,
from the held money only, worked by hand."""

from __future__ import annotations

from collections import Counter

import pytest

from services.wallet.domain.errors import InvalidHoldState, InvalidSettlement
from services.wallet.domain.holds import (
    HOUSE_HOLDER,
    Hold,
    HoldStatus,
    place_house_hold,
    raise_hold,
    void_hold,
)
from services.wallet.domain.ledger import (
    Ledger,
    Transfer,
    TransferCode,
    open_accounts,
    player_account,
    post,
    system_accounts,
)
from services.wallet.domain.money import Money
from services.wallet.domain.pools import PoolRequest, PoolTicket, settle_pool, settled_already

PLAYERS = ("a", "b", "c", "d")


def usd(cents: int) -> Money:
    return Money(cents, "USD")


def holds(amount: int, table: str = "t1", prefix: str = "h") -> list[Hold]:
    return [Hold(f"{prefix}-{p}", p, table, usd(amount)) for p in PLAYERS]


def net(transfers: tuple[Transfer, ...]) -> Counter[str]:
    changes: Counter[str] = Counter()
    for transfer in transfers:
        changes[transfer.debit_account_id] -= transfer.amount.amount
        changes[transfer.credit_account_id] += transfer.amount.amount
    return changes


def ledger_with_held(amount: int) -> Ledger:
    """Each player's ``amount`` is in the held-stakes account, as PlaceHold leaves it."""
    ledger = open_accounts(
        Ledger(), [*system_accounts("USD"), *(player_account(p, "USD") for p in PLAYERS)]
    )
    deposits = [
        Transfer(f"d-{p}", "provider_clearing:USD", f"player:{p}:USD", usd(amount),
                 TransferCode.DEPOSIT, "deposit")
        for p in PLAYERS
    ]  # fmt: skip
    placed = [
        Transfer(f"p-{p}", f"player:{p}:USD", "held_stakes:USD", usd(amount),
                 TransferCode.HOLD_PLACE, "table:t1")
        for p in PLAYERS
    ]  # fmt: skip
    return post(ledger, [*deposits, *placed]).ledger


def test_fees_go_to_the_house_and_every_hold_is_posted() -> None:
    request = PoolRequest("t1", usd(400), {}, "fees")
    batch = settle_pool(request, holds(100))
    assert all(hold.status is HoldStatus.POSTED for hold in batch.posted_holds)
    changes = net(batch.transfers)
    assert changes["held_stakes:USD"] == -400
    assert changes["house_commission:USD"] == 400
    assert all(changes[f"player:{p}:USD"] == 0 for p in PLAYERS)
    fees = [t for t in batch.transfers if t.code is TransferCode.TOURNAMENT_FEE]
    assert sum(t.amount.amount for t in fees) == 400


def test_prizes_move_the_pool_to_the_winners_to_the_cent() -> None:
    # 4 x 1001 = 4004 at 70/30: 2802.8 -> 2802 and 1201.2 -> 1201, 1 left to 1st: 2803, 1201.
    request = PoolRequest("t1", usd(0), {"c": usd(2803), "a": usd(1201)}, "prizes")
    batch = settle_pool(request, holds(1001))
    after = post(ledger_with_held(1001), batch.transfers).ledger
    assert after.balance("player:c:USD") == usd(2803)
    assert after.balance("player:a:USD") == usd(1201)
    assert after.balance("player:b:USD") == usd(0)
    assert after.balance("player:d:USD") == usd(0)
    assert after.balance("held_stakes:USD") == usd(0)
    prizes = [t for t in batch.transfers if t.code is TransferCode.TOURNAMENT_PRIZE]
    # The winners' own buy-ins pay them first: 2803 - 1001 + 1201 - 1001 = 2002 move.
    assert sum(t.amount.amount for t in prizes) == 2002


def test_the_same_request_makes_the_same_transfers() -> None:
    request = PoolRequest("t1", usd(4), {"b": usd(3000)}, "k")
    first = settle_pool(request, holds(751))
    again = settle_pool(request, list(reversed(holds(751))))
    assert {t.id: t for t in first.transfers if t.code is not TransferCode.HOLD_POST} == {
        t.id: t for t in again.transfers if t.code is not TransferCode.HOLD_POST
    }


def test_a_pool_paid_more_or_less_than_it_holds_is_refused() -> None:
    with pytest.raises(InvalidSettlement, match=r"holds 400 .* 401 are to be paid"):
        settle_pool(PoolRequest("t1", usd(401), {}, "k"), holds(100))
    with pytest.raises(InvalidSettlement, match=r"holds 400 .* 399"):
        settle_pool(PoolRequest("t1", usd(0), {"a": usd(399)}, "k"), holds(100))


def test_holds_of_another_table_currency_or_state_are_refused() -> None:
    with pytest.raises(InvalidSettlement, match="placed for table t2"):
        settle_pool(PoolRequest("t1", usd(400), {}, "k"), holds(100, table="t2"))
    euros = [Hold("e", "a", "t1", Money(100, "EUR"))]
    with pytest.raises(InvalidSettlement, match="in EUR, not USD"):
        settle_pool(PoolRequest("t1", usd(100), {}, "k"), euros)
    released = [Hold("r", "a", "t1", usd(100), HoldStatus.VOIDED)]
    with pytest.raises(InvalidHoldState, match="voided"):
        settle_pool(PoolRequest("t1", usd(100), {}, "k"), released)


def test_a_settled_pool_is_recognised_as_such() -> None:
    posted = [Hold("x", "a", "t1", usd(1), HoldStatus.POSTED)]
    assert settled_already(posted)
    assert not settled_already([*posted, Hold("y", "b", "t1", usd(1))])
    assert not settled_already([])


def test_a_ticket_is_paid_from_the_pool_and_held_at_once_at_the_target() -> None:
    # A 4-seat satellite at 250 each: a pool of 1000 buys one ticket to a target whose
    # buy-in is 900 and fee 100. The winner (c) ends with 900 and 100 held at the target,
    # the same spendable balance as before (0), and the satellite's holds all posted.
    ticket = PoolTicket("c", "target", (("tb", usd(900)), ("tf", usd(100))))
    batch = settle_pool(PoolRequest("t1", usd(0), {}, "prizes", (ticket,)), holds(250))
    after = post(ledger_with_held(250), batch.transfers).ledger
    assert all(after.balance(f"player:{p}:USD") == usd(0) for p in PLAYERS)
    assert after.balance("held_stakes:USD") == usd(1000)
    assert [(h.id, h.player_id, h.table_id, h.amount.amount, h.status) for h in
            batch.placed_holds] == [
        ("tb", "c", "target", 900, HoldStatus.OPEN), ("tf", "c", "target", 100, HoldStatus.OPEN)
    ]  # fmt: skip
    prizes = [t for t in batch.transfers if t.code is TransferCode.TOURNAMENT_PRIZE]
    # c's own 250 pays them first: 750 moves from the other three.
    assert sum(t.amount.amount for t in prizes) == 750
    places = [t for t in batch.transfers if t.code is TransferCode.HOLD_PLACE]
    assert sorted(t.amount.amount for t in places) == [100, 900]


def test_tickets_must_add_up_and_be_held_elsewhere_once_per_winner() -> None:
    one = PoolTicket("a", "target", (("x", usd(900)),))
    with pytest.raises(InvalidSettlement, match=r"holds 1000 .* 900 are to be paid"):
        settle_pool(PoolRequest("t1", usd(0), {}, "k", (one,)), holds(250))
    twice = PoolTicket("a", "target", (("y", usd(100)),))
    with pytest.raises(InvalidSettlement, match="one ticket per account"):
        settle_pool(PoolRequest("t1", usd(0), {}, "k", (one, twice)), holds(250))
    here = PoolTicket("a", "t1", (("z", usd(1000)),))
    with pytest.raises(InvalidSettlement, match="another table"):
        settle_pool(PoolRequest("t1", usd(0), {}, "k", (here,)), holds(250))
    euros = PoolTicket("a", "target", (("e", Money(1000, "EUR")),))
    with pytest.raises(InvalidSettlement, match="positive amounts in USD"):
        settle_pool(PoolRequest("t1", usd(0), {}, "k", (euros,)), holds(250))


def test_house_money_in_the_pool_is_paid_from_the_house_prize_fund() -> None:
    # 4 x 1.00 buy-ins + 10.00 added by the house = 14.00 at 65/35: 9.10 and 4.90. The
    # buy-ins pay first (holders by id, the house's "~house" last), the fund the rest.
    added = place_house_hold("h-house", "t1", usd(1_000))
    assert added.transfer is not None
    assert (added.transfer.debit_account_id, added.transfer.code) == (
        "house_prizes:USD", TransferCode.ADDED_PRIZE_HOLD
    )
    request = PoolRequest("t1", usd(0), {"c": usd(910), "a": usd(490)}, "prizes")
    batch = settle_pool(request, [*holds(100), added.hold])
    assert all(hold.status is HoldStatus.POSTED for hold in batch.posted_holds)
    held = post(ledger_with_held(100), [added.transfer]).ledger
    after = post(held, batch.transfers).ledger
    assert after.balance("player:c:USD") == usd(910)
    assert after.balance("player:a:USD") == usd(490)
    assert after.balance("player:b:USD") == usd(0)
    assert after.balance("held_stakes:USD") == usd(0)
    # The fund lent 10.00 and got it back at the post, then paid 10.00 of prizes.
    assert after.balance("house_prizes:USD") == usd(-1_000)
    codes = Counter(t.code for t in batch.transfers)
    assert codes[TransferCode.ADDED_PRIZE_POST] == 1
    from_fund = [t for t in batch.transfers if t.code is TransferCode.TOURNAMENT_HOUSE_PRIZE]
    assert sum(t.amount.amount for t in from_fund) == 1_000
    assert {t.debit_account_id for t in from_fund} == {"house_prizes:USD"}


def test_house_money_pays_no_house_revenue_and_is_never_a_payee() -> None:
    added = place_house_hold("h-house", "t1", usd(400)).hold
    with pytest.raises(InvalidSettlement, match="no house revenue"):
        settle_pool(PoolRequest("t1", usd(400), {}, "fees"), [added])
    with pytest.raises(InvalidSettlement, match="not a payout"):
        settle_pool(PoolRequest("t1", usd(0), {HOUSE_HOLDER: usd(400)}, "p"), [added])


def test_a_released_house_hold_goes_back_to_the_fund() -> None:
    added = place_house_hold("h-house", "t1", usd(400))
    voided = void_hold(added.hold)
    assert voided.transfer is not None
    assert (voided.transfer.credit_account_id, voided.transfer.code) == (
        "house_prizes:USD", TransferCode.ADDED_PRIZE_RELEASE
    )
    with pytest.raises(InvalidHoldState, match="never raised"):
        raise_hold(added.hold, usd(500), usd(10_000))
