"""Random sequences of wallet operations keep the books sound.

A hypothesis state machine deposits, withdraws, sits players at tables, doubles,
settles, splits, abandons tables and replays or reuses transfer ids. After every
step the audit must find no breach: each currency sums to zero, each balance
equals its entries, no player is negative, and the held-stakes account equals
the open holds, all of which belong to live tables.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from services.wallet.domain.audit import audit, snapshot_of
from services.wallet.domain.errors import IdempotencyConflict, InsufficientFunds
from services.wallet.domain.holds import (
    Hold,
    can_cover,
    place_hold,
    raise_hold,
    required_hold,
    void_hold,
)
from services.wallet.domain.ledger import (
    AccountKind,
    Ledger,
    Transfer,
    TransferCode,
    open_accounts,
    player_account,
    player_account_id,
    post,
    system_account_id,
    system_accounts,
)
from services.wallet.domain.money import Money
from services.wallet.domain.schedule import schedule_in_force
from services.wallet.domain.settlement import (
    Players,
    Settlement,
    settle_match,
    settle_money_game,
    settle_split,
    settlement_batch,
)
from services.wallet.domain.terms import GameTerms, Match, MoneyGame, WinType

PLAYERS = ("ann", "ben", "cem")
CURRENCIES = ("USD", "PLAY")
amounts = st.integers(min_value=1, max_value=50_000)


@dataclass
class Table:
    id: str
    terms: GameTerms
    holds: list[Hold]
    cube: int = 1


class WalletMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        accounts = [player_account(p, c) for p in PLAYERS for c in CURRENCIES]
        accounts += [a for c in CURRENCIES for a in system_accounts(c)]
        self.ledger = open_accounts(Ledger(), accounts)
        self.tables: dict[str, Table] = {}
        self.closed_holds: list[Hold] = []
        self.counter = 0

    def next_id(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def balance(self, player: str, currency: str) -> Money:
        return self.ledger.balance(player_account_id(player, currency))

    def post(self, transfers: list[Transfer]) -> None:
        self.ledger = post(self.ledger, transfers).ledger

    @rule(player=st.sampled_from(PLAYERS), currency=st.sampled_from(CURRENCIES), cents=amounts)
    def deposit(self, player: str, currency: str, cents: int) -> None:
        clearing = system_account_id(AccountKind.PROVIDER_CLEARING, currency)
        account = player_account_id(player, currency)
        money = Money(cents, currency)
        self.post(
            [Transfer(self.next_id("d"), clearing, account, money, TransferCode.DEPOSIT, "p")]
        )

    @rule(player=st.sampled_from(PLAYERS), currency=st.sampled_from(CURRENCIES), cents=amounts)
    def withdraw(self, player: str, currency: str, cents: int) -> None:
        clearing = system_account_id(AccountKind.PROVIDER_CLEARING, currency)
        account = player_account_id(player, currency)
        money = Money(cents, currency)
        transfer = Transfer(
            self.next_id("w"), account, clearing, money, TransferCode.WITHDRAWAL, "p"
        )
        before = self.ledger
        try:
            self.post([transfer])
        except InsufficientFunds:
            assert self.balance(player, currency) < money
            assert self.ledger is before
        else:
            assert before.balance(account) >= money

    @rule(
        pair=st.permutations(PLAYERS).map(lambda p: p[:2]),
        currency=st.sampled_from(CURRENCIES),
        stake=st.integers(min_value=1, max_value=3_000),
        length=st.none() | st.integers(min_value=1, max_value=11),
    )
    def open_table(
        self, pair: tuple[str, str], currency: str, stake: int, length: int | None
    ) -> None:
        table_id = self.next_id("t")
        terms: GameTerms = (
            MoneyGame(Money(stake, currency))
            if length is None
            else Match(Money(stake, currency), length)
        )
        stake_at_risk = required_hold(terms, 1)
        try:
            changes = [
                place_hold(f"{table_id}-{p}", p, table_id, stake_at_risk, self.balance(p, currency))
                for p in pair
            ]
        except InsufficientFunds:
            assert any(self.balance(p, currency).amount < stake * (3 if length is None else 1)
                       for p in pair)  # fmt: skip
            return
        self.post([c.transfer for c in changes if c.transfer is not None])
        self.tables[table_id] = Table(table_id, terms, [c.hold for c in changes])

    @precondition(lambda self: bool(self.tables))
    @rule(data=st.data())
    def double(self, data: st.DataObject) -> None:
        table = self.tables[data.draw(st.sampled_from(sorted(self.tables)))]
        new_cube = table.cube * 2
        if new_cube > 64:
            return
        required = required_hold(table.terms, new_cube)
        available = [self.balance(h.player_id, h.currency) for h in table.holds]
        checks = [can_cover(h, required, a) for h, a in zip(table.holds, available, strict=True)]
        if not all(check.can_cover for check in checks):
            short = next(i for i, c in enumerate(checks) if not c.can_cover)
            with pytest.raises(InsufficientFunds):
                raise_hold(table.holds[short], required, available[short])
            return
        changes = [raise_hold(h, required, a) for h, a in zip(table.holds, available, strict=True)]
        self.post([c.transfer for c in changes if c.transfer is not None])
        table.holds = [c.hold for c in changes]
        table.cube = new_cube

    def settle(self, table: Table, settlement: Settlement) -> None:
        batch = settlement_batch(settlement, table.holds)
        before = {h.player_id: self.balance(h.player_id, h.currency) for h in table.holds}
        self.post(list(batch.transfers))
        currency = settlement.currency
        returned = {h.player_id: h.amount for h in table.holds}
        if settlement.players is not None:
            winner, loser = settlement.players.winner_id, settlement.players.loser_id
            assert self.balance(loser, currency) == (
                before[loser] + returned[loser] - settlement.loser_debit
            )
            assert self.balance(winner, currency) == (
                before[winner] + returned[winner] + settlement.winner_credit
            )
        self.close(table, list(batch.posted_holds))

    def close(self, table: Table, holds: list[Hold]) -> None:
        del self.tables[table.id]
        self.closed_holds += holds

    @precondition(lambda self: bool(self.tables))
    @rule(data=st.data(), win_type=st.sampled_from(WinType), winner_first=st.booleans())
    def finish(self, data: st.DataObject, win_type: WinType, winner_first: bool) -> None:
        table = self.tables[data.draw(st.sampled_from(sorted(self.tables)))]
        first, second = (h.player_id for h in table.holds)
        players = Players(first, second) if winner_first else Players(second, first)
        schedule = schedule_in_force(table.holds[0].currency, _NOW)
        ratings = (data.draw(st.integers(1200, 2100)), data.draw(st.integers(1200, 2100)))
        if isinstance(table.terms, Match):
            settlement = settle_match(table.id, players, table.terms, ratings, schedule)
        else:
            cube = table.cube
            settlement = settle_money_game(
                table.id, players, table.terms, cube, win_type, ratings, schedule
            )
        self.settle(table, settlement)

    @precondition(lambda self: bool(self.tables))
    @rule(data=st.data(), share=st.decimals(min_value=0, max_value=1, places=3))
    def split_after_disconnection(self, data: st.DataObject, share: Decimal) -> None:
        table = self.tables[data.draw(st.sampled_from(sorted(self.tables)))]
        first, second = (h.player_id for h in table.holds)
        schedule = schedule_in_force(table.holds[0].currency, _NOW)
        settlement = settle_split(
            table.id, first, second, table.terms, table.cube, share, (1500, 1700), schedule
        )
        self.settle(table, settlement)

    @precondition(lambda self: bool(self.tables))
    @rule(data=st.data())
    def abandon(self, data: st.DataObject) -> None:
        table = self.tables[data.draw(st.sampled_from(sorted(self.tables)))]
        changes = [void_hold(h) for h in table.holds]
        self.post([c.transfer for c in changes if c.transfer is not None])
        self.close(table, [c.hold for c in changes])

    @precondition(lambda self: bool(self.ledger.transfers))
    @rule(data=st.data())
    def replay(self, data: st.DataObject) -> None:
        transfer = data.draw(st.sampled_from(sorted(self.ledger.transfers.values(), key=_by_id)))
        posting = post(self.ledger, [transfer])
        assert posting.applied == ()
        assert posting.results == (transfer,)
        assert posting.ledger.balances == self.ledger.balances

    @precondition(lambda self: bool(self.ledger.transfers))
    @rule(data=st.data(), extra=st.integers(min_value=1, max_value=100))
    def reuse_an_id_for_something_else(self, data: st.DataObject, extra: int) -> None:
        transfer = data.draw(st.sampled_from(sorted(self.ledger.transfers.values(), key=_by_id)))
        other = Transfer(
            transfer.id,
            transfer.debit_account_id,
            transfer.credit_account_id,
            Money(transfer.amount.amount + extra, transfer.amount.currency),
            transfer.code,
            transfer.reference,
        )
        with pytest.raises(IdempotencyConflict):
            post(self.ledger, [other])

    @invariant()
    def the_audit_finds_nothing(self) -> None:
        holds = [h for table in self.tables.values() for h in table.holds] + self.closed_holds
        assert audit(snapshot_of(self.ledger, holds, self.tables)) == ()

    @invariant()
    def no_player_is_negative(self) -> None:
        for player in PLAYERS:
            for currency in CURRENCIES:
                assert self.balance(player, currency).amount >= 0


def _by_id(transfer: Transfer) -> str:
    return transfer.id


_NOW = datetime(2026, 11, 29, tzinfo=UTC)

WalletMachine.TestCase.settings = settings(
    max_examples=100,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_random_operation_sequences_keep_the_books_sound = WalletMachine.TestCase
