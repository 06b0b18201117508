"""Table stakes: after each settled game, the session's next game or its end.

A table-stakes table starts like any other (the seating holds each player's bring-in
and creates the first game). Its games do not close it: the wallet settles each one
between the two table holds and publishes ``Settled`` with what each player has left
(``table_stake_left_minor_units``). This consumer (group ``matchmaking.table-stakes``
on ``tavla.wallet.v1``) then, in the inbox transaction with the table row locked:

- records each seat's stake left;
- while both stakes left cover a game at cube 1 and nobody asked to leave, creates the
  next game on the same holds, capped by the smaller stake left (``CreateGame`` keyed by
  the table and the game's number, so a replay after a crash gets the same game);
- otherwise ends the session: the holds with money left are released (``ReleaseHold``,
  idempotent on the hold), and the table closes with the reason (who holds both
  stakes, or who left), ``TableClosed`` in the outbox.

A next game the game service refuses (a player self-excluded since, a currency no
longer played) ends the session the same way; an unreachable service fails the event,
which the kit's consumer retries.
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from services.kit.clock import Clock
from services.kit.errors import FailedPrecondition, InvalidArgument
from services.kit.events.consumer import ConsumerFactory, EventConsumer
from services.kit.events.envelope import Envelope, ReceivedEvent
from services.kit.events.tables import outbox_row
from services.kit.logging import get_logger
from services.matchmaking import messages
from services.matchmaking.domain.tables import Table
from services.matchmaking.ports import GamePort, WalletPort
from services.matchmaking.store import TableRepository
from tavla.game.v1 import game_pb2
from tavla.wallet.v1 import events_pb2 as wallet_events

log = get_logger(__name__)

WALLET_TOPIC = "tavla.wallet.v1"
TABLE_STAKES_GROUP = "matchmaking.table-stakes"
SETTLED = wallet_events.Settled.DESCRIPTOR.full_name


class TableStakesHandlers:
    def __init__(self, clock: Clock, source: str, games: GamePort, wallet: WalletPort) -> None:
        self._clock = clock
        self._source = source
        self._games = games
        self._wallet = wallet

    async def settled(self, session: AsyncSession, event: ReceivedEvent) -> None:
        settled = wallet_events.Settled.FromString(event.payload)
        if not settled.table_stakes:
            return
        tables = TableRepository(session)
        table = await tables.of_game(settled.game_id, lock=True)
        if table is None or not table.plays_table_stakes(settled.game_id):
            return  # another table's game, or a game this table has moved past
        left = {p.account_id: p.table_stake_left_minor_units for p in settled.players}
        if set(left) != {seat.account_id for seat in table.seats}:
            log.error("table_stakes_unreadable", game_id=settled.game_id, table=table.table_id)
            return
        table = table.settled(settled.game_id, left)
        if table.goes_on():
            try:
                table = table.next_game(await self._next_game(table))
            except (FailedPrecondition, InvalidArgument) as refused:
                reason = f"table stakes: the next game could not start ({refused.message})"
                await self._end(session, tables, table, reason[:200])
                return
            await tables.save(table, self._clock.now())
            log.info("table_stakes_next_game", table_id=table.table_id, game_id=table.game_id)
            return
        await self._end(session, tables, table, table.session_end_reason()[:200])

    async def _next_game(self, table: Table) -> str:
        players = [
            game_pb2.Player(
                account_id=seat.account_id,
                rating=table.ratings[seat.number],
                hold_id=seat.hold_id,
            )
            for seat in table.seats
        ]
        rules = messages.rules_message(table.rules, table.at_risk())
        key = f"{table.table_id}:game:{table.games_played + 1}"
        return await self._games.create_game(table.table_id, players, rules, key)

    async def _end(
        self, session: AsyncSession, tables: TableRepository, table: Table, reason: str
    ) -> None:
        """Give back what is left at the table and close it."""
        for seat in table.seats:
            if seat.stake_left > 0 and seat.hold_id:
                # Idempotent on the hold: a replay after a crash releases nothing twice.
                await self._wallet.release_hold(seat.hold_id, reason)
        now = self._clock.now()
        closed = table.closed(reason)
        await tables.save(closed, now)
        envelope = Envelope.wrap(
            topic=messages.TOPIC,
            key=table.table_id,
            message=messages.table_closed(closed, now),
            source=self._source,
            now=now,
        )
        await session.execute(outbox_row.insert(), [envelope.as_outbox_values()])
        log.info("table_stakes_session_over", table_id=table.table_id, reason=reason)


def table_stakes_consumer(
    *,
    sessions: async_sessionmaker[AsyncSession],
    consumer_factory: ConsumerFactory,
    clock: Clock,
    games: GamePort,
    wallet: WalletPort,
    service: str = "matchmaking",
) -> EventConsumer:
    handlers = TableStakesHandlers(clock, service, games, wallet)
    return EventConsumer(
        service=service,
        name="table-stakes",
        sessions=sessions,
        consumer_factory=consumer_factory,
        handlers={SETTLED: handlers.settled},
        clock=clock,
    )
