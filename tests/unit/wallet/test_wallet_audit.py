"""The audit names every broken invariant in a snapshot and finds none in sound books."""

from __future__ import annotations

from dataclasses import replace

from services.wallet.domain.audit import (
    BALANCE_DIFFERS_FROM_ENTRIES,
    CURRENCY_NOT_BALANCED,
    ENTRY_FOR_UNKNOWN_ACCOUNT,
    HELD_STAKES_DIFFER_FROM_HOLDS,
    HOLD_WITHOUT_LIVE_TABLE,
    NEGATIVE_BALANCE,
    UNBALANCED_TRANSFER,
    AuditSnapshot,
    audit,
    snapshot_of,
)
from services.wallet.domain.holds import place_hold, required_hold
from services.wallet.domain.ledger import (
    Balance,
    Entry,
    Ledger,
    Transfer,
    TransferCode,
    open_accounts,
    player_account,
    post,
    system_accounts,
)
from services.wallet.domain.money import Money
from services.wallet.domain.terms import MoneyGame


def usd(cents: int) -> Money:
    return Money(cents, "USD")


def sound() -> AuditSnapshot:
    ledger = open_accounts(Ledger(), [player_account("ann", "USD"), *system_accounts("USD")])
    deposit = Transfer(
        "d1", "provider_clearing:USD", "player:ann:USD", usd(5000), TransferCode.DEPOSIT, "p"
    )
    hold = place_hold("h1", "ann", "t1", required_hold(MoneyGame(usd(500)), 1), usd(5000))
    assert hold.transfer is not None
    ledger = post(ledger, [deposit, hold.transfer]).ledger
    return snapshot_of(ledger, [hold.hold], {"t1"})


def names(snapshot: AuditSnapshot) -> set[str]:
    return {breach.name for breach in audit(snapshot)}


def test_sound_books_have_no_breach() -> None:
    assert audit(sound()) == ()


def test_a_balance_changed_behind_the_ledger_is_caught() -> None:
    snapshot = sound()
    balances = dict(snapshot.balances)
    balances["player:ann:USD"] = balances["player:ann:USD"].credited(100)
    breaches = audit(replace(snapshot, balances=balances))
    assert {b.name for b in breaches} == {CURRENCY_NOT_BALANCED, BALANCE_DIFFERS_FROM_ENTRIES}
    assert any(b.subject == "player:ann:USD" and "3600" in b.detail for b in breaches)


def test_a_negative_player_balance_is_caught() -> None:
    snapshot = sound()
    balances = dict(snapshot.balances)
    balances["player:ann:USD"] = Balance("player:ann:USD", "USD", debits=6000, credits=5000)
    balances["provider_clearing:USD"] = Balance("provider_clearing:USD", "USD", credits=6000 - 1500)
    assert NEGATIVE_BALANCE in names(replace(snapshot, balances=balances))


def test_a_one_sided_entry_is_caught() -> None:
    snapshot = sound()
    stray = Entry("x1", "player:ann:USD", usd(10))
    ghost = Entry("x2", "player:bob:USD", usd(10))
    found = names(replace(snapshot, entries=[*snapshot.entries, stray, ghost]))
    assert {UNBALANCED_TRANSFER, ENTRY_FOR_UNKNOWN_ACCOUNT} <= found


def test_an_open_hold_on_a_closed_table_is_caught() -> None:
    snapshot = replace(sound(), live_table_ids=frozenset())
    assert names(snapshot) == {HOLD_WITHOUT_LIVE_TABLE}


def test_held_stakes_must_equal_the_open_holds() -> None:
    assert names(replace(sound(), holds=[])) == {HELD_STAKES_DIFFER_FROM_HOLDS}
