"""Helpers for lobby tests: the matchmaking service in-process beside real wallet, game and
geo services, table requests, ratings written as the ratings consumer would, and the
anti-abuse verdicts published on the real broker."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime

from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from services.kit.events.envelope import Envelope
from services.matchmaking import main as matchmaking_main
from services.matchmaking.consumers import ANTIABUSE_TOPIC
from tavla.antiabuse.v1 import events_pb2 as antiabuse_events
from tavla.common.v1 import money_pb2
from tavla.game.v1 import game_pb2
from tavla.matchmaking.v1 import matchmaking_pb2, matchmaking_pb2_grpc
from tests.support.identity import as_player
from tests.support.kafka import publish
from tests.support.services import RunningService, fast_settings, start_service


async def start_matchmaking(
    database_url: str,
    bootstrap: str,
    *,
    wallet_address: str,
    game_address: str,
    geo_address: str,
    wave_seconds: float = 0.2,
) -> RunningService:
    """Matchmaking calling the given wallet, game and geo services (geo "" = not configured);
    the queue's waves run every ``wave_seconds``."""
    settings = matchmaking_main.MatchmakingSettings(
        wallet_address=wallet_address,
        game_address=game_address,
        claim_seconds=60.0,
        wave_seconds=wave_seconds,
        watch_poll_seconds=0.1,
        geo_environ={"TAVLA_GEO_ADDRESS": geo_address} if geo_address else {},
    )
    return await start_service(
        fast_settings("matchmaking", database_url, bootstrap),
        lambda runtime: matchmaking_main.wiring(runtime, settings),
    )


def new_player() -> str:
    return str(uuid.uuid4())


def table_request(
    *,
    stake: int = 500,
    currency: str = "USD",
    match_length: int = 0,
    min_rating: int = 0,
    max_rating: int = 0,
    invited: str = "",
    key: str = "",
) -> matchmaking_pb2.CreateTableRequest:
    kind = game_pb2.PLAY_KIND_MATCH if match_length else game_pb2.PLAY_KIND_MONEY_GAME
    return matchmaking_pb2.CreateTableRequest(
        rules=game_pb2.TableRules(
            kind=kind,
            match_length=match_length,
            stake=money_pb2.Money(minor_units=stake, currency=currency),
        ),
        idempotency_key=key or uuid.uuid4().hex,
        rating_range=matchmaking_pb2.RatingRange(min_rating=min_rating, max_rating=max_rating),
        invited_account_id=invited,
    )


def queue_request(
    *, stake: int, currency: str = "USD", max_difference: int = 0, key: str = ""
) -> matchmaking_pb2.EnterQueueRequest:
    """A money game at ``stake`` (tests keep to a stake of their own: one pool each)."""
    return matchmaking_pb2.EnterQueueRequest(
        rules=game_pb2.TableRules(
            kind=game_pb2.PLAY_KIND_MONEY_GAME,
            stake=money_pb2.Money(minor_units=stake, currency=currency),
        ),
        max_rating_difference=max_difference,
        idempotency_key=key or uuid.uuid4().hex,
    )


async def ticket_reaching(
    stub: matchmaking_pb2_grpc.MatchmakingServiceStub,
    ticket_id: str,
    account_id: str,
    status: int,
    timeout: float = 30.0,
) -> matchmaking_pb2.QueueTicket:
    """The ticket once its status is ``status`` (polled; waves run in the background)."""
    request = matchmaking_pb2.GetQueueTicketRequest(ticket_id=ticket_id)
    async with asyncio.timeout(timeout):
        while True:
            ticket = await stub.GetQueueTicket(request, metadata=as_player(account_id))
            if ticket.status == status:
                return ticket
            await asyncio.sleep(0.1)


def join_request(table_id: str) -> matchmaking_pb2.JoinTableRequest:
    return matchmaking_pb2.JoinTableRequest(table_id=table_id, idempotency_key=uuid.uuid4().hex)


async def set_rating(database_url: str, account_id: str, rating: float, experience: int) -> None:
    """A row of the ``ratings`` table (migration 0002), as the ratings consumer writes it."""
    engine = create_async_engine(database_url)
    try:
        async with engine.begin() as connection:
            await connection.execute(
                text(
                    "INSERT INTO ratings (account_id, rating, experience, updated_at) "
                    "VALUES (:a, :r, :e, now()) ON CONFLICT (account_id) "
                    "DO UPDATE SET rating = :r, experience = :e"
                ),
                {"a": account_id, "r": rating, "e": experience},
            )
    finally:
        await engine.dispose()


async def scalar(database_url: str, sql: str, **values: object) -> object:
    engine = create_async_engine(database_url)
    try:
        async with engine.connect() as connection:
            return (await connection.execute(text(sql), values)).scalar()
    finally:
        await engine.dispose()


def verdict_envelope(
    message: antiabuse_events.PairRestricted | antiabuse_events.PairRestrictionLifted,
) -> Envelope:
    """The verdict as the anti-abuse service's outbox would publish it (keyed by the pair)."""
    message.occurred_at.FromDatetime(datetime.now(UTC))
    pair = ":".join(sorted((message.account_id, message.other_account_id)))
    return Envelope.wrap(
        topic=ANTIABUSE_TOPIC, key=pair, message=message, source="antiabuse",
        now=datetime.now(UTC),
    )


async def publish_verdict(
    bootstrap: str,
    message: antiabuse_events.PairRestricted | antiabuse_events.PairRestrictionLifted,
    times: int = 1,
) -> None:
    """Publish the verdict ``times`` times under one event id (a redelivery)."""
    envelope = verdict_envelope(message)
    await publish(bootstrap, [envelope] * times)
