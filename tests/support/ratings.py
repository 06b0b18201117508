"""Helpers for the ratings tests: game results as the game service publishes them, and waits.

The events are built with the game's protos, field by field as
``services/game/facts.py`` fills them (``game_ended``, ``match_ended``), and sent
to ``tavla.game.v1`` keyed by game id with CloudEvents headers, as the game's
outbox relay sends them.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime
from typing import Any

import asyncpg
from google.protobuf.timestamp_pb2 import Timestamp

from services.kit.events.envelope import Envelope
from services.matchmaking.ratings.consumer import GAME_TOPIC, RATINGS_GROUP
from tavla.common.v1 import money_pb2
from tavla.game.v1 import events_pb2 as game_events
from tavla.game.v1 import game_pb2
from tests.support.kafka import consumed_past, mark_partitions, publish


def new_player() -> str:
    return str(uuid.uuid4())


def _now() -> Timestamp:
    stamp = Timestamp()
    stamp.FromDatetime(datetime.now(UTC))
    return stamp


def _players(winner: str, loser: str) -> list[game_pb2.Player]:
    # Seated ratings travel in the events but are not what the formula uses (the stored ones are).
    return [
        game_pb2.Player(account_id=winner, display_name=winner[:8], rating=1500.0, hold_id="h1"),
        game_pb2.Player(account_id=loser, display_name=loser[:8], rating=1500.0, hold_id="h2"),
    ]


def _shares(shares: dict[str, str] | None) -> list[game_events.SettlementShare]:
    return [
        game_events.SettlementShare(account_id=account, share=share)
        for account, share in (shares or {}).items()
    ]


def match_ended(
    winner: str,
    loser: str,
    length: int,
    *,
    currency: str = "USD",
    reason: int = game_pb2.END_REASON_BORNE_OFF,
    shares: dict[str, str] | None = None,
    game_id: str | None = None,
    rated: bool = False,
) -> game_events.MatchEnded:
    game_id = game_id or str(uuid.uuid4())
    return game_events.MatchEnded(
        game_id=game_id,
        version=97,
        table_id=f"table-{game_id[:8]}",
        match_length=length,
        winner_account_id=winner,
        loser_account_id=loser,
        final_score=[length, max(length - 2, 0)],
        reason=reason,  # type: ignore[arg-type]
        stake=money_pb2.Money(minor_units=1000, currency=currency),
        players=_players(winner, loser),
        record_id=game_id,
        games_played=3,
        shares=_shares(shares),
        analysed=shares is not None,
        occurred_at=_now(),
        rated=rated,
    )


def game_ended(
    winner: str,
    loser: str,
    *,
    kind: int = game_pb2.PLAY_KIND_MONEY_GAME,
    currency: str = "USD",
    reason: int = game_pb2.END_REASON_BORNE_OFF,
    shares: dict[str, str] | None = None,
    game_id: str | None = None,
    game_number: int = 1,
) -> game_events.GameEnded:
    game_id = game_id or str(uuid.uuid4())
    disconnection = reason == game_pb2.END_REASON_DISCONNECTION
    return game_events.GameEnded(
        game_id=game_id,
        version=41,
        table_id=f"table-{game_id[:8]}",
        game_number=game_number,
        kind=kind,  # type: ignore[arg-type]
        winner_account_id=winner,
        loser_account_id=loser,
        result=game_pb2.RESULT_TYPE_UNSPECIFIED if disconnection else game_pb2.RESULT_TYPE_SINGLE,
        cube_value=1,
        points=0 if disconnection else 1,
        reason=reason,  # type: ignore[arg-type]
        stake=money_pb2.Money(minor_units=500, currency=currency),
        players=_players(winner, loser),
        score=[1, 0] if kind == game_pb2.PLAY_KIND_MATCH else [],
        position_id="4HPwATDgc/ABMA",
        gnubg_match_id="cIkqAAAAAAAA",
        shares=_shares(shares),
        analysed=shares is not None,
        occurred_at=_now(),
    )


def envelope(message: game_events.GameEnded | game_events.MatchEnded) -> Envelope:
    return Envelope.wrap(
        topic=GAME_TOPIC, key=message.game_id, message=message, source="game",
        now=datetime.now(UTC),
    )


async def publish_results(bootstrap: str, *messages: Envelope) -> None:
    await publish(bootstrap, messages)


async def wait_all_consumed(bootstrap: str, timeout: float = 120.0) -> None:
    """Returns once the ratings group consumed everything on the game topic published so far."""
    marks = await mark_partitions(bootstrap, GAME_TOPIC, game_events.DiceRolled())
    async with asyncio.timeout(timeout):
        while not await consumed_past(bootstrap, RATINGS_GROUP, GAME_TOPIC, marks):
            await asyncio.sleep(0.2)


async def query(url: str, sql: str, *arguments: Any) -> list[Any]:
    connection = await asyncpg.connect(url.replace("postgresql+asyncpg", "postgresql"))
    try:
        rows: list[Any] = await connection.fetch(sql, *arguments)
    finally:
        await connection.close()
    return rows
