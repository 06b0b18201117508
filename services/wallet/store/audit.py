"""Everything the audit checks, read in one snapshot."""

from __future__ import annotations

from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncSession

from services.wallet.domain.audit import AuditSnapshot
from services.wallet.domain.holds import HoldStatus
from services.wallet.domain.ledger import Entry
from services.wallet.domain.money import Money
from services.wallet.store.holds import hold_from_row
from services.wallet.store.ledger import account_from_row, balance_from_row
from services.wallet.store.tables import entries, holds, settlements

_ALL_BALANCES = text(
    """
    SELECT a.id, a.kind, a.currency, a.owner,
           CAST(a.debits + COALESCE(sum(s.debits), 0) AS bigint) AS debits,
           CAST(a.credits + COALESCE(sum(s.credits), 0) AS bigint) AS credits
    FROM ledger_accounts AS a LEFT JOIN system_balance_shards AS s ON s.account_id = a.id
    GROUP BY a.id
    """
)


class AuditRepository:
    """Reads everything the audit checks; run it in a REPEATABLE READ transaction."""

    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def snapshot(self) -> AuditSnapshot:
        account_rows = (await self._session.execute(_ALL_BALANCES)).all()
        entry_rows = (await self._session.execute(select(entries))).all()
        hold_rows = (await self._session.execute(select(holds))).all()
        return AuditSnapshot(
            accounts={row.id: account_from_row(row) for row in account_rows},
            balances={row.id: balance_from_row(row) for row in account_rows},
            entries=[
                Entry(row.transfer_id, row.account_id, Money(row.amount, row.currency))
                for row in entry_rows
            ],
            holds=[hold_from_row(row._mapping).hold for row in hold_rows],
            live_table_ids=await self._live_tables(),
        )

    async def _live_tables(self) -> frozenset[str]:
        """Tables with an open hold that no later settlement closed.

        The wallet learns that a table's game is over from its settlement; an
        open hold placed before its table's last settlement was left behind.
        """
        settled = (
            select(settlements.c.id)
            .where(settlements.c.table_id == holds.c.table_id)
            .where(settlements.c.settled_at >= holds.c.created_at)
            .where(settlements.c.status == "settled")  # a refused result closes nothing
            # A table-stakes game carries its holds over to the next game: it closes nothing.
            .where(settlements.c.kind != "table_stakes")
            .exists()
        )
        query = (
            select(holds.c.table_id)
            .where(holds.c.status == HoldStatus.OPEN.value)
            .where(~settled)
            .distinct()
        )
        return frozenset((await self._session.execute(query)).scalars())
