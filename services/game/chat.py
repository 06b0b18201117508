"""Table chat use cases: post (moderated before delivery), mute, and what a watcher receives.

Only the two seated players post, while the game is in progress; anyone allowed to
watch the game (spectators too) reads the delivered messages on WatchGame, except a
player who muted the sender. Every message that gets past the length and rate checks
is stored and published as ``ChatMessagePosted`` on ``tavla.game.v1`` in one
transaction (the compliance record the anti-abuse service analyses), delivered or
blocked; a blocked one is then refused with the reasons moderation gave.

Chat never reads the game row for update: it reads the seats (a plain read) and
serialises on its own advisory lock, so a move never waits on a message.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from services.game import domain, moderation
from services.game.chat_store import BLOCKED, DELIVERED, ChatRepository, ChatRow
from services.game.codec import session_from_state
from services.game.domain import Session, Status
from services.game.store import GameUnitOfWork
from services.kit.clock import Clock
from services.kit.errors import (
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    ResourceExhausted,
)
from services.kit.logging import get_logger
from tavla.game.v1 import events_pb2, game_pb2

log = get_logger(__name__)

_STATUS = {DELIVERED: game_pb2.CHAT_STATUS_DELIVERED, BLOCKED: game_pb2.CHAT_STATUS_BLOCKED}


def chat_message(row: ChatRow) -> game_pb2.ChatMessage:
    message = game_pb2.ChatMessage(
        message_id=row.message_id,
        game_id=row.game_id,
        seq=row.seq,
        account_id=row.account_id,
        display_name=row.display_name,
        text=row.text,
        status=_STATUS[row.status],
    )
    message.posted_at.FromDatetime(row.posted_at)
    return message


class ChatService:
    def __init__(
        self,
        unit_of_work: Callable[[], GameUnitOfWork],
        *,
        clock: Clock,
        notify: Callable[[str], None],
    ) -> None:
        self._uow = unit_of_work
        self._clock = clock
        self._notify = notify

    async def post(self, game_id: str, account_id: str, sent: str) -> game_pb2.ChatMessage:
        text = moderation.normalised(sent)
        problem = moderation.length_problem(text)
        if problem is not None:
            raise InvalidArgument(problem)
        now = self._clock.now()
        async with self._uow() as uow:
            session = await _session(uow, game_id)
            seat = _seat_of(session, account_id)
            if session.status != Status.IN_PROGRESS:
                raise FailedPrecondition("chat is open only while the game is in progress")
            chat = ChatRepository(uow.session)
            await chat.lock(game_id)
            limit = moderation.TABLE_RATE
            too_many = limit.refusal(await chat.sent_since(account_id, limit.since(now)))
            if too_many is not None:
                raise ResourceExhausted(too_many)
            recent = await chat.latest_by(game_id, account_id, moderation.REPEAT_LOOKBACK)
            # Read as sent: normalising drops the direction controls moderation applies.
            reasons = moderation.blocked_reasons(
                sent, [moderation.Recent(r.text, r.posted_at) for r in recent], now
            )
            opponent = session.seats[1 - seat].account_id
            muted = await chat.muted(game_id, opponent)
            row = ChatRow(
                game_id=game_id,
                seq=await chat.next_seq(game_id),
                message_id=str(uuid.uuid4()),
                account_id=account_id,
                display_name=session.seats[seat].display_name,
                text=text,
                status=BLOCKED if reasons else DELIVERED,
                reasons=reasons,
                muted_for=opponent if muted and not reasons else "",
                posted_at=now,
            )
            await chat.add(row)
            if not reasons:  # a refused message is shown to nobody
                uow.changed(game_id)
            uow.publish(domain.TOPIC, game_id, _fact(session, row, opponent, muted))
            await uow.commit()
        log.info("chat_posted", game_id=game_id, status=row.status, reasons=",".join(reasons))
        if reasons:
            raise FailedPrecondition(moderation.refusal(reasons))
        self._notify(game_id)
        return chat_message(row)

    async def mute(self, game_id: str, account_id: str, muted: bool) -> bool:
        async with self._uow() as uow:
            _seat_of(await _session(uow, game_id), account_id)
            await ChatRepository(uow.session).set_mute(
                game_id, account_id, muted, self._clock.now()
            )
            await uow.commit()
        return muted

    async def delivered_after(
        self, uow: GameUnitOfWork, game_id: str, seq: int, viewer: str
    ) -> list[game_pb2.ChatMessage]:
        """What ``viewer``'s stream shows after ``seq``, in the caller's transaction."""
        rows = await ChatRepository(uow.session).delivered_after(game_id, seq, viewer)
        return [chat_message(row) for row in rows]


async def _session(uow: GameUnitOfWork, game_id: str) -> Session:
    row = await uow.games.get(game_id)
    if row is None:
        raise NotFound(f"no game {game_id}")
    return session_from_state(
        row.game_id, row.version, row.status, row.updated_at, row.state, row.seed, row.located
    )


def _seat_of(session: Session, account_id: str) -> int:
    for index, seat in enumerate(session.seats):
        if seat.account_id == account_id:
            return index
    raise PermissionDenied(
        "only the two players seated at this game can use its chat; spectators can read it"
    )


def _fact(
    session: Session, row: ChatRow, recipient: str, muted: bool
) -> events_pb2.ChatMessagePosted:
    fact = events_pb2.ChatMessagePosted(
        game_id=row.game_id,
        version=session.version,
        message_id=row.message_id,
        table_id=session.table_id,
        account_id=row.account_id,
        recipient_account_id=recipient,
        text=row.text,
        status=_STATUS[row.status],
        blocked_reasons=row.reasons,
        muted_by_recipient=muted,
        seq=row.seq,
    )
    fact.occurred_at.FromDatetime(row.posted_at)
    return fact
