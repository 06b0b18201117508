"""The double-entry ledger: accounts, transfer codes, transfers, balances, posting rules.

Modelled on TigerBeetle. Every player has one account per currency; each
currency also has four system accounts: the house's commission revenue, the
payment provider's clearing account, the stakes held at tables and the house's
prize fund (what it adds to tournament pools). A transfer
moves a positive amount from one account (debit) to another (credit) of the
same currency, carries a ``code`` saying why and a client-supplied idempotency
``id``, and is immutable once posted. Balances are ``credits - debits``, so the
balances of a currency always sum to zero.

Posting rules (``post``):
- a batch is applied in order and all-or-nothing;
- a transfer's accounts must exist, differ, share its currency and match its code;
- no account may go negative except the provider clearing account (it is negative
  by the money the provider holds for players), the play-money issue account and the
  house's prize fund (by what they gave out);
- an id already posted with the same content is a replay: it returns the first
  result and changes nothing; with different content it is an ``IdempotencyConflict``.

The service layer calls ``post`` on a ``Ledger`` holding only the accounts a
batch touches and the already-posted transfers with the batch's ids (rows it
loaded ``FOR UPDATE``), then saves ``Posting.applied`` and the new balances.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum, StrEnum

from services.wallet.domain.errors import (
    CurrencyMismatch,
    IdempotencyConflict,
    InsufficientFunds,
    InvalidTransfer,
    UnknownAccount,
)
from services.wallet.domain.money import PLAY, Money, require_known_currency, require_positive


class AccountKind(StrEnum):
    PLAYER = "player"
    HOUSE_COMMISSION = "house_commission"
    PROVIDER_CLEARING = "provider_clearing"
    HELD_STAKES = "held_stakes"
    # Where free play money comes from (PLAY only): negative by the play money handed out.
    PLAY_MONEY_ISSUE = "play_money_issue"
    # The house's prize fund: where the money it adds to tournament pools comes from
    # (freerolls, added prizes); negative by what it added and did not get back.
    HOUSE_PRIZES = "house_prizes"


# The system accounts every currency has; the play-money issue account exists for PLAY only.
SYSTEM_KINDS: frozenset[AccountKind] = frozenset(AccountKind) - {
    AccountKind.PLAYER,
    AccountKind.PLAY_MONEY_ISSUE,
}
# Accounts allowed below zero: they stand for money outside the ledger (the provider's
# float, the play money issued, the house's prize budget), so their negative balance is
# what they owe or gave out.
MAY_GO_NEGATIVE: frozenset[AccountKind] = frozenset(
    {AccountKind.PROVIDER_CLEARING, AccountKind.PLAY_MONEY_ISSUE, AccountKind.HOUSE_PRIZES}
)


@dataclass(frozen=True, slots=True)
class Account:
    """A ledger account; ``owner`` is the player id for player accounts, else None."""

    id: str
    kind: AccountKind
    currency: str
    owner: str | None = None

    @property
    def may_go_negative(self) -> bool:
        return self.kind in MAY_GO_NEGATIVE


def player_account_id(player_id: str, currency: str) -> str:
    return f"player:{player_id}:{currency}"


def system_account_id(kind: AccountKind, currency: str) -> str:
    return f"{kind.value}:{currency}"


def player_account(player_id: str, currency: str) -> Account:
    require_known_currency(currency)
    return Account(player_account_id(player_id, currency), AccountKind.PLAYER, currency, player_id)


def system_account(kind: AccountKind, currency: str) -> Account:
    if kind not in SYSTEM_KINDS:
        raise InvalidTransfer(f"{kind.value} is not a system account kind")
    require_known_currency(currency)
    return Account(system_account_id(kind, currency), kind, currency)


def system_accounts(currency: str) -> tuple[Account, ...]:
    return tuple(system_account(kind, currency) for kind in sorted(SYSTEM_KINDS))


def play_money_issue_account() -> Account:
    """The house's play-money source: free top-ups are transfers from it (PLAY only)."""
    kind = AccountKind.PLAY_MONEY_ISSUE
    return Account(f"{kind.value}:{PLAY}", kind, PLAY)


class TransferCode(IntEnum):
    """Why money moved; stored as a small integer like TigerBeetle's ``code``."""

    DEPOSIT = 1
    WITHDRAWAL = 2
    WITHDRAWAL_REVERSAL = 3
    PLAY_MONEY_TOP_UP = 4
    HOLD_PLACE = 10
    HOLD_RAISE = 11
    HOLD_POST = 12
    HOLD_VOID = 13
    GAME_PAYOUT = 20
    MATCH_PAYOUT = 21
    DISCONNECT_SPLIT = 22
    COMMISSION = 30
    # A tournament's pool of holds (domain/pools.py): fees to the house, prizes to winners.
    TOURNAMENT_FEE = 31
    TOURNAMENT_PRIZE = 23
    # House money in a tournament's pool (domain/holds.py's house holds): held from the
    # house's prize fund, posted or released back to it, and paid from it to winners.
    ADDED_PRIZE_HOLD = 14
    ADDED_PRIZE_POST = 15
    ADDED_PRIZE_RELEASE = 16
    TOURNAMENT_HOUSE_PRIZE = 24


_P, _HOUSE, _CLEARING, _HELD, _PLAY_ISSUE, _PRIZES = (
    AccountKind.PLAYER,
    AccountKind.HOUSE_COMMISSION,
    AccountKind.PROVIDER_CLEARING,
    AccountKind.HELD_STAKES,
    AccountKind.PLAY_MONEY_ISSUE,
    AccountKind.HOUSE_PRIZES,
)

# The only (debit kind, credit kind) each code may move money between.
ROUTES: Mapping[TransferCode, tuple[AccountKind, AccountKind]] = {
    TransferCode.DEPOSIT: (_CLEARING, _P),
    TransferCode.WITHDRAWAL: (_P, _CLEARING),
    TransferCode.WITHDRAWAL_REVERSAL: (_CLEARING, _P),
    TransferCode.PLAY_MONEY_TOP_UP: (_PLAY_ISSUE, _P),
    TransferCode.HOLD_PLACE: (_P, _HELD),
    TransferCode.HOLD_RAISE: (_P, _HELD),
    TransferCode.HOLD_POST: (_HELD, _P),
    TransferCode.HOLD_VOID: (_HELD, _P),
    TransferCode.GAME_PAYOUT: (_P, _P),
    TransferCode.MATCH_PAYOUT: (_P, _P),
    TransferCode.DISCONNECT_SPLIT: (_P, _P),
    TransferCode.COMMISSION: (_P, _HOUSE),
    TransferCode.TOURNAMENT_FEE: (_P, _HOUSE),
    TransferCode.TOURNAMENT_PRIZE: (_P, _P),
    TransferCode.ADDED_PRIZE_HOLD: (_PRIZES, _HELD),
    TransferCode.ADDED_PRIZE_POST: (_HELD, _PRIZES),
    TransferCode.ADDED_PRIZE_RELEASE: (_HELD, _PRIZES),
    TransferCode.TOURNAMENT_HOUSE_PRIZE: (_PRIZES, _P),
}


@dataclass(frozen=True, slots=True)
class Transfer:
    """An immutable, balanced movement of ``amount`` from debit to credit account."""

    id: str
    debit_account_id: str
    credit_account_id: str
    amount: Money
    code: TransferCode
    reference: str  # the game, hold or payment it belongs to, for statements and audit

    def __post_init__(self) -> None:
        if not self.id:
            raise InvalidTransfer("a transfer needs a non-empty idempotency id")
        require_positive(self.amount, f"transfer {self.id}'s amount")


@dataclass(frozen=True, slots=True)
class Balance:
    """Posted totals of one account, in minor units."""

    account_id: str
    currency: str
    debits: int = 0
    credits: int = 0

    @property
    def net(self) -> Money:
        return Money(self.credits - self.debits, self.currency)

    def debited(self, amount: int) -> Balance:
        return Balance(self.account_id, self.currency, self.debits + amount, self.credits)

    def credited(self, amount: int) -> Balance:
        return Balance(self.account_id, self.currency, self.debits, self.credits + amount)


@dataclass(frozen=True, slots=True)
class Entry:
    """One side of a transfer as seen by one account: positive credits, negative debits."""

    transfer_id: str
    account_id: str
    amount: Money


def entries_of(transfer: Transfer) -> tuple[Entry, Entry]:
    return (
        Entry(transfer.id, transfer.debit_account_id, -transfer.amount),
        Entry(transfer.id, transfer.credit_account_id, transfer.amount),
    )


@dataclass(frozen=True)
class Ledger:
    """Accounts, their balances and the transfers posted so far (or the slice a batch needs)."""

    accounts: Mapping[str, Account] = field(default_factory=dict)
    balances: Mapping[str, Balance] = field(default_factory=dict)
    transfers: Mapping[str, Transfer] = field(default_factory=dict)

    def account(self, account_id: str) -> Account:
        if account_id not in self.accounts:
            raise UnknownAccount(f"no account {account_id!r}; open it before moving money")
        return self.accounts[account_id]

    def balance(self, account_id: str) -> Money:
        account = self.account(account_id)
        return self.balances.get(account_id, Balance(account_id, account.currency)).net


def open_accounts(ledger: Ledger, accounts: Iterable[Account]) -> Ledger:
    """Add accounts with zero balances; reopening an identical account changes nothing."""
    opened = dict(ledger.accounts)
    balances = dict(ledger.balances)
    for account in accounts:
        existing = opened.get(account.id)
        if existing is not None and existing != account:
            raise IdempotencyConflict(f"account {account.id!r} already exists as {existing}")
        opened[account.id] = account
        balances.setdefault(account.id, Balance(account.id, account.currency))
    return Ledger(opened, balances, ledger.transfers)


@dataclass(frozen=True, slots=True)
class Posting:
    """The outcome of posting a batch: the new ledger and what each request resolved to."""

    ledger: Ledger
    applied: tuple[Transfer, ...]
    replayed: tuple[Transfer, ...]
    results: tuple[Transfer, ...]  # one per request, in request order


def check_idempotency(transfer: Transfer, existing: Transfer | None) -> bool:
    """True when ``transfer`` replays ``existing``; raises if the id was used for other content."""
    if existing is None:
        return False
    if existing != transfer:
        raise IdempotencyConflict(
            f"transfer id {transfer.id!r} was already used for {_describe(existing)}; "
            f"it cannot now mean {_describe(transfer)}. Use a new id for a new transfer."
        )
    return True


def _describe(transfer: Transfer) -> str:
    return (
        f"{transfer.code.name} of {transfer.amount} from {transfer.debit_account_id} "
        f"to {transfer.credit_account_id} ({transfer.reference})"
    )


def validate_route(transfer: Transfer, debit: Account, credit: Account) -> None:
    """The posting rules that need only the two accounts."""
    if debit.id == credit.id:
        raise InvalidTransfer(f"transfer {transfer.id} moves money from {debit.id} to itself")
    for account in (debit, credit):
        if account.currency != transfer.amount.currency:
            raise CurrencyMismatch(
                f"transfer {transfer.id} is in {transfer.amount.currency} "
                f"but account {account.id} holds {account.currency}"
            )
    expected = ROUTES[transfer.code]
    if (debit.kind, credit.kind) != expected:
        raise InvalidTransfer(
            f"a {transfer.code.name} transfer goes from a {expected[0].value} account "
            f"to a {expected[1].value} account, not from {debit.id} to {credit.id}"
        )


def apply_transfer(
    transfer: Transfer, debit: Account, debit_balance: Balance, credit_balance: Balance
) -> tuple[Balance, Balance]:
    """New balances of both sides, refusing to take an account below zero."""
    after = debit_balance.debited(transfer.amount.amount)
    if after.net.amount < 0 and not debit.may_go_negative:
        raise InsufficientFunds(
            f"{debit.id} has {debit_balance.net} but {transfer.code.name} {transfer.id} "
            f"needs {transfer.amount} ({transfer.reference})"
        )
    return after, credit_balance.credited(transfer.amount.amount)


def post(ledger: Ledger, transfers: Sequence[Transfer]) -> Posting:
    """Post a batch in order, all or nothing, with replays of known ids changing nothing."""
    balances = dict(ledger.balances)
    posted = dict(ledger.transfers)
    applied: list[Transfer] = []
    replayed: list[Transfer] = []
    for transfer in transfers:
        if check_idempotency(transfer, posted.get(transfer.id)):
            replayed.append(posted[transfer.id])
            continue
        debit = ledger.account(transfer.debit_account_id)
        credit = ledger.account(transfer.credit_account_id)
        validate_route(transfer, debit, credit)
        balances[debit.id], balances[credit.id] = apply_transfer(
            transfer,
            debit,
            balances.get(debit.id, Balance(debit.id, debit.currency)),
            balances.get(credit.id, Balance(credit.id, credit.currency)),
        )
        posted[transfer.id] = transfer
        applied.append(transfer)
    results = tuple(posted[transfer.id] for transfer in transfers)
    new_ledger = Ledger(ledger.accounts, balances, posted)
    return Posting(new_ledger, tuple(applied), tuple(replayed), results)
