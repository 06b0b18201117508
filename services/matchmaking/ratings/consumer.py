"""The ratings consumer: the game service's MatchEnded and GameEnded on ``tavla.game.v1``.

The kit's :class:`EventConsumer` runs each handler inside the inbox transaction,
so an event's effect and its inbox row commit together: a redelivered event id
is skipped. The history's unique (game, player) row makes the same result
reported under another event id count once too. Which results count is
:mod:`services.matchmaking.ratings.results`; an event that is wrong (no winner,
a share that is not a number) is logged and skipped rather than retried for
ever, which would stop every later result on its partition.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from services.kit.clock import Clock
from services.kit.events.consumer import ConsumerFactory, EventConsumer
from services.kit.events.envelope import ReceivedEvent
from services.kit.logging import get_logger
from services.matchmaking.ratings.recorder import RatingsRecorder
from services.matchmaking.ratings.results import (
    RatedResult,
    Unrated,
    from_game_ended,
    from_match_ended,
)
from tavla.game.v1 import events_pb2 as game_events

log = get_logger(__name__)

GAME_TOPIC = "tavla.game.v1"
# The consumer group, and with the service name the inbox's consumer name.
RATINGS_GROUP = "matchmaking.ratings"
GAME_ENDED = game_events.GameEnded.DESCRIPTOR.full_name
MATCH_ENDED = game_events.MatchEnded.DESCRIPTOR.full_name

Reader = Callable[[bytes, datetime], RatedResult | Unrated]


class RatingHandlers:
    def __init__(self, recorder: RatingsRecorder, clock: Clock) -> None:
        self._recorder = recorder
        self._clock = clock

    async def game_ended(self, session: AsyncSession, event: ReceivedEvent) -> None:
        await self._apply(session, event, from_game_ended)

    async def match_ended(self, session: AsyncSession, event: ReceivedEvent) -> None:
        await self._apply(session, event, from_match_ended)

    async def _apply(self, session: AsyncSession, event: ReceivedEvent, read: Reader) -> None:
        result = read(event.payload, self._clock.now())
        if isinstance(result, Unrated):
            if result.fault:
                log.error("rating_result_unreadable", event_id=event.event_id, why=result.why)
            else:
                log.debug("rating_result_unrated", event_id=event.event_id, why=result.why)
            return
        await self._recorder.apply(session, result, event.event_id)


def ratings_consumer(
    *,
    sessions: async_sessionmaker[AsyncSession],
    consumer_factory: ConsumerFactory,
    clock: Clock,
    service: str = "matchmaking",
) -> EventConsumer:
    handlers = RatingHandlers(RatingsRecorder(clock, service), clock)
    return EventConsumer(
        service=service,
        name="ratings",
        sessions=sessions,
        consumer_factory=consumer_factory,
        handlers={GAME_ENDED: handlers.game_ended, MATCH_ENDED: handlers.match_ended},
        clock=clock,
    )
