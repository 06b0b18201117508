"""A matchmaking process killed at the ratings consumer's worst moment rates every result once.

Real ``tavla serve matchmaking`` processes on the real PostgreSQL and broker. The
fail point ``matchmaking.ratings.after_db_commit`` SIGKILLs the process right
after a batch of results is committed to the database (inbox rows, ratings,
history, RatingChanged in the outbox) and before the batch's Kafka offsets are:
the next process gets the batch again and must move no rating twice.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from services.matchmaking.ratings.consumer import GAME_TOPIC, RATINGS_GROUP
from services.matchmaking.ratings.recorder import TOPIC as MATCHMAKING_TOPIC
from tavla.game.v1 import events_pb2 as game_events
from tavla.matchmaking.v1 import events_pb2, matchmaking_pb2, matchmaking_pb2_grpc
from tests.support.identity import as_player
from tests.support.kafka import (
    committed_offsets,
    consumed_past,
    publish,
    read_events,
    skip_backlog,
)
from tests.support.processes import ServeProcesses, service_environment
from tests.support.ratings import (
    envelope,
    game_ended,
    match_ended,
    new_player,
    query,
)
from tests.support.services import new_database

KILL_AFTER_RATINGS_COMMIT = "matchmaking.ratings.after_db_commit=kill"
RATING_CHANGED = events_pb2.RatingChanged.DESCRIPTOR.full_name


async def wait_consumed_past(bootstrap: str, records: list[tuple[int, int]]) -> None:
    async with asyncio.timeout(120):
        while not await consumed_past(bootstrap, RATINGS_GROUP, GAME_TOPIC, records):
            await asyncio.sleep(0.2)


async def test_killed_between_ratings_commit_and_offset_commit_rates_each_result_once(
    postgres_server: Any, kafka_broker: Any, serve: ServeProcesses, accounts_service: Any
) -> None:
    url = postgres_server.url(new_database(postgres_server, "matchmaking_crash"))
    bootstrap = kafka_broker.bootstrap
    environment = service_environment(
        "matchmaking", url, bootstrap, accounts_address=accounts_service.address,
        # Rating results call no other service: the addresses seating needs lead nowhere.
        TAVLA_WALLET_ADDRESS="127.0.0.1:9",
        TAVLA_GAME_ADDRESS="127.0.0.1:9",
    )
    # A new database: what earlier tests left on the game topic is skipped, the next batch is ours.
    await skip_backlog(bootstrap, RATINGS_GROUP, GAME_TOPIC, game_events.DiceRolled())

    ann, bob, cid, dan = (new_player() for _ in range(4))
    results = [envelope(match_ended(ann, bob, 4)), envelope(game_ended(cid, dan))]
    placed = await publish(bootstrap, results)
    armed = serve.launch(
        "matchmaking", {**environment, "TAVLA_FAILPOINTS": KILL_AFTER_RATINGS_COMMIT}
    )
    await armed.wait_killed(timeout=120)

    # Killed at the worst moment: some result is in the database, its offset is not committed.
    committed = await committed_offsets(bootstrap, RATINGS_GROUP, GAME_TOPIC)
    rated = {
        row["game_id"] for row in await query(url, "SELECT DISTINCT game_id FROM rating_changes")
    }
    applied = [where for result, where in zip(results, placed, strict=True) if result.key in rated]
    assert applied, "the kill came before any result was committed"
    for partition, offset in applied:
        assert committed.get(partition, -1) <= offset, "the batch's offsets were committed"

    # The next process gets the batch again: every result counts once.
    last = await serve.start("matchmaking", environment)
    await wait_consumed_past(bootstrap, placed)
    channel = last.channel()
    stub = matchmaking_pb2_grpc.MatchmakingServiceStub(channel)
    # ann/bob: new players, 4 points, P = 1/2, K = 5: +-4*5*2*(1/2) = +-20.
    # cid/dan: new players, one money game: +-4*5*1*(1/2) = +-10.
    expected = {ann: (1520.0, 4), bob: (1480.0, 4), cid: (1510.0, 1), dan: (1490.0, 1)}
    for player, (rating, experience) in expected.items():
        shown = await stub.GetRating(
            matchmaking_pb2.GetRatingRequest(account_id=player), metadata=as_player(player)
        )
        assert (shown.rating, shown.experience) == (pytest.approx(rating), experience)
    await channel.close()
    history = await query(
        url, "SELECT account_id FROM rating_changes WHERE account_id = ANY($1::text[])",
        list(expected),
    )  # fmt: skip
    assert sorted(row["account_id"] for row in history) == sorted(expected)

    # One RatingChanged per player and result in the outbox, every one of them on the broker.
    async with asyncio.timeout(60):
        while await query(
            url, "SELECT 1 FROM outbox WHERE ce_type = $1 AND sent_at IS NULL", RATING_CHANGED
        ):
            await asyncio.sleep(0.2)
    rows = await query(
        url, "SELECT event_id, key FROM outbox WHERE ce_type = $1 AND key = ANY($2::text[])",
        RATING_CHANGED, list(expected),
    )  # fmt: skip
    assert sorted(row["key"] for row in rows) == sorted(expected)
    await read_events(bootstrap, MATCHMAKING_TOPIC, {row["event_id"] for row in rows})
