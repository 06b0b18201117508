"""Seating on the real stack: PostgreSQL, the broker, and the real wallet, game and geo
services in-process. Each test checks what the wallet holds afterwards, so "nothing
held" is the wallet's word, not matchmaking's."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import pytest

from services.geo.devdata import FLORIDA_IP
from services.kit.metrics import RPC_REQUESTS
from tavla.game.v1 import game_pb2
from tavla.matchmaking.v1 import matchmaking_pb2
from tests.integration.matchmaking.conftest import Lobby
from tests.support.identity import as_player
from tests.support.matchmaking import join_request, new_player, set_rating, table_request
from tests.support.wallet import balance, fund, outbox_events, top_up

OPEN = matchmaking_pb2.TABLE_STATUS_OPEN
PLAYING = matchmaking_pb2.TABLE_STATUS_PLAYING
CLOSED = matchmaking_pb2.TABLE_STATUS_CLOSED


async def refused(call: Any) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call
    return caught.value


async def funded(lobby: Lobby, *amounts: int) -> list[str]:
    players = [new_player() for _ in amounts]
    await asyncio.gather(*(fund(lobby.wallet, p, a) for p, a in zip(players, amounts, strict=True)))
    return players


async def test_a_real_money_table_holds_both_stakes_and_creates_the_game(lobby: Lobby) -> None:
    owner, joiner = await funded(lobby, 2_000, 2_000)
    await set_rating(lobby.url, joiner, 1620.5, 12)
    table = await lobby.lobby.CreateTable(table_request(stake=500), metadata=as_player(owner))
    assert table.status == OPEN and [p.account_id for p in table.players] == [owner]
    assert table.players[0].rating == 1500.0  # no rating yet: the starting one
    assert await balance(lobby.wallet, owner) == (2_000, 0)  # nothing held while it waits
    started = await lobby.lobby.JoinTable(
        join_request(table.table_id), metadata=as_player(joiner)
    )
    assert started.status == PLAYING and started.game_id
    # A money game's hold covers a backgammon at cube 1: 3 x $5.
    for player in (owner, joiner):
        assert await balance(lobby.wallet, player) == (500, 1_500)
    # The joiner sees the hold the wallet placed for them, not the owner's.
    assert [bool(p.hold_id) for p in started.players] == [False, True]
    game = await lobby.games.GetGame(
        game_pb2.GetGameRequest(game_id=started.game_id), metadata=as_player(owner)
    )
    assert game.table_id == table.table_id
    assert game.rules.stake.minor_units == 500 and game.rules.stake.currency == "USD"
    assert {p.account_id: p.rating for p in game.players} == {owner: 1500.0, joiner: 1620.5}
    assert [p.rating for p in started.players] == [1500.0, 1620.5]
    again = await lobby.lobby.JoinTable(join_request(table.table_id), metadata=as_player(joiner))
    assert again.game_id == started.game_id  # a retry sits nobody twice
    assert await balance(lobby.wallet, joiner) == (500, 1_500)
    assert await outbox_events(lobby.url, table.table_id) == [
        "TableOpened", "PlayerSeated", "PlayerSeated", "MatchMade"
    ]


def wallet_calls() -> dict[str, float]:
    """How many hold calls the (in-process) wallet has answered so far, by method."""
    calls = {"PlaceHold": 0.0, "PlaceHolds": 0.0}
    for metric in RPC_REQUESTS.collect():
        for sample in metric.samples:
            method = sample.labels.get("method", "").rsplit("/", 1)[-1]
            wallets = sample.name.endswith("_total") and sample.labels.get("service") == "wallet"
            if wallets and method in calls:
                calls[method] += sample.value
    return calls


async def test_a_seating_holds_both_stakes_with_one_wallet_call(lobby: Lobby) -> None:
    owner, joiner = await funded(lobby, 2_000, 2_000)
    table = await lobby.lobby.CreateTable(table_request(stake=500), metadata=as_player(owner))
    before = wallet_calls()
    started = await lobby.lobby.JoinTable(
        join_request(table.table_id), metadata=as_player(joiner)
    )
    assert started.status == PLAYING
    after = wallet_calls()
    assert {method: after[method] - before[method] for method in after} == {
        "PlaceHolds": 1, "PlaceHold": 0
    }
    for player in (owner, joiner):
        assert await balance(lobby.wallet, player) == (500, 1_500)


async def test_a_seats_hold_id_is_shown_to_its_holder_only(lobby: Lobby) -> None:
    owner, joiner = await funded(lobby, 2_000, 2_000)
    onlooker = new_player()
    table = await lobby.lobby.CreateTable(table_request(stake=500), metadata=as_player(owner))
    joined = await lobby.lobby.JoinTable(join_request(table.table_id), metadata=as_player(joiner))
    assert joined.status == PLAYING

    async def holds_seen_by(viewer: str) -> dict[str, str]:
        got = await lobby.lobby.GetTable(
            matchmaking_pb2.GetTableRequest(table_id=table.table_id), metadata=as_player(viewer)
        )
        listed = await lobby.lobby.ListTables(
            matchmaking_pb2.ListTablesRequest(currency="USD", include_playing=True),
            metadata=as_player(viewer),
        )
        (same,) = [t for t in listed.tables if t.table_id == table.table_id]
        assert [(p.account_id, p.hold_id) for p in same.players] == [
            (p.account_id, p.hold_id) for p in got.players
        ]
        return {p.account_id: p.hold_id for p in got.players}

    own = {viewer: (await holds_seen_by(viewer))[viewer] for viewer in (owner, joiner)}
    assert all(own.values()) and own[owner] != own[joiner]
    assert own[joiner] == joined.players[1].hold_id
    # Each player sees their own hold and not the other's; anyone else sees none.
    assert await holds_seen_by(owner) == {owner: own[owner], joiner: ""}
    assert await holds_seen_by(joiner) == {owner: "", joiner: own[joiner]}
    assert await holds_seen_by(onlooker) == {owner: "", joiner: ""}


async def test_a_player_who_cannot_cover_is_refused_and_the_table_stays_open(
    lobby: Lobby,
) -> None:
    owner, joiner = await funded(lobby, 2_000, 1_000)
    table = await lobby.lobby.CreateTable(table_request(stake=500), metadata=as_player(owner))
    error = await refused(
        lobby.lobby.JoinTable(join_request(table.table_id), metadata=as_player(joiner))
    )
    assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "you cannot cover this table's stake" in (error.details() or "")
    after = await lobby.lobby.GetTable(
        matchmaking_pb2.GetTableRequest(table_id=table.table_id), metadata=as_player(owner)
    )
    assert after.status == OPEN and [p.account_id for p in after.players] == [owner]
    assert await balance(lobby.wallet, owner) == (2_000, 0)
    assert await balance(lobby.wallet, joiner) == (1_000, 0)
    await fund(lobby.wallet, joiner, 500)  # the open table takes them once they can cover
    started = await lobby.lobby.JoinTable(join_request(table.table_id), metadata=as_player(joiner))
    assert started.status == PLAYING


async def test_an_owner_who_cannot_cover_any_more_closes_the_table_and_the_joiner_keeps_all(
    lobby: Lobby,
) -> None:
    owner, joiner, other = await funded(lobby, 2_000, 2_000, 2_000)
    first = await lobby.lobby.CreateTable(table_request(stake=500), metadata=as_player(owner))
    second = await lobby.lobby.CreateTable(table_request(stake=500), metadata=as_player(owner))
    await lobby.lobby.JoinTable(join_request(second.table_id), metadata=as_player(other))
    assert await balance(lobby.wallet, owner) == (500, 1_500)
    error = await refused(
        lobby.lobby.JoinTable(join_request(first.table_id), metadata=as_player(joiner))
    )
    assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
    details = error.details() or ""
    assert f"table {first.table_id} closed: its owner cannot cover the stake now" in details
    assert "balance" not in details  # the owner's money is not the joiner's business
    # Neither hold was placed: the wallet places a seating's two or none.
    assert await balance(lobby.wallet, joiner) == (2_000, 0)
    assert await balance(lobby.wallet, owner) == (500, 1_500)
    closed = await lobby.lobby.GetTable(
        matchmaking_pb2.GetTableRequest(table_id=first.table_id), metadata=as_player(owner)
    )
    assert closed.status == CLOSED and "cannot cover" in closed.close_reason


async def test_a_florida_address_is_refused_at_the_table_with_nothing_held(lobby: Lobby) -> None:
    owner, joiner = await funded(lobby, 2_000, 2_000)
    table = await lobby.lobby.CreateTable(table_request(stake=500), metadata=as_player(owner))
    error = await refused(
        lobby.lobby.JoinTable(
            join_request(table.table_id), metadata=as_player(joiner, address=FLORIDA_IP)
        )
    )
    assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "playing for real money is not allowed from here" in (error.details() or "")
    assert await balance(lobby.wallet, joiner) == (2_000, 0)
    assert await balance(lobby.wallet, owner) == (2_000, 0)
    after = await lobby.lobby.GetTable(
        matchmaking_pb2.GetTableRequest(table_id=table.table_id), metadata=as_player(owner)
    )
    assert after.status == OPEN
    # Nor may a Florida player open a real-money table.
    error = await refused(
        lobby.lobby.CreateTable(
            table_request(stake=500), metadata=as_player(joiner, address=FLORIDA_IP)
        )
    )
    assert error.code() == grpc.StatusCode.FAILED_PRECONDITION


async def test_a_player_cannot_sit_against_themselves(lobby: Lobby) -> None:
    (owner,) = await funded(lobby, 2_000)
    table = await lobby.lobby.CreateTable(table_request(stake=500), metadata=as_player(owner))
    error = await refused(
        lobby.lobby.JoinTable(join_request(table.table_id), metadata=as_player(owner))
    )
    assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "you cannot sit against yourself" in (error.details() or "")
    assert await balance(lobby.wallet, owner) == (2_000, 0)


async def test_players_racing_for_the_last_seat_one_sits_nothing_is_held_twice(
    lobby: Lobby,
) -> None:
    owner, *racers = await funded(lobby, 2_000, 2_000, 2_000, 2_000, 2_000, 2_000)
    table = await lobby.lobby.CreateTable(table_request(stake=500), metadata=as_player(owner))
    results = await asyncio.gather(
        *(
            lobby.lobby.JoinTable(join_request(table.table_id), metadata=as_player(racer))
            for racer in racers
        ),
        return_exceptions=True,
    )
    seated = [r for r in results if isinstance(r, matchmaking_pb2.Table)]
    losers = [r for r in results if isinstance(r, grpc.aio.AioRpcError)]
    assert len(seated) == 1 and len(losers) == len(racers) - 1, results
    for error in losers:
        assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
        details = error.details() or ""
        assert "another player is sitting down" in details or "is full" in details, details
    winner = seated[0].players[1].account_id
    assert await balance(lobby.wallet, owner) == (500, 1_500)
    for racer in racers:
        assert await balance(lobby.wallet, racer) == (
            (500, 1_500) if racer == winner else (2_000, 0)
        )


async def test_owner_leaves_or_closes_before_the_start_and_nobody_can_sit_after(
    lobby: Lobby,
) -> None:
    owner, joiner = await funded(lobby, 2_000, 2_000)
    left = await lobby.lobby.CreateTable(table_request(stake=500), metadata=as_player(owner))
    closed = await lobby.lobby.CreateTable(table_request(stake=500), metadata=as_player(owner))
    error = await refused(
        lobby.lobby.CloseTable(
            matchmaking_pb2.CloseTableRequest(table_id=closed.table_id), metadata=as_player(joiner)
        )
    )
    assert error.code() == grpc.StatusCode.NOT_FOUND
    after_leave = await lobby.lobby.LeaveTable(
        matchmaking_pb2.LeaveTableRequest(table_id=left.table_id), metadata=as_player(owner)
    )
    after_close = await lobby.lobby.CloseTable(
        matchmaking_pb2.CloseTableRequest(table_id=closed.table_id), metadata=as_player(owner)
    )
    assert (after_leave.status, after_leave.close_reason) == (CLOSED, "its owner left")
    assert (after_close.status, after_close.close_reason) == (CLOSED, "closed by its owner")
    error = await refused(
        lobby.lobby.JoinTable(join_request(closed.table_id), metadata=as_player(joiner))
    )
    assert error.code() == grpc.StatusCode.FAILED_PRECONDITION and "closed" in (
        error.details() or ""
    )
    assert await outbox_events(lobby.url, left.table_id) == [
        "TableOpened", "PlayerSeated", "PlayerLeftTable", "TableClosed"
    ]
    assert await balance(lobby.wallet, joiner) == (2_000, 0)


async def test_the_table_closes_when_its_game_ends(lobby: Lobby) -> None:
    owner, joiner = new_player(), new_player()
    for player in (owner, joiner):  # play money is held as real money is
        await top_up(lobby.wallet, player)
    table = await lobby.lobby.CreateTable(
        table_request(stake=100, currency="PLAY"), metadata=as_player(owner)
    )
    started = await lobby.lobby.JoinTable(join_request(table.table_id), metadata=as_player(joiner))
    game = await lobby.games.GetGame(
        game_pb2.GetGameRequest(game_id=started.game_id), metadata=as_player(owner)
    )
    resigner = game.awaiting_account_id
    offered = await lobby.games.Resign(
        game_pb2.ResignRequest(
            game_id=game.game_id, expected_version=game.version, level=game_pb2.RESULT_TYPE_SINGLE
        ),
        metadata=as_player(resigner),
    )
    await lobby.games.AcceptResign(
        game_pb2.AcceptResignRequest(game_id=game.game_id, expected_version=offered.version),
        metadata=as_player(offered.awaiting_account_id),
    )
    request = matchmaking_pb2.GetTableRequest(table_id=table.table_id)
    async with asyncio.timeout(60):  # GameEnded travels through the broker
        while (found := await lobby.lobby.GetTable(request, metadata=as_player(owner))).status != (
            CLOSED
        ):
            await asyncio.sleep(0.2)
    assert found.close_reason == "its game ended"
    assert (await outbox_events(lobby.url, table.table_id))[-1] == "TableClosed"
