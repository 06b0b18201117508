"""Game use cases: load the session, apply the pure domain, save, log and publish together.

A player's command is one read of the game row (none when this replica already holds
that version) and one write statement (:mod:`services.game.fastpath`): the versioned
``UPDATE`` with the action-log row, timer rows, revealed seeds and outbox events,
applied together or not at all. A call whose ``expected_version`` is behind is
answered from the action log when it is the same command by the same player at that
version (a retry), and refused with the current version otherwise. The service's own
commands (timers, presence) lock the row with ``FOR UPDATE SKIP LOCKED`` in a unit
of work, so one replica applies each, once.

Real-money games re-check where each player is through the kit's
:class:`~services.kit.geo_gate.GeoGate`, purpose play-for-real-money: on a
player's call whose client address (or declared residence) differs from the
seat's last check, or once the re-check interval passed since it, and in a
periodic sweep of connected seats with their last known address
(:meth:`GameService.recheck_locations`). Never on every move: a call from the
same place within the interval asks nothing. A block fails the call
(FAILED_PRECONDITION naming the reasons) and treats the seat as disconnected
(the service's ``LOCATION_BLOCKED`` command), so the disconnection rules settle
the game unless the player comes back from an allowed location in time (an
allowed check of a blocked seat applies ``LOCATION_ALLOWED``, which reconnects
it). Geo out of reach fails the call (UNAVAILABLE) and the game's clocks keep
their rules; the sweep then leaves the seat as it is, due, so its next call is
checked. A seat's last check (address, residence, time) is stored beside the
state, outside the version; a replica holding the session in its cache uses the
check it knows, which may be older than another replica's: it then asks sooner,
never later, except that an address it saw allowed within the interval is not
asked about again.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import secrets
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from services.backgammon.dice import commitment
from services.backgammon.matfile import MatHeader, export_match
from services.backgammon.position_id import encode as position_id
from services.game import codec, creation, domain, facts, metrics, seat_names
from services.game.chat import ChatService
from services.game.domain import (
    Action,
    Command,
    Located,
    Seat,
    Session,
    Status,
    TableRules,
    location_due,
)
from services.game.fastpath import FastStore, SessionCache, Write
from services.game.lobby_chat import LobbyChat
from services.game.ports import (
    AnalysisUnavailable,
    SettledPosition,
    Settlement,
    SettlementAnalyst,
    WalletPort,
    not_analysed,
)
from services.game.rules import match_id_of
from services.game.store import (
    CHANGES_CHANNEL,
    ActionRow,
    GameRow,
    GameUnitOfWork,
    SavedGame,
    SeedRow,
    located_of,
)
from services.game.views import complete, complete_for, game_view, stored_view
from services.kit.client_signals import ClientSignals
from services.kit.clock import Clock
from services.kit.db_notify import ChannelListener
from services.kit.errors import (
    Conflict,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    Unavailable,
)
from services.kit.events.envelope import Envelope
from services.kit.failpoints import failpoint
from services.kit.geo_gate import GeoGate
from services.kit.json_text import to_sorted_json
from services.kit.logging import get_logger
from services.kit.money_bounds import MoneyBounds
from services.kit.self_exclusion import refusal
from tavla.game.v1 import game_pb2
from tavla.geo.v1 import geo_pb2

log = get_logger(__name__)

CLOCK_TIMER = "clock"
# Set when a session ends by a timeout or a resignation: value where it stopped (StopValued).
VALUE_TIMER = "value"
CREATE = "create"
# Cube actions: each must have its stake held before it is applied (see _secure_stakes).
CUBE_ACTIONS = frozenset({Action.DOUBLE, Action.TAKE, Action.BEAVER})


def _reconnect_timer(player: int) -> str:
    return f"reconnect{player}"


def _hash(command: dict[str, Any]) -> str:
    return _hash_text(to_sorted_json(command))


def _hash_text(command_json: str) -> str:
    """A command's hash from its JSON text with sorted keys (what ``_hash`` encodes)."""
    return hashlib.sha256(command_json.encode()).hexdigest()


def _session_of(row: GameRow) -> Session:
    return codec.session_from_state(
        row.game_id, row.version, row.status, row.updated_at, row.state, row.seed, row.located
    )


class Origin:
    """Where a player's call comes from: the declared residence their access token
    carries and the client address (and device id) the gateway saw.

    ``read`` gives the signals when first asked: only real money asks (reading the
    call's TLS peer and metadata was about 1 % of a play-money move's CPU).
    """

    __slots__ = ("_read", "_signals", "residence")

    def __init__(
        self,
        residence: str = "",
        signals: ClientSignals | None = None,
        *,
        read: Callable[[], ClientSignals] | None = None,
    ) -> None:
        self.residence = residence
        self._signals = signals
        self._read = read

    @property
    def signals(self) -> ClientSignals:
        if self._signals is None:
            self._signals = ClientSignals() if self._read is None else self._read()
        return self._signals


NOWHERE = Origin()  # a call that did not come through the gateway: never located
NO_GEO = GeoGate(None)  # no geo service: real-money calls that need a check are UNAVAILABLE
PLAY_REAL = geo_pb2.PURPOSE_PLAY_REAL_MONEY
# The documented defaults; ``main`` reads the operator's TAVLA_MONEY_MAX_* instead.
DEFAULT_BOUNDS = MoneyBounds.defaults()


def _saved(session: Session) -> SavedGame:
    return SavedGame(
        game_id=session.game_id,
        version=session.version,
        status=session.status.value,
        state=codec.session_to_state(session),
        seed=session.seed,
        away=(not session.presence[0].connected, not session.presence[1].connected),
        updated_at=session.updated_at,
    )


@dataclass(frozen=True)
class Update:
    """One change as WatchGame streams it: the game after a command, or a chat message."""

    view: game_pb2.Game | None
    event_type: str
    chat: game_pb2.ChatMessage | None = None


CHAT_POSTED = "tavla.game.v1.ChatMessagePosted"
# How long a woken stream waits before it reads, so that the wakes of one change (this
# replica's and its NOTIFY's) and of a burst of changes are read together.
WAKE_COALESCE_SECONDS = 0.005


class Watchers:
    """Wakes WatchGame streams: after this replica's commits, and on every replica's
    NOTIFY of a change (:meth:`GameService.listener`)."""

    def __init__(self) -> None:
        self._events: dict[str, asyncio.Event] = {}

    def event(self, game_id: str) -> asyncio.Event:
        return self._events.setdefault(game_id, asyncio.Event())

    def notify(self, game_id: str) -> None:
        event = self._events.pop(game_id, None)
        if event is not None:
            event.set()

    def notify_all(self) -> None:
        """Wake every stream once (the changes' notifications may have been missed)."""
        events, self._events = self._events, {}
        for event in events.values():
            event.set()


class GameService:
    def __init__(
        self,
        unit_of_work: Callable[[], GameUnitOfWork],
        *,
        clock: Clock,
        wallet: WalletPort | None,
        analyst: SettlementAnalyst,
        fast: FastStore,
        source: str = "game",
        on_commit: Callable[[], None] = lambda: None,
        presence_silence: timedelta = timedelta(seconds=15),
        watch_poll_seconds: float = 1.0,
        watch_fallback_seconds: float = 30.0,
        geo: GeoGate = NO_GEO,
        geo_recheck: timedelta = timedelta(seconds=300),
        analysis_wait: timedelta = timedelta(seconds=120),
        analysis_retry: timedelta = timedelta(seconds=2),
        reconnect_window: timedelta = domain.RECONNECT_WINDOW,
        bounds: MoneyBounds = DEFAULT_BOUNDS,
    ) -> None:
        self._uow = unit_of_work
        self._bounds = bounds
        self._fast = fast
        self._source = source
        self._on_commit = on_commit
        self._cache = SessionCache()
        self._clock = clock
        self._wallet = wallet
        self._analyst = analyst
        self._silence = presence_silence
        self._watch_fallback = watch_fallback_seconds
        self._watchers = Watchers()
        self._geo = geo
        self._recheck_every = geo_recheck
        self._analysis_wait = analysis_wait
        self._analysis_retry = analysis_retry
        self._reconnect_window = reconnect_window
        self.chat = ChatService(unit_of_work, clock=clock, notify=self._watchers.notify)
        self.lobby = LobbyChat(
            unit_of_work, clock=clock, wakeups=self._watchers, poll_seconds=watch_poll_seconds
        )

    # ------------------------------------------------------------ create and read

    async def create_game(
        self,
        *,
        table_id: str,
        seats: tuple[Seat, Seat],
        rules: TableRules,
        idempotency_key: str,
        client_seed: str,
    ) -> game_pb2.Game:
        """A new session on both seats' claimed stakes, or the one this key created.

        Two statements (:mod:`services.game.creation`): one read (a retry's game, the
        seats' self-exclusions, the screen names of unnamed seats), then, after the
        wallet's claim, one insert of the game with its action-log row, timers and events.
        """
        # No table whose stake or largest loss passes the operator's bounds: no cube on it
        # can then ask for more than int64 (or the bound) to be held.
        domain.largest_loss(rules, self._bounds)
        if rules.currency != domain.PLAY_MONEY and self._wallet is None:
            raise FailedPrecondition(
                f"{rules.currency} tables need the wallet service: set TAVLA_WALLET_ADDRESS"
            )
        now = self._clock.now()
        create = partial(
            domain.create,
            game_id=_new_game_id(idempotency_key),
            table_id=table_id,
            rules=replace(rules, reconnect_window=self._reconnect_window),
            client_seed=client_seed or secrets.token_hex(16),
            seed=secrets.token_bytes(32),
            now=now,
        )
        transition = create(seats=seats)  # bad input is refused before anything is read
        found = await self._before_create(idempotency_key, seats, now)
        if found.existing is not None:  # a retry is answered before the stakes are asked about
            return _same_table(await self.get_game(found.existing), transition.session)
        named = seat_names.named(seats, found.names)
        if named != seats:
            transition = create(seats=named)
        session = transition.session
        await self._claim_stakes(session)
        view = await self._insert(transition, idempotency_key, now)
        log.info("game_created", game_id=session.game_id, table_id=session.table_id)
        return view

    async def _before_create(
        self, idempotency_key: str, seats: tuple[Seat, Seat], now: datetime
    ) -> creation.BeforeCreate:
        """In one read: the game a retry of this key already created, the seats' names;
        refused when a seat is self-excluded. No game starts, real or play money, with a
        player who excluded themself (the accounts service's word, kept by the
        self-exclusions consumer)."""
        accounts = [seat.account_id for seat in seats]
        unnamed = [seat.account_id for seat in seats if not seat.display_name]
        rows = await self._fast.fetch(
            creation.BEFORE_CREATE,
            *creation.before_create_arguments(idempotency_key, accounts, now, unnamed),
        )
        found = creation.before_create(rows)
        if found.existing is not None:
            return found
        for number, seat in enumerate(seats):
            if seat.account_id in found.excluded:
                who = f"the player in seat {number} ({seat.account_id}) is"
                raise refusal(found.excluded[seat.account_id], who)
        return found

    async def _insert(
        self, transition: domain.Transition, idempotency_key: str, now: datetime
    ) -> game_pb2.Game:
        """The game, its first action, timers and events in one statement; when this key's
        game is there already (a concurrent retry won), that game."""
        session = transition.session
        stored = stored_view(session)
        command = {
            "action": CREATE,
            "rules": codec.rules_to_state(session.rules),
            "seats": codec.seats_to_state(session.seats),
            "client_seed": session.client_seed,
            "table_id": session.table_id,
        }
        saved = _saved(session)
        new = creation.NewGame(
            game_id=session.game_id,
            table_id=session.table_id,
            version=session.version,
            status=saved.status,
            accounts=(session.seats[0].account_id, session.seats[1].account_id),
            state=saved.state,
            seed=saved.seed,
            at=now,
            away=saved.away,
            idempotency_key=idempotency_key or None,
            command=command,
            command_hash=_hash(command),
            event_type=transition.facts[0].DESCRIPTOR.full_name,
            view=stored,
            events=self._envelopes(session.game_id, transition, now),
            timers=timer_changes(None, session)[0],
        )
        inserted = await self._fast.fetch(creation.CREATE, *creation.create_arguments(new))
        if not inserted:  # the same idempotency key (so the same game id) won a race
            if not idempotency_key:
                raise Conflict("the game could not be created; retry")
            existing = await self.get_game(await self._game_for_key(idempotency_key))
            return _same_table(existing, session)
        metrics.count(CREATE, transition)
        self._on_commit()
        return complete_for(session, stored)

    async def _game_with_key(self, key: str) -> str | None:
        async with self._uow() as uow:
            return await uow.games.by_idempotency_key(key)

    async def _game_for_key(self, key: str) -> str:
        found = await self._game_with_key(key)
        if found is None:
            raise Conflict("the game could not be created; retry")
        return found

    async def get_game(self, game_id: str) -> game_pb2.Game:
        async with self._uow() as uow:
            return await self._current_view(uow, game_id)

    async def _current_view(self, uow: GameUnitOfWork, game_id: str) -> game_pb2.Game:
        row = await uow.games.get(game_id)
        if row is None:
            raise NotFound(f"no game {game_id}")
        return game_view(_session_of(row))

    async def list_games(
        self, account_id: str, *, in_progress_only: bool, page_size: int, page_token: str
    ) -> tuple[list[game_pb2.Game], str]:
        size = min(max(page_size or 20, 1), 100)
        try:
            before = datetime.fromisoformat(page_token) if page_token else None
        except ValueError:
            raise InvalidArgument("page_token is not one this service returned") from None
        async with self._uow() as uow:
            rows = await uow.games.list_for(account_id, in_progress_only, size, before)
        views = [game_view(_session_of(row), with_plays=False) for row in rows]
        token = rows[-1].updated_at.isoformat() if len(rows) == size else ""
        return views, token

    # ------------------------------------------------------------ player commands

    async def command(
        self,
        game_id: str,
        account_id: str,
        expected_version: int,
        action: Action,
        text: str = "",
        origin: Origin = NOWHERE,
    ) -> game_pb2.Game:
        """A player's decision (or Leave) at the version the player last saw."""
        expected = expected_version
        if action in CUBE_ACTIONS:
            expected = await self._secure_stakes(game_id, account_id, expected, action, origin)
        return await self._apply(game_id, account_id, expected, action, text, origin)

    async def reconnect(
        self, game_id: str, account_id: str, origin: Origin = NOWHERE
    ) -> game_pb2.Game:
        """Any time: a disconnected player comes back (a connected one just gets the state)."""
        for _ in range(2):  # no version to respect: a concurrent change just means try again
            try:
                return await self._apply(game_id, account_id, None, Action.RECONNECT, "", origin)
            except Conflict:
                continue
        return await self._apply(game_id, account_id, None, Action.RECONNECT, "", origin)

    async def heartbeat(
        self, game_id: str, account_id: str, origin: Origin = NOWHERE
    ) -> tuple[datetime, int]:
        now = self._clock.now()
        # Two autocommit statements on the command path's pool (a read, the touch), where a
        # SQLAlchemy transaction took four round trips: every open client beats every 5 s.
        session = await self._read(game_id)
        player = session.seat_of(account_id)
        due = self._location_due(session, player, origin, now)
        if not due and _present_or_over(session, player):
            await self._fast.touch(game_id, player, now)
            return now, session.version
        if due:
            session = await self._locate(session, player, account_id, origin)
            if _present_or_over(session, player):
                await self._touch(game_id, player)
                return now, session.version
        view = await self.reconnect(game_id, account_id, origin)
        return now, view.version

    async def _apply(
        self,
        game_id: str,
        account_id: str,
        expected: int | None,
        action: Action,
        text: str = "",
        origin: Origin = NOWHERE,
    ) -> game_pb2.Game:
        session = None if expected is None else self._cache.get(game_id, expected)
        if session is None:
            session = await self._read(game_id)
        player = session.seat_of(account_id)
        located = await self._locate(session, player, account_id, origin)
        if _came_back(session, located, player) and expected == session.version:
            expected = located.version  # the player's own return, made in this very call
        session = located
        now = self._clock.now()
        command = Command(action, player, text)
        state = codec.command_to_state(command)
        if expected is not None and expected != session.version:
            return await self._retried(game_id, session.version, expected, account_id, state)
        transition = domain.apply(session, command, now, _new_seed)
        if not transition.changed:
            await self._touch(game_id, player)
            return game_view(session)
        after = transition.session
        stored = stored_view(after)
        write = self._write_of(session, transition, player, account_id, state, stored, now)
        if not await self._fast.write(write):  # another call, a timer or a replica was first
            self._cache.drop(game_id)
            current = await self._read(game_id)
            return await self._retried(game_id, current.version, expected, account_id, state)
        # Committed with its outbox events, which nothing has published yet (a test kills here).
        failpoint("game.command.after_commit")
        self._cache.put(after)
        metrics.count(action.value, transition)
        self._on_commit()
        self._watchers.notify(game_id)
        return complete_for(after, stored)

    # ------------------------------------------------------------ location (real money)

    def _location_due(self, session: Session, player: int, origin: Origin, now: datetime) -> bool:
        """Whether this call must ask the geo service before anything else."""
        if not session.real_money or session.status is not Status.IN_PROGRESS:
            return False
        address, every = origin.signals.address, self._recheck_every
        located = session.located[player]
        return not address or location_due(located, address, origin.residence, now, every)

    async def _locate(
        self, session: Session, player: int, account_id: str, origin: Origin
    ) -> Session:
        """The session after checking the seat's location when due (see the module docstring).

        Raises FailedPrecondition for a block (after treating the seat as disconnected)
        or a call without a client address, Unavailable when geo cannot be reached.
        """
        now = self._clock.now()
        if not self._location_due(session, player, origin, now):
            return session
        if not origin.signals.address:
            raise FailedPrecondition(
                "a real-money game needs your location and this call carries no client "
                "address [location_unknown]; play through the app or site"
            )
        located = Located(origin.signals.address, origin.residence, now)
        try:
            await self._geo.require(
                PLAY_REAL, account_id=account_id, residence=origin.residence, signals=origin.signals
            )
        except FailedPrecondition as refusal:
            block = Command(Action.LOCATION_BLOCKED, player, refusal.message)
            await self._location_command(session.game_id, player, located, block)
            raise
        back = Command(Action.LOCATION_ALLOWED, player)
        command = back if session.presence[player].blocked else None
        return await self._location_command(session.game_id, player, located, command)

    async def _location_command(
        self, game_id: str, player: int, located: Located, command: Command | None
    ) -> Session:
        """Record a seat's check and apply the service's command it calls for, together."""
        now = self._clock.now()
        async with self._uow() as uow:
            await uow.games.record_location(game_id, player, located)
            row = await uow.games.get(game_id, lock=command is not None)
            if row is None:
                raise NotFound(f"no game {game_id}")
            session = _session_of(row)
            transition = None
            if command is not None and session.status is Status.IN_PROGRESS:
                transition = domain.apply(session, command, now, _new_seed)
                if transition.changed:
                    state = codec.command_to_state(command)
                    await self._record(uow, session, transition, "", state, now)
                    session = transition.session
            await uow.commit()
        self._cache.drop(game_id)
        if transition is not None and transition.changed:
            assert command is not None
            metrics.count(command.action.value, transition)
            log.info("seat_location", game_id=game_id, player=player, action=command.action.value)
            self._on_commit()
            self._watchers.notify(game_id)
        return session

    async def recheck_locations(self, limit: int = 200) -> int:
        """Check again, with their last known address, the connected seats of real-money
        games whose last check is older than the interval. Returns how many were asked."""
        now = self._clock.now()
        async with self._uow() as uow:
            due = await uow.games.locations_due(now - self._recheck_every, limit)
        for game_id, player in due:
            await self._recheck_seat(game_id, player)
        return len(due)

    async def _recheck_seat(self, game_id: str, player: int) -> None:
        async with self._uow() as uow:
            row = await uow.games.get(game_id)
        if row is None:
            return
        session = _session_of(row)
        known = session.located[player]
        if known is None or session.status is not Status.IN_PROGRESS:
            return
        origin = Origin(known.residence, ClientSignals(address=known.address))
        if not self._location_due(session, player, origin, self._clock.now()):
            return  # checked meanwhile (a call, another replica)
        try:
            await self._locate(session, player, session.seats[player].account_id, origin)
        except FailedPrecondition:
            log.info("seat_location_blocked", game_id=game_id, player=player)
        except Unavailable as error:  # left due: the player's next call is checked (or refused)
            log.warning("seat_location_unchecked", game_id=game_id, player=player, error=str(error))

    async def close_clients(self) -> None:
        """Close the channels to geo, the wallet and analysis (the service is stopping)."""
        await self._geo.close()
        if self._wallet is not None:
            await self._wallet.close()
        await self._analyst.close()

    async def run_location_checks(self, interval_seconds: float) -> None:
        """Background loop: the periodic re-check of real-money seats (NJAC 13:69O-1.2(e))."""
        while True:
            try:
                await self.recheck_locations()
            except Exception as error:  # keep checking after a database hiccup
                log.warning("location_checks_failed", error=repr(error))
            await asyncio.sleep(interval_seconds)

    def _write_of(
        self,
        before: Session,
        transition: domain.Transition,
        player: int,
        account_id: str,
        command: dict[str, Any],
        stored: bytes,
        now: datetime,
    ) -> Write:
        """Everything the command's single write statement records."""
        after = transition.session
        to_set, to_clear = timer_changes(before, after)
        command_json = to_sorted_json(command)  # the column's text and the hash's
        return Write(
            session=after,
            expected_version=before.version,
            state=codec.state_json(after),
            actor=player,
            account_id=account_id,
            command=command_json,
            command_hash=_hash_text(command_json),
            event_type=transition.facts[0].DESCRIPTOR.full_name,
            view=stored,
            events=self._envelopes(after.game_id, transition, now),
            timers_set=to_set,
            timers_cleared=to_clear,
            seeds=[
                (e.game_number, commitment(e.seed), e.seed, e.roll_count) for e in transition.ended
            ],
        )

    async def _read(self, game_id: str) -> Session:
        row = await self._fast.read(game_id)
        if row is None:
            raise NotFound(f"no game {game_id}")
        state = row["state"]
        return codec.session_from_state(
            row["game_id"],
            row["version"],
            row["status"],
            row["updated_at"],
            json.loads(state) if isinstance(state, str) else state,
            row["seed"],
            located_of(row),
        )

    def _envelopes(
        self, game_id: str, transition: domain.Transition, now: datetime
    ) -> list[tuple[str, str, str, bytes, dict[str, str]]]:
        wrapped = [
            Envelope.wrap(topic=domain.TOPIC, key=game_id, message=f, source=self._source, now=now)
            for f in transition.facts
        ]
        return [(e.event_id, e.topic, e.ce_type, e.payload, e.headers) for e in wrapped]

    async def _retried(
        self,
        game_id: str,
        current: int,
        expected: int | None,
        account_id: str,
        command: dict[str, Any],
    ) -> game_pb2.Game:
        """The stored answer of a retried command, or a clear refusal of a stale one."""
        if expected is not None and expected < current:
            async with self._uow() as uow:
                done = await uow.actions.at(game_id, expected + 1)
            if done and done.account_id == account_id and done.command_hash == _hash(command):
                return complete(done.view)
        raise Conflict(
            f"the game is at version {current}, not {expected}: reload it and decide again"
        )

    async def _record(
        self,
        uow: GameUnitOfWork,
        before: Session | None,
        transition: domain.Transition,
        account_id: str,
        command: dict[str, Any],
        now: datetime,
        seen: int | None = None,
    ) -> game_pb2.Game:
        """Save the new state, log the action, sync timers, archive seeds, publish events."""
        after = transition.session
        if before is not None and not await uow.games.save(_saved(after), before.version, seen):
            raise Conflict("the game changed meanwhile: reload it and decide again")
        stored = stored_view(after)
        uow.changed(after.game_id)
        await uow.actions.append(
            after.game_id,
            ActionRow(
                after.version,
                account_id,
                command,
                _hash(command),
                transition.facts[0].DESCRIPTOR.full_name,
                stored,
                now,
            ),
        )
        if transition.ended:
            await uow.seeds.add(
                after.game_id,
                [
                    SeedRow(
                        e.game_number,
                        commitment(e.seed),
                        e.seed,
                        after.client_seed,
                        e.roll_count,
                        now,
                    )
                    for e in transition.ended
                ],
            )
        to_set, to_clear = timer_changes(before, after)
        for kind, due in to_set:
            await uow.timers.set(after.game_id, kind, due)
        if to_clear:
            await uow.timers.clear(after.game_id, to_clear)
        for fact in transition.facts:
            uow.publish(domain.TOPIC, after.game_id, fact)
        self._cache.drop(after.game_id)
        return complete_for(after, stored)

    # ------------------------------------------------------------ wallet

    async def _claim_stakes(self, session: Session) -> None:
        """A real-money session is created only on both seats' stakes, held by the wallet
        (a play-money one whose seats name holds is claimed the same way).

        The holds are the caller's (matchmaking places them with PlaceHold and releases
        them if the game is refused). The wallet checks them and binds them to this game
        id, so no other game can start on them; a refusal changes nothing. The id comes
        from the idempotency key when there is one, so a retry claims for the same game.
        """
        rules = session.rules
        if rules.currency == domain.PLAY_MONEY and (
            self._wallet is None or not all(seat.hold_id for seat in session.seats)
        ):
            return  # play money seated by matchmaking is held (and claimed) like real money
        unheld = [seat.display_name for seat in session.seats if not seat.hold_id]
        if unheld:
            raise FailedPrecondition(
                f"a {rules.currency} game starts only on stakes held by the wallet: no hold_id "
                f"for {', '.join(unheld)}; place each with the wallet's PlaceHold at table "
                f"{session.table_id} and name it in Player.hold_id"
            )
        assert self._wallet is not None  # create_game refused real money without one
        await self._wallet.claim_holds(
            session.table_id,
            session.game_id,
            [(seat.account_id, seat.hold_id) for seat in session.seats],
            domain.opening_hold(rules),
            rules.currency,
        )

    async def _secure_stakes(
        self, game_id: str, account_id: str, expected: int, action: Action, origin: Origin
    ) -> int:
        """Before a cube action is applied, hold what the acting player is agreeing to.

        Double: the doubler's hold grows to the largest loss at the doubled cube, and the
        opponent must be able to cover it too. Take: the taker's hold grows to the largest
        loss at the new cube. Beaver: the beaver's hold grows to the largest loss at four
        times the cube, and the doubler must be able to cover it. When the wallet refuses,
        the action is refused and nothing changes: a doubled player can still drop, which
        the hold already covers. So no position exists that a player's hold does not
        cover, and nobody can lose more than is held. The command is first tried on the
        session, so a call the game would refuse anyway moves no money; a call at a stale
        version is left to the apply, which answers it as a retry or refuses it. The
        player's location comes first (real money): the version the action applies at is
        returned, one on when a blocked seat came back in this very call.
        """
        # The session the apply will use: this process's copy at that version, else one
        # autocommit read on the command path's pool (no transaction to open and roll back).
        session = self._cache.get(game_id, expected)
        if session is None:
            session = await self._read(game_id)
            self._cache.put(session)  # read at a known version: the apply finds it there
        if session.version != expected:
            return expected
        player = session.seat_of(account_id)
        # Where the player is comes before any money is held for the action.
        located = await self._locate(session, player, account_id, origin)
        if located.version != session.version:
            if not _came_back(session, located, player):
                return expected  # changed meanwhile: the apply answers the stale call
            session, expected = located, located.version  # their own return, in this call
        domain.apply(session, Command(action, player), self._clock.now(), _new_seed)
        factor = 4 if action is Action.BEAVER else 2
        amount = domain.cover_needed(session, session.game.cube.value * factor)
        if amount == 0:
            return expected  # matches risk no more than the stake, held from the start
        if self._wallet is None:
            if session.rules.currency != domain.PLAY_MONEY:
                raise FailedPrecondition("real-money cube actions need the wallet service")
            log.info("cube_without_wallet", game_id=game_id, currency=session.rules.currency)
            return expected
        if action is not Action.TAKE:
            await self._require_cover(session, session.seats[1 - player], amount, action)
        await self._hold_for(session, session.seats[player], amount, action)
        return expected

    async def _require_cover(
        self, session: Session, seat: Seat, amount: int, action: Action
    ) -> None:
        assert self._wallet is not None
        cover = await self._wallet.can_cover(
            seat.account_id, amount, session.rules.currency, seat.hold_id
        )
        if not cover.ok:
            raise FailedPrecondition(
                f"{seat.display_name} cannot cover the {action.value}: {cover.reason}"
            )

    async def _hold_for(self, session: Session, seat: Seat, amount: int, action: Action) -> None:
        """Raise ``seat``'s stake hold to ``amount`` or refuse ``action``; a play-money seat
        without a hold only has to be able to cover it."""
        assert self._wallet is not None
        if not seat.hold_id:
            if session.rules.currency != domain.PLAY_MONEY:
                raise FailedPrecondition(
                    f"{seat.display_name} has no stake hold in this game: no cube action"
                )
            await self._require_cover(session, seat, amount, action)
            return
        key = f"{session.game_id}:{session.version}:{seat.account_id}"
        try:
            await self._wallet.raise_hold(
                seat.hold_id, amount, session.rules.currency, session.game_id, key
            )
        except FailedPrecondition as refusal:
            then = (
                "; you may still drop, or add funds and take again" if action is Action.TAKE else ""
            )
            raise FailedPrecondition(
                f"{seat.display_name} cannot {action.value}: the stake could not be held "
                f"({refusal}); nothing changed{then}"
            ) from None

    # ------------------------------------------------------------ timers and presence

    async def fire_due_timers(self, limit: int = 100) -> int:
        """Fire due timers (clock and reconnect); each in its own transaction. Returns how many."""
        fired = 0
        for _ in range(limit):
            if not await self._fire_one():
                break
            fired += 1
        return fired

    async def _fire_one(self) -> bool:
        now = self._clock.now()
        waiting: _AwaitAnalysis | None = None
        fired: domain.Transition | None = None
        async with self._uow() as uow:
            claimed = await uow.timers.claim_due(now)
            if claimed is None:
                return False
            game_id, kind = claimed
            row = await uow.games.get(game_id, lock=True)
            assert row is not None  # the claim locked it
            await uow.timers.clear(game_id, [kind])
            try:
                if kind == VALUE_TIMER:
                    await self._value_stop(uow, _session_of(row), now)
                else:
                    fired = await self._apply_timer(uow, _session_of(row), kind, now)
            except _AwaitAnalysis as wait:
                # The settlement stays due: its timer row, due again at the next try, is
                # what a restarted process finds (nothing is kept in memory).
                waiting = wait
                await uow.timers.set(game_id, kind, wait.retry_at)
            await uow.commit()
        if waiting is not None:
            log.warning(
                "settlement_awaits_analysis",
                game_id=game_id,
                retry_at=waiting.retry_at.isoformat(),
                error=waiting.reason,
            )
            failpoint("game.settlement.awaiting_analysis")
            return True
        if fired is not None:
            log.info("timer_fired", game_id=game_id, kind=kind, version=fired.session.version)
            metrics.TIMERS_FIRED.labels(kind.rstrip("01")).inc()
            action = Action.TIMEOUT if kind == CLOCK_TIMER else Action.SETTLE
            metrics.count(action.value, fired)
        self._watchers.notify(game_id)
        return True

    async def _apply_timer(
        self, uow: GameUnitOfWork, session: Session, kind: str, now: datetime
    ) -> domain.Transition | None:
        """The timer's command applied and recorded; None when it no longer changes anything."""
        if session.status is not Status.IN_PROGRESS:
            return None
        command = await self._timer_command(session, kind, now)
        if command is None:
            return None
        transition = domain.apply(session, command, now, _new_seed)
        if not transition.changed:
            return None
        await self._record(uow, session, transition, "", codec.command_to_state(command), now)
        return transition

    async def _timer_command(self, session: Session, kind: str, now: datetime) -> Command | None:
        if kind == CLOCK_TIMER:
            awaiting = session.awaiting
            return None if awaiting is None else Command(Action.TIMEOUT, awaiting)
        player = int(kind.removeprefix("reconnect"))
        if not domain.settles_by_shares(session, player, now):
            return Command(Action.SETTLE, player)  # back in time, or nothing to settle
        settlement = await self._settlement(session, player, now)
        return Command(
            Action.SETTLE,
            player,
            shares=settlement.shares,
            analysed=settlement.analysed,
            figures=settlement.figures,
        )

    async def _settlement(self, session: Session, player: int, now: datetime) -> Settlement:
        """The analysis service's shares; while it cannot answer, ``_AwaitAnalysis`` (try
        again later) until ``analysis_wait`` has passed since the reconnect deadline, then
        the even split marked "not analysed". The game row stays locked during the call,
        so the shares are those of the position that is settled."""
        deadline = session.presence[player].deadline
        assert deadline is not None  # settles_by_shares checked it
        position = _settled_position(session)
        return await self._valued(position, deadline, now, "the reconnect window closed")

    async def _valued(
        self, position: SettledPosition, since: datetime, now: datetime, after: str
    ) -> Settlement:
        """The analysis service's shares of ``position``; ``_AwaitAnalysis`` while it cannot
        answer and ``analysis_wait`` has not passed since ``since``; then the even split."""
        try:
            return await self._analyst.settle(position)
        except AnalysisUnavailable as error:
            give_up = since + self._analysis_wait
            if now < give_up:
                raise _AwaitAnalysis(min(now + self._analysis_retry, give_up), str(error)) from None
            waited = (now - since).total_seconds()
            return not_analysed(
                position.on_roll,
                f"even split: the analysis service could not be reached for {waited:.0f} s "
                f"after {after} ({error})",
            )

    async def _value_stop(self, uow: GameUnitOfWork, session: Session, now: datetime) -> None:
        """Publish ``StopValued`` for a session that ended by a timeout or a resignation.

        After the end, never before it: the end and its settlement were committed and
        published already, so the valuation neither delays nor changes them. The same
        analysis call and fallback as a disconnection's, counted from the session's end;
        the game row (over, so nothing else writes it) stays locked during the call.
        """
        outcome = session.last_outcome
        if session.status is not Status.FINISHED or outcome is None or outcome.stopped is None:
            return
        stopped = outcome.stopped
        position = SettledPosition(
            stopped.position_id,
            stopped.gnubg_match_id,
            stopped.on_roll,
            session.rules.match_length,
            stopped.race,
        )
        valued = await self._valued(position, session.updated_at, now, "the session ended")
        fact = facts.stop_valued(
            session, outcome, stopped, valued.shares, valued.analysed, valued.figures, now
        )
        uow.publish(domain.TOPIC, session.game_id, fact)
        log.info("stop_valued", game_id=session.game_id, analysed=valued.analysed)

    async def sweep_presence(self, limit: int = 200) -> int:
        """Mark players silent for longer than the presence silence as disconnected."""
        now = self._clock.now()
        async with self._uow() as uow:
            silent = await uow.games.silent_players(now - self._silence, limit)
        for game_id, player in silent:
            await self._system_command(game_id, Command(Action.DISCONNECT, player), now)
        return len(silent)

    async def _system_command(self, game_id: str, command: Command, now: datetime) -> None:
        async with self._uow() as uow:
            row = await uow.games.get(game_id, lock=True, skip_locked=True)
            if row is None:
                return  # busy: a player is acting on it, so someone is there
            session = _session_of(row)
            if now - row.seen[command.player] < self._silence:
                return  # seen again meanwhile
            transition = domain.apply(session, command, now, _new_seed)
            if not transition.changed:
                return
            await self._record(uow, session, transition, "", codec.command_to_state(command), now)
            await uow.commit()
        metrics.count(command.action.value, transition)
        log.info("player_disconnected", game_id=game_id, player=command.player)
        self._watchers.notify(game_id)

    async def hold_pool(self) -> None:
        """Runs for the life of the server; closes the command path's pool at shutdown."""
        try:
            await asyncio.Event().wait()
        finally:
            await self._fast.close()

    async def run_timers(self, interval_seconds: float) -> None:
        """Background loop: fire due timers every ``interval_seconds``."""
        while True:
            try:
                await self.fire_due_timers()
            except Exception as error:  # keep firing after a database hiccup
                log.warning("timers_failed", error=repr(error))
            await asyncio.sleep(interval_seconds)

    async def run_presence(self, interval_seconds: float) -> None:
        while True:
            try:
                await self.sweep_presence()
            except Exception as error:
                log.warning("presence_sweep_failed", error=repr(error))
            await asyncio.sleep(interval_seconds)

    # ------------------------------------------------------------ watching

    async def watch(
        self,
        game_id: str,
        account_id: str,
        since_version: int,
        origin: Origin = NOWHERE,
        since_chat_seq: int = 0,
    ) -> AsyncIterator[Update]:
        """A snapshot, then every change in version order; a player's open stream is presence.

        Table chat rides on the same stream: the messages after ``since_chat_seq`` (the
        latest 100), then each new one, except those of a sender the watcher muted.

        In a real-money game the stream is presence only from where the player may play:
        opening it and keeping it open check the seat's location as a heartbeat does; a
        stream that cannot be located (blocked, geo out of reach) still shows the game.
        """
        # Registered before the first read: a change committed from here on wakes it.
        event = self._watchers.event(game_id)
        view = await self.get_game(game_id)
        player = _seat_index(view, account_id)
        real_money = view.rules.stake.currency != domain.PLAY_MONEY
        if player is not None and (real_money or not view.players[player].connected):
            # Too late to come back, or not from there: the player may still watch.
            with contextlib.suppress(FailedPrecondition, Unavailable):
                if real_money:
                    await self.heartbeat(game_id, account_id, origin)
                    view = await self.get_game(game_id)
                else:
                    view = await self.reconnect(game_id, account_id, origin)
        async with self._uow() as uow:
            history = await self.chat.delivered_after(uow, game_id, since_chat_seq, account_id)
        # Read before the first yield: a client may move the clock on once it has the snapshot.
        touched = self._clock.now()
        yield Update(view, "")
        last = max(view.version, since_version)
        chat_seq = since_chat_seq
        for message in history:
            chat_seq = message.seq
            yield Update(None, CHAT_POSTED, message)
        loop = asyncio.get_running_loop()
        read_by = loop.time() + self._watch_fallback
        while view.status == game_pb2.GAME_STATUS_IN_PROGRESS:
            # Woken by a change (this replica's commit or any replica's NOTIFY); the
            # fallback read only covers a notification lost while the listener was away.
            wait = read_by - loop.time()
            if player is not None:
                wait = min(wait, (touched + self._silence / 3 - self._clock.now()).total_seconds())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), timeout=max(wait, 0.0))
            # An open stream is presence; refreshing it a few times per silence period is enough.
            if player is not None and self._clock.now() - touched >= self._silence / 3:
                touched = self._clock.now()
                if not real_money:
                    await self._touch(game_id, player)
                else:
                    with contextlib.suppress(FailedPrecondition, Unavailable):
                        await self.heartbeat(game_id, account_id, origin)
            if not event.is_set() and loop.time() < read_by:
                continue  # only the presence was due
            if event.is_set():
                # A commit here wakes the stream twice: at once, then by its own NOTIFY a
                # moment later. Waiting for that second wake before registering again
                # makes the two (and a burst of changes) one read instead of two.
                await asyncio.sleep(WAKE_COALESCE_SECONDS)
            event = self._watchers.event(game_id)  # before the read: what follows it wakes
            read_by = loop.time() + self._watch_fallback
            async with self._uow() as uow:
                rows = await uow.actions.after(game_id, last)
                said = await self.chat.delivered_after(uow, game_id, chat_seq, account_id)
            for message in said:
                chat_seq = message.seq
                yield Update(None, CHAT_POSTED, message)
            for row in rows:
                view = complete(row.view)
                last = row.version
                yield Update(view, row.event_type)

    def listener(self, database_url: str) -> ChannelListener:
        """The process's LISTEN connection: every replica's committed changes wake the
        streams here; on each (re)connection every stream looks once (some may be missed)."""
        return ChannelListener(
            database_url,
            CHANGES_CHANNEL,
            on_message=self._watchers.notify,
            on_connect=self._watchers.notify_all,
        )

    async def _touch(self, game_id: str, player: int) -> None:
        await self._fast.touch(game_id, player, self._clock.now())

    # ------------------------------------------------------------ record

    async def match_record(self, game_id: str) -> game_pb2.MatchRecord:
        """The .mat export (replayed from the action log) and the revealed dice seeds."""
        async with self._uow() as uow:
            row = await uow.games.get(game_id)
            if row is None:
                raise NotFound(f"no game {game_id}")
            if row.status != Status.FINISHED.value:
                raise FailedPrecondition("the record and dice seeds are revealed once it is over")
            actions = await uow.actions.after(game_id, 0)
            seeds = await uow.seeds.of(game_id)
        stored = _session_of(row)
        replayed, games = replay(actions, {s.game_number: s.server_seed for s in seeds})
        if replayed.version != stored.version or replayed.score != stored.score:
            log.error("replay_mismatch", game_id=game_id)
            raise FailedPrecondition("the action log does not replay to the stored game")
        header = MatHeader(
            site="Tavla",
            player1=stored.seats[0].display_name,
            player2=stored.seats[1].display_name,
            event_date=stored.created_at.date(),
            stake_minor=stored.rules.stake_minor,
            currency=stored.rules.currency,
        )
        record = game_pb2.MatchRecord(
            game_id=game_id,
            record_id=game_id,
            mat_text=export_match(header, stored.rules.match_rules(), games),
            dice_seeds=[
                game_pb2.DiceSeed(
                    game_number=s.game_number,
                    commitment=s.commitment,
                    server_seed=s.server_seed.hex(),
                    client_seed=s.client_seed,
                    roll_count=s.roll_count,
                )
                for s in seeds
            ],
        )
        record.finished_at.FromDatetime(stored.updated_at)
        return record


# Game ids derived from CreateGame idempotency keys (a retry claims holds for the same id).
_GAME_ID_NAMESPACE = uuid.UUID("6a0f4a8e-2b7c-4f57-9a43-0c7e2f1d9b35")


class _AwaitAnalysis(Exception):
    """A settlement waits for the analysis service: try again at ``retry_at``."""

    def __init__(self, retry_at: datetime, reason: str) -> None:
        super().__init__(reason)
        self.retry_at = retry_at
        self.reason = reason


def _new_game_id(idempotency_key: str) -> str:
    if idempotency_key:
        return str(uuid.uuid5(_GAME_ID_NAMESPACE, idempotency_key))
    return str(uuid.uuid4())


def _new_seed() -> bytes:
    return secrets.token_bytes(32)


ALL_TIMERS = [CLOCK_TIMER, "reconnect0", "reconnect1"]


def timer_changes(
    before: Session | None, after: Session
) -> tuple[list[tuple[str, datetime]], list[str]]:
    """Timer rows to set (kind, due) and kinds to clear, going from ``before`` to ``after``."""
    if after.status is not Status.IN_PROGRESS:
        stopped = after.last_outcome is not None and after.last_outcome.stopped is not None
        if stopped and after.status is Status.FINISHED and before is not None:
            return [(VALUE_TIMER, after.updated_at)], ALL_TIMERS  # value where it stopped
        return [], ALL_TIMERS
    to_set: list[tuple[str, datetime]] = []
    to_clear: list[str] = []
    expiry = after.expires_at()
    if expiry is not None and (before is None or before.expires_at() != expiry):
        to_set.append((CLOCK_TIMER, expiry))
    elif expiry is None and before is not None and before.expires_at() is not None:
        to_clear.append(CLOCK_TIMER)
    for player in (0, 1):
        deadline = after.presence[player].deadline
        if (None if before is None else before.presence[player].deadline) == deadline:
            continue
        if deadline is None:
            to_clear.append(_reconnect_timer(player))
        else:
            to_set.append((_reconnect_timer(player), deadline))
    return to_set, to_clear


def _same_table(view: game_pb2.Game, requested: Session) -> game_pb2.Game:
    """The game an idempotency key already created, if the request was the same table."""
    accounts = [p.account_id for p in view.players]
    if view.table_id != requested.table_id or accounts != [s.account_id for s in requested.seats]:
        raise Conflict(
            f"this idempotency key already created game {view.game_id} for another table"
        )
    return view


def _came_back(before: Session, after: Session, player: int) -> bool:
    """Whether ``after`` is ``before`` with just ``player``'s blocked seat brought back (the
    one change a player's call makes on their behalf before their own command)."""
    was, now = before.presence[player], after.presence[player]
    return after.version == before.version + 1 and bool(was.blocked) and now.connected


def _present_or_over(session: Session, player: int) -> bool:
    """A heartbeat only refreshes presence: the player is connected, or nothing is left."""
    return session.presence[player].connected or session.status is not Status.IN_PROGRESS


def _seat_index(view: game_pb2.Game, account_id: str) -> int | None:
    for index, player in enumerate(view.players):
        if player.account_id == account_id:
            return index
    return None


def _settled_position(session: Session) -> SettledPosition:
    game = session.game
    return SettledPosition(
        position_id=position_id(game.board),
        gnubg_match_id=match_id_of(game, session.score),
        on_roll=game.turn,
        match_length=session.rules.match_length,
        race=game.board.is_race(),
    )


def replay(actions: list[ActionRow], seeds: dict[int, bytes]) -> tuple[Session, list[Any]]:
    """Rebuild a session from its action log; returns it and its finished games (with history)."""
    if not actions or actions[0].command.get("action") != CREATE:
        raise InvalidArgument("an action log starts with the game's creation")
    first = actions[0]
    created = first.command
    transition = domain.create(
        game_id="replay",
        table_id=created["table_id"],
        rules=codec.rules_from_state(created["rules"]),
        seats=codec.seats_from_state(created["seats"]),
        client_seed=created["client_seed"],
        seed=seeds[1],
        now=first.occurred_at,
    )
    session = transition.session
    finished: list[Any] = []
    for row in actions[1:]:
        next_seed = seeds.get(session.game_number + 1, b"")
        step = domain.apply(
            session,
            codec.command_from_state(row.command),
            row.occurred_at,
            partial(bytes, next_seed),
        )
        finished.extend(ended.game for ended in step.ended)
        session = step.session
    return session, finished


__all__ = ["NOWHERE", "GameService", "Origin", "Update", "replay", "timer_changes"]
