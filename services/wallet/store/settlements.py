"""Settled (and refused) games and matches: the settlements repository."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from services.wallet.store.driver import DriverStatement


@dataclass(frozen=True, slots=True)
class SettlementRecord:
    """One settled (or refused) game or match, with the schedule version it used."""

    id: str
    game_id: str
    game_number: int
    table_id: str
    kind: str
    currency: str
    winner_id: str | None
    loser_id: str | None
    win_sum: int
    commission_total: int
    rate: str
    schedule_version: str
    disconnection: bool
    status: str
    detail: str | None
    source_event_id: str
    settled_at: datetime


class SettlementRepository:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def get(self, settlement_id: str) -> SettlementRecord | None:
        rows = await _GET_SETTLEMENT.execute(self._session, {"id": settlement_id})
        return SettlementRecord(*rows[0]) if rows else None

    async def add(self, record: SettlementRecord) -> None:
        await _ADD_SETTLEMENT.execute(self._session, _record_values(record))


# The settlements table's columns, in the record's order.
SETTLEMENT_COLUMNS: tuple[str, ...] = SettlementRecord.__slots__
# Every settled game reads and writes one of these: sent to the driver directly.
_GET_SETTLEMENT = DriverStatement.of(
    f"SELECT {', '.join(SETTLEMENT_COLUMNS)} FROM settlements WHERE id = CAST(:id AS text)"
)
_ADD_SETTLEMENT = DriverStatement.of(
    f"INSERT INTO settlements ({', '.join(SETTLEMENT_COLUMNS)}) "
    f"VALUES ({', '.join(f':{name}' for name in SETTLEMENT_COLUMNS)})"
)


def _record_values(record: SettlementRecord) -> dict[str, Any]:
    return {name: getattr(record, name) for name in SETTLEMENT_COLUMNS}
