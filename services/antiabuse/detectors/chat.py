"""Table and lobby chat, after delivery: chat abuse (harassment, spam, not English) and
consulting.

Run on every ``ChatMessagePosted`` and ``LobbyMessagePosted`` from the game service (a
sender's lobby lines are judged with their table lines): the line is kept
(:mod:`services.antiabuse.chat_store`, its English verdict made once), then the
sender's lines over the policy's window are judged by the pure
:mod:`services.antiabuse.domain.chat_abuse`, and each finding goes the common
alert path (the sender's open alert takes the new evidence:
:mod:`services.antiabuse.alerting`).
"""

from __future__ import annotations

from datetime import datetime

from services.antiabuse.alerting import Work, raise_alert
from services.antiabuse.chat_store import ChatLines
from services.antiabuse.domain import chat_abuse as domain
from tavla.game.v1 import events_pb2 as game
from tavla.game.v1 import game_pb2


def chat_line(fact: game.ChatMessagePosted, at: datetime) -> domain.ChatLine:
    delivered = fact.status == game_pb2.CHAT_STATUS_DELIVERED
    return domain.ChatLine(
        message_id=fact.message_id,
        game_id=fact.game_id,
        account_id=fact.account_id,
        recipient=fact.recipient_account_id,
        text=fact.text,
        blocked_reasons=tuple(fact.blocked_reasons),
        muted_by_recipient=fact.muted_by_recipient and delivered,
        english=domain.english(fact.text),
        at=at,
    )


def lobby_line(fact: game.LobbyMessagePosted, at: datetime) -> domain.ChatLine:
    return domain.ChatLine(
        message_id=fact.message_id,
        game_id="",
        account_id=fact.account_id,
        recipient="",
        text=fact.text,
        blocked_reasons=tuple(fact.blocked_reasons),
        muted_by_recipient=False,
        english=domain.english(fact.text),
        at=at,
        room=fact.room,
    )


class ChatAbuse:
    def __init__(self, policy: domain.ChatPolicy = domain.DEFAULT_POLICY) -> None:
        self._policy = policy

    async def posted(self, work: Work, fact: game.ChatMessagePosted, at: datetime) -> None:
        await self._judge(work, chat_line(fact, at))

    async def posted_in_lobby(
        self, work: Work, fact: game.LobbyMessagePosted, at: datetime
    ) -> None:
        await self._judge(work, lobby_line(fact, at))

    async def _judge(self, work: Work, line: domain.ChatLine) -> None:
        if not line.message_id or not line.account_id:
            return
        lines = ChatLines(work.session)
        if not await lines.add(line):
            return  # seen already: its findings were raised then
        recent = await lines.of_sender(line.account_id, line.at - self._policy.window)
        for finding in (
            domain.assess_abuse(recent, self._policy),
            domain.assess_consulting(recent, self._policy),
        ):
            if finding is not None:
                await raise_alert(work, finding)
