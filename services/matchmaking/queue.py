"""The auto-match queue's use cases: enter, leave, look at and watch a ticket.

Entering checks at once what any seating would check for this player alone
(geo, and for real money whether the wallet can cover the opening hold now:
:meth:`Seating.may_sit`, as for a table's owner), then records the ticket with
the player's declared residence and client signals, which the seating asks geo
with when a wave pairs it. Pairing itself is :mod:`services.matchmaking.waves`.
Watching polls the ticket's row (every replica sees every change, whoever
made it) and sends each new state until the ticket is matched, cancelled or
refused.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable

from sqlalchemy.exc import IntegrityError

from services.kit.clock import Clock
from services.kit.errors import FailedPrecondition, InvalidArgument, NotFound
from services.matchmaking.domain.queue import MAX_KEY, QueueTicket, TicketStatus
from services.matchmaking.domain.tables import Rules, Sitter
from services.matchmaking.ports import WalletPort
from services.matchmaking.seating import Seating
from services.matchmaking.service import quote_for
from services.matchmaking.store import MatchmakingUnitOfWork
from tavla.wallet.v1 import wallet_pb2

_NAMESPACE = uuid.UUID("0d7c3a52-5a0e-4c57-8f3e-2d9f0b6e4a11")


class QueueService:
    def __init__(
        self,
        unit_of_work: Callable[[], MatchmakingUnitOfWork],
        *,
        seating: Seating,
        wallet: WalletPort,
        clock: Clock,
        entered: Callable[[], None] = lambda: None,
        watch_poll_seconds: float = 0.5,
    ) -> None:
        self._uow = unit_of_work
        self._seating = seating
        self._wallet = wallet
        self._clock = clock
        self._entered = entered  # wakes this replica's waves (a pool may have filled)
        self._poll = watch_poll_seconds

    async def enter(
        self, *, player: Sitter, rules: Rules, max_rating_difference: float, key: str
    ) -> QueueTicket:
        if not key or len(key) > MAX_KEY:
            raise InvalidArgument(f"idempotency_key is required (at most {MAX_KEY} characters)")
        async with self._uow() as uow:
            existing = await uow.tickets.by_key(player.account_id, key)
        if existing is not None:
            return existing.same_request(rules, max_rating_difference, key)
        if rules.table_stakes:
            raise InvalidArgument(
                "table stakes are played at lobby tables only: open one with CreateTable"
            )
        await self._seating.may_sit(player, rules)
        ticket = QueueTicket(
            ticket_id=str(uuid.uuid5(_NAMESPACE, f"{player.account_id}:{key}")),
            sitter=player,
            rules=rules,
            max_rating_difference=max_rating_difference,
            entered_at=self._clock.now(),
        )
        try:
            async with self._uow() as uow:
                live = await uow.tickets.live_in_pool(player.account_id, ticket.pool)
                if live is not None:
                    raise FailedPrecondition(
                        f"you already wait in the queue for these rules (ticket "
                        f"{live.ticket_id}); leave it first or watch it"
                    )
                await uow.tickets.add(ticket, key, ticket.entered_at)
                await uow.commit()
        except IntegrityError:  # the same key, or another live ticket, committed first
            return await self._after_race(player, rules, max_rating_difference, key)
        self._entered()
        return ticket

    async def _after_race(
        self, player: Sitter, rules: Rules, max_rating_difference: float, key: str
    ) -> QueueTicket:
        async with self._uow() as uow:
            found = await uow.tickets.by_key(player.account_id, key)
        if found is None:
            raise FailedPrecondition(
                "you already wait in the queue for these rules; leave that ticket first"
            )
        return found.same_request(rules, max_rating_difference, key)

    async def get(self, ticket_id: str, account_id: str) -> QueueTicket:
        _require_id(ticket_id)
        async with self._uow() as uow:
            ticket = await uow.tickets.get(ticket_id)
        if ticket is None or ticket.account_id != account_id:
            raise NotFound(f"no queue ticket {ticket_id}")
        return ticket

    async def leave(self, ticket_id: str, account_id: str) -> QueueTicket:
        ticket = await self.get(ticket_id, account_id)
        ticket.check_leave()
        async with self._uow() as uow:
            await uow.tickets.cancel(ticket_id, self._clock.now())
            await uow.commit()
        after = await self.get(ticket_id, account_id)
        after.check_leave()  # a wave paired it just before the cancel
        return after

    async def watch(self, ticket_id: str, account_id: str) -> AsyncIterator[QueueTicket]:
        """The ticket now, then each change, until it ends (matched, cancelled, refused)."""
        last: QueueTicket | None = None
        while True:
            ticket = await self.get(ticket_id, account_id)
            if ticket != last:
                yield ticket
                last = ticket
            if not ticket.status.live:
                return
            await asyncio.sleep(self._poll)

    async def quote(
        self, ticket: QueueTicket, authorization: str
    ) -> wallet_pb2.CommissionQuote | None:
        """What the paired ticket's player pays at their table (the wallet's quote with both
        ratings, asked with their own token); None before pairing or without the wallet."""
        if ticket.pairing is None or ticket.status not in (
            TicketStatus.SEATING,
            TicketStatus.MATCHED,
        ):
            return None
        pairing = ticket.pairing
        wanted = quote_for(ticket.rules, (pairing.rating, pairing.opponent_rating))
        return await self._wallet.quote(wanted, authorization)


def _require_id(ticket_id: str) -> None:
    if not ticket_id or len(ticket_id) > 36:
        raise InvalidArgument("ticket_id is required: the id EnterQueue gave")
