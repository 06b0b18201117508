"""Seating: when the second player sits, geo, both stake holds and the game, or nothing.

``Seating.join`` runs in steps, each remote call outside any transaction:

1. **Claim** (one transaction, the table row locked): the table must take this
   player (not self-excluded, not their own, open, in its rating range, not private to someone
   else, not a pair anti-abuse forbids); the free seat is then claimed for this
   attempt (status SEATING, both ratings, a deadline) and committed. A second
   player racing for the seat waits on the row lock and then finds it claimed: a
   clear refusal, and nothing of theirs is ever held.
2. **Geo**: neither player may be self-excluded now (an owner or a queued player
   who excluded themself after sitting down: the table closes, or their ticket is
   refused); for real money the geo service must allow both players (the joiner
   from this call's signals, the owner from those recorded when they sat), both
   asked at once.
3. **Holds** (real and play money alike): the wallet holds both stakes in one call
   and one transaction (``PlaceHolds``: both or neither; the joiner's first, so that
   when neither can cover, the joiner is the one refused), each keyed by the attempt
   and seat (a replay holds nothing twice); both hold ids are then recorded on the
   seats (committed) before the game is asked for.
4. **Game**: the game service creates it with both ratings and hold ids, keyed
   by the attempt (a replay creates nothing twice).
5. **Start** (one transaction): the table plays; PlayerSeated and MatchMade go
   to the outbox.

Any refusal in 2-4 releases the holds placed and gives the seat back (the table
is open again); a refusal caused by the owner (their location is blocked now,
they cannot cover) closes the table instead, since no joiner could sit there.

**Queue pairs** (``Seating.seat_pair``): a wave of the auto-match queue makes a
table for two tickets already claimed (seat 0 the lower rating, seat 1 the
other, private to them) and hands it to the same steps 2-5. The tickets move
with the table, in the same transactions: MATCHED when it starts; when it is
given back, the table closes, the player the refusal was about (cannot cover,
geo) gets their ticket REFUSED with the reason, and the other ticket waits again
with its waiting time kept (both wait again when nobody was at fault: a service
unreachable).

**Recovery** (``Seating.recover``, a background loop): an attempt whose process
died leaves the table SEATING past its deadline. Each replica looks for such
tables (``FOR UPDATE SKIP LOCKED``, so one takes each), extends the deadline and
carries the attempt on from what was recorded: with both hold ids recorded (geo
allowed, the game may exist) it asks for the game again and starts the table;
without them (no game can exist, holds may) it replays the holds first, so that
any refusal after them, geo's included, releases every hold the attempt has.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta

from services.kit.client_signals import ClientSignals
from services.kit.clock import Clock
from services.kit.errors import DomainError, FailedPrecondition, NotFound
from services.kit.failpoints import failpoint
from services.kit.geo_gate import GeoGate
from services.kit.logging import get_logger
from services.kit.money_bounds import MoneyBounds
from services.kit.self_exclusion import excluded_until, refusal, require_not_self_excluded
from services.matchmaking import messages
from services.matchmaking.domain.queue import QueueTicket
from services.matchmaking.domain.tables import Rules, Seat, Sitter, Status, Table
from services.matchmaking.ports import GamePort, HoldOrder, HoldRefused, WalletPort
from services.matchmaking.store import MatchmakingUnitOfWork
from tavla.game.v1 import game_pb2
from tavla.geo.v1 import geo_pb2

log = get_logger(__name__)

# Self-excluded accounts among those asked, each with when their exclusion ends.
Excluded = Mapping[str, datetime]

# The anti-abuse reasons as a player reads them.
PAIR_REASONS = {
    "linked_accounts": "your accounts are linked",
    "under_investigation": "games between you are under review",
    "confirmed_abuse": "play between you was found to break the rules",
}
OWNER_BLOCKED = "its owner may not play for real money from where they are now"
OWNER_CANNOT_COVER = "its owner cannot cover the stake now"
OWNER_EXCLUDED = "its owner no longer plays"  # their self-exclusion is their own business


QUEUE_TABLE_GIVEN_BACK = "the queue's pairing could not start"
# The documented defaults; ``main`` reads the operator's TAVLA_MONEY_MAX_* instead.
DEFAULT_BOUNDS = MoneyBounds.defaults()


class OwnerRefused(DomainError):
    """The table's owner cannot play it now: the table closes, with this as its reason
    (``own_reason``: the same refusal as the owner themself is told it)."""

    def __init__(self, message: str, own_reason: str) -> None:
        super().__init__(message)
        self.own_reason = own_reason


class SeatRefused(FailedPrecondition):
    """The joiner may not sit (geo, cannot cover); ``account_id`` is theirs."""

    def __init__(self, message: str, account_id: str) -> None:
        super().__init__(message)
        self.account_id = account_id


class Seating:
    def __init__(
        self,
        unit_of_work: Callable[[], MatchmakingUnitOfWork],
        *,
        geo: GeoGate,
        wallet: WalletPort,
        games: GamePort,
        clock: Clock,
        claim_seconds: float = 30.0,
        bounds: MoneyBounds = DEFAULT_BOUNDS,
    ) -> None:
        self._uow = unit_of_work
        self._bounds = bounds
        self._geo = geo
        self._wallet = wallet
        self._games = games
        self._clock = clock
        self._claim = timedelta(seconds=claim_seconds)

    async def may_sit(self, sitter: Sitter, rules: Rules) -> None:
        """Refuse at once a player whom no seating under ``rules`` could start now: their
        self-exclusion, a stake or largest loss above the operator's bounds, geo, and
        cover, play money too (an owner opening a table, a player entering the queue)."""
        async with self._uow() as uow:
            await require_not_self_excluded(uow.session, sitter.account_id, self._clock.now())
        rules.largest_loss(self._bounds)
        await self._require(_purpose(rules), sitter)
        reason = await self._wallet.can_cover(
            sitter.account_id, rules.opening_hold(), rules.currency
        )
        if reason is not None:
            raise FailedPrecondition(f"you cannot cover this table's stake: {reason}")

    async def seat_pair(self, table: Table) -> Table:
        """Steps 2-5 for a table a queue wave made for two claimed tickets."""
        return await self._carry(table, resuming=False, queued=True)

    async def join(self, table_id: str, joiner: Sitter) -> Table:
        """Sit ``joiner`` at the table and start its game, or refuse and take nothing."""
        table, excluded = await self._claim_seat(table_id, joiner)
        if table.status is Status.PLAYING:
            return table  # a retry after this player already sat
        return await self._carry(table, resuming=False, queued=False, excluded=excluded)

    async def _claim_seat(self, table_id: str, joiner: Sitter) -> tuple[Table, Excluded]:
        """The claimed table, and both players' self-exclusions read in the claim's
        transaction (the joiner's refused here; the owner's answered by step 2)."""
        now = self._clock.now()
        async with self._uow() as uow:
            table, facts = await uow.tables.for_join(table_id, joiner.account_id, now)
            if table is None or facts is None:
                raise NotFound(f"no table {table_id}")
            if table.status is not Status.OPEN:  # its seats as committed (see for_join)
                table = await uow.tables.get(table_id, lock=True)
                assert table is not None  # locked: it is there
            if table.status is Status.PLAYING and table.seated(joiner.account_id):
                return table, {}
            excluded = facts.excluded(table.owner_id, joiner.account_id)
            if joiner.account_id in excluded:
                raise refusal(excluded[joiner.account_id])
            ratings = facts.ratings()
            forbidden = facts.forbidden_reason
            table.check_join(
                joiner.account_id,
                ratings[1],
                None if forbidden is None else PAIR_REASONS.get(forbidden, forbidden),
                now,
            )
            claimed = table.claim(joiner, str(uuid.uuid4()), now + self._claim, ratings)
            await uow.tables.save(claimed, now)
            await uow.commit()
        return claimed, excluded

    async def _carry(
        self, table: Table, *, resuming: bool, queued: bool, excluded: Excluded | None = None
    ) -> Table:
        """Steps 2-5 for a claimed table; any refusal gives back all the attempt took.
        ``queued``: the table may be a queue pair's; ``excluded``: both players'
        self-exclusions when the claim read them already."""
        holds: dict[int, str] = dict(enumerate(table.recorded_holds or ()))
        try:
            if table.recorded_holds is None:
                table = await self._secure(table, holds, resuming, excluded)
            game_id = await self._create_game(table)
        except OwnerRefused as refused:
            owner = table.owner_seat.account_id
            await self._give_back(
                table, holds, close_reason=refused.message, refused=(owner, refused.own_reason)
            )
            raise FailedPrecondition(
                f"table {table.table_id} closed: {refused.message}; pick another table"
            ) from None
        except SeatRefused as refused:
            await self._give_back(table, holds, refused=(refused.account_id, refused.message))
            raise
        except BaseException:
            await self._give_back(table, holds)
            raise
        failpoint("matchmaking.seating.after_game")
        return await self._start(table, game_id, queued)

    async def _secure(
        self, table: Table, holds: dict[int, str], resuming: bool, excluded: Excluded | None
    ) -> Table:
        """Neither self-excluded, geo for both, then both holds recorded (a resumed attempt
        replays holds first, so that a refusal after them releases any its dead process
        placed). Play money is held as real money is: nobody sits at a stake they cannot
        cover."""
        await self._neither_self_excluded(table, excluded)
        if not resuming:
            await self._ask_geo(table)
        owner, joiner = table.seats
        await self._hold_both(table, (joiner, owner), holds)
        if resuming:
            await self._ask_geo(table)
        table = await self._record_holds(table, (holds[0], holds[1]))
        failpoint("matchmaking.seating.after_holds")
        return table

    async def _neither_self_excluded(self, table: Table, excluded: Excluded | None) -> None:
        """An owner or a queued player who self-excluded after sitting down plays no more
        (read now, unless the seat's claim read it a moment ago in its transaction)."""
        owner, joiner = table.seats
        found = excluded
        if found is None:
            async with self._uow() as uow:
                await uow.autocommit()  # one read: no BEGIN and ROLLBACK around it
                found = await excluded_until(
                    uow.session, [owner.account_id, joiner.account_id], self._clock.now()
                )
        if joiner.account_id in found:
            raise SeatRefused(refusal(found[joiner.account_id]).message, joiner.account_id)
        if owner.account_id in found:
            raise OwnerRefused(OWNER_EXCLUDED, refusal(found[owner.account_id]).message)

    async def _ask_geo(self, table: Table) -> None:
        """Both players asked at once (one round trip's wait, not two); the joiner's
        refusal is the one told when both are refused."""
        owner, joiner = table.seats
        purpose = _purpose(table.rules)
        answers = await asyncio.gather(
            self._require(purpose, joiner.sitter),
            self._require(purpose, owner.sitter),
            return_exceptions=True,
        )
        joined, owned = answers
        if isinstance(joined, FailedPrecondition):
            raise SeatRefused(joined.message, joiner.account_id)
        if isinstance(joined, BaseException):
            raise joined
        if isinstance(owned, FailedPrecondition):
            # The joiner is told that, not where the owner is (logged for the operators).
            log.info("seating_owner_blocked", account_id=owner.account_id, reason=owned.message)
            raise OwnerRefused(OWNER_BLOCKED, owned.message)
        if isinstance(owned, BaseException):
            raise owned

    async def _require(self, purpose: geo_pb2.Purpose.ValueType, sitter: Sitter) -> None:
        await self._geo.require(
            purpose,
            account_id=sitter.account_id,
            residence=sitter.residence,
            signals=ClientSignals(sitter.address, sitter.device_id),
        )

    async def _hold_both(
        self, table: Table, seats: tuple[Seat, Seat], holds: dict[int, str]
    ) -> None:
        """Both seats' stakes in one wallet call, all or none: the joiner's first, so that
        when neither can cover, the joiner is the one told."""
        rules = table.rules
        assert table.attempt is not None
        orders = [
            HoldOrder(
                seat.account_id,
                rules.opening_hold(),
                rules.currency,
                f"{table.attempt.attempt_id}:{seat.number}",
            )
            for seat in seats
        ]
        try:
            placed = await self._wallet.place_holds(table.table_id, orders)
        except HoldRefused as refused:
            for index, hold_id in refused.placed_before.items():
                holds[seats[index].number] = hold_id  # a crashed attempt's, given back too
            seat = seats[refused.index]
            reason = f"you cannot cover this table's stake: {refused.message}"
            if seat.number == 0:  # the owner's balance is not the joiner's business
                raise OwnerRefused(OWNER_CANNOT_COVER, reason) from None
            raise SeatRefused(reason, seat.account_id) from None
        for seat, hold_id in zip(seats, placed, strict=True):
            holds[seat.number] = hold_id

    async def _record_holds(self, table: Table, holds: tuple[str, str]) -> Table:
        """Both hold ids on the seats, committed, in one statement: while the attempt
        holds the seat, the seats are those it claimed (only its own steps, or the
        recovery carrying the same attempt, write them), so they need not be read."""
        assert table.attempt is not None
        held = table.holds_placed(table.attempt.attempt_id, holds)
        async with self._uow() as uow:
            await uow.autocommit()
            recorded = await uow.tables.record_holds(
                table.table_id, table.attempt.attempt_id, holds, self._clock.now()
            )
        if not recorded:
            raise FailedPrecondition(f"table {table.table_id} was given to another player")
        return held

    async def _create_game(self, table: Table) -> str:
        assert table.attempt is not None
        players = [
            game_pb2.Player(
                account_id=seat.account_id,
                rating=table.ratings[seat.number],
                hold_id=seat.hold_id,
            )
            for seat in table.seats
        ]
        return await self._games.create_game(
            table.table_id,
            players,
            messages.rules_message(table.rules),
            table.attempt.attempt_id,
        )

    async def _give_back(
        self,
        table: Table,
        holds: dict[int, str],
        close_reason: str = "",
        refused: tuple[str, str] | None = None,
    ) -> None:
        """Release every hold placed and free the seat (or close the table); a queue
        pair's table closes, ``refused`` (account, reason) gets their ticket refused and
        the other ticket waits again."""
        assert table.attempt is not None
        for hold_id in holds.values():
            try:
                await self._wallet.release_hold(hold_id, "seating refused; nothing was played")
            except DomainError as error:  # left open: logged for the operators
                log.error("seating_hold_not_released", hold_id=hold_id, error=error.message)
        now = self._clock.now()
        async with self._uow() as uow:
            current = await uow.tables.get(table.table_id, lock=True)
            if current is None or not current.holds(table.attempt.attempt_id):
                return
            freed = current.given_back(table.attempt.attempt_id)
            tickets = await uow.tickets.seating_at(table.table_id)
            if tickets:
                close_reason = close_reason or QUEUE_TABLE_GIVEN_BACK
                await self._tickets_given_back(uow, tickets, refused)
            if close_reason:
                freed = freed.closed(close_reason)
                uow.publish(messages.TOPIC, freed.table_id, messages.table_closed(freed, now))
            await uow.tables.save(freed, now)
            await uow.commit()

    async def _start(self, table: Table, game_id: str, queued: bool) -> Table:
        """The table plays, in one transaction: its row locked (its seats are the attempt's
        own while the attempt holds it, so they are not read), a queue pair's tickets
        MATCHED, the events. ``queued``: the table may have tickets (a lobby join's has
        none: a queue's table is never open to one)."""
        assert table.attempt is not None
        now = self._clock.now()
        async with self._uow() as uow:
            current = await uow.tables.locked_with(table.table_id, table.seats)
            if current is None:
                raise NotFound(f"no table {table.table_id}")
            playing = current.started(table.attempt.attempt_id, game_id)
            if playing != current:
                tickets = (
                    await uow.tickets.matched(table.table_id, game_id, now) if queued else []
                )
                await uow.tables.save(playing, now)
                uow.publish(
                    messages.TOPIC, playing.table_id, messages.player_seated(playing, 1, now)
                )
                made = messages.match_made(playing, now, tickets)
                uow.publish(messages.TOPIC, playing.table_id, made)
                await uow.commit()
        log.info("table_started", table_id=playing.table_id, game_id=game_id)
        return playing

    async def _tickets_given_back(
        self,
        uow: MatchmakingUnitOfWork,
        tickets: list[QueueTicket],
        refused: tuple[str, str] | None,
    ) -> None:
        now = self._clock.now()
        waiting = []
        for ticket in tickets:
            if refused is not None and ticket.account_id == refused[0]:
                await uow.tickets.refused(ticket.ticket_id, refused[1], now)
            else:
                waiting.append(ticket.ticket_id)
        await uow.tickets.wait_again(waiting, now)

    async def recover(self, limit: int = 20) -> int:
        """Carry on the seating attempts whose process died; how many were taken on."""
        now = self._clock.now()
        async with self._uow() as uow:
            stale = await uow.tables.stale_attempts(now, limit)
            resumed = [table.resumed(now + self._claim) for table in stale]
            for table in resumed:
                await uow.tables.save(table, now)
            await uow.commit()
        for table in resumed:
            log.warning("seating_resumed", table_id=table.table_id)
            try:
                await self._carry(table, resuming=True, queued=True)
            except DomainError as error:
                log.warning("seating_resumed_refused", table_id=table.table_id,
                            error=error.message)
        return len(resumed)

    async def run_recovery(self, interval_seconds: float) -> None:
        while True:
            try:
                await self.recover()
            except Exception as error:  # the database or a service away: next round
                log.warning("seating_recovery_failed", error=repr(error))
            await asyncio.sleep(interval_seconds)


def _purpose(rules: Rules) -> geo_pb2.Purpose.ValueType:
    return geo_pb2.PURPOSE_PLAY_REAL_MONEY if rules.real_money else geo_pb2.PURPOSE_PLAY_MONEY
