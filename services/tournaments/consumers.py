"""The tournaments' consumers: the game service's match results, and self-exclusions.

``MatchEnded`` (topic ``tavla.game.v1``) of a game this service created (its
``table_id`` is the tournament's id) records the result in the bracket, in the
kit's inbox transaction, under the tournament's row lock: the winner moves on
exactly once, whether the event comes twice, under two event ids, or to two
replicas. When the result gives the driver work (the winner's next match now has both
players, or the final is won), the same transaction flags the tournament for the
driver, which creates the next round's game (or pays the prizes), so a SIGKILL between
the result and the next game loses nothing and repeats nothing; this replica's driver
is woken once it commits. A result whose winner waits for an opponent leaves the flag
as it is and wakes no driver: a pass would find nothing to do. A result the bracket refuses (another
winner for a decided match, a game that is not the match's) is logged and changes
nothing.

``GameCancelled`` of a tournament match with an ``absent_account_id`` (a player who
never arrived: the reconnect window passed before anyone moved) forfeits the match
to the opponent (``record_forfeit``, decision ``no_show``), the same way exactly once.

The results of one fetched batch are applied together (the kit's
:class:`GroupedEventConsumer`): one inbox transaction holds their inbox rows, and each
tournament among them is locked once, has its outcomes applied in order and is saved
once, its ``MatchDecided`` events in the save's statement (``writes.py``). A group that
fails is rolled back whole and its events go one per transaction, where one event's
failure parks only that event.

``AccountSelfExcluded`` (topic ``tavla.accounts.v1``) goes to the kit's copy, which
registration reads.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from sqlalchemy import event as orm_events
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlalchemy.orm import Session

from services.kit.clock import Clock
from services.kit.errors import DomainError
from services.kit.events.consumer import ConsumerFactory, EventConsumer
from services.kit.events.envelope import Envelope, ReceivedEvent
from services.kit.events.grouped import GroupedEventConsumer
from services.kit.logging import get_logger
from services.kit.self_exclusion import self_exclusions_consumer
from services.tournaments import messages
from services.tournaments.domain import bracket as brackets
from services.tournaments.domain import lobby
from services.tournaments.domain.lobby import Status
from services.tournaments.domain.rules import Kind
from services.tournaments.store import TournamentCache, TournamentRepository
from tavla.game.v1 import events_pb2 as game_events
from tavla.tournaments.v1 import events_pb2

log = get_logger(__name__)

GAME_TOPIC = "tavla.game.v1"
MATCHES_GROUP = "tournaments.matches"
MATCH_ENDED = game_events.MatchEnded.DESCRIPTOR.full_name
GAME_CANCELLED = game_events.GameCancelled.DESCRIPTOR.full_name
# How long the offsets of game-topic batches without a result may wait for their commit.
SKIPPED_COMMIT_SECONDS = 5.0


_WAKE_PENDING: Final = "tavla.tournaments.wake_pending"


def _after_commit(session: AsyncSession, wake: Callable[[], None]) -> None:
    """Call ``wake`` once the session's transaction commits (never for a rollback)."""
    info = session.sync_session.info
    if _WAKE_PENDING not in info:
        orm_events.listen(session.sync_session, "after_commit", _wake_pending)
        orm_events.listen(session.sync_session, "after_rollback", _drop_wake)
    info[_WAKE_PENDING] = wake


def _wake_pending(session: Session) -> None:
    wake = session.info.get(_WAKE_PENDING)
    session.info[_WAKE_PENDING] = None
    if wake is not None:
        wake()


def _drop_wake(session: Session) -> None:
    session.info[_WAKE_PENDING] = None


@dataclass(frozen=True)
class _Outcome:
    """What one event says of a match: the tournament, the game, and how to apply it."""

    tournament_id: str
    game_id: str
    apply: Callable[[brackets.Bracket, str], brackets.Applied]


def _outcome(event: ReceivedEvent) -> _Outcome | None:
    """The match outcome ``event`` reports; None for one that decides nothing here."""
    if event.ce_type == MATCH_ENDED:
        ended = game_events.MatchEnded.FromString(event.payload)
        if not ended.winner_account_id:
            return None  # unreadable: nothing to advance
        return _Outcome(
            ended.table_id,
            ended.game_id,
            lambda bracket, match_id: brackets.record_result(
                bracket, match_id, game_id=ended.game_id, winner=ended.winner_account_id
            ),
        )
    cancelled = game_events.GameCancelled.FromString(event.payload)
    if not cancelled.absent_account_id:
        return None  # cancelled for another reason: nobody to forfeit
    return _Outcome(
        cancelled.table_id,
        cancelled.game_id,
        lambda bracket, match_id: brackets.record_forfeit(
            bracket, match_id, loser=cancelled.absent_account_id,
            decision=brackets.Decision.NO_SHOW,
        ),
    )


class MatchResults:
    def __init__(
        self,
        clock: Clock,
        source: str,
        cache: TournamentCache,
        on_commit: Callable[[], None] = lambda: None,
        on_work: Callable[[], None] = lambda: None,
    ) -> None:
        self._clock = clock
        self._source = source
        self._cache = cache
        self._on_commit = on_commit  # the relay: a MatchDecided to publish
        self._on_work = on_work  # the relay and the driver: a next match to create, prizes

    async def match_ended(self, session: AsyncSession, event: ReceivedEvent) -> None:
        await self.results(session, [event])

    async def game_cancelled(self, session: AsyncSession, event: ReceivedEvent) -> None:
        await self.results(session, [event])

    async def results(self, session: AsyncSession, events: Sequence[ReceivedEvent]) -> None:
        """Apply a group's outcomes (the kit's inbox rows written in this transaction):
        each tournament's locked, changed and saved once, its events in the same statement."""
        by_tournament: dict[str, list[_Outcome]] = {}
        for event in events:
            outcome = _outcome(event)
            if outcome is not None and outcome.tournament_id and len(outcome.tournament_id) <= 36:
                by_tournament.setdefault(outcome.tournament_id, []).append(outcome)
        repository = TournamentRepository(session, self._cache)
        work: bool | None = None  # None: nothing decided
        for tournament_id, outcomes in by_tournament.items():
            gave = await self._decide(repository, tournament_id, outcomes)
            if gave is not None:
                work = gave or bool(work)
        if work is not None:
            _after_commit(session, self._on_work if work else self._on_commit)

    async def _decide(
        self, repository: TournamentRepository, tournament_id: str, outcomes: Sequence[_Outcome]
    ) -> bool | None:
        """Apply outcomes to the bracket of the tournament that created their games, under
        its row lock; whether the driver has work after them (None: nothing changed)."""
        tournament = await repository.get(tournament_id, lock=True)
        if tournament is None or tournament.bracket is None:
            return None  # a game played at a lobby table
        if tournament.status is not Status.RUNNING:
            return None
        bracket = tournament.bracket
        decided: list[str] = []
        for outcome in outcomes:
            match_id = next(
                (m.id for m in bracket.matches() if m.game_id == outcome.game_id), None
            )
            if match_id is None:
                log.warning("tournament_result_for_unknown_game", tournament_id=tournament_id,
                            game_id=outcome.game_id)
                continue
            try:
                applied = outcome.apply(bracket, match_id)
            except DomainError as refused:
                log.error("tournament_result_refused", tournament_id=tournament_id,
                          match_id=match_id, reason=refused.message)
                continue
            if applied.changed:  # else the same outcome again: the winner moved on already
                bracket = applied.bracket
                decided.append(match_id)
        if not decided:
            return None
        after = lobby.with_bracket(tournament, bracket)
        work = any(_leaves_work(after, match_id) for match_id in decided)
        events = [self._decided(after, match_id) for match_id in decided]
        await repository.save(after, needs_work=True if work else None, events=events)
        for match_id in decided:
            log.info("tournament_match_decided", tournament_id=tournament_id, match_id=match_id,
                     decision=str(bracket.match(match_id).decision))
        return work

    def _decided(self, tournament: lobby.Tournament, match_id: str) -> Envelope:
        assert tournament.bracket is not None
        decided = tournament.bracket.match(match_id)
        now = self._clock.now()
        return Envelope.wrap(
            topic=messages.TOPIC,
            key=tournament.id,
            message=events_pb2.MatchDecided(
                tournament_id=tournament.id,
                match_id=match_id,
                game_id=decided.game_id,
                winner_account_id=decided.winner or "",
                loser_account_id=decided.loser or "",
                decision=(decided.decision or brackets.Decision.PLAYED).value,
                occurred_at=messages.timestamp(now),
            ),
            source=self._source,
            now=now,
        )


def _leaves_work(tournament: lobby.Tournament, decided: str) -> bool:
    """Whether deciding match ``decided`` gave the driver something to do: the match its
    winner plays next now has both players (its game to create), or the final is won (the
    prizes). A satellite's rounds depend on its target's ticket price, which the driver
    reads: always. Work left by earlier changes keeps its flag (the save leaves it)."""
    bracket = tournament.bracket
    assert bracket is not None  # a running tournament was drawn
    if tournament.rules.kind is Kind.SATELLITE or bracket.finished:
        return True
    following = brackets.following(bracket, decided)
    return following is not None and following.state is brackets.MatchState.READY


def matches_consumer(
    *,
    sessions: async_sessionmaker[AsyncSession],
    consumer_factory: ConsumerFactory,
    clock: Clock,
    cache: TournamentCache,
    service: str = "tournaments",
    on_commit: Callable[[], None] = lambda: None,
    on_work: Callable[[], None] = lambda: None,
) -> EventConsumer:
    """``on_commit`` is called after a transaction that decided a match commits, and
    ``on_work`` instead when the decision left the driver work (:func:`_leaves_work`)."""
    handlers = MatchResults(clock, service, cache, on_commit, on_work)
    return GroupedEventConsumer(
        service=service,
        name="matches",
        sessions=sessions,
        consumer_factory=consumer_factory,
        handlers={MATCH_ENDED: handlers.match_ended, GAME_CANCELLED: handlers.game_cancelled},
        clock=clock,
        # A batch's results in one transaction: each tournament locked and saved once.
        grouped=(MATCH_ENDED, GAME_CANCELLED),
        group_handler=handlers.results,
        # Most batches of the game topic hold no result: their offsets need no commit each.
        skipped_commit_seconds=SKIPPED_COMMIT_SECONDS,
    )


def exclusions_consumer(
    *,
    sessions: async_sessionmaker[AsyncSession],
    consumer_factory: ConsumerFactory,
    clock: Clock,
    service: str = "tournaments",
) -> EventConsumer:
    return self_exclusions_consumer(
        sessions=sessions, consumer_factory=consumer_factory, clock=clock, service=service
    )
