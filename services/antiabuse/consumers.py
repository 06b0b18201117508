"""The facts consumer: every stream anti-abuse reads, applied exactly once, then detection.

Topics: ``tavla.accounts.v1`` (AccountRegistered: mailbox and name; LoggedIn:
device and client address), ``tavla.geo.v1`` (LocationChecked: the address an
account called from), ``tavla.game.v1`` (GameStarted, GameEnded, MatchEnded:
who played whom; PlayerDisconnected; PlayerReconnected: a drop that came back in time;
StopValued: where a session ended by a timeout or a resignation stopped, valued;
ChatMessagePosted and LobbyMessagePosted: table and lobby chat, for the chat
detectors), ``tavla.wallet.v1`` (Settled: the money a game moved; Deposited and
WithdrawalCompleted: the payment instrument's fingerprint),
``tavla.matchmaking.v1`` (MatchMade: who was seated together; RatingChanged) and
``tavla.analysis.v1`` (MatchAnalysed: every decision graded and timed, for the
assistance and consulting detectors, whose game windows GameStarted and GameEnded
give; sessions' results, analyses and ratings also go to
:mod:`services.antiabuse.play_handlers`, for rating manipulation, deliberate
disconnects and the play half of chip dumping) and ``tavla.tournaments.v1``
(MatchDecided: who met whom in which tournament and round, and forfeits, for
:mod:`services.antiabuse.detectors.tournaments`).
Other event types on those topics are skipped without touching the database.

Each event is applied in the kit's inbox transaction (a replay is skipped by its
``ce_id``; the fact tables are idempotent besides), and the detectors it can
affect run in that same transaction, so alerts and verdicts commit with the
fact that completed them. Each handler first locks the accounts the event is about
(:class:`services.antiabuse.store.AccountLocks`), and a detector the accounts it
reads beyond them (a component, a consulting pair, an alert's subjects), so events
of one account or component wait for each other, on any replica, and everything
else runs at once. A handler that meets an account it cannot lock in order is
undone (its savepoint) and done again holding every account it needed from the
start (:data:`LOCK_ROUNDS` times at most; a component still growing after that is
an error the kit retries).

Sighting events (registrations, logins, location checks, payments: :data:`SIGHTING_TYPES`)
are a row or two each and most of the volume (a carrier's block of accounts signing in):
they are applied in groups, many in one inbox transaction
(:mod:`services.kit.events.grouped`), with their locks taken at once in ascending order,
their sightings written in one statement and multi-accounting examined only for the
accounts that share an identifier with another. A group that fails is undone whole and
its events applied one by one (:meth:`FactHandlers.sighted`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime

from google.protobuf.timestamp_pb2 import Timestamp
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from services.antiabuse.alerting import Work
from services.antiabuse.detectors.chat import ChatAbuse
from services.antiabuse.detectors.chip_dumping import ChipDumping
from services.antiabuse.detectors.multi_accounting import MultiAccounting
from services.antiabuse.detectors.play import PlayDetectors
from services.antiabuse.detectors.tournaments import TournamentCollusion
from services.antiabuse.domain.alert_lifecycle import DEFAULT_WINDOWS, AlertWindows
from services.antiabuse.domain.chip_dumping import Transfer
from services.antiabuse.domain.signals import (
    Signal,
    address_signals,
    device_signal,
    email_signal,
    name_signal,
    payment_signal,
)
from services.antiabuse.domain.tournament_play import TournamentMatch
from services.antiabuse.play_handlers import PlayHandlers
from services.antiabuse.reconnections_store import ReconnectionFacts
from services.antiabuse.store import LockOrder, Seen
from services.antiabuse.tournament_store import TournamentFacts
from services.kit.clock import Clock
from services.kit.events.consumer import ConsumerFactory, EventConsumer, Handler
from services.kit.events.envelope import ReceivedEvent
from services.kit.events.grouped import GroupedEventConsumer
from tavla.accounts.v1 import events_pb2 as accounts
from tavla.analysis.v1 import events_pb2 as analysis
from tavla.game.v1 import events_pb2 as game
from tavla.geo.v1 import events_pb2 as geo
from tavla.matchmaking.v1 import events_pb2 as matchmaking
from tavla.tournaments.v1 import events_pb2 as tournaments
from tavla.wallet.v1 import events_pb2 as wallet

TOPICS = (
    "tavla.accounts.v1",
    "tavla.geo.v1",
    "tavla.game.v1",
    "tavla.wallet.v1",
    "tavla.matchmaking.v1",
    "tavla.analysis.v1",
    "tavla.tournaments.v1",
)
FACTS_GROUP = "antiabuse.facts"
LOCK_ROUNDS = 5


def _at(stamp: Timestamp, clock: Clock) -> datetime:
    return stamp.ToDatetime(tzinfo=UTC) if stamp.seconds or stamp.nanos else clock.now()


# What a sighting event reports: the account, the identifiers it was seen with (None for
# one the event leaves empty or that links nobody), and when.
Reported = tuple[str, list[Signal | None], Timestamp]


def _registered(payload: bytes) -> Reported:
    fact = accounts.AccountRegistered.FromString(payload)
    return fact.account_id, [email_signal(fact.email), name_signal(fact.display_name)], \
        fact.occurred_at


def _logged_in(payload: bytes) -> Reported:
    fact = accounts.LoggedIn.FromString(payload)
    return fact.account_id, [device_signal(fact.device_id), *address_signals(fact.ip_address)], \
        fact.occurred_at


def _location_checked(payload: bytes) -> Reported:
    fact = geo.LocationChecked.FromString(payload)
    return fact.account_id, list(address_signals(fact.ip_address)), fact.occurred_at


def _deposited(payload: bytes) -> Reported:
    fact = wallet.Deposited.FromString(payload)
    return fact.account_id, [payment_signal(fact.provider, fact.instrument_fingerprint)], \
        fact.occurred_at


def _withdrawal_completed(payload: bytes) -> Reported:
    fact = wallet.WithdrawalCompleted.FromString(payload)
    return fact.account_id, [payment_signal(fact.provider, fact.instrument_fingerprint)], \
        fact.occurred_at


# The events that only record sightings (and then examine multi-accounting): applied in
# groups, many in one transaction (:meth:`FactHandlers.sightings`). An event without an
# account or an identifier (a payment without the provider's fingerprint) records nothing
# and runs no detection.
SIGHTING_TYPES: dict[str, Callable[[bytes], Reported]] = {
    accounts.AccountRegistered.DESCRIPTOR.full_name: _registered,
    accounts.LoggedIn.DESCRIPTOR.full_name: _logged_in,
    geo.LocationChecked.DESCRIPTOR.full_name: _location_checked,
    wallet.Deposited.DESCRIPTOR.full_name: _deposited,
    wallet.WithdrawalCompleted.DESCRIPTOR.full_name: _withdrawal_completed,
}


class FactHandlers:
    def __init__(
        self, clock: Clock, source: str, windows: AlertWindows = DEFAULT_WINDOWS
    ) -> None:
        self._clock = clock
        self._source = source
        self._windows = windows
        self.multi_accounting = MultiAccounting()
        self.chip_dumping = ChipDumping(self.multi_accounting)
        self.chat = ChatAbuse()
        self.play = PlayDetectors(self.multi_accounting)
        self.results = PlayHandlers(self.chip_dumping)
        self.tournaments = TournamentCollusion(self.multi_accounting)

    def table(self) -> dict[str, Handler]:
        handlers: dict[str, Callable[[Work, ReceivedEvent], Awaitable[None]]] = {
            **{ce_type: self.sighted for ce_type in SIGHTING_TYPES},
            _name(game.GameStarted): self.game_started,
            _name(game.GameEnded): self.game_ended,
            _name(game.MatchEnded): self.match_ended,
            _name(game.PlayerDisconnected): self.disconnected,
            _name(game.PlayerReconnected): self.reconnected,
            _name(game.StopValued): self.stop_valued,
            _name(game.ChatMessagePosted): self.chat_posted,
            _name(game.LobbyMessagePosted): self.lobby_message_posted,
            _name(matchmaking.MatchMade): self.match_made,
            _name(wallet.Settled): self.settled,
            _name(analysis.MatchAnalysed): self.match_analysed,
            _name(matchmaking.RatingChanged): self.rating_changed,
            _name(tournaments.MatchDecided): self.tournament_match_decided,
        }
        return {ce_type: self._in_work(handler) for ce_type, handler in handlers.items()}

    def _in_work(self, handler: Callable[[Work, ReceivedEvent], Awaitable[None]]) -> Handler:
        async def apply(session: AsyncSession, event: ReceivedEvent) -> None:
            await self._locked(session, lambda work: handler(work, event),
                               f"{event.ce_type} {event.event_id}")  # fmt: skip

        return apply

    async def _locked(
        self, session: AsyncSession, body: Callable[[Work], Awaitable[None]], what: str
    ) -> None:
        """``body`` in a savepoint, done again holding every lock it needed from the start
        when it meets one it cannot take in order (:class:`LockOrder`)."""
        accounts: set[str] = set()
        identifiers: set[Signal] = set()
        for _ in range(LOCK_ROUNDS):
            work = Work(session, self._clock, self._source, self._windows)
            try:
                async with session.begin_nested():  # undone, its locks too, on LockOrder
                    await work.locks.take_all(accounts, identifiers)
                    await body(work)
                return
            except LockOrder as more:
                accounts |= more.accounts
                identifiers |= more.identifiers
        raise RuntimeError(f"{what}: could not take {len(accounts) + len(identifiers)} "
                           f"locks in order in {LOCK_ROUNDS} rounds")

    async def sightings(self, session: AsyncSession, events: Sequence[ReceivedEvent]) -> None:
        """A group of sighting events (:data:`SIGHTING_TYPES`) in one transaction: every
        account and identifier locked at once in ascending order, the sightings written in
        one statement, the accounts that share an identifier found in one, and
        multi-accounting examined for those only (an account sharing nothing has no
        component: see :meth:`MultiAccounting.examine`)."""
        seen = [s for s in (self._sighting(event) for event in events) if s is not None]
        if not seen:
            return
        walked = self.multi_accounting.walked
        accounts = sorted({s.account_id for s in seen})
        identifiers = {signal for s in seen for signal in s.signals if signal.kind in walked}

        async def body(work: Work) -> None:
            await work.locks.take_all(accounts, identifiers)
            await work.facts.seen_all(seen)
            for account_id in await work.facts.sharing(accounts, walked):
                await self.multi_accounting.examine(work, account_id)

        await self._locked(session, body, f"{len(events)} sightings")

    def _sighting(self, event: ReceivedEvent) -> Seen | None:
        """The account and identifiers a sighting event reports (None: nobody to record)."""
        account_id, signals, stamp = SIGHTING_TYPES[event.ce_type](event.payload)
        found = tuple(s for s in signals if s is not None)
        if not account_id or not found:
            return None
        return Seen(account_id, found, _at(stamp, self._clock))

    async def sighted(self, work: Work, event: ReceivedEvent) -> None:
        """One sighting event on its own (a group that failed: see :meth:`sightings`)."""
        seen = self._sighting(event)
        if seen is None:
            return
        # The identifiers too: two accounts first seen with one device at once wait for
        # each other, so the second finds the first's sighting.
        walked = self.multi_accounting.walked
        await work.locks.take_all([seen.account_id], [s for s in seen.signals if s.kind in walked])
        await work.facts.seen(seen.account_id, seen.signals, seen.at)
        await self.multi_accounting.examine(work, seen.account_id)


    async def _together(
        self, work: Work, game_id: str, players: Sequence[str], at: datetime
    ) -> None:
        if game_id and await work.facts.played(game_id, players, at):
            # Linked accounts that now played each other: the component's alert turns critical.
            await self.multi_accounting.examine(work, players[0])

    async def game_started(self, work: Work, event: ReceivedEvent) -> None:
        fact = game.GameStarted.FromString(event.payload)
        players = [p.account_id for p in fact.players]
        at = _at(fact.occurred_at, self._clock)
        await work.locks.take(players)
        await self.play.game_started(work, fact.game_id, fact.game_number, players, at)
        await self._together(work, fact.game_id, players, at)

    async def game_ended(self, work: Work, event: ReceivedEvent) -> None:
        fact = game.GameEnded.FromString(event.payload)
        players = [fact.winner_account_id, fact.loser_account_id]
        at = _at(fact.occurred_at, self._clock)
        await work.locks.take(players)
        await self.play.game_ended(work, fact.game_id, fact.game_number, players, at)
        await self._together(work, fact.game_id, players, at)
        await self.results.ended(work, fact, at)

    async def match_ended(self, work: Work, event: ReceivedEvent) -> None:
        fact = game.MatchEnded.FromString(event.payload)
        players = [fact.winner_account_id, fact.loser_account_id]
        await work.locks.take(players)
        await self._together(work, fact.game_id, players, _at(fact.occurred_at, self._clock))
        await self.results.ended(work, fact, _at(fact.occurred_at, self._clock))
        await self.tournaments.session_complete(work, fact.game_id)

    async def match_made(self, work: Work, event: ReceivedEvent) -> None:
        fact = matchmaking.MatchMade.FromString(event.payload)
        await work.locks.take(fact.account_ids)
        await self._together(
            work, fact.game_id, list(fact.account_ids), _at(fact.occurred_at, self._clock)
        )

    async def disconnected(self, work: Work, event: ReceivedEvent) -> None:
        fact = game.PlayerDisconnected.FromString(event.payload)
        if fact.account_id:
            await work.locks.take([fact.account_id])
            await work.facts.disconnected(
                event.event_id, fact.game_id, fact.account_id, _at(fact.occurred_at, self._clock)
            )

    async def reconnected(self, work: Work, event: ReceivedEvent) -> None:
        fact = game.PlayerReconnected.FromString(event.payload)
        if fact.account_id:
            await work.locks.take([fact.account_id])
            await ReconnectionFacts(work.session).reconnected(
                event.event_id,
                fact.game_id,
                fact.account_id,
                fact.disconnected_for.ToTimedelta().total_seconds(),
                _at(fact.occurred_at, self._clock),
            )

    async def stop_valued(self, work: Work, event: ReceivedEvent) -> None:
        fact = game.StopValued.FromString(event.payload)
        await work.locks.take([fact.account_id, fact.opponent_account_id])
        await self.results.stop_valued(work, fact, _at(fact.occurred_at, self._clock))

    async def chat_posted(self, work: Work, event: ReceivedEvent) -> None:
        fact = game.ChatMessagePosted.FromString(event.payload)
        await work.locks.take([fact.account_id])
        await self.chat.posted(work, fact, _at(fact.occurred_at, self._clock))

    async def lobby_message_posted(self, work: Work, event: ReceivedEvent) -> None:
        fact = game.LobbyMessagePosted.FromString(event.payload)
        # The sender's table lines (keyed by game) arrive on other partitions, so at
        # once: without the lock each would judge the sender's lines missing the other.
        await work.locks.take([fact.account_id])
        await self.chat.posted_in_lobby(work, fact, _at(fact.occurred_at, self._clock))

    async def match_analysed(self, work: Work, event: ReceivedEvent) -> None:
        fact = analysis.MatchAnalysed.FromString(event.payload)
        await work.locks.take(p.account_id for p in fact.players)
        at = _at(fact.occurred_at, self._clock)
        await self.play.analysed(work, fact, at)
        await self.results.analysed(work, fact, at)
        await self.tournaments.session_complete(work, fact.game_id)

    async def rating_changed(self, work: Work, event: ReceivedEvent) -> None:
        fact = matchmaking.RatingChanged.FromString(event.payload)
        await work.locks.take([fact.account_id, fact.opponent_account_id])
        await self.results.rating_changed(work, fact, _at(fact.occurred_at, self._clock))

    async def tournament_match_decided(self, work: Work, event: ReceivedEvent) -> None:
        fact = tournaments.MatchDecided.FromString(event.payload)
        winner, loser = fact.winner_account_id, fact.loser_account_id
        if not fact.tournament_id or not fact.match_id or not winner or not loser:
            return  # a bye: nobody lost
        if winner == loser:
            return
        match = TournamentMatch(
            tournament_id=fact.tournament_id,
            match_id=fact.match_id,
            game_id=fact.game_id,
            winner=winner,
            loser=loser,
            decision=fact.decision,
            at=_at(fact.occurred_at, self._clock),
        )
        await work.locks.take([winner, loser])
        if await TournamentFacts(work.session).decided(match):
            await self.tournaments.decided(work, match)


    async def settled(self, work: Work, event: ReceivedEvent) -> None:
        fact = wallet.Settled.FromString(event.payload)
        loser, winner = fact.loser_account_id, fact.winner_account_id
        moved = fact.loser_debit if fact.loser_debit.minor_units else fact.win_sum
        if not loser or not winner or loser == winner or not fact.settlement_id:
            return
        at = _at(fact.occurred_at, self._clock)
        await work.locks.take([loser, winner])
        transfer = Transfer(
            fact.settlement_id, fact.game_id, loser, winner, moved.minor_units, moved.currency, at
        )
        await work.facts.played(fact.game_id, [loser, winner], at)
        if await work.facts.transferred(transfer):
            await self.chip_dumping.examine(work, loser, winner)
            # Money between linked accounts makes their multi-accounting alert critical.
            await self.multi_accounting.examine(work, loser)


def _name(message: type[object]) -> str:
    name: str = message.DESCRIPTOR.full_name  # type: ignore[attr-defined]
    return name


def facts_consumer(
    *,
    sessions: async_sessionmaker[AsyncSession],
    consumer_factory: ConsumerFactory,
    clock: Clock,
    service: str = "antiabuse",
    windows: AlertWindows = DEFAULT_WINDOWS,
) -> EventConsumer:
    handlers = FactHandlers(clock, service, windows)
    return GroupedEventConsumer(
        service=service,
        name="facts",
        sessions=sessions,
        consumer_factory=consumer_factory,
        handlers=handlers.table(),
        clock=clock,
        grouped=SIGHTING_TYPES,
        group_handler=handlers.sightings,
    )
