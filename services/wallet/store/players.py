"""What the wallet keeps per player beyond money: freezes, self-exclusion, deposit limits."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from services.wallet.domain.limits import LimitPeriod, PendingIncrease, PlayerLimits, SelfExclusion
from services.wallet.domain.money import Money
from services.wallet.store.driver import DriverStatement
from services.wallet.store.tables import deposit_limits, players


@dataclass(frozen=True, slots=True)
class PlayerState:
    """What the wallet knows about a player beyond their money."""

    player_id: str
    frozen_reason: str | None
    self_exclusion: SelfExclusion | None


class PlayerRepository:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def get(self, player_id: str, now: datetime, *, lock: bool = False) -> PlayerState:
        """The player's row, created on first use; locked when asked (limits and freezes)."""
        if not lock:
            return (await self.get_many([player_id], now))[player_id]
        await self._session.execute(
            insert(players)
            .values(player_id=player_id, self_excluded_indefinitely=False, updated_at=now)
            .on_conflict_do_nothing()
        )
        query = select(players).where(players.c.player_id == player_id)
        if lock:
            query = query.with_for_update()
        return _state((await self._session.execute(query)).one())

    async def get_many(self, player_ids: Sequence[str], now: datetime) -> dict[str, PlayerState]:
        """The players' rows, each created on first use, unlocked: one round trip.

        A row another transaction created after this statement's snapshot is
        neither inserted nor seen by it (it waits for that insert, then skips):
        those few are read again.
        """
        ids = sorted(set(player_ids))
        rows = await _CREATE_OR_READ.execute(self._session, {"ids": ids, "now": now})
        found = {row.player_id: _state(row) for row in rows}
        missing = [player_id for player_id in ids if player_id not in found]
        if missing:
            query = select(players).where(players.c.player_id.in_(missing))
            rows = (await self._session.execute(query)).all()
            found.update((row.player_id, _state(row)) for row in rows)
        return found

    async def frozen_reason(self, player_id: str) -> str | None:
        """Why the player is frozen, or None; a read that creates no row."""
        query = select(players.c.frozen_reason).where(players.c.player_id == player_id)
        reason: str | None = await self._session.scalar(query)
        return reason

    async def set_frozen(
        self, player_id: str, reason: str | None, alert_id: str | None, now: datetime
    ) -> None:
        await self._session.execute(
            update(players)
            .where(players.c.player_id == player_id)
            .values(frozen_reason=reason, frozen_alert_id=alert_id, updated_at=now)
        )

    async def set_self_exclusion(
        self, player_id: str, exclusion: SelfExclusion | None, now: datetime
    ) -> None:
        await self._session.execute(
            update(players)
            .where(players.c.player_id == player_id)
            .values(
                self_excluded_from=exclusion.started_at if exclusion else None,
                self_excluded_until=exclusion.ends_at if exclusion else None,
                self_excluded_indefinitely=exclusion is not None and exclusion.ends_at is None,
                updated_at=now,
            )
        )

    async def limits(self, state: PlayerState, currency: str) -> PlayerLimits:
        query = select(deposit_limits).where(
            deposit_limits.c.player_id == state.player_id, deposit_limits.c.currency == currency
        )
        current: dict[LimitPeriod, Money] = {}
        pending: dict[LimitPeriod, PendingIncrease] = {}
        for row in (await self._session.execute(query)).all():
            period = LimitPeriod(row.period)
            if row.amount is not None:
                current[period] = Money(row.amount, currency)
            if row.pending_effective_at is not None:
                amount = None if row.pending_amount is None else Money(row.pending_amount, currency)
                pending[period] = PendingIncrease(amount, row.pending_effective_at)
        return PlayerLimits(
            player_id=state.player_id,
            currency=currency,
            deposit_limits=current,
            pending=pending,
            self_exclusion=state.self_exclusion,
            frozen_reason=state.frozen_reason,
        )

    async def other_limits(self, state: PlayerState, currency: str) -> list[PlayerLimits]:
        """The player's limits in every currency they set one in, other than ``currency``."""
        others = [code for code in await self.limit_currencies(state.player_id) if code != currency]
        return [await self.limits(state, code) for code in others]

    async def limit_currencies(self, player_id: str) -> list[str]:
        query = (
            select(deposit_limits.c.currency)
            .where(deposit_limits.c.player_id == player_id)
            .distinct()
            .order_by(deposit_limits.c.currency)
        )
        return list((await self._session.execute(query)).scalars())

    async def save_limits(self, limits: PlayerLimits, now: datetime) -> None:
        """Rewrite the player's limits in this currency from the domain object."""
        await self._session.execute(
            deposit_limits.delete().where(
                deposit_limits.c.player_id == limits.player_id,
                deposit_limits.c.currency == limits.currency,
            )
        )
        rows = [
            {
                "player_id": limits.player_id,
                "currency": limits.currency,
                "period": period.value,
                "amount": _minor(limits.deposit_limits.get(period)),
                "pending_amount": _minor(limits.pending[period].amount)
                if period in limits.pending
                else None,
                "pending_effective_at": limits.pending[period].effective_at
                if period in limits.pending
                else None,
                "updated_at": now,
            }
            for period in LimitPeriod
            if period in limits.deposit_limits or period in limits.pending
        ]
        if rows:
            await self._session.execute(deposit_limits.insert().values(rows))


def _state(row: Any) -> PlayerState:
    exclusion = None
    if row.self_excluded_from is not None:
        until = None if row.self_excluded_indefinitely else row.self_excluded_until
        exclusion = SelfExclusion(row.self_excluded_from, until)
    return PlayerState(row.player_id, row.frozen_reason, exclusion)


# The players' rows created where missing and read, in one statement: the rows it
# creates come from the INSERT (the SELECT's snapshot predates them), the others from
# the SELECT.
_COLUMNS = (
    "player_id, frozen_reason, self_excluded_from, self_excluded_until, "
    "self_excluded_indefinitely"
)
_CREATE_OR_READ = DriverStatement.of(
    f"""
    WITH created AS (
        INSERT INTO players (player_id, self_excluded_indefinitely, updated_at)
        SELECT id, false, CAST(:now AS timestamptz)
        FROM unnest(CAST(:ids AS text[])) AS id ORDER BY id
        ON CONFLICT DO NOTHING
        RETURNING {_COLUMNS}
    )
    SELECT {_COLUMNS} FROM created
    UNION ALL
    SELECT {_COLUMNS} FROM players WHERE player_id = ANY(CAST(:ids AS text[]))
    """
)


def _minor(money: Money | None) -> int | None:
    return None if money is None else money.amount
