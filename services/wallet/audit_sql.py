"""The ledger audit aggregated in PostgreSQL: only breaches leave the database.

``tavla wallet audit`` runs these queries in one REPEATABLE READ transaction
instead of loading every entry into memory, so it scales with the ledger. Each
check is the SQL twin of one check in :mod:`services.wallet.domain.audit` (the
reference, used on in-memory snapshots): same breach names, subjects and
details, each kind sorted the same way. An integration test holds them to
agreement on a corrupted database.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from services.wallet.domain.audit import (
    BALANCE_DIFFERS_FROM_ENTRIES,
    CURRENCY_NOT_BALANCED,
    ENTRY_FOR_UNKNOWN_ACCOUNT,
    HELD_STAKES_DIFFER_FROM_HOLDS,
    HOLD_WITHOUT_LIVE_TABLE,
    NEGATIVE_BALANCE,
    UNBALANCED_TRANSFER,
    Breach,
)
from services.wallet.domain.ledger import MAY_GO_NEGATIVE, AccountKind
from services.wallet.domain.money import Money

# Every account's balance: its row plus, for system accounts, its shards.
_BALANCES = """
WITH shards AS (
    SELECT account_id, sum(credits - debits) AS net FROM system_balance_shards GROUP BY account_id
), balances AS (
    SELECT a.id, a.kind, a.currency, (a.credits - a.debits + COALESCE(s.net, 0))::bigint AS net
    FROM ledger_accounts AS a LEFT JOIN shards AS s ON s.account_id = a.id
)
"""

_CURRENCY_TOTALS = (
    _BALANCES + "SELECT currency, sum(net)::bigint AS total FROM balances "
    "GROUP BY currency HAVING sum(net) <> 0"
)

_UNKNOWN_ACCOUNT_ENTRIES = """
SELECT e.account_id, e.transfer_id FROM entries AS e
WHERE NOT EXISTS (SELECT 1 FROM ledger_accounts AS a WHERE a.id = e.account_id)
ORDER BY e.transfer_id, e.account_id
"""

_BALANCES_VS_ENTRIES = (
    _BALANCES
    + """, sums AS (
    SELECT account_id, sum(amount)::bigint AS total FROM entries GROUP BY account_id
)
SELECT COALESCE(b.id, s.account_id) AS id, COALESCE(b.net, 0) AS net,
       COALESCE(s.total, 0) AS total
FROM balances AS b FULL JOIN sums AS s ON s.account_id = b.id
WHERE COALESCE(b.net, 0) <> COALESCE(s.total, 0)
"""
)

_NEGATIVE = (
    _BALANCES
    + "SELECT id, kind, currency, net FROM balances "
    + "WHERE kind <> ALL(CAST(:may AS text[])) AND net < 0"
)

# Entries are a view of the transfers (migration 0006), so this finds nothing
# unless that view is changed; it stays as the twin of the domain's check.
_UNBALANCED_TRANSFERS = """
SELECT transfer_id, count(*) AS legs, array_agg(DISTINCT currency) AS currencies,
       sum(amount)::bigint AS total
FROM entries GROUP BY transfer_id
HAVING count(*) <> 2 OR count(DISTINCT currency) <> 1 OR sum(amount) <> 0
"""

# A table is live while it has an open hold placed after its last settlement (a
# table-stakes game's settlement carries the holds over to the next game: it closes nothing).
_HOLDS_WITHOUT_LIVE_TABLE = """
WITH live AS (
    SELECT DISTINCT h.table_id FROM holds AS h
    WHERE h.status = 'open' AND NOT EXISTS (
        SELECT 1 FROM settlements AS s
        WHERE s.table_id = h.table_id AND s.settled_at >= h.created_at AND s.status = 'settled'
          AND s.kind <> 'table_stakes'
    )
)
SELECT id, table_id, amount, currency FROM holds
WHERE status = 'open' AND table_id NOT IN (SELECT table_id FROM live)
"""

_HELD_STAKES = (
    _BALANCES
    + """, held AS (
    SELECT currency, sum(amount)::bigint AS total FROM holds WHERE status = 'open'
    GROUP BY currency
), currencies AS (
    SELECT currency FROM held UNION SELECT currency FROM ledger_accounts WHERE kind = :held
)
SELECT c.currency, COALESCE(h.total, 0) AS expected, COALESCE(b.net, 0) AS actual
FROM currencies AS c LEFT JOIN held AS h ON h.currency = c.currency
LEFT JOIN balances AS b ON b.id = :held || ':' || c.currency
WHERE COALESCE(h.total, 0) <> COALESCE(b.net, 0)
"""
)


async def sql_audit(session: AsyncSession) -> tuple[Breach, ...]:
    """Every breach, found by aggregating in the database (run in REPEATABLE READ)."""

    async def rows(sql: str, **params: Any) -> Sequence[Any]:
        return (await session.execute(text(sql), params)).all()

    def by_subject(breaches: list[Breach]) -> list[Breach]:
        return sorted(breaches, key=lambda breach: breach.subject)

    currency = [
        Breach(CURRENCY_NOT_BALANCED, r.currency, f"balances sum to {r.total} minor units, not 0")
        for r in await rows(_CURRENCY_TOTALS)
    ]
    unknown = [
        Breach(ENTRY_FOR_UNKNOWN_ACCOUNT, r.account_id, f"transfer {r.transfer_id}")
        for r in await rows(_UNKNOWN_ACCOUNT_ENTRIES)
    ]
    differing = [
        Breach(
            BALANCE_DIFFERS_FROM_ENTRIES,
            r.id,
            f"balance {r.net} but entries sum to {r.total} minor units",
        )
        for r in await rows(_BALANCES_VS_ENTRIES)
    ]
    negative = [
        Breach(NEGATIVE_BALANCE, r.id, f"{r.kind} account at {Money(r.net, r.currency)}")
        for r in await rows(_NEGATIVE, may=sorted(kind.value for kind in MAY_GO_NEGATIVE))
    ]
    transfers = [
        Breach(
            UNBALANCED_TRANSFER,
            r.transfer_id,
            f"{r.legs} entries in {sorted(r.currencies)} summing to {r.total}",
        )
        for r in await rows(_UNBALANCED_TRANSFERS)
    ]
    holds = [
        Breach(
            HOLD_WITHOUT_LIVE_TABLE,
            r.id,
            f"{Money(r.amount, r.currency)} held for closed table {r.table_id}",
        )
        for r in await rows(_HOLDS_WITHOUT_LIVE_TABLE)
    ]
    held = [
        Breach(
            HELD_STAKES_DIFFER_FROM_HOLDS,
            f"{AccountKind.HELD_STAKES.value}:{r.currency}",
            f"account holds {r.actual} but open holds total {r.expected} minor units",
        )
        for r in await rows(_HELD_STAKES, held=AccountKind.HELD_STAKES.value)
    ]
    # The domain's order: by kind of breach, each kind by subject (unknown accounts by transfer).
    return (
        *by_subject(currency),
        *unknown,
        *by_subject(differing),
        *by_subject(negative),
        *by_subject(transfers),
        *by_subject(holds),
        *by_subject(held),
    )
