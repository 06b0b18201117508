"""A real-money tournament's match moves both players' FIBS ratings, as a real-money
match does, and an ordinary unstaked play-money match still moves nothing: the real
wallet, game, geo and tournaments services, matchmaking's ratings consumer, one broker.

The tournament creates its match through the game's CreateGame staked on nothing (the
tournament holds and pays the money) and marked rated; the game's MatchEnded says so and
the ratings consumer rates it by its length.

Worked by hand (the FIBS formula, as tests/integration/matchmaking/test_ratings.py):
both players new, so D = 0, P = 1/2 and K = 5 - 0/100 = 5; a 4-point match: sqrt(4) = 2;
the winner gains 4 x K x sqrt(n) x P = 4 x 5 x 2 x 1/2 = 20 (1500 -> 1520), the loser
loses 20 (1500 -> 1480), and both have 4 points of experience.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tavla.common.v1 import money_pb2
from tavla.game.v1 import game_pb2
from tavla.matchmaking.v1 import matchmaking_pb2, matchmaking_pb2_grpc
from tavla.tournaments.v1 import tournaments_pb2
from tests.integration.tournaments.conftest import Venue
from tests.support.identity import as_player
from tests.support.matchmaking import start_matchmaking
from tests.support.ratings import query, wait_all_consumed
from tests.support.services import RunningService, new_database, stop_service
from tests.support.tournaments import new_player, sit_and_go, wait_until
from tests.support.wallet import fund, top_up

NOWHERE = "127.0.0.1:9"
LENGTH = 4


@pytest.fixture(scope="module")
async def ratings(postgres_server: Any, kafka_broker: Any) -> AsyncIterator[RunningService]:
    """Matchmaking for its ratings consumer only: seating's addresses lead nowhere here."""
    url = postgres_server.url(new_database(postgres_server, "matchmaking_tr"))
    running = await start_matchmaking(
        url, kafka_broker.bootstrap, wallet_address=NOWHERE, game_address=NOWHERE, geo_address=""
    )
    yield running
    await stop_service(running)


async def leave(venue: Venue, game_id: str, leaver: str) -> None:
    """``leaver`` leaves the match: the opponent wins it with the full length."""
    game = await venue.games.GetGame(
        game_pb2.GetGameRequest(game_id=game_id), metadata=as_player(leaver)
    )
    left = await venue.games.Leave(
        game_pb2.LeaveRequest(game_id=game_id, expected_version=game.version),
        metadata=as_player(leaver),
    )
    assert left.status == game_pb2.GAME_STATUS_FINISHED


async def history(ratings: RunningService, players: list[str]) -> list[Any]:
    return await query(
        ratings.settings.database_url,
        "SELECT account_id, rating_before, rating_after, experience_after, game_id"
        " FROM rating_changes WHERE account_id = ANY($1::text[]) ORDER BY seq",
        players,
    )


async def first_match(venue: Venue, tournament_id: str, viewer: str) -> str:
    """The game id of the tournament's first match, once created."""
    running = await wait_until(
        venue.stub, tournament_id, viewer,
        lambda t: bool(t.bracket) and t.bracket[0].state == tournaments_pb2.MATCH_STATE_PLAYING,
    )
    return running.bracket[0].game_id


def ordinary_play_match(ann: str, bob: str) -> game_pb2.CreateGameRequest:
    """A match as a play-money lobby table makes one: unstaked, not rated."""
    return game_pb2.CreateGameRequest(
        table_id=f"table-{uuid.uuid4().hex[:8]}",
        players=[
            game_pb2.Player(account_id=ann, display_name="ann"),
            game_pb2.Player(account_id=bob, display_name="bob"),
        ],
        rules=game_pb2.TableRules(
            kind=game_pb2.PLAY_KIND_MATCH,
            match_length=LENGTH,
            stake=money_pb2.Money(minor_units=0, currency="PLAY"),
            clock=game_pb2.ClockPreset(name="blitz"),
        ),
        idempotency_key=uuid.uuid4().hex,
    )


async def test_a_tournament_match_moves_both_ratings_and_a_play_match_does_not(
    venue: Venue, ratings: RunningService, kafka_broker: Any
) -> None:
    ann, bob = new_player(), new_player()
    stub = matchmaking_pb2_grpc.MatchmakingServiceStub(ratings.channel)

    # An ordinary unstaked play-money match: bob leaves, ann wins 4 points, nothing moves.
    game = await venue.games.CreateGame(ordinary_play_match(ann, bob))
    assert not game.rules.rated
    await leave(venue, game.game_id, bob)
    await wait_all_consumed(kafka_broker.bootstrap)
    assert await history(ratings, [ann, bob]) == []

    # A two-seat USD Sit & Go of one 4-point match: ann leaves it, bob wins.
    created = await venue.stub.CreateTournament(
        sit_and_go(2, buy_in=500, fee=50, lengths=(LENGTH,))
    )
    tid = created.tournament_id
    for player in (ann, bob):
        await fund(venue.wallet, player, 1_000)
        await venue.stub.Register(
            tournaments_pb2.RegisterRequest(tournament_id=tid), metadata=as_player(player)
        )
    match_game_id = await first_match(venue, tid, ann)
    match = await venue.games.GetGame(
        game_pb2.GetGameRequest(game_id=match_game_id), metadata=as_player(ann)
    )
    assert match.rules.rated and match.rules.stake.currency == "PLAY"
    assert match.rules.stake.minor_units == 0
    await leave(venue, match_game_id, ann)

    # The tournament saw the result, so the match's end is on the game topic: only then
    # does "the ratings group consumed everything published so far" include it.
    finished = await wait_until(
        venue.stub, tid, bob, lambda t: t.status == tournaments_pb2.STATUS_FINISHED
    )
    await wait_all_consumed(kafka_broker.bootstrap)
    bob_rating = await stub.GetRating(
        matchmaking_pb2.GetRatingRequest(account_id=bob), metadata=as_player(bob)
    )
    ann_rating = await stub.GetRating(
        matchmaking_pb2.GetRatingRequest(account_id=ann), metadata=as_player(ann)
    )
    assert bob_rating.rating == pytest.approx(1520.0)
    assert ann_rating.rating == pytest.approx(1480.0)
    assert (bob_rating.experience, ann_rating.experience) == (LENGTH, LENGTH)
    rows = await history(ratings, [ann, bob])
    assert {row["game_id"] for row in rows} == {match_game_id}  # the tournament's match only
    assert {row["account_id"]: row["rating_after"] for row in rows} == {
        bob: pytest.approx(1520.0), ann: pytest.approx(1480.0)
    }
    # The tournament itself saw the same result: bob won it.
    assert finished.bracket[0].winner_account_id == bob


async def test_a_play_money_tournaments_match_moves_no_rating(
    venue: Venue, ratings: RunningService, kafka_broker: Any
) -> None:
    """Play money moves no rating, in a tournament as at a table: its match is not rated."""
    ann, bob = new_player(), new_player()
    created = await venue.stub.CreateTournament(
        sit_and_go(2, buy_in=10_000, fee=500, currency="PLAY", lengths=(LENGTH,))
    )
    tid = created.tournament_id
    for player in (ann, bob):
        await top_up(venue.wallet, player)
        await venue.stub.Register(
            tournaments_pb2.RegisterRequest(tournament_id=tid), metadata=as_player(player)
        )
    match_game_id = await first_match(venue, tid, ann)
    match = await venue.games.GetGame(
        game_pb2.GetGameRequest(game_id=match_game_id), metadata=as_player(ann)
    )
    assert not match.rules.rated
    await leave(venue, match_game_id, ann)
    await wait_until(venue.stub, tid, bob, lambda t: t.status == tournaments_pb2.STATUS_FINISHED)
    await wait_all_consumed(kafka_broker.bootstrap)
    assert await history(ratings, [ann, bob]) == []
