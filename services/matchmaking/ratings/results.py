"""Which finished games move ratings, read from the game service's events.

The policy (also in services/matchmaking/README.md, "Ratings"):

- A match counts once, on its ``MatchEnded``, with n = the match length; a single
  money game counts on its ``GameEnded`` (kind ``PLAY_KIND_MONEY_GAME``) with n = 1.
  The ``GameEnded`` of a game inside a match does not count by itself.
- Play money (currency ``PLAY``) moves no rating: ratings price the real-money
  commission schedule, and a rating that free games could move would let anyone
  buy a cheaper schedule (or dump a rating) for nothing, the manipulation the
  house rules forbid. There is one rating per player, earned with real money.
- A tournament's match is staked on nothing (play money, 0): the tournament holds
  and pays the money. The tournaments service creates the matches of real-money
  tournaments rated (``TableRules.rated``, carried by ``MatchEnded.rated``; only an
  internal caller of the game's ``CreateGame`` can set it), and those count as
  any real-money match does: n = the match length. Play-money tournaments'
  matches are not rated, for the reason above.
- A game or match ends as the game service reports it, and the rating follows:
  borne off, dropped double, resignation, timeout and leaving the table are
  wins for the side named the winner, with the full match length (a forfeited
  5-point match counts 5, so leaving never costs less than losing).
- A disconnection settlement (the reconnect window passed) is what the house
  rules call analysed and split: the rating is split the same way, each side's
  change weighted by its share (:func:`services.matchmaking.domain.ratings.rate_split`).
- A session cancelled before its first move (``GameCancelled``: a player never
  arrived) was never played and moves nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation

from google.protobuf.message import DecodeError

from tavla.game.v1 import events_pb2 as game_events
from tavla.game.v1 import game_pb2

PLAY_MONEY = "PLAY"
# game_number of a whole match in the history (a money game keeps its own number).
MATCH = 0


@dataclass(frozen=True)
class RatedResult:
    """A finished match or money game that moves both players' ratings."""

    game_id: str
    game_number: int
    winner_id: str
    loser_id: str
    length: int
    # Disconnection settlements: the winner's share of the stake (None: a plain win).
    winner_share: float | None
    reason: game_pb2.EndReason.ValueType
    occurred_at: datetime

    @property
    def reason_name(self) -> str:
        """The end reason as the history stores it: "borne_off", "disconnection", ..."""
        if self.reason not in game_pb2.EndReason.values():
            return "unspecified"
        return game_pb2.EndReason.Name(self.reason).removeprefix("END_REASON_").lower()


@dataclass(frozen=True)
class Unrated:
    """Why an event moves no rating; ``fault`` when the event itself is wrong."""

    why: str
    fault: bool = False


def _occurred(message: game_events.GameEnded | game_events.MatchEnded, now: datetime) -> datetime:
    if message.HasField("occurred_at"):
        return message.occurred_at.ToDatetime(tzinfo=UTC)
    return now


def _winner_share(
    reason: int, winner: str, shares: list[game_events.SettlementShare]
) -> float | Unrated | None:
    if reason != game_pb2.END_REASON_DISCONNECTION:
        return None
    by_player = {share.account_id: share.share for share in shares}
    if winner not in by_player:
        return Unrated(f"a disconnection settlement without {winner}'s share", fault=True)
    try:
        share = float(Decimal(by_player[winner]))
    except InvalidOperation:
        return Unrated(f"share {by_player[winner]!r} is not a decimal", fault=True)
    if not (math.isfinite(share) and 0.0 <= share <= 1.0):
        return Unrated(f"share {by_player[winner]!r} is not between 0 and 1", fault=True)
    return share


def _result(
    message: game_events.GameEnded | game_events.MatchEnded,
    game_number: int,
    length: int,
    now: datetime,
    *,
    rated: bool = False,
) -> RatedResult | Unrated:
    if message.stake.currency == PLAY_MONEY and not rated:
        return Unrated("play money moves no rating")
    winner, loser = message.winner_account_id, message.loser_account_id
    if not winner or not loser or winner == loser:
        return Unrated(f"winner {winner!r} and loser {loser!r} are not two players", fault=True)
    if length < 1:
        return Unrated(f"match length {length} is below 1", fault=True)
    share = _winner_share(message.reason, winner, list(message.shares))
    if isinstance(share, Unrated):
        return share
    return RatedResult(
        game_id=message.game_id,
        game_number=game_number,
        winner_id=winner,
        loser_id=loser,
        length=length,
        winner_share=share,
        reason=message.reason,
        occurred_at=_occurred(message, now),
    )


def from_game_ended(payload: bytes, now: datetime) -> RatedResult | Unrated:
    try:
        ended = game_events.GameEnded.FromString(payload)
    except DecodeError as error:
        return Unrated(f"unreadable GameEnded: {error}", fault=True)
    if ended.kind != game_pb2.PLAY_KIND_MONEY_GAME:
        return Unrated("a game of a match counts with its MatchEnded")
    return _result(ended, ended.game_number, 1, now)


def from_match_ended(payload: bytes, now: datetime) -> RatedResult | Unrated:
    try:
        ended = game_events.MatchEnded.FromString(payload)
    except DecodeError as error:
        return Unrated(f"unreadable MatchEnded: {error}", fault=True)
    return _result(ended, MATCH, ended.match_length, now, rated=ended.rated)
