"""Ledger posting rules: balanced, immutable, idempotent, never a negative player balance."""

from __future__ import annotations

import pytest

from services.wallet.domain.errors import (
    CurrencyMismatch,
    IdempotencyConflict,
    InsufficientFunds,
    InvalidAmount,
    InvalidTransfer,
    UnknownAccount,
)
from services.wallet.domain.ledger import (
    AccountKind,
    Ledger,
    Transfer,
    TransferCode,
    entries_of,
    open_accounts,
    player_account,
    post,
    system_account,
    system_accounts,
)
from services.wallet.domain.money import Money

ALICE = player_account("alice", "USD")
BOB = player_account("bob", "USD")
CLEARING = system_account(AccountKind.PROVIDER_CLEARING, "USD")
HOUSE = system_account(AccountKind.HOUSE_COMMISSION, "USD")


def usd(cents: int) -> Money:
    return Money(cents, "USD")


def fresh() -> Ledger:
    return open_accounts(Ledger(), [ALICE, BOB, *system_accounts("USD"), *system_accounts("PLAY")])


def deposit(transfer_id: str, account_id: str, cents: int) -> Transfer:
    return Transfer(transfer_id, CLEARING.id, account_id, usd(cents), TransferCode.DEPOSIT, "pay:1")


def payout(transfer_id: str, cents: int) -> Transfer:
    return Transfer(transfer_id, BOB.id, ALICE.id, usd(cents), TransferCode.GAME_PAYOUT, "game:1")


def funded() -> Ledger:
    return post(fresh(), [deposit("d1", ALICE.id, 1000), deposit("d2", BOB.id, 500)]).ledger


def test_a_deposit_credits_the_player_and_debits_clearing() -> None:
    ledger = funded()
    assert ledger.balance(ALICE.id) == usd(1000)
    assert ledger.balance(BOB.id) == usd(500)
    assert ledger.balance(CLEARING.id) == usd(-1500)  # the provider holds the players' money


def test_each_transfer_has_two_entries_that_cancel() -> None:
    debit, credit = entries_of(payout("g1", 300))
    assert (debit.account_id, debit.amount) == (BOB.id, usd(-300))
    assert (credit.account_id, credit.amount) == (ALICE.id, usd(300))


def test_a_player_balance_never_goes_negative() -> None:
    ledger = funded()
    with pytest.raises(InsufficientFunds, match=r"player:bob:USD has 5.00 USD but GAME_PAYOUT g1"):
        post(ledger, [payout("g1", 501)])
    assert post(ledger, [payout("g1", 500)]).ledger.balance(BOB.id) == usd(0)


def test_a_batch_is_all_or_nothing_and_applied_in_order() -> None:
    ledger = funded()
    # Bob can pay 800 only because the deposit before it in the same batch lands first.
    posting = post(ledger, [deposit("d3", BOB.id, 300), payout("g1", 800)])
    assert posting.ledger.balance(BOB.id) == usd(0)
    with pytest.raises(InsufficientFunds):
        post(ledger, [payout("g1", 800), deposit("d3", BOB.id, 300)])
    assert ledger.balance(BOB.id) == usd(500)  # the original is untouched: values are immutable


def test_the_same_id_with_the_same_content_replays_the_first_result() -> None:
    first = post(funded(), [payout("g1", 300)])
    again = post(first.ledger, [payout("g1", 300)])
    assert again.applied == ()
    assert again.replayed == again.results == (payout("g1", 300),)
    assert again.ledger.balances == first.ledger.balances


def test_the_same_id_with_different_content_is_a_conflict() -> None:
    ledger = post(funded(), [payout("g1", 300)]).ledger
    conflict = r"'g1' was already used for GAME_PAYOUT of 3\.00"
    with pytest.raises(IdempotencyConflict, match=conflict):
        post(ledger, [payout("g1", 301)])
    with pytest.raises(IdempotencyConflict):
        post(funded(), [payout("g2", 1), payout("g2", 2)])  # within one batch too


def test_a_code_moves_money_only_between_its_kinds_of_account() -> None:
    wrong = Transfer("x", ALICE.id, HOUSE.id, usd(1), TransferCode.GAME_PAYOUT, "game:1")
    with pytest.raises(InvalidTransfer, match="from a player account to a player account"):
        post(funded(), [wrong])
    to_self = Transfer("y", ALICE.id, ALICE.id, usd(1), TransferCode.GAME_PAYOUT, "game:1")
    with pytest.raises(InvalidTransfer, match="to itself"):
        post(funded(), [to_self])


def test_currencies_do_not_mix() -> None:
    play = Transfer("p", CLEARING.id, ALICE.id, Money(1, "PLAY"), TransferCode.DEPOSIT, "pay")
    with pytest.raises(CurrencyMismatch, match="is in PLAY but account"):
        post(funded(), [play])


def test_unknown_accounts_and_bad_amounts_are_refused() -> None:
    with pytest.raises(UnknownAccount, match="player:carol:USD"):
        post(funded(), [deposit("d9", "player:carol:USD", 1)])
    with pytest.raises(InvalidAmount, match="more than zero"):
        deposit("d9", ALICE.id, 0)


def test_reopening_an_account_is_idempotent_but_cannot_change_it() -> None:
    ledger = funded()
    assert open_accounts(ledger, [ALICE]).balance(ALICE.id) == usd(1000)
    impostor = ALICE.__class__(ALICE.id, AccountKind.PLAYER, "USD", "mallory")
    with pytest.raises(IdempotencyConflict):
        open_accounts(ledger, [impostor])
