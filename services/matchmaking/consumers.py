"""Matchmaking's consumers: the anti-abuse service's verdicts on pairs, and the game
service's ends of games, which close their tables.

``PairRestricted`` and ``PairRestrictionLifted`` (topic ``tavla.antiabuse.v1``,
keyed by the sorted pair) keep the ``forbidden_pairs`` table, which seating
reads before it claims a seat. The kit's EventConsumer applies each event in
the inbox transaction, so each verdict counts exactly once; a lift that
overtakes its restriction (it cannot within one key, but a replay may) is kept
as lifted, and the restriction arriving later does not bring the pair back.

``GameEnded`` of a money game, ``MatchEnded`` and ``GameCancelled`` (topic
``tavla.game.v1``) close the table the game was played at, with TableClosed in
the outbox in the same inbox transaction.

``AccountSelfExcluded`` (topic ``tavla.accounts.v1``) goes to the kit's copy
(:mod:`services.kit.self_exclusion`), which seating reads; in the same
transaction the player's open tables close ("its owner left": their exclusion is
not the lobby's business) and their waiting queue tickets are refused with the
reason, so nothing of theirs waits in the lobby or the queue.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from services.kit.clock import Clock
from services.kit.events.consumer import ConsumerFactory, EventConsumer
from services.kit.events.envelope import Envelope, ReceivedEvent
from services.kit.events.tables import outbox_row
from services.kit.logging import get_logger
from services.kit.self_exclusion import refusal, self_exclusions_consumer
from services.matchmaking import messages
from services.matchmaking.store import TableRepository, lift_pair, restrict_pair
from services.matchmaking.ticket_store import TicketRepository
from tavla.antiabuse.v1 import events_pb2
from tavla.game.v1 import events_pb2 as game_events
from tavla.game.v1 import game_pb2

log = get_logger(__name__)

ANTIABUSE_TOPIC = "tavla.antiabuse.v1"
VERDICTS_GROUP = "matchmaking.pair-verdicts"
PAIR_RESTRICTED = events_pb2.PairRestricted.DESCRIPTOR.full_name
PAIR_RESTRICTION_LIFTED = events_pb2.PairRestrictionLifted.DESCRIPTOR.full_name

GAME_TOPIC = "tavla.game.v1"
TABLES_GROUP = "matchmaking.tables"
GAME_ENDED = game_events.GameEnded.DESCRIPTOR.full_name
MATCH_ENDED = game_events.MatchEnded.DESCRIPTOR.full_name
GAME_CANCELLED = game_events.GameCancelled.DESCRIPTOR.full_name

# As LeaveTable says it: other players are not told why the owner went.
OWNER_LEFT = "its owner left"

_REASONS = {
    events_pb2.PAIR_RESTRICTION_REASON_LINKED_ACCOUNTS: "linked_accounts",
    events_pb2.PAIR_RESTRICTION_REASON_UNDER_INVESTIGATION: "under_investigation",
    events_pb2.PAIR_RESTRICTION_REASON_CONFIRMED_ABUSE: "confirmed_abuse",
}


def _when(
    verdict: events_pb2.PairRestricted | events_pb2.PairRestrictionLifted, clock: Clock
) -> datetime:
    """When anti-abuse decided (now, if the event does not say)."""
    if verdict.HasField("occurred_at"):
        return verdict.occurred_at.ToDatetime(tzinfo=UTC)
    return clock.now()


def _pair(first: str, second: str) -> tuple[str, str] | None:
    if not first or not second or first == second or max(len(first), len(second)) > 36:
        return None
    return first, second


class VerdictHandlers:
    def __init__(self, clock: Clock) -> None:
        self._clock = clock

    async def restricted(self, session: AsyncSession, event: ReceivedEvent) -> None:
        verdict = events_pb2.PairRestricted.FromString(event.payload)
        pair = _pair(verdict.account_id, verdict.other_account_id)
        if pair is None or not verdict.restriction_id:
            log.error("pair_verdict_unreadable", event_id=event.event_id)
            return
        await restrict_pair(
            session,
            restriction_id=verdict.restriction_id,
            pair=pair,
            # An unknown reason still forbids the pair: the verdict is what counts.
            reason=_REASONS.get(verdict.reason, "restricted"),
            detail=verdict.detail,
            alert_id=verdict.alert_id,
            at=_when(verdict, self._clock),
        )
        log.info("pair_restricted", restriction_id=verdict.restriction_id)

    async def lifted(self, session: AsyncSession, event: ReceivedEvent) -> None:
        verdict = events_pb2.PairRestrictionLifted.FromString(event.payload)
        pair = _pair(verdict.account_id, verdict.other_account_id)
        if pair is None or not verdict.restriction_id:
            log.error("pair_verdict_unreadable", event_id=event.event_id)
            return
        await lift_pair(
            session,
            restriction_id=verdict.restriction_id,
            pair=pair,
            at=_when(verdict, self._clock),
        )
        log.info("pair_restriction_lifted", restriction_id=verdict.restriction_id)


def verdicts_consumer(
    *,
    sessions: async_sessionmaker[AsyncSession],
    consumer_factory: ConsumerFactory,
    clock: Clock,
    service: str = "matchmaking",
) -> EventConsumer:
    handlers = VerdictHandlers(clock)
    return EventConsumer(
        service=service,
        name="pair-verdicts",
        sessions=sessions,
        consumer_factory=consumer_factory,
        handlers={PAIR_RESTRICTED: handlers.restricted, PAIR_RESTRICTION_LIFTED: handlers.lifted},
        clock=clock,
    )


class GameOverHandlers:
    """Close the table whose game (money game or match) is over or was cancelled."""

    def __init__(self, clock: Clock, source: str) -> None:
        self._clock = clock
        self._source = source

    async def game_ended(self, session: AsyncSession, event: ReceivedEvent) -> None:
        ended = game_events.GameEnded.FromString(event.payload)
        if ended.kind != game_pb2.PLAY_KIND_MONEY_GAME:
            return  # a game inside a match: the match goes on
        if ended.table_stakes_at_risk_minor_units:
            return  # table stakes: the wallet's Settled decides (table_stakes.py)
        await self._close(session, ended.table_id, ended.game_id, "its game ended")

    async def match_ended(self, session: AsyncSession, event: ReceivedEvent) -> None:
        ended = game_events.MatchEnded.FromString(event.payload)
        await self._close(session, ended.table_id, ended.game_id, "its match ended")

    async def game_cancelled(self, session: AsyncSession, event: ReceivedEvent) -> None:
        cancelled = game_events.GameCancelled.FromString(event.payload)
        why = f": {cancelled.reason}" if cancelled.reason else ""
        await self._close(
            session, cancelled.table_id, cancelled.game_id, f"its game was cancelled{why}"[:200]
        )

    async def _close(self, session: AsyncSession, table_id: str, game_id: str, reason: str) -> None:
        tables = TableRepository(session)
        table = await tables.get(table_id, lock=True) if len(table_id) <= 36 else None
        if table is None:
            return  # a game created elsewhere (a test, the queue later)
        closed = table.finished(game_id, reason)
        if closed == table:
            return
        now = self._clock.now()
        await tables.save(closed, now)
        envelope = Envelope.wrap(
            topic=messages.TOPIC,
            key=table_id,
            message=messages.table_closed(closed, now),
            source=self._source,
            now=now,
        )
        await session.execute(outbox_row.insert(), [envelope.as_outbox_values()])
        log.info("table_closed_after_game", table_id=table_id, game_id=game_id)


def tables_consumer(
    *,
    sessions: async_sessionmaker[AsyncSession],
    consumer_factory: ConsumerFactory,
    clock: Clock,
    service: str = "matchmaking",
) -> EventConsumer:
    handlers = GameOverHandlers(clock, service)
    return EventConsumer(
        service=service,
        name="tables",
        sessions=sessions,
        consumer_factory=consumer_factory,
        handlers={
            GAME_ENDED: handlers.game_ended,
            MATCH_ENDED: handlers.match_ended,
            GAME_CANCELLED: handlers.game_cancelled,
        },
        clock=clock,
    )


class ExcludedPlayerWithdrawn:
    """A self-excluded player's open tables close and their waiting tickets are refused."""

    def __init__(self, clock: Clock, source: str) -> None:
        self._clock = clock
        self._source = source

    async def __call__(self, session: AsyncSession, account_id: str, until: datetime) -> None:
        now = self._clock.now()
        tables = TableRepository(session)
        for table in await tables.open_of_owner(account_id):
            closed = table.closed(OWNER_LEFT)
            await tables.save(closed, now)
            facts = [
                messages.player_left(closed, account_id, now),
                messages.table_closed(closed, now),
            ]
            envelopes = [
                Envelope.wrap(
                    topic=messages.TOPIC, key=table.table_id, message=fact,
                    source=self._source, now=now,
                ).as_outbox_values()
                for fact in facts
            ]  # fmt: skip
            await session.execute(outbox_row.insert(), envelopes)
        await TicketRepository(session).refuse_waiting(account_id, refusal(until).message, now)


def exclusions_consumer(
    *,
    sessions: async_sessionmaker[AsyncSession],
    consumer_factory: ConsumerFactory,
    clock: Clock,
    service: str = "matchmaking",
) -> EventConsumer:
    return self_exclusions_consumer(
        sessions=sessions,
        consumer_factory=consumer_factory,
        clock=clock,
        service=service,
        then=ExcludedPlayerWithdrawn(clock, service),
    )
