"""Ratings on the real PostgreSQL and broker: finished games published on ``tavla.game.v1``
move both players' ratings by the FIBS formula, once; RatingChanged reaches
``tavla.matchmaking.v1``; GetRating and GetLeaderboard answer over gRPC as players.

Expected figures are worked out by hand in the comments (formula: after FIBS;
tests/unit/matchmaking/test_ratings_domain.py has the same arithmetic spelled out).
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest

from services.kit.devstack.envoy import EnvoyGateway, render_config, write_config
from services.kit.devstack.keys import PRIVATE_KEY_FILE, ensure_signing_keys
from services.kit.devstack.net import free_port
from services.kit.devstack.supervisor import Supervisor
from services.matchmaking.ratings.recorder import TOPIC as MATCHMAKING_TOPIC
from tavla.game.v1 import game_pb2
from tavla.matchmaking.v1 import events_pb2, matchmaking_pb2, matchmaking_pb2_grpc
from tests.support.gateway import DESCRIPTOR
from tests.support.identity import PLAYER_KEY_FILE, as_player, player_token
from tests.support.kafka import headers_of, read_events
from tests.support.matchmaking import start_matchmaking
from tests.support.ratings import (
    envelope,
    game_ended,
    match_ended,
    new_player,
    publish_results,
    query,
    wait_all_consumed,
)
from tests.support.services import (
    RunningService,
    new_database,
    stop_service,
)

RATING_CHANGED = events_pb2.RatingChanged.DESCRIPTOR.full_name


@dataclass
class Ratings:
    running: RunningService
    url: str
    bootstrap: str
    stub: matchmaking_pb2_grpc.MatchmakingServiceStub

    async def rating(self, account_id: str) -> matchmaking_pb2.Rating:
        request = matchmaking_pb2.GetRatingRequest(account_id=account_id)
        return await self.stub.GetRating(request, metadata=as_player(account_id))

    async def rated(self, account_id: str, experience: int) -> matchmaking_pb2.Rating:
        """The player's rating once their experience reached ``experience``."""
        async with asyncio.timeout(120):
            while (found := await self.rating(account_id)).experience < experience:
                await asyncio.sleep(0.2)
        return found


NOWHERE = "127.0.0.1:9"


@pytest.fixture(scope="module")
async def ratings(postgres_server: Any, kafka_broker: Any) -> AsyncIterator[Ratings]:
    url = postgres_server.url(new_database(postgres_server, "matchmaking"))
    # Ratings call no other service: the addresses seating needs lead nowhere here.
    running = await start_matchmaking(
        url, kafka_broker.bootstrap, wallet_address=NOWHERE, game_address=NOWHERE, geo_address=""
    )
    yield Ratings(
        running, url, kafka_broker.bootstrap,
        matchmaking_pb2_grpc.MatchmakingServiceStub(running.channel),
    )
    await stop_service(running)


async def test_a_finished_match_moves_both_ratings_by_the_formula_once(ratings: Ratings) -> None:
    ann, bob = new_player(), new_player()
    first = envelope(match_ended(ann, bob, 4))
    await publish_results(ratings.bootstrap, first)
    # Both new: D = 0, P = 1/2, K = 5, sqrt(4) = 2: ann +4*5*2*(1/2) = +20, bob -20.
    ann_rating, bob_rating = await ratings.rated(ann, 4), await ratings.rated(bob, 4)
    assert ann_rating.rating == pytest.approx(1520.0)
    assert bob_rating.rating == pytest.approx(1480.0)
    assert (ann_rating.experience, bob_rating.experience) == (4, 4)
    assert (ann_rating.display, bob_rating.display) == ("1520", "1480")

    # Then bob (1480, experience 4) beats ann (1520, experience 4) in one money game. The
    # event says both were seated at 1500; the stored ratings count. K = 5 - 4/100 = 4.96;
    # D = 40: 10^(40/2000) = e^(0.02 * 2.3025851) = 1.0471285, P_upset = 1/2.0471285 =
    # 0.4884891; the underdog won: P = 0.5115109; change = 4 * 4.96 * 1 * 0.5115109 = 10.148376.
    await publish_results(ratings.bootstrap, envelope(game_ended(bob, ann)))
    ann_rating, bob_rating = await ratings.rated(ann, 5), await ratings.rated(bob, 5)
    assert ann_rating.rating == pytest.approx(1520.0 - 10.148376)
    assert bob_rating.rating == pytest.approx(1480.0 + 10.148376)

    # The same event delivered again, and the same result under a new event id: nothing moves.
    await publish_results(ratings.bootstrap, first, envelope(match_ended(
        ann, bob, 4, game_id=first.key,
    )))
    await wait_all_consumed(ratings.bootstrap)
    assert await ratings.rating(ann) == ann_rating
    assert await ratings.rating(bob) == bob_rating
    history = await query(
        ratings.url,
        "SELECT account_id, rating_before, rating_after, experience_after FROM rating_changes"
        " WHERE account_id = ANY($1::text[]) ORDER BY seq",
        [ann, bob],
    )
    assert [row["account_id"] for row in history] == [ann, bob, bob, ann]
    assert [row["rating_after"] for row in history] == pytest.approx(
        [1520.0, 1480.0, 1480.0 + 10.148376, 1520.0 - 10.148376]
    )
    assert [row["experience_after"] for row in history] == [4, 4, 5, 5]

    # RatingChanged, one per player and result, keyed by account id, on the broker.
    outbox = await query(
        ratings.url,
        "SELECT event_id FROM outbox WHERE ce_type = $1 AND key = ANY($2::text[])",
        RATING_CHANGED,
        [ann, bob],
    )
    assert len(outbox) == 4
    records = await read_events(
        ratings.bootstrap, MATCHMAKING_TOPIC, {row["event_id"] for row in outbox}
    )
    announced = {}
    for record in records:
        if headers_of(record).get("ce_type") != RATING_CHANGED:
            continue
        changed = events_pb2.RatingChanged.FromString(record.value)
        if changed.game_id == first.key:
            assert record.key.decode() == changed.account_id
            announced[changed.account_id] = changed
    assert announced[ann].previous_rating == pytest.approx(1500.0)
    assert announced[ann].new_rating == pytest.approx(1520.0)
    assert announced[ann].change == pytest.approx(20.0)
    assert announced[ann].opponent_account_id == bob
    assert (announced[ann].experience, announced[ann].match_length) == (4, 4)
    assert announced[bob].new_rating == pytest.approx(1480.0)
    assert announced[bob].reason == game_pb2.END_REASON_BORNE_OFF


async def test_games_of_a_match_play_money_and_new_players_move_nothing(ratings: Ratings) -> None:
    cid, dan = new_player(), new_player()
    await publish_results(
        ratings.bootstrap,
        # A game inside a match: it counts with its MatchEnded, not alone.
        envelope(game_ended(cid, dan, kind=game_pb2.PLAY_KIND_MATCH)),
        # Play money, a game and a match.
        envelope(game_ended(cid, dan, currency="PLAY")),
        envelope(match_ended(cid, dan, 3, currency="PLAY")),
    )
    await wait_all_consumed(ratings.bootstrap)
    for player in (cid, dan):
        rating = await ratings.rating(player)
        assert (rating.rating, rating.experience, rating.display, rating.rank) == (
            1500.0, 0, "1500", 0
        )
        assert not rating.HasField("updated_at")
    assert await query(ratings.url, "SELECT 1 FROM ratings WHERE account_id = $1", cid) == []

    # The same consumer does rate a real-money single game: +4*5*1*(1/2) = +10 and -10.
    await publish_results(ratings.bootstrap, envelope(game_ended(cid, dan)))
    assert (await ratings.rated(cid, 1)).rating == pytest.approx(1510.0)
    assert (await ratings.rated(dan, 1)).rating == pytest.approx(1490.0)


async def test_disconnections_split_and_forfeits_count_the_whole_match(ratings: Ratings) -> None:
    eve, fay, gus, hal = (new_player() for _ in range(4))
    await publish_results(
        ratings.bootstrap,
        # The reconnect window passed; the analysis gave eve 0.75 of the stake:
        # 0.75 * (+10) + 0.25 * (-10) = +5 for eve, -5 for fay (new players, n = 1).
        envelope(game_ended(
            eve, fay, reason=game_pb2.END_REASON_DISCONNECTION,
            shares={eve: "0.75", fay: "0.25"},
        )),
        # hal left a 5-point match: a loss of the whole match, n = 5:
        # +4 * 5 * sqrt(5) * (1/2) = 10 * 2.2360680 = 22.360680.
        envelope(match_ended(gus, hal, 5, reason=game_pb2.END_REASON_LEFT)),
    )
    assert (await ratings.rated(eve, 1)).rating == pytest.approx(1505.0)
    assert (await ratings.rated(fay, 1)).rating == pytest.approx(1495.0)
    gus_rating = await ratings.rated(gus, 5)
    assert gus_rating.rating == pytest.approx(1522.360680)
    assert (await ratings.rated(hal, 5)).rating == pytest.approx(1477.639320)
    shares = await query(
        ratings.url,
        "SELECT account_id, share, won, reason FROM rating_changes WHERE game_id IN"
        " (SELECT game_id FROM rating_changes WHERE account_id = $1)",
        eve,
    )
    assert {(r["account_id"], r["share"], r["won"], r["reason"]) for r in shares} == {
        (eve, 0.75, True, "disconnection"),
        (fay, 0.25, False, "disconnection"),
    }


async def seed(url: str, ratings_by_player: dict[str, float]) -> None:
    """Rows as the consumer leaves them, far above what the other tests' players reach."""
    now = datetime.now(UTC)
    for player, rating in ratings_by_player.items():
        await query(
            url,
            "INSERT INTO ratings (account_id, rating, experience, updated_at)"
            " VALUES ($1, $2, 50, $3)",
            player, rating, now,
        )


async def test_the_leaderboard_ranks_and_shows_a_players_own_rank(ratings: Ratings) -> None:
    top, tied_a, tied_b, fourth, low = sorted(new_player() for _ in range(5))
    await seed(ratings.url, {
        top: 2900.5, tied_a: 2800.0, tied_b: 2800.0, fourth: 2700.25, low: 1350.0,
    })
    board = await ratings.stub.GetLeaderboard(
        matchmaking_pb2.GetLeaderboardRequest(limit=4), metadata=as_player(fourth)
    )
    # Equal ratings share a rank (2) and the next player is 4th; ties are listed by id.
    assert [(e.account_id, e.rank, e.display) for e in board.entries] == [
        (top, 1, "2900"),
        (tied_a, 2, "2800"),
        (tied_b, 2, "2800"),
        (fourth, 4, "2700"),
    ]
    assert board.entries[0].rating == 2900.5
    assert (board.own.account_id, board.own.rank, board.own.rating) == (fourth, 4, 2700.25)

    # A rating below 1400 shows as "1400*"; its rank counts every player above it.
    shown = await ratings.rating(low)
    assert shown.display == "1400*"
    above = await query(ratings.url, "SELECT count(*) AS n FROM ratings WHERE rating > 1350")
    assert shown.rank == above[0]["n"] + 1

    # A player who never finished a rated match is listed nowhere and has no rank.
    newcomer = new_player()
    board = await ratings.stub.GetLeaderboard(
        matchmaking_pb2.GetLeaderboardRequest(), metadata=as_player(newcomer)
    )
    assert len(board.entries) == 10
    assert [e.account_id for e in board.entries[:4]] == [top, tied_a, tied_b, fourth]
    assert (board.own.account_id, board.own.rating, board.own.rank) == (newcomer, 1500.0, 0)


async def test_bad_requests_are_refused_with_a_reason(ratings: Ratings) -> None:
    player = new_player()
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await ratings.stub.GetLeaderboard(
            matchmaking_pb2.GetLeaderboardRequest(limit=101), metadata=as_player(player)
        )
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "between 1 and 100" in (refused.value.details() or "")
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await ratings.stub.GetRating(matchmaking_pb2.GetRatingRequest(), metadata=as_player(player))
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await ratings.stub.GetRating(matchmaking_pb2.GetRatingRequest(account_id=player))
    assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED


async def test_ratings_and_the_leaderboard_through_the_gateway(
    ratings: Ratings, tmp_path: Path, session_supervisor: Supervisor
) -> None:
    """REST through the real Envoy config: GET /v1/ratings/{id} and GET /v1/leaderboard."""
    leader = new_player()
    await seed(ratings.url, {leader: 2999.0})
    # The gateway verifies with the key the tests' players sign with (its JWKS is made from it).
    shutil.copy(PLAYER_KEY_FILE, tmp_path / PRIVATE_KEY_FILE)
    keys = ensure_signing_keys(tmp_path)
    listen, admin = free_port(), free_port()
    config = render_config(
        descriptor=DESCRIPTOR, jwks_file=keys.jwks_file,
        upstreams={"matchmaking": ratings.running.settings.grpc_port},
        listen_port=listen, admin_port=admin, health_interval=0.2,
    )  # fmt: skip
    gateway = EnvoyGateway(write_config(tmp_path / "envoy.json", config), listen, admin,
                           session_supervisor)
    gateway.start()
    try:
        reader = new_player()
        headers = {"authorization": f"Bearer {player_token(reader)}"}
        async with httpx.AsyncClient(base_url=gateway.base_url, timeout=10) as client:
            async with asyncio.timeout(60):
                while (await client.get("/healthz")).status_code != 200:
                    await asyncio.sleep(0.1)
            assert (await client.get("/v1/leaderboard")).status_code == 401
            board = await client.get("/v1/leaderboard", params={"limit": 1}, headers=headers)
            assert board.status_code == 200, board.text
            body = board.json()
            assert body["entries"] == [{
                "accountId": leader, "rating": 2999.0, "experience": 50, "display": "2999",
                "rank": 1, "updatedAt": body["entries"][0]["updatedAt"],
            }]  # fmt: skip
            assert body["own"]["accountId"] == reader
            assert body["own"]["rating"] == 1500.0
            mine = await client.get(f"/v1/ratings/{reader}", headers=headers)
            assert mine.status_code == 200, mine.text
            assert mine.json() == {
                "accountId": reader, "rating": 1500.0, "experience": 0, "display": "1500",
                "rank": 0,
            }  # fmt: skip
            wrong = await client.get("/v1/leaderboard", params={"limit": 500}, headers=headers)
            assert wrong.status_code == 400
    finally:
        gateway.stop()
