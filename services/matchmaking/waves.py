"""Auto-match waves: pair each pool's waiting tickets and seat the pairs.

Every replica runs :meth:`Waves.run` in the background: a round every
``TAVLA_MATCHMAKING_WAVE_SECONDS`` (default 2), or at once when a player
entered the queue on this replica (a pool may now hold a pair; a burst of
entries during a round makes one more round, not one per entry). A round waves
every pool with at least two waiting tickets.

One wave of one pool, in one transaction:

1. the pool's advisory lock (``pg_try_advisory_xact_lock``): a replica that does
   not get it skips the pool this round, so one wave per pool runs at a time;
2. the pool's waiting tickets, locked; the players' ratings (``RatingSource``)
   and the standing forbidden pairs among them;
3. :func:`services.matchmaking.domain.pairing.pair_wave` with the waiting bonus;
4. for each pair a lobby table, made already claimed for the pair (seat 0 the
   lower rating, private to the other player) and each ticket claimed for it by
   a conditional update (only a ticket still waiting); a ticket that was not
   refuses the whole wave (nothing is paired, the next round tries again).

After the commit each table goes through the seating
(:meth:`services.matchmaking.seating.Seating.seat_pair`: geo for both, both
holds, the game with both ratings, or everything given back), which moves the
tickets on; a process that dies there leaves the table to the seating's recovery.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Callable, Sequence
from datetime import timedelta

from services.kit.clock import Clock
from services.kit.errors import Conflict, DomainError
from services.kit.logging import get_logger
from services.matchmaking.domain.pairing import (
    DEFAULT_BONUS,
    ForbiddenPairs,
    WaitingBonus,
    pair_wave,
)
from services.matchmaking.domain.queue import Pairing, QueueTicket
from services.matchmaking.domain.tables import Table
from services.matchmaking.ports import RatingSource
from services.matchmaking.seating import Seating
from services.matchmaking.store import MatchmakingUnitOfWork

log = get_logger(__name__)

# Pairs of one wave seated at the same time (each is a few calls to other services).
_SEATING_AT_ONCE = 8


class Waves:
    def __init__(
        self,
        unit_of_work: Callable[[], MatchmakingUnitOfWork],
        *,
        seating: Seating,
        ratings: RatingSource,
        clock: Clock,
        claim_seconds: float = 30.0,
        bonus: WaitingBonus = DEFAULT_BONUS,
    ) -> None:
        self._uow = unit_of_work
        self._seating = seating
        self._ratings = ratings
        self._clock = clock
        self._claim = timedelta(seconds=claim_seconds)
        self._bonus = bonus
        self._woken = asyncio.Event()

    def wake(self) -> None:
        """Run a round now (a ticket entered on this replica)."""
        self._woken.set()

    async def run(self, interval_seconds: float) -> None:
        while True:
            self._woken.clear()
            try:
                await self.round()
            except Exception as error:  # the database or a service away: next round
                log.warning("queue_wave_failed", error=repr(error))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._woken.wait(), interval_seconds)

    async def round(self) -> int:
        """One wave of every pool where two tickets wait; how many tables were seated."""
        async with self._uow() as uow:
            pools = await uow.tickets.pools_waiting()
        seated = 0
        for pool in pools:
            seated += await self.wave(pool)
        return seated

    async def wave(self, pool: str) -> int:
        """Pair ``pool`` (if no other replica is) and seat its pairs; how many started."""
        try:
            tables = await self._pair(pool)
        except Conflict as conflict:
            log.warning("queue_wave_conflict", pool=pool, error=conflict.message)
            return 0
        gate = asyncio.Semaphore(_SEATING_AT_ONCE)

        async def seat(table: Table) -> bool:
            async with gate:
                try:
                    await self._seating.seat_pair(table)
                    return True
                except DomainError as refused:  # the tickets say why
                    log.info("queue_pair_refused", table_id=table.table_id,
                             error=refused.message)
                    return False
                except Exception as error:  # given back already, or left to the recovery
                    log.warning("queue_pair_failed", table_id=table.table_id,
                                error=repr(error))
                    return False

        started = await asyncio.gather(*(seat(table) for table in tables))
        return sum(started)

    async def _pair(self, pool: str) -> list[Table]:
        now = self._clock.now()
        async with self._uow() as uow:
            if not await uow.tickets.lock_pool(pool):
                return []  # another replica is waving this pool
            waiting = await uow.tickets.waiting(pool)
            if len(waiting) < 2:
                return []
            accounts = sorted({t.account_id for t in waiting})
            ratings = await self._ratings.ratings(accounts)
            forbidden = ForbiddenPairs(await uow.forbidden.among(accounts))
            by_id = {t.ticket_id: t for t in waiting}
            wave = pair_wave(
                [t.for_pairing(ratings[t.account_id].rating) for t in waiting],
                now,
                bonus=self._bonus,
                forbidden=forbidden,
            )
            tables = []
            for pair in wave.pairs:
                low, high = by_id[pair.low.ticket_id], by_id[pair.high.ticket_id]
                table = self._table_for(low, high, (pair.low.rating, pair.high.rating))
                await uow.tables.add(table, f"queue:{table.table_id}", now)
                await self._claim_tickets(uow, table, (low, high))
                tables.append(table)
            await uow.commit()
        if tables:
            log.info("queue_wave", pool=pool, waiting=len(waiting), pairs=len(tables))
        return tables

    def _table_for(
        self, low: QueueTicket, high: QueueTicket, ratings: tuple[float, float]
    ) -> Table:
        now = self._clock.now()
        # A new table each time: a pair given back (a service away) may be paired again.
        table_id = str(uuid.uuid4())
        opened = Table.open(
            table_id=table_id,
            owner=low.sitter,
            rules=low.rules,
            now=now,
            owner_rating=ratings[0],
            invited_account_id=high.account_id,
        )
        return opened.claim(high.sitter, str(uuid.uuid4()), now + self._claim, ratings)

    async def _claim_tickets(
        self, uow: MatchmakingUnitOfWork, table: Table, tickets: Sequence[QueueTicket]
    ) -> None:
        now = self._clock.now()
        for ticket, other in zip(tickets, reversed(tickets), strict=True):
            own_seat = 0 if ticket is tickets[0] else 1
            pairing = Pairing(
                table.table_id,
                other.account_id,
                table.ratings[own_seat],
                table.ratings[1 - own_seat],
            )
            await uow.tickets.claim(ticket, pairing, now)
