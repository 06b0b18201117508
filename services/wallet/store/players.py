"""What the wallet keeps per player beyond money: freezes, self-exclusion, deposit limits."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from services.wallet.domain.limits import LimitPeriod, PendingIncrease, PlayerLimits, SelfExclusion
from services.wallet.domain.money import Money
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
        await self._session.execute(
            insert(players)
            .values(player_id=player_id, self_excluded_indefinitely=False, updated_at=now)
            .on_conflict_do_nothing()
        )
        query = select(players).where(players.c.player_id == player_id)
        if lock:
            query = query.with_for_update()
        row = (await self._session.execute(query)).one()
        exclusion = None
        if row.self_excluded_from is not None:
            until = None if row.self_excluded_indefinitely else row.self_excluded_until
            exclusion = SelfExclusion(row.self_excluded_from, until)
        return PlayerState(row.player_id, row.frozen_reason, exclusion)

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


def _minor(money: Money | None) -> int | None:
    return None if money is None else money.amount
