"""The lobby with anti-abuse verdicts from the real broker, the wallet's commission quote in
the listing, and real money failing closed (play money going on) when geo is down."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import pytest

from services.kit.devstack.net import free_port
from tavla.antiabuse.v1 import events_pb2 as antiabuse_events
from tavla.game.v1 import game_pb2
from tavla.matchmaking.v1 import matchmaking_pb2, matchmaking_pb2_grpc
from tests.integration.matchmaking.conftest import Lobby
from tests.support.identity import as_player
from tests.support.matchmaking import (
    join_request,
    new_player,
    publish_verdict,
    scalar,
    set_rating,
    start_matchmaking,
    table_request,
)
from tests.support.services import new_database, stop_service
from tests.support.wallet import balance, fund, top_up

PLAYING = matchmaking_pb2.TABLE_STATUS_PLAYING


async def wait_for(url: str, sql: str, expected: object, **values: object) -> None:
    async with asyncio.timeout(60):
        while await scalar(url, sql, **values) != expected:
            await asyncio.sleep(0.1)


async def test_a_forbidden_pair_is_refused_once_the_verdict_is_published(
    lobby: Lobby, kafka_broker: Any
) -> None:
    first, second = new_player(), new_player()
    restriction = antiabuse_events.PairRestricted(
        restriction_id=f"r-{first[:8]}",
        account_id=second,
        other_account_id=first,
        reason=antiabuse_events.PAIR_RESTRICTION_REASON_LINKED_ACCOUNTS,
        detail="same device for both accounts",
    )
    await publish_verdict(kafka_broker.bootstrap, restriction, times=2)  # redelivered once
    standing = (
        "SELECT count(*) FROM forbidden_pairs WHERE lifted_at IS NULL "
        "AND low_account_id = :low AND high_account_id = :high"
    )
    low, high = sorted((first, second))
    await wait_for(lobby.url, standing, 1, low=low, high=high)
    # The redelivery was skipped: this pair has one restriction (other tests' verdicts on
    # the shared broker are other pairs').
    applied = (
        "SELECT count(*) FROM forbidden_pairs WHERE low_account_id = :low "
        "AND high_account_id = :high"
    )
    assert await scalar(lobby.url, applied, low=low, high=high) == 1
    play = table_request(stake=100, currency="PLAY")
    for player in (first, second):  # play money is held as real money is
        await top_up(lobby.wallet, player)
    table = await lobby.lobby.CreateTable(play, metadata=as_player(first))
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await lobby.lobby.JoinTable(join_request(table.table_id), metadata=as_player(second))
    assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "you cannot play the owner" in (refused.value.details() or "")
    assert "your accounts are linked" in (refused.value.details() or "")
    lifted = antiabuse_events.PairRestrictionLifted(
        restriction_id=restriction.restriction_id,
        account_id=first,
        other_account_id=second,
        detail="reviewed: a shared family computer",
    )
    await publish_verdict(kafka_broker.bootstrap, lifted)
    await wait_for(lobby.url, standing, 0, low=low, high=high)
    started = await lobby.lobby.JoinTable(join_request(table.table_id), metadata=as_player(second))
    assert started.status == PLAYING and started.game_id


async def test_the_listing_shows_the_wallets_quote_with_both_ratings(lobby: Lobby) -> None:
    owner, viewer = new_player(), new_player()
    await fund(lobby.wallet, owner, 6_000)
    await set_rating(lobby.url, owner, 1760.0, 400)
    await set_rating(lobby.url, viewer, 1750.0, 300)
    table = await lobby.lobby.CreateTable(table_request(stake=2_000), metadata=as_player(owner))
    listed = await lobby.lobby.ListTables(
        matchmaking_pb2.ListTablesRequest(currency="USD", page_size=100),
        metadata=as_player(viewer),
    )
    ours = next(t for t in listed.tables if t.table_id == table.table_id)
    # By hand, from the reference schedule: a $20 money game at cube 1 pays 4.9% ($0.98)
    # a player; both ratings over 1700 halve it: $0.49, rate 0.0245. Had matchmaking sent
    # 1500 for either player, the difference of 250+ would have raised it instead.
    assert ours.commission.commission_per_player.minor_units == 49
    assert ours.commission.commission_per_player.currency == "USD"
    assert ours.commission.rate == "0.0245"


async def test_the_listing_filters_and_hides_what_the_player_cannot_join(lobby: Lobby) -> None:
    owner, viewer, guest = new_player(), new_player(), new_player()
    await set_rating(lobby.url, viewer, 1550.0, 50)
    await top_up(lobby.wallet, owner)  # an owner must cover a play-money table too
    play = {"currency": "PLAY"}
    made = {
        "match": await lobby.lobby.CreateTable(
            table_request(stake=300, match_length=5, **play), metadata=as_player(owner)
        ),
        "cheap": await lobby.lobby.CreateTable(
            table_request(stake=100, **play), metadata=as_player(owner)
        ),
        "private": await lobby.lobby.CreateTable(
            table_request(stake=300, invited=guest, **play), metadata=as_player(owner)
        ),
        "strong_only": await lobby.lobby.CreateTable(
            table_request(stake=300, min_rating=1600, **play), metadata=as_player(owner)
        ),
        "money": await lobby.lobby.CreateTable(
            table_request(stake=300, **play), metadata=as_player(owner)
        ),
    }
    names = {t.table_id: name for name, t in made.items()}

    async def seen(who: str, **wanted: Any) -> set[str]:
        request = matchmaking_pb2.ListTablesRequest(currency="PLAY", page_size=100, **wanted)
        response = await lobby.lobby.ListTables(request, metadata=as_player(who))
        return {names[t.table_id] for t in response.tables if t.table_id in names}

    assert await seen(viewer) == {"match", "cheap", "money"}
    assert await seen(guest) == {"match", "cheap", "private", "money"}  # 1500 < 1600
    assert await seen(owner) == set(made)
    assert await seen(viewer, kind=game_pb2.PLAY_KIND_MATCH) == {"match"}
    assert await seen(viewer, match_length=5) == {"match"}
    # A length no match can have is a clear refusal, not a database overflow (a 500 once).
    with pytest.raises(grpc.aio.AioRpcError) as absurd:
        await seen(viewer, match_length=4_294_967_295)
    assert absurd.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "1..25 points" in (absurd.value.details() or "")
    assert await seen(viewer, min_stake_minor_units=200) == {"match", "money"}
    assert await seen(viewer, max_stake_minor_units=200) == {"cheap"}
    high = matchmaking_pb2.RatingRange(min_rating=1501)
    assert await seen(viewer, owner_rating=high) == set()  # the owner has 1500
    first = await lobby.lobby.ListTables(
        matchmaking_pb2.ListTablesRequest(currency="PLAY", page_size=1),
        metadata=as_player(owner),
    )
    second = await lobby.lobby.ListTables(
        matchmaking_pb2.ListTablesRequest(
            currency="PLAY", page_size=1, page_token=first.next_page_token
        ),
        metadata=as_player(owner),
    )
    assert first.next_page_token and first.tables[0].table_id != second.tables[0].table_id


async def test_geo_down_refuses_real_money_and_seats_play_money(
    lobby: Lobby, postgres_server: Any, kafka_broker: Any
) -> None:
    database = new_database(postgres_server, "mm_geo_down")
    service = await start_matchmaking(
        postgres_server.url(database),
        kafka_broker.bootstrap,
        wallet_address=lobby.wallet_address,
        game_address=lobby.game_address,
        geo_address=f"127.0.0.1:{free_port()}",  # nothing listens there
    )
    try:
        stub = matchmaking_pb2_grpc.MatchmakingServiceStub(service.channel)
        owner, joiner = new_player(), new_player()
        await fund(lobby.wallet, owner, 2_000)
        for player in (owner, joiner):  # play money is held as real money is
            await top_up(lobby.wallet, player)
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.CreateTable(table_request(stake=500), metadata=as_player(owner))
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
        assert "location check cannot be made now" in (refused.value.details() or "")
        assert await balance(lobby.wallet, owner) == (2_000, 0)
        table = await stub.CreateTable(
            table_request(stake=500, currency="PLAY"), metadata=as_player(owner)
        )
        started = await stub.JoinTable(join_request(table.table_id), metadata=as_player(joiner))
        assert started.status == PLAYING and started.game_id
    finally:
        await stop_service(service)
