"""Seating: when the second player sits, geo, both stake holds and the game, or nothing.

``Seating.join`` runs in three steps:

1. **Claim** (one transaction, the table row locked): the table must take this
   player (not their own, open, in its rating range, not private to someone
   else, not a pair anti-abuse forbids); the free seat is then claimed for this
   attempt (status SEATING, with a deadline) and committed. A second player
   racing for the seat waits on the row lock and then finds it claimed: a clear
   refusal, and nothing of theirs is ever held.
2. **Arrange**, outside any transaction (other services are called): for real
   money the geo service must allow both players (the joiner from this call's
   signals, the owner from those recorded when they sat); then the wallet holds
   both stakes (real money; keyed by the attempt, so a retry holds nothing twice);
   then the game service creates the game with both ratings and hold ids.
3. **Start** (one transaction): the table plays, PlayerSeated and MatchMade go to
   the outbox. Any failure in 2 or 3 releases the holds already placed and gives
   the seat back (the table is open again); a refusal caused by the owner (their
   location is now blocked, they cannot cover) closes the table instead, since no
   joiner could ever sit there.

A process that dies in step 2 leaves the claim until its deadline (then the
seat can be claimed again) and any hold it placed open: see the README, "What
is left".
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from services.kit.client_signals import ClientSignals
from services.kit.clock import Clock
from services.kit.errors import DomainError, FailedPrecondition, NotFound
from services.kit.geo_gate import GeoGate
from services.kit.logging import get_logger
from services.matchmaking import messages
from services.matchmaking.domain.tables import Seat, Sitter, Status, Table
from services.matchmaking.ports import GamePort, RatingSource, WalletPort
from services.matchmaking.store import MatchmakingUnitOfWork
from tavla.game.v1 import game_pb2
from tavla.geo.v1 import geo_pb2

log = get_logger(__name__)

# The anti-abuse reasons as a player reads them.
PAIR_REASONS = {
    "linked_accounts": "your accounts are linked",
    "under_investigation": "games between you are under review",
    "confirmed_abuse": "play between you was found to break the rules",
}


OWNER_BLOCKED = "its owner may not play for real money from where they are now"
OWNER_CANNOT_COVER = "its owner cannot cover the stake now"


class OwnerRefused(DomainError):
    """The table's owner cannot play it now: the table closes, with this as its reason."""


@dataclass(frozen=True)
class Claimed:
    table: Table
    attempt_id: str
    ratings: tuple[float, float]


class Seating:
    def __init__(
        self,
        unit_of_work: Callable[[], MatchmakingUnitOfWork],
        *,
        geo: GeoGate,
        wallet: WalletPort,
        games: GamePort,
        ratings: RatingSource,
        clock: Clock,
        claim_seconds: float = 30.0,
    ) -> None:
        self._uow = unit_of_work
        self._geo = geo
        self._wallet = wallet
        self._games = games
        self._ratings = ratings
        self._clock = clock
        self._claim = timedelta(seconds=claim_seconds)

    async def join(self, table_id: str, joiner: Sitter) -> Table:
        """Sit ``joiner`` at the table and start its game, or refuse and take nothing."""
        claimed = await self._claim_seat(table_id, joiner)
        if claimed.table.status is Status.PLAYING:
            return claimed.table  # a retry after this player already sat
        holds: list[str] = []
        try:
            game_id = await self._arrange(claimed, holds)
        except OwnerRefused as refused:
            await self._give_back(claimed, holds, close_reason=refused.message)
            raise FailedPrecondition(
                f"table {table_id} closed: {refused.message}; pick another table"
            ) from None
        except BaseException:
            await self._give_back(claimed, holds)
            raise
        return await self._start(claimed, game_id, holds)

    async def _claim_seat(self, table_id: str, joiner: Sitter) -> Claimed:
        now = self._clock.now()
        async with self._uow() as uow:
            table = await uow.tables.get(table_id, lock=True)
            if table is None:
                raise NotFound(f"no table {table_id}")
            if table.status is Status.PLAYING and table.seated(joiner.account_id):
                return Claimed(table, "", (0.0, 0.0))
            found = await self._ratings.ratings([table.owner_id, joiner.account_id])
            ratings = (found[table.owner_id].rating, found[joiner.account_id].rating)
            forbidden = await uow.forbidden.standing_reason(table.owner_id, joiner.account_id)
            table.check_join(
                joiner.account_id,
                ratings[1],
                None if forbidden is None else PAIR_REASONS.get(forbidden, forbidden),
                now,
            )
            attempt_id = str(uuid.uuid4())
            claimed = table.claim(joiner, attempt_id, now + self._claim)
            await uow.tables.save(claimed, now)
            await uow.commit()
        return Claimed(claimed, attempt_id, ratings)

    async def _arrange(self, claimed: Claimed, holds: list[str]) -> str:
        table = claimed.table
        owner, joiner = table.seats
        await self._ask_geo(joiner, owner, table.rules.real_money)
        if table.rules.real_money:
            await self._hold(claimed, joiner, holds, owner_side=False)
            await self._hold(claimed, owner, holds, owner_side=True)
        players = [
            game_pb2.Player(
                account_id=seat.account_id,
                rating=claimed.ratings[seat.number],
                hold_id=holds_for(holds, seat.number, table.rules.real_money),
            )
            for seat in table.seats
        ]
        return await self._games.create_game(
            table.table_id, players, messages.rules_message(table.rules), claimed.attempt_id
        )

    async def _ask_geo(self, joiner: Seat, owner: Seat, real_money: bool) -> None:
        purpose = geo_pb2.PURPOSE_PLAY_REAL_MONEY if real_money else geo_pb2.PURPOSE_PLAY_MONEY
        await self._require(purpose, joiner.sitter)
        try:
            await self._require(purpose, owner.sitter)
        except FailedPrecondition as blocked:
            # The joiner is told that, not where the owner is (logged for the operators).
            log.info("seating_owner_blocked", account_id=owner.account_id, reason=blocked.message)
            raise OwnerRefused(OWNER_BLOCKED) from None

    async def _require(self, purpose: geo_pb2.Purpose.ValueType, sitter: Sitter) -> None:
        await self._geo.require(
            purpose,
            account_id=sitter.account_id,
            residence=sitter.residence,
            signals=ClientSignals(sitter.address, sitter.device_id),
        )

    async def _hold(self, claimed: Claimed, seat: Seat, holds: list[str], owner_side: bool) -> None:
        rules = claimed.table.rules
        try:
            hold_id = await self._wallet.place_hold(
                seat.account_id,
                rules.opening_hold(),
                rules.currency,
                claimed.table.table_id,
                f"{claimed.attempt_id}:{seat.number}",
            )
        except FailedPrecondition as refused:
            if owner_side:  # the owner's balance is not the joiner's business
                raise OwnerRefused(OWNER_CANNOT_COVER) from None
            raise FailedPrecondition(
                f"you cannot cover this table's stake: {refused.message}"
            ) from None
        holds.append(hold_id)

    async def _give_back(self, claimed: Claimed, holds: list[str], close_reason: str = "") -> None:
        """Release every hold placed and free the seat (or close the table)."""
        for hold_id in holds:
            try:
                await self._wallet.release_hold(hold_id, "seating refused; nothing was played")
            except DomainError as error:  # left open: logged for the operators
                log.error("seating_hold_not_released", hold_id=hold_id, error=error.message)
        now = self._clock.now()
        async with self._uow() as uow:
            table = await uow.tables.get(claimed.table.table_id, lock=True)
            if table is None or not table.holds(claimed.attempt_id):
                return
            freed = table.given_back(claimed.attempt_id)
            if close_reason:
                freed = freed.closed(close_reason)
                uow.publish(messages.TOPIC, freed.table_id, messages.table_closed(freed, now))
            await uow.tables.save(freed, now)
            await uow.commit()

    async def _start(self, claimed: Claimed, game_id: str, holds: list[str]) -> Table:
        now = self._clock.now()
        real = claimed.table.rules.real_money
        seat_holds = (holds_for(holds, 0, real), holds_for(holds, 1, real))
        async with self._uow() as uow:
            table = await uow.tables.get(claimed.table.table_id, lock=True)
            if table is None:
                raise NotFound(f"no table {claimed.table.table_id}")
            playing = table.started(claimed.attempt_id, game_id, claimed.ratings, seat_holds)
            await uow.tables.save(playing, now)
            uow.publish(messages.TOPIC, playing.table_id, messages.player_seated(playing, 1, now))
            uow.publish(messages.TOPIC, playing.table_id, messages.match_made(playing, now))
            await uow.commit()
        log.info("table_started", table_id=playing.table_id, game_id=game_id)
        return playing


def holds_for(holds: list[str], seat_number: int, real_money: bool) -> str:
    """The hold id of a seat: the joiner's is placed first, then the owner's."""
    if not real_money:
        return ""
    order = {1: 0, 0: 1}
    return holds[order[seat_number]]
