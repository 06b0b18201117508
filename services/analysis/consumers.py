"""The game-event consumer: decision times while a session is played, analysis at its end.

Consumes ``tavla.game.v1`` through the kit's inbox (each event applied once, its
effects committed with its inbox row):

- MovePlayed, CubeOffered, CubeTaken, CubeBeavered, CubeDropped: the decision's
  ``time_taken`` into ``decision_times`` (the game measures it from the dice shown
  or the decision offered to the action received);
- MatchEnded, and GameEnded of a single money game (``PLAY_KIND_MONEY_GAME``): the
  session is analysed (:class:`~services.analysis.matches.MatchAnalyser`). The
  session's events share its key, so its times are stored before its end arrives.

A game service that cannot be reached raises, so the batch is retried (the inbox
row is rolled back with it); a record that cannot be read is logged and skipped.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

from google.protobuf.duration_pb2 import Duration
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from services.analysis import store
from services.analysis.matches import MatchAnalyser
from services.kit.clock import Clock
from services.kit.events.consumer import ConsumerFactory, EventConsumer
from services.kit.events.envelope import ReceivedEvent
from services.kit.logging import get_logger
from tavla.game.v1 import events_pb2 as game_events
from tavla.game.v1 import game_pb2

log = get_logger(__name__)

GAME_TOPIC = "tavla.game.v1"
MATCHES_GROUP = "analysis.matches"

Handler = Callable[[AsyncSession, ReceivedEvent], Awaitable[None]]


class TimedFact(Protocol):
    """What MovePlayed and the Cube* events share."""

    @property
    def game_id(self) -> str: ...
    @property
    def version(self) -> int: ...
    @property
    def game_number(self) -> int: ...
    @property
    def account_id(self) -> str: ...
    @property
    def time_taken(self) -> Duration: ...


class MatchHandlers:
    def __init__(self, analyser: MatchAnalyser) -> None:
        self._analyser = analyser

    async def move_played(self, session: AsyncSession, event: ReceivedEvent) -> None:
        fact = game_events.MovePlayed.FromString(event.payload)
        await self._time(session, fact, "checker")

    async def cube_offered(self, session: AsyncSession, event: ReceivedEvent) -> None:
        await self._time(session, game_events.CubeOffered.FromString(event.payload), "double")

    async def cube_taken(self, session: AsyncSession, event: ReceivedEvent) -> None:
        await self._time(session, game_events.CubeTaken.FromString(event.payload), "take")

    async def cube_beavered(self, session: AsyncSession, event: ReceivedEvent) -> None:
        await self._time(session, game_events.CubeBeavered.FromString(event.payload), "take")

    async def cube_dropped(self, session: AsyncSession, event: ReceivedEvent) -> None:
        await self._time(session, game_events.CubeDropped.FromString(event.payload), "pass")

    async def _time(self, session: AsyncSession, fact: TimedFact, kind: str) -> None:
        row = store.DecisionTime(
            game_id=fact.game_id,
            version=fact.version,
            game_number=fact.game_number,
            account_id=fact.account_id,
            kind=kind,
            seconds=fact.time_taken.ToTimedelta().total_seconds(),
        )
        await store.record_time(session, row)

    async def match_ended(self, session: AsyncSession, event: ReceivedEvent) -> None:
        fact = game_events.MatchEnded.FromString(event.payload)
        await self._analyse(session, fact.game_id, [p.account_id for p in fact.players])

    async def game_ended(self, session: AsyncSession, event: ReceivedEvent) -> None:
        fact = game_events.GameEnded.FromString(event.payload)
        if fact.kind != game_pb2.PLAY_KIND_MONEY_GAME:
            return  # games of a match are analysed with the match, on MatchEnded
        await self._analyse(session, fact.game_id, [p.account_id for p in fact.players])

    async def _analyse(self, session: AsyncSession, game_id: str, accounts: list[str]) -> None:
        if len(accounts) != 2:
            log.error("analysis_players_missing", game_id=game_id, players=len(accounts))
            return
        await self._analyser.analyse(session, game_id, (accounts[0], accounts[1]))


def matches_consumer(
    *,
    sessions: async_sessionmaker[AsyncSession],
    consumer_factory: ConsumerFactory,
    analyser: MatchAnalyser,
    clock: Clock,
    service: str = "analysis",
) -> EventConsumer:
    handlers = MatchHandlers(analyser)
    table: dict[str, Handler] = {
        game_events.MovePlayed.DESCRIPTOR.full_name: handlers.move_played,
        game_events.CubeOffered.DESCRIPTOR.full_name: handlers.cube_offered,
        game_events.CubeTaken.DESCRIPTOR.full_name: handlers.cube_taken,
        game_events.CubeBeavered.DESCRIPTOR.full_name: handlers.cube_beavered,
        game_events.CubeDropped.DESCRIPTOR.full_name: handlers.cube_dropped,
        game_events.MatchEnded.DESCRIPTOR.full_name: handlers.match_ended,
        game_events.GameEnded.DESCRIPTOR.full_name: handlers.game_ended,
    }
    return EventConsumer(
        service=service,
        name="matches",
        sessions=sessions,
        consumer_factory=consumer_factory,
        handlers=table,
        clock=clock,
    )
