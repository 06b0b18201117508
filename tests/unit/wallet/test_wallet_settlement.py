"""Settlement: the transfers a result produces, and that money is conserved."""

from __future__ import annotations

from collections import Counter
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from services.wallet.domain.errors import InvalidSettlement, UnbackedSettlement
from services.wallet.domain.holds import Hold, HoldStatus, place_hold, required_hold
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
from services.wallet.domain.schedule import FREE_PLAY_SCHEDULE, schedule_by_version
from services.wallet.domain.settlement import (
    Players,
    Settlement,
    require_backed,
    settle_match,
    settle_money_game,
    settle_split,
    settlement_batch,
)
from services.wallet.domain.terms import CUBE_VALUES, Match, MoneyGame, WinType

SCHEDULE = schedule_by_version("gammonempire-2026-01")
ALEX_BEATS_JOE = Players(winner_id="alex", loser_id="joe")


def usd(cents: int) -> Money:
    return Money(cents, "USD")


def net_changes(transfers: tuple[Transfer, ...]) -> Counter[str]:
    changes: Counter[str] = Counter()
    for transfer in transfers:
        changes[transfer.debit_account_id] -= transfer.amount.amount
        changes[transfer.credit_account_id] += transfer.amount.amount
    return changes


def test_the_single_game_example_as_transfers() -> None:
    settlement = settle_money_game(
        "g1", ALEX_BEATS_JOE, MoneyGame(usd(500)), 1, WinType.GAMMON, (1500, 1500), SCHEDULE
    )
    assert settlement.schedule_version == "gammonempire-2026-01"
    assert [t.code for t in settlement.transfers] == [
        TransferCode.GAME_PAYOUT,
        TransferCode.COMMISSION,
        TransferCode.COMMISSION,
    ]
    assert net_changes(settlement.transfers) == {
        "player:alex:USD": 902,
        "player:joe:USD": -1000,
        "house_commission:USD": 98,
    }
    assert (settlement.loser_debit, settlement.winner_credit) == (usd(1000), usd(902))


def test_the_match_example_as_transfers() -> None:
    settlement = settle_match(
        "m1", Players("diane", "julia"), Match(usd(1000), 3), (1500, 1500), SCHEDULE
    )
    assert net_changes(settlement.transfers) == {
        "player:diane:USD": 882,
        "player:julia:USD": -1000,
        "house_commission:USD": 118,
    }
    assert settlement.quote is not None and settlement.quote.rate == Decimal("0.059")


def test_play_money_settles_without_commission() -> None:
    game = MoneyGame(Money(500, "PLAY"))
    settlement = settle_money_game(
        "g1", ALEX_BEATS_JOE, game, 2, WinType.BACKGAMMON, (1400, 1900), FREE_PLAY_SCHEDULE
    )
    assert [t.code for t in settlement.transfers] == [TransferCode.GAME_PAYOUT]
    assert settlement.winner_credit == settlement.loser_debit == Money(3000, "PLAY")
    assert settlement.schedule_version == "play-money-free"


def test_a_disconnection_split_moves_only_the_difference_of_the_shares() -> None:
    # $5 at cube 2: each risks $30; 75% of the $60 pot to Alex means Joe pays Alex $15.
    settlement = settle_split(
        "g1", "alex", "joe", MoneyGame(usd(500)), 2, Decimal("0.75"), (1500, 1500), SCHEDULE
    )
    assert settlement.players == ALEX_BEATS_JOE
    assert settlement.loser_debit == usd(1500)
    assert settlement.quote is not None and settlement.quote.per_player == usd(74)  # 73.5
    assert settlement.transfers[0].code is TransferCode.DISCONNECT_SPLIT
    reversed_split = settle_split(
        "g1", "alex", "joe", MoneyGame(usd(500)), 2, Decimal("0.25"), (1500, 1500), SCHEDULE
    )
    assert reversed_split.players == Players("joe", "alex")


def test_an_even_split_moves_no_money() -> None:
    match = Match(usd(1000), 5)
    settlement = settle_split("m1", "a", "b", match, 1, Decimal("0.5"), (1500, 1500), SCHEDULE)
    assert settlement.transfers == ()
    assert settlement.players is None
    assert settlement.commission_total == usd(0)
    assert settlement.schedule_version == SCHEDULE.version


@pytest.mark.parametrize("share", [Decimal("-0.1"), Decimal("1.01"), 0.5])
def test_a_share_outside_zero_to_one_is_refused(share: Decimal) -> None:
    with pytest.raises(InvalidSettlement, match="from 0 to 1"):
        settle_split("g1", "a", "b", MoneyGame(usd(500)), 1, share, (1500, 1500), SCHEDULE)


def test_a_player_cannot_settle_against_themselves() -> None:
    with pytest.raises(InvalidSettlement, match="against themselves"):
        Players("alex", "alex")


def test_the_batch_releases_both_holds_then_pays() -> None:
    players = [player_account(name, "USD") for name in ("alex", "joe")]
    ledger = open_accounts(Ledger(), [*players, *system_accounts("USD")])
    game = MoneyGame(usd(500))
    deposits = [
        Transfer(
            f"d-{a.owner}", "provider_clearing:USD", a.id, usd(2000), TransferCode.DEPOSIT, "p"
        )
        for a in players
    ]
    stake_at_risk = required_hold(game, 1)
    alex = place_hold("ha", "alex", "t1", stake_at_risk, usd(2000))
    joe = place_hold("hj", "joe", "t1", stake_at_risk, usd(2000))
    assert alex.transfer is not None and joe.transfer is not None
    ledger = post(ledger, [*deposits, alex.transfer, joe.transfer]).ledger
    assert ledger.balance("player:joe:USD") == usd(500)  # less than the $10 he is about to lose

    settlement = settle_money_game(
        "g1", ALEX_BEATS_JOE, game, 1, WinType.GAMMON, (1500, 1500), SCHEDULE
    )
    batch = settlement_batch(settlement, [alex.hold, joe.hold])
    ledger = post(ledger, batch.transfers).ledger

    assert ledger.balance("player:alex:USD") == usd(2902)
    assert ledger.balance("player:joe:USD") == usd(1000)
    assert ledger.balance("held_stakes:USD") == usd(0)
    assert {hold.status for hold in batch.posted_holds} == {HoldStatus.POSTED}
    assert post(ledger, batch.transfers).applied == ()  # a retried settlement changes nothing


def test_holds_in_another_currency_cannot_join_the_batch() -> None:
    hold = place_hold("h", "alex", "t1", Money(300, "PLAY"), Money(300, "PLAY")).hold
    settlement = settle_money_game(
        "g1", ALEX_BEATS_JOE, MoneyGame(usd(500)), 1, WinType.SINGLE, (1500, 1500), SCHEDULE
    )
    with pytest.raises(InvalidSettlement, match="is in PLAY"):
        settlement_batch(settlement, [hold])


ratings = st.integers(min_value=1000, max_value=2300)


def assert_conserved(settlement: Settlement) -> None:
    changes = net_changes(settlement.transfers)
    assert sum(changes.values()) == 0
    assert settlement.loser_debit == settlement.winner_credit + settlement.commission_total
    assert settlement.commission_total.amount >= 0
    assert settlement.winner_credit.amount >= 0
    if settlement.players is not None:
        winner = f"player:{settlement.players.winner_id}:{settlement.currency}"
        loser = f"player:{settlement.players.loser_id}:{settlement.currency}"
        assert changes[winner] == settlement.winner_credit.amount
        assert changes[loser] == -settlement.loser_debit.amount
    assert all(transfer.amount.amount > 0 for transfer in settlement.transfers)


@given(
    stake=st.integers(min_value=1, max_value=1_000_000),
    cube=st.sampled_from(sorted(CUBE_VALUES)),
    win_type=st.sampled_from(WinType),
    first=ratings,
    second=ratings,
    play=st.booleans(),
)
def test_money_game_settlements_conserve_money(
    stake: int, cube: int, win_type: WinType, first: int, second: int, play: bool
) -> None:
    currency, schedule = ("PLAY", FREE_PLAY_SCHEDULE) if play else ("USD", SCHEDULE)
    game = MoneyGame(Money(stake, currency))
    settlement = settle_money_game(
        "g", ALEX_BEATS_JOE, game, cube, win_type, (first, second), schedule
    )
    assert settlement.loser_debit.amount == stake * cube * int(win_type)
    assert_conserved(settlement)
    if play:
        assert settlement.commission_total.amount == 0


@given(
    stake=st.integers(min_value=1, max_value=1_000_000),
    length=st.integers(min_value=1, max_value=25),
    first=ratings,
    second=ratings,
)
def test_match_settlements_conserve_money(stake: int, length: int, first: int, second: int) -> None:
    settlement = settle_match(
        "m", ALEX_BEATS_JOE, Match(usd(stake), length), (first, second), SCHEDULE
    )
    assert settlement.loser_debit == usd(stake)
    assert_conserved(settlement)


@given(
    stake=st.integers(min_value=1, max_value=1_000_000),
    cube=st.sampled_from(sorted(CUBE_VALUES)),
    share=st.decimals(min_value=0, max_value=1, places=4),
    is_match=st.booleans(),
    first=ratings,
    second=ratings,
)
def test_split_settlements_conserve_money_and_never_exceed_the_stake_at_risk(
    stake: int, cube: int, share: Decimal, is_match: bool, first: int, second: int
) -> None:
    terms = Match(usd(stake), 5) if is_match else MoneyGame(usd(stake))
    settlement = settle_split("s", "alex", "joe", terms, cube, share, (first, second), SCHEDULE)
    assert_conserved(settlement)
    at_risk = stake if is_match else stake * cube * 3
    assert settlement.loser_debit.amount <= at_risk


def test_a_settlement_reports_each_players_net_change_and_split_shares() -> None:
    settlement = settle_split(
        "g1", "alex", "joe", MoneyGame(usd(500)), 2, Decimal("0.75"), (1500, 1500), SCHEDULE
    )
    assert settlement.net_changes() == {"alex": usd(1500 - 148), "joe": usd(-1500)}
    assert settlement.shares == {"alex": Decimal("0.75"), "joe": Decimal("0.25")}
    even = settle_split("g2", "a", "b", Match(usd(100), 3), 1, Decimal("0.5"), (1, 2), SCHEDULE)
    assert even.net_changes() == {}


def claimed(
    player: str, amount: int, game: str | None = "g1", status: HoldStatus = HoldStatus.OPEN
) -> Hold:
    return Hold(f"h-{player}", player, "t1", usd(amount), status=status, game_id=game)


def gammon_at(cube: int) -> Settlement:
    """Joe loses a gammon at ``cube`` in a $5 game: $10 x cube."""
    game = MoneyGame(usd(500))
    return settle_money_game(
        "g1", ALEX_BEATS_JOE, game, cube, WinType.GAMMON, (1500, 1500), SCHEDULE
    )


@pytest.mark.parametrize(
    ("holds", "expected"),
    [
        ({"alex": claimed("alex", 1500)}, "names no stake hold for joe"),
        ({"alex": claimed("alex", 1500), "joe": claimed("joe", 1500, None)}, "bound to no game"),
        (
            {"alex": claimed("alex", 1500), "joe": claimed("joe", 1500, "g9")},
            "bound to game g9, not to this one",
        ),
        (
            {"alex": claimed("alex", 1500), "joe": claimed("joe", 1500, status=HoldStatus.VOIDED)},
            "was released",
        ),
        (
            {"alex": claimed("alex", 1500), "joe": claimed("joe", 1500, status=HoldStatus.POSTED)},
            "paid out already",
        ),
    ],
)
def test_a_result_without_a_hold_claimed_for_its_game_is_unbacked(
    holds: dict[str, Hold], expected: str
) -> None:
    with pytest.raises(UnbackedSettlement, match=expected):
        require_backed(gammon_at(1), "g1", ["alex", "joe"], holds)


def test_a_loss_up_to_the_hold_is_backed_and_a_cent_more_is_not() -> None:
    backgammon = settle_money_game(
        "g1", ALEX_BEATS_JOE, MoneyGame(usd(500)), 1, WinType.BACKGAMMON, (1500, 1500), SCHEDULE
    )
    assert backgammon.loser_debit == usd(1500)
    exactly = {"alex": claimed("alex", 1500), "joe": claimed("joe", 1500)}
    require_backed(backgammon, "g1", ["alex", "joe"], exactly)  # paid from the hold
    short = {"alex": claimed("alex", 1500), "joe": claimed("joe", 1499)}
    with pytest.raises(UnbackedSettlement, match=r"asks joe to pay 15\.00 USD but only 14\.99"):
        require_backed(backgammon, "g1", ["alex", "joe"], short)
    with pytest.raises(UnbackedSettlement, match=r"asks joe to pay 20\.00 USD but only 15\.00"):
        require_backed(gammon_at(2), "g1", ["alex", "joe"], exactly)
