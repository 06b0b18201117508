"""Settling a pool of holds (the tournaments service's entry fees and prizes).

The rules are :mod:`services.wallet.domain.pools`; this is the unit of work around
them: lock the holds (by id), answer a retry of a settled pool as it was, lock the
accounts, post the batch and save the posted holds, in one transaction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from services.kit.errors import NotFound
from services.wallet.domain.errors import InvalidSettlement
from services.wallet.domain.money import Money
from services.wallet.domain.pools import PoolRequest, PoolTicket, settle_pool, settled_already
from services.wallet.domain.schedule import require_playable_currency
from services.wallet.ids import derived_id, require_account_id, require_id, require_key
from services.wallet.posting import lock_ledger, post_locked
from services.wallet.store.holds import StoredHold
from services.wallet.use_case import UseCases

MAX_POOL_HOLDS = 2 * 1024  # a tournament's largest field, two holds an entrant


@dataclass(frozen=True, slots=True)
class TicketOrder:
    """A ticket to pay from the pool: its winner, its target and the target's buy-in and fee."""

    player_id: str
    target_id: str
    buy_in: Money
    entry_fee: Money


@dataclass(frozen=True, slots=True)
class SettledPool:
    posted: list[StoredHold]  # in the order of the request's hold ids
    ticket_holds: list[StoredHold]  # each ticket's buy-in hold, then its fee hold


def _ticket(order: TicketOrder, key: str) -> tuple[PoolTicket, list[str]]:
    """The ticket's holds, their ids derived from the pool's key (a retry finds them)."""
    require_account_id(order.player_id, "tickets.account_id")
    require_id(order.target_id, "tickets.table_id")
    parts = [
        (amount, f"{key}:ticket:{order.player_id}:{what}")
        for amount, what in ((order.buy_in, "buy-in"), (order.entry_fee, "fee"))
        if amount.amount  # a target without a fee: no fee hold
    ]
    holds = tuple(
        (derived_id("hold", order.player_id, hold_key), amount) for amount, hold_key in parts
    )
    return PoolTicket(order.player_id, order.target_id, holds), [hold_key for _, hold_key in parts]


class PoolUseCases(UseCases):
    async def settle_pool(
        self,
        *,
        table_id: str,
        hold_ids: Sequence[str],
        house_revenue: Money,
        payouts: Mapping[str, Money],
        idempotency_key: str,
        tickets: Sequence[TicketOrder] = (),
    ) -> SettledPool:
        require_id(table_id, "table_id")
        require_key(idempotency_key)
        require_playable_currency(house_revenue.currency, self._clock.now())
        if not hold_ids or len(hold_ids) > MAX_POOL_HOLDS or len(set(hold_ids)) != len(hold_ids):
            raise InvalidSettlement(
                f"hold_ids: 1 to {MAX_POOL_HOLDS} distinct holds of the pool, each once"
            )
        for player_id, prize in payouts.items():
            require_account_id(player_id, "payouts.account_id")
            if prize.currency != house_revenue.currency:
                raise InvalidSettlement(
                    f"the payout to {player_id} is in {prize.currency}, the pool in "
                    f"{house_revenue.currency}"
                )
        made = [_ticket(order, idempotency_key) for order in tickets]
        ticket_keys = {
            hold_id: key for ticket, keys in made
            for (hold_id, _), key in zip(ticket.holds, keys, strict=True)
        }
        request = PoolRequest(
            table_id, house_revenue, dict(payouts), idempotency_key,
            tuple(ticket for ticket, _ in made),
        )
        now = self._clock.now()
        async with self._uow() as uow:
            found = await uow.holds.get_many(hold_ids, lock=True)
            missing = [hold_id for hold_id in hold_ids if hold_id not in found]
            if missing:
                raise NotFound(f"no holds {', '.join(missing[:5])}: place them with PlaceHold")
            holds = [found[hold_id].hold for hold_id in hold_ids]
            if settled_already(holds):
                placed = await uow.holds.get_many(list(ticket_keys), lock=False)
                return SettledPool(
                    [found[hold_id] for hold_id in hold_ids],
                    [placed[hold_id] for hold_id in ticket_keys if hold_id in placed],
                )
            batch = settle_pool(request, holds)
            players = sorted(
                {hold.player_id for hold in holds if not hold.by_house} | set(payouts)
                 | {order.player_id for order in tickets}
            )
            before = await lock_ledger(uow, batch.transfers, open_for=players)
            await post_locked(uow, before, batch.transfers, now)
            await uow.holds.save_many(batch.posted_holds, now)
            for hold in batch.placed_holds:
                await uow.holds.add(hold, ticket_keys[hold.id], now)
            await uow.commit()
        posted = {hold.id: hold for hold in batch.posted_holds}
        return SettledPool(
            [
                StoredHold(
                    posted[hold_id], found[hold_id].idempotency_key, found[hold_id].created_at
                )
                for hold_id in hold_ids
            ],
            [StoredHold(hold, ticket_keys[hold.id], now) for hold in batch.placed_holds],
        )
