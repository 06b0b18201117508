"""Apply one rated result: both ratings, their history and RatingChanged, in one transaction.

Called inside the consumer's inbox transaction, so the inbox row, the new
ratings, the history rows and the outbox events commit together or not at all.
The formula uses the ratings stored now (locked), not the ratings the players
were seated with: a player whose two matches end together gets both, in turn.
"""

from __future__ import annotations

from datetime import datetime

from google.protobuf.timestamp_pb2 import Timestamp
from sqlalchemy.ext.asyncio import AsyncSession

from services.kit.clock import Clock
from services.kit.events.envelope import Envelope
from services.kit.logging import get_logger
from services.matchmaking.domain.ratings import (
    RatingUpdate,
    Standing,
    display_rating,
    rate_split,
    rate_win,
)
from services.matchmaking.ratings.results import RatedResult
from services.matchmaking.ratings.store import RatingChange, RatingsRepository
from tavla.game.v1 import game_pb2
from tavla.matchmaking.v1 import events_pb2

log = get_logger(__name__)

# Matchmaking's topic (RatingChanged is keyed by account id).
TOPIC = "tavla.matchmaking.v1"


def _update(result: RatedResult, winner: Standing, loser: Standing) -> RatingUpdate:
    if result.winner_share is None:
        return rate_win(winner, loser, result.length, 0)
    return rate_split(winner, loser, result.length, result.winner_share)


def _timestamp(moment: datetime) -> Timestamp:
    stamp = Timestamp()
    stamp.FromDatetime(moment)
    return stamp


class RatingsRecorder:
    def __init__(self, clock: Clock, source: str = "matchmaking") -> None:
        self._clock = clock
        self._source = source

    async def apply(
        self, session: AsyncSession, result: RatedResult, event_id: str
    ) -> list[RatingChange]:
        """Move both ratings for ``result``; nothing (an empty list) if it already counted."""
        store = RatingsRepository(session)
        if await store.already_rated(result.game_id, result.game_number):
            log.info("rating_result_already_applied", game=result.game_id, event_id=event_id)
            return []
        now = self._clock.now()
        standings = await store.lock_standings([result.winner_id, result.loser_id], now)
        winner, loser = standings[result.winner_id], standings[result.loser_id]
        update = _update(result, winner, loser)
        changes = [
            self._change(result, result.winner_id, result.loser_id, True, (winner, loser),
                         update.after[0], event_id),
            self._change(result, result.loser_id, result.winner_id, False, (loser, winner),
                         update.after[1], event_id),
        ]
        for change in changes:
            await store.save(change.account_id, change.after, now)
        await store.record(changes, now)
        await store.publish([self._announce(change, result.reason, now) for change in changes])
        log.info(
            "ratings_changed",
            game=result.game_id,
            reason=result.reason_name,
            changes=[round(c, 4) for c in update.changes],
        )
        return changes

    @staticmethod
    def _change(
        result: RatedResult,
        account_id: str,
        opponent_id: str,
        won: bool,
        before: tuple[Standing, Standing],
        after: Standing,
        event_id: str,
    ) -> RatingChange:
        share = result.winner_share
        return RatingChange(
            account_id=account_id,
            game_id=result.game_id,
            game_number=result.game_number,
            opponent_account_id=opponent_id,
            match_length=result.length,
            won=won,
            share=None if share is None else (share if won else 1.0 - share),
            reason=result.reason_name,
            before=before[0],
            after=after,
            opponent_before=before[1],
            occurred_at=result.occurred_at,
            source_event_id=event_id,
        )

    def _announce(
        self, change: RatingChange, reason: game_pb2.EndReason.ValueType, now: datetime
    ) -> Envelope:
        message = events_pb2.RatingChanged(
            account_id=change.account_id,
            previous_rating=change.before.rating,
            new_rating=change.after.rating,
            experience=change.after.experience,
            game_id=change.game_id,
            occurred_at=_timestamp(now),
            change=change.after.rating - change.before.rating,
            opponent_account_id=change.opponent_account_id,
            match_length=change.match_length,
            reason=reason,
            display=display_rating(change.after.rating),
        )
        return Envelope.wrap(
            topic=TOPIC, key=change.account_id, message=message, source=self._source, now=now
        )
