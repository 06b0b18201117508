"""Lobby chat use cases: post (moderated before delivery, as table chat), read a page,
watch a room, and mute a player.

Any signed-in player posts in any room, as themselves (the acting account of the call),
unless they excluded themself (FAILED_PRECONDITION until when, read from the game's copy
of the self-exclusions that game creation reads, :mod:`services.kit.self_exclusion`) or
anti-abuse had their account suspended or closed (PERMISSION_DENIED, from the copy of
the accounts service's sanctions, :mod:`services.kit.suspensions`): their access token
may still be valid for minutes, and the lobby is where they would speak to everyone.
Nothing is recorded for either. The other checks are table chat's, in the same order and
with the same refusals: length (nothing recorded), the lobby's rate limit (nothing
recorded), then moderation
(:func:`services.game.moderation.blocked_reasons`: offensive language, links,
solicitation, a repeat of one of the sender's last messages in that room). Every message
past the first two is stored and published as ``LobbyMessagePosted`` on
``tavla.game.v1`` (keyed by room) in one transaction, delivered or blocked; a blocked
one is then refused with the reasons moderation gave.

Watchers on this replica wake on a post; others read the room at their next poll.

A player mutes another (by account id or screen name) for themself, in every room, until
they lift it: the muted player's messages are left out of what the muting player's
streams and pages read (at every read, so an open stream obeys a new mute), and are
still moderated, recorded and published like any other, the event counting the players
who had muted the sender. Only a player the game knows may be muted: one with a screen
name in its copy of accounts' names, or one who has posted in the lobby.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from typing import Protocol

from services.game import domain, lobby, moderation
from services.game.chat_store import BLOCKED, DELIVERED
from services.game.lobby_store import LobbyRepository, LobbyRow
from services.game.store import GameUnitOfWork
from services.kit.clock import Clock
from services.kit.errors import FailedPrecondition, InvalidArgument, NotFound, ResourceExhausted
from services.kit.logging import get_logger
from services.kit.screen_names import account_named, names_of
from services.kit.self_exclusion import excluded_until
from services.kit.suspensions import require_not_suspended
from tavla.game.v1 import events_pb2, game_pb2

log = get_logger(__name__)

_STATUS = {DELIVERED: game_pb2.CHAT_STATUS_DELIVERED, BLOCKED: game_pb2.CHAT_STATUS_BLOCKED}


class Wakeups(Protocol):
    """This replica's watchers by key (the game service's, shared with WatchGame)."""

    def event(self, key: str) -> asyncio.Event: ...

    def notify(self, key: str) -> None: ...


def lobby_message(row: LobbyRow) -> game_pb2.LobbyMessage:
    message = game_pb2.LobbyMessage(
        message_id=row.message_id,
        room=row.room,
        seq=row.seq,
        account_id=row.account_id,
        text=row.text,
        status=_STATUS[row.status],
    )
    message.posted_at.FromDatetime(row.posted_at)
    return message


def _room(room: str) -> lobby.Room:
    found = lobby.room_named(room)
    if found is None:
        raise NotFound(lobby.unknown_room(room))
    return found


def _wake_key(room: str) -> str:
    return f"lobby:{room}"  # never a game id (those are UUIDs)


class LobbyChat:
    def __init__(
        self,
        unit_of_work: Callable[[], GameUnitOfWork],
        *,
        clock: Clock,
        wakeups: Wakeups,
        poll_seconds: float = 1.0,
    ) -> None:
        self._uow = unit_of_work
        self._clock = clock
        self._wakeups = wakeups
        self._poll = poll_seconds

    def rooms(self) -> list[game_pb2.LobbyRoom]:
        return [game_pb2.LobbyRoom(room=r.room, title=r.title, currency=r.currency)
                for r in lobby.ROOMS]

    async def post(self, room: str, account_id: str, sent: str) -> game_pb2.LobbyMessage:
        where = _room(room).room
        text = moderation.normalised(sent)
        problem = moderation.length_problem(text)
        if problem is not None:
            raise InvalidArgument(problem)
        now = self._clock.now()
        async with self._uow() as uow:
            await _may_speak(uow, account_id, now)
            messages = LobbyRepository(uow.session)
            await messages.lock(where)
            limit = lobby.LOBBY_RATE
            too_many = limit.refusal(await messages.sent_since(account_id, limit.since(now)))
            if too_many is not None:
                raise ResourceExhausted(too_many)
            recent = await messages.latest_by(where, account_id, moderation.REPEAT_LOOKBACK)
            # Read as sent: normalising drops the direction controls moderation applies.
            reasons = moderation.blocked_reasons(
                sent, [moderation.Recent(r.text, r.posted_at) for r in recent], now
            )
            row = LobbyRow(
                room=where,
                seq=await messages.next_seq(where),
                message_id=str(uuid.uuid4()),
                account_id=account_id,
                text=text,
                status=BLOCKED if reasons else DELIVERED,
                reasons=reasons,
                posted_at=now,
            )
            await messages.add(row)
            uow.publish(domain.TOPIC, where, _fact(row, await messages.muting(account_id)))
            await uow.commit()
        log.info("lobby_chat_posted", room=where, status=row.status, reasons=",".join(reasons))
        if reasons:
            raise FailedPrecondition(moderation.refusal(reasons))
        self._wakeups.notify(_wake_key(where))
        return lobby_message(row)

    async def page(
        self, room: str, before_seq: int, page_size: int, viewer: str
    ) -> tuple[list[game_pb2.LobbyMessage], int]:
        """Delivered messages before ``before_seq`` (0: the newest), newest first, but for
        those of players ``viewer`` muted, and the ``before_seq`` of the next page (0 when
        this one is the last)."""
        where = _room(room).room
        size = lobby.page_size(page_size)
        if size is None or before_seq < 0:
            raise InvalidArgument(
                f"page_size is 1 to {lobby.MAX_PAGE} (0 for {lobby.DEFAULT_PAGE}) and "
                "before_seq is not negative"
            )
        async with self._uow() as uow:
            rows = await LobbyRepository(uow.session).delivered_before(
                where, before_seq, size, viewer
            )
        more = len(rows) == size and rows[-1].seq > 1
        return [lobby_message(row) for row in rows], rows[-1].seq if more else 0

    def watch(
        self, room: str, since_seq: int, viewer: str
    ) -> AsyncIterator[game_pb2.LobbyMessage]:
        """The room's delivered messages after ``since_seq`` (the latest 100), then each new
        one, until the caller stops reading; never those of a player ``viewer`` muted (read
        at every wake-up, so a mute applies to an open stream). The request is checked
        here, before the stream starts, so a bad one is refused rather than ended."""
        where = _room(room).room
        if since_seq < 0:
            raise InvalidArgument("since_seq is not negative")
        return self._follow(where, since_seq, viewer)

    async def _follow(
        self, where: str, since_seq: int, viewer: str
    ) -> AsyncIterator[game_pb2.LobbyMessage]:
        seq = since_seq
        while True:
            # Taken before the read: a post committed after it wakes this stream.
            event = self._wakeups.event(_wake_key(where))
            async with self._uow() as uow:
                rows = await LobbyRepository(uow.session).delivered_after(
                    where, seq, lobby.HISTORY, viewer
                )
            for row in rows:
                seq = row.seq
                yield lobby_message(row)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), timeout=self._poll)

    async def mute(
        self, account_id: str, target_id: str, target_name: str, muted: bool
    ) -> game_pb2.LobbyMute:
        """``account_id`` mutes (or unmutes) the player named by id or screen name, for
        themself only, in every room, until lifted."""
        problem = lobby.mute_target_problem(account_id, target_id, target_name)
        if problem is not None:
            raise InvalidArgument(problem)
        async with self._uow() as uow:
            target = await _known_player(uow, target_id.strip(), target_name)
            if target == account_id:
                raise InvalidArgument("you cannot mute yourself")
            messages = LobbyRepository(uow.session)
            if muted:
                await messages.set_mute(account_id, target, self._clock.now())
            else:
                await messages.lift_mute(account_id, target)
            name = (await names_of(uow.session, [target])).get(target, "")
            await uow.commit()
        log.info("lobby_chat_muted", muted=muted)
        return game_pb2.LobbyMute(account_id=target, screen_name=name, muted=muted)

    async def mutes(self, account_id: str) -> list[game_pb2.LobbyMute]:
        """The players ``account_id`` has muted in the lobby, oldest mute first."""
        async with self._uow() as uow:
            muted = await LobbyRepository(uow.session).muted_by(account_id)
            names = await names_of(uow.session, muted)
        return [game_pb2.LobbyMute(account_id=a, screen_name=names.get(a, ""), muted=True)
                for a in muted]


async def _known_player(uow: GameUnitOfWork, account_id: str, screen_name: str) -> str:
    """The account named, if the game knows the player: by their screen name (the copy of
    accounts' names) or by a message of theirs in the lobby (one may be muted for what
    they said before their name reached this copy)."""
    if not account_id:
        found = await account_named(uow.session, screen_name)
        if found is None:
            raise NotFound(lobby.unknown_player(account_id, screen_name))
        return found
    if await names_of(uow.session, [account_id]):
        return account_id
    if await LobbyRepository(uow.session).has_posted(account_id):
        return account_id
    raise NotFound(lobby.unknown_player(account_id, screen_name))


async def _may_speak(uow: GameUnitOfWork, account_id: str, now: datetime) -> None:
    """Refuse a self-excluded player, and one whose account is suspended or closed."""
    excluded = await excluded_until(uow.session, [account_id], now)
    if account_id in excluded:
        until = excluded[account_id].astimezone(UTC).isoformat(timespec="seconds")
        raise FailedPrecondition(
            f"you are self-excluded until {until}: the lobby chat is closed to you until then"
        )
    await require_not_suspended(uow.session, account_id, "the lobby chat")


def _fact(row: LobbyRow, muted_by: int) -> events_pb2.LobbyMessagePosted:
    fact = events_pb2.LobbyMessagePosted(
        room=row.room,
        message_id=row.message_id,
        account_id=row.account_id,
        text=row.text,
        status=_STATUS[row.status],
        blocked_reasons=row.reasons,
        seq=row.seq,
        muted_by=muted_by,
    )
    fact.occurred_at.FromDatetime(row.posted_at)
    return fact
