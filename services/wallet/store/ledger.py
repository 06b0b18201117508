"""Accounts, balances, transfers and their entries: the ledger's repository.

Player accounts are locked (sorted by id); a system account's balance is its row
plus its shard rows (migration 0003), updated by delta after the players.
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from services.wallet.domain.ledger import (
    Account,
    AccountKind,
    Balance,
    Ledger,
    Posting,
    Transfer,
    TransferCode,
    player_account,
)
from services.wallet.domain.money import Money
from services.wallet.store.driver import DriverStatement
from services.wallet.store.tables import ledger_accounts, transfers


def content_hash(transfer: Transfer) -> str:
    """A fingerprint of what a transfer says, stored beside it for exports and spot checks."""
    text = "|".join(
        (
            transfer.id,
            transfer.debit_account_id,
            transfer.credit_account_id,
            str(transfer.amount.amount),
            transfer.amount.currency,
            str(int(transfer.code)),
            transfer.reference,
        )
    )
    return hashlib.sha256(text.encode()).hexdigest()


def account_from_row(row: Any) -> Account:
    return Account(row.id, AccountKind(row.kind), row.currency, row.owner)


def balance_from_row(row: Any) -> Balance:
    return Balance(row.id, row.currency, row.debits, row.credits)


def _transfer(row: Any) -> Transfer:
    return Transfer(
        id=row.id,
        debit_account_id=row.debit_account_id,
        credit_account_id=row.credit_account_id,
        amount=Money(row.amount, row.currency),
        code=TransferCode(row.code),
        reference=row.reference,
    )


def is_player_account_id(account_id: str) -> bool:
    return account_id.startswith(f"{AccountKind.PLAYER.value}:")


class LedgerRepository:
    """Accounts, balances and transfers: the slice of the ledger one operation needs."""

    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def open_player_accounts(self, player_id: str, currencies: Iterable[str]) -> None:
        """Create the player's accounts in these currencies unless they exist."""
        rows = [
            {"id": a.id, "kind": a.kind.value, "currency": a.currency, "owner": a.owner}
            for a in (player_account(player_id, currency) for currency in sorted(set(currencies)))
        ]
        await self._session.execute(insert(ledger_accounts).values(rows).on_conflict_do_nothing())

    async def load(self, account_ids: Iterable[str], transfer_ids: Iterable[str] = ()) -> Ledger:
        """Lock the player accounts (sorted), read the system ones, and the known transfers.

        Accounts that do not exist are simply absent: the domain names them.
        One round trip reads the accounts: the locking read runs as a CTE.
        """
        ids = set(account_ids)
        player_ids = sorted(i for i in ids if is_player_account_id(i))
        system_ids = sorted(ids - set(player_ids))
        rows = await _LOAD_ACCOUNTS.execute(
            self._session, {"players": player_ids, "system": system_ids}
        )
        known = await self.transfers_by_id(transfer_ids)
        return Ledger(
            accounts={row.id: account_from_row(row) for row in rows},
            balances={row.id: balance_from_row(row) for row in rows},
            transfers=known,
        )

    async def transfers_by_id(self, transfer_ids: Iterable[str]) -> dict[str, Transfer]:
        ids = sorted(set(transfer_ids))
        if not ids:
            return {}
        query = select(transfers).where(transfers.c.id.in_(ids))
        return {row.id: _transfer(row) for row in (await self._session.execute(query)).all()}

    async def save(self, before: Ledger, posting: Posting, now: datetime) -> None:
        """Write the applied transfers, their entries and the balance changes.

        One statement writes the transfers, the entries, the player balances
        (already locked by :meth:`load`) and the first system account's shard;
        any further system account follows in id order, so the locks of every
        transaction are taken in the same order and cannot deadlock.
        """
        if not posting.applied:
            return
        deltas = balance_deltas(before, posting.ledger)
        players = sorted(i for i in deltas if is_player_account_id(i))
        systems = sorted(set(deltas) - set(players))
        shard = shard_of(posting.applied[0].id)
        first = systems[0] if systems else None
        await _POST.execute(
            self._session,
            {
                **_transfer_arrays(posting.applied, now),
                **_delta_arrays(players, deltas),
                "system_id": first,
                "system_debits": deltas[first][0] if first else 0,
                "system_credits": deltas[first][1] if first else 0,
                "shard": shard,
            },
        )
        for account_id in systems[1:]:
            debits, credits = deltas[account_id]
            await _ADD_TO_SHARD.execute(
                self._session,
                {"id": account_id, "shard": shard, "debits": debits, "credits": credits},
            )

    async def player_balances(self, player_id: str) -> dict[str, Money]:
        query = select(ledger_accounts).where(ledger_accounts.c.owner == player_id)
        rows = (await self._session.execute(query)).all()
        return {row.currency: balance_from_row(row).net for row in rows}

    async def latest_credit_at(self, account_id: str, code: TransferCode) -> datetime | None:
        """When ``account_id`` was last credited by a transfer with ``code`` (or None)."""
        query = select(func.max(transfers.c.posted_at)).where(
            transfers.c.credit_account_id == account_id, transfers.c.code == int(code)
        )
        latest: datetime | None = await self._session.scalar(query)
        return latest

    async def balance(self, account_id: str) -> Balance | None:
        query = select(ledger_accounts).where(ledger_accounts.c.id == account_id)
        row = (await self._session.execute(query)).first()
        return None if row is None else balance_from_row(row)


_LOAD_ACCOUNTS = DriverStatement.of(
    """
    WITH locked AS (
        SELECT id, kind, currency, owner, debits, credits FROM ledger_accounts
        WHERE id = ANY(CAST(:players AS text[])) ORDER BY id FOR UPDATE
    )
    SELECT * FROM locked
    UNION ALL
    SELECT a.id, a.kind, a.currency, a.owner,
           CAST(a.debits + COALESCE(sum(s.debits), 0) AS bigint),
           CAST(a.credits + COALESCE(sum(s.credits), 0) AS bigint)
    FROM ledger_accounts AS a LEFT JOIN system_balance_shards AS s ON s.account_id = a.id
    WHERE a.id = ANY(CAST(:system AS text[]))
    GROUP BY a.id
    """
)

# A system account's balance is its row plus its shards (migration 0003): the
# hot house account is spread over SHARDS rows so settlements do not queue on one.
SHARDS = 16
_ADD_TO_SHARD = DriverStatement.of(
    """
    UPDATE system_balance_shards
    SET debits = debits + CAST(:debits AS bigint), credits = credits + CAST(:credits AS bigint)
    WHERE account_id = CAST(:id AS text) AND shard = CAST(:shard AS smallint)
    """
)


def shard_of(transfer_id: str) -> int:
    """A stable shard per posting, so concurrent postings spread over the shards."""
    return zlib.crc32(transfer_id.encode()) % SHARDS


# A posting in one round trip: transfers (their entries are a view of them,
# migration 0006), the player balances, and one system account's shard.
_POST = DriverStatement.of(
    """
    WITH posted AS (
        INSERT INTO transfers (id, debit_account_id, credit_account_id, amount, currency,
                               code, reference, content_hash, posted_at)
        SELECT * FROM unnest(
            CAST(:ids AS text[]), CAST(:debit_ids AS text[]), CAST(:credit_ids AS text[]),
            CAST(:amounts AS bigint[]), CAST(:currencies AS text[]), CAST(:codes AS smallint[]),
            CAST(:references AS text[]), CAST(:hashes AS text[]),
            CAST(:posted_at AS timestamptz[]))
    ), players AS (
        UPDATE ledger_accounts AS a
        SET debits = a.debits + d.debits, credits = a.credits + d.credits,
            version = a.version + 1
        FROM unnest(
            CAST(:account_ids AS text[]), CAST(:debits AS bigint[]), CAST(:credits AS bigint[]))
            AS d(id, debits, credits)
        WHERE a.id = d.id
        RETURNING a.id
    )
    UPDATE system_balance_shards
    SET debits = debits + CAST(:system_debits AS bigint),
        credits = credits + CAST(:system_credits AS bigint)
    WHERE account_id = CAST(:system_id AS text) AND shard = CAST(:shard AS smallint)
    """
)


def _transfer_arrays(applied: Sequence[Transfer], now: datetime) -> dict[str, list[Any]]:
    return {
        "ids": [t.id for t in applied],
        "debit_ids": [t.debit_account_id for t in applied],
        "credit_ids": [t.credit_account_id for t in applied],
        "amounts": [t.amount.amount for t in applied],
        "currencies": [t.amount.currency for t in applied],
        "codes": [int(t.code) for t in applied],
        "references": [t.reference for t in applied],
        "hashes": [content_hash(t) for t in applied],
        "posted_at": [now] * len(applied),
    }


def _delta_arrays(ids: list[str], deltas: dict[str, tuple[int, int]]) -> dict[str, list[Any]]:
    return {
        "account_ids": ids,
        "debits": [deltas[i][0] for i in ids],
        "credits": [deltas[i][1] for i in ids],
    }


def balance_deltas(before: Ledger, after: Ledger) -> dict[str, tuple[int, int]]:
    """What each account's debits and credits grew by, for the accounts that moved."""
    deltas: dict[str, tuple[int, int]] = {}
    for account_id, balance in after.balances.items():
        old = before.balances.get(account_id)
        debits = balance.debits - (old.debits if old else 0)
        credits = balance.credits - (old.credits if old else 0)
        if debits or credits:
            deltas[account_id] = (debits, credits)
    return deltas
