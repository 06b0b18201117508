"""Audit: invariant checks over a snapshot of the ledger, returning named breaches.

Pure and total: it never raises on bad data, it reports it. An empty result
means the books are sound. Breach names are stable so alerts can key on them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from services.wallet.domain.holds import Hold, HoldStatus
from services.wallet.domain.ledger import (
    Account,
    AccountKind,
    Balance,
    Entry,
    Ledger,
    entries_of,
    system_account_id,
)

CURRENCY_NOT_BALANCED = "currency_not_balanced"
BALANCE_DIFFERS_FROM_ENTRIES = "balance_differs_from_entries"
NEGATIVE_BALANCE = "negative_balance"
UNBALANCED_TRANSFER = "unbalanced_transfer"
ENTRY_FOR_UNKNOWN_ACCOUNT = "entry_for_unknown_account"
HOLD_WITHOUT_LIVE_TABLE = "hold_without_live_table"
HELD_STAKES_DIFFER_FROM_HOLDS = "held_stakes_differ_from_holds"


@dataclass(frozen=True, slots=True)
class Breach:
    """One broken invariant: which (``name``), about what (``subject``), and the numbers."""

    name: str
    subject: str
    detail: str


@dataclass(frozen=True, slots=True)
class AuditSnapshot:
    """Everything the audit looks at, read in one consistent transaction."""

    accounts: Mapping[str, Account]
    balances: Mapping[str, Balance]
    entries: Sequence[Entry]
    holds: Sequence[Hold]
    live_table_ids: frozenset[str]


def snapshot_of(
    ledger: Ledger, holds: Sequence[Hold], live_table_ids: Iterable[str]
) -> AuditSnapshot:
    entries = [entry for transfer in ledger.transfers.values() for entry in entries_of(transfer)]
    return AuditSnapshot(
        ledger.accounts, ledger.balances, entries, holds, frozenset(live_table_ids)
    )


def audit(snapshot: AuditSnapshot) -> tuple[Breach, ...]:
    return (
        *_currencies_balance(snapshot),
        *_balances_match_entries(snapshot),
        *_no_negative_balances(snapshot),
        *_transfers_balance(snapshot),
        *_open_holds_have_live_tables(snapshot),
        *_held_stakes_match_holds(snapshot),
    )


def _currencies_balance(snapshot: AuditSnapshot) -> list[Breach]:
    totals: dict[str, int] = defaultdict(int)
    for balance in snapshot.balances.values():
        totals[balance.currency] += balance.net.amount
    return [
        Breach(CURRENCY_NOT_BALANCED, currency, f"balances sum to {total} minor units, not 0")
        for currency, total in sorted(totals.items())
        if total != 0
    ]


def _balances_match_entries(snapshot: AuditSnapshot) -> list[Breach]:
    sums: dict[str, int] = defaultdict(int)
    breaches = []
    for entry in snapshot.entries:
        sums[entry.account_id] += entry.amount.amount
        if entry.account_id not in snapshot.accounts:
            breaches.append(
                Breach(ENTRY_FOR_UNKNOWN_ACCOUNT, entry.account_id, f"transfer {entry.transfer_id}")
            )
    for account_id in sorted(set(snapshot.balances) | set(sums)):
        balance = snapshot.balances.get(account_id)
        net = balance.net.amount if balance else 0
        if net != sums[account_id]:
            detail = f"balance {net} but entries sum to {sums[account_id]} minor units"
            breaches.append(Breach(BALANCE_DIFFERS_FROM_ENTRIES, account_id, detail))
    return breaches


def _no_negative_balances(snapshot: AuditSnapshot) -> list[Breach]:
    breaches = []
    for account_id, balance in sorted(snapshot.balances.items()):
        account = snapshot.accounts.get(account_id)
        if account is not None and not account.may_go_negative and balance.net.amount < 0:
            detail = f"{account.kind.value} account at {balance.net}"
            breaches.append(Breach(NEGATIVE_BALANCE, account_id, detail))
    return breaches


def _transfers_balance(snapshot: AuditSnapshot) -> list[Breach]:
    legs: dict[str, list[Entry]] = defaultdict(list)
    for entry in snapshot.entries:
        legs[entry.transfer_id].append(entry)
    breaches = []
    for transfer_id, entries in sorted(legs.items()):
        currencies = {entry.amount.currency for entry in entries}
        total = sum(entry.amount.amount for entry in entries)
        if len(entries) != 2 or len(currencies) != 1 or total != 0:
            detail = f"{len(entries)} entries in {sorted(currencies)} summing to {total}"
            breaches.append(Breach(UNBALANCED_TRANSFER, transfer_id, detail))
    return breaches


def _open_holds(snapshot: AuditSnapshot) -> list[Hold]:
    return [hold for hold in snapshot.holds if hold.status is HoldStatus.OPEN]


def _open_holds_have_live_tables(snapshot: AuditSnapshot) -> list[Breach]:
    return [
        Breach(
            HOLD_WITHOUT_LIVE_TABLE, hold.id, f"{hold.amount} held for closed table {hold.table_id}"
        )
        for hold in _open_holds(snapshot)
        if hold.table_id not in snapshot.live_table_ids
    ]


def _held_stakes_match_holds(snapshot: AuditSnapshot) -> list[Breach]:
    held: dict[str, int] = defaultdict(int)
    for hold in _open_holds(snapshot):
        held[hold.currency] += hold.amount.amount
    for account in snapshot.accounts.values():
        if account.kind is AccountKind.HELD_STAKES:
            held.setdefault(account.currency, 0)
    breaches = []
    for currency, expected in sorted(held.items()):
        account_id = system_account_id(AccountKind.HELD_STAKES, currency)
        balance = snapshot.balances.get(account_id)
        actual = balance.net.amount if balance else 0
        if actual != expected:
            detail = f"account holds {actual} but open holds total {expected} minor units"
            breaches.append(Breach(HELD_STAKES_DIFFER_FROM_HOLDS, account_id, detail))
    return breaches
