"""Table stakes on the real stack: matchmaking, the game, the wallet and geo in-process,
PostgreSQL and the broker.

Every table here plays $1.00 a point (100 cents) and each player brings $3.00 (300),
held for the whole session; both players are unrated (1500 each), so commission is the
schedule's 4.9% per player for a win sum up to $20.00, rounded half up, paid from the
winner's winnings. Games are ended by resignations, as a player would.
"""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import pytest

from services.wallet.audit_cli import audit_database
from tavla.game.v1 import game_pb2
from tavla.matchmaking.v1 import matchmaking_pb2
from tests.integration.matchmaking.conftest import Lobby
from tests.support.game import take_turn
from tests.support.identity import as_player
from tests.support.matchmaking import join_request, new_player, scalar, table_request
from tests.support.wallet import balance, fund, outbox_events

PLAYING = matchmaking_pb2.TABLE_STATUS_PLAYING
CLOSED = matchmaking_pb2.TABLE_STATUS_CLOSED
STAKE = 100
BRING_IN = 300


async def open_session(lobby: Lobby) -> tuple[str, str, matchmaking_pb2.Table]:
    owner, joiner = new_player(), new_player()
    await asyncio.gather(fund(lobby.wallet, owner, 1_000), fund(lobby.wallet, joiner, 1_000))
    request = table_request(stake=STAKE)
    request.rules.table_stakes_minor_units = BRING_IN
    table = await lobby.lobby.CreateTable(request, metadata=as_player(owner))
    assert table.rules.table_stakes_minor_units == BRING_IN
    started = await lobby.lobby.JoinTable(join_request(table.table_id), metadata=as_player(joiner))
    assert started.status == PLAYING and started.games_played == 1
    return owner, joiner, started


async def game_of(lobby: Lobby, game_id: str, viewer: str) -> game_pb2.Game:
    return await lobby.games.GetGame(
        game_pb2.GetGameRequest(game_id=game_id), metadata=as_player(viewer)
    )


async def resigns(lobby: Lobby, game: game_pb2.Game, resigner: str, level: Any) -> game_pb2.Game:
    """``resigner`` offers to resign at ``level`` and the opponent accepts."""
    offered = await lobby.games.Resign(
        game_pb2.ResignRequest(game_id=game.game_id, expected_version=game.version, level=level),
        metadata=as_player(resigner),
    )
    return await lobby.games.AcceptResign(
        game_pb2.AcceptResignRequest(game_id=game.game_id, expected_version=offered.version),
        metadata=as_player(offered.awaiting_account_id),
    )


async def table_after(
    lobby: Lobby, table_id: str, viewer: str, *, games: int = 0, closed: bool = False
) -> matchmaking_pb2.Table:
    """The table once its session reached game ``games`` (or closed): each settlement
    travels GameEnded -> wallet -> Settled -> matchmaking through the broker."""
    request = matchmaking_pb2.GetTableRequest(table_id=table_id)
    async with asyncio.timeout(90):
        while True:
            table = await lobby.lobby.GetTable(request, metadata=as_player(viewer))
            if (closed and table.status == CLOSED) or (games and table.games_played >= games):
                return table
            await asyncio.sleep(0.2)


def stakes_left(table: matchmaking_pb2.Table) -> dict[str, int]:
    return {p.account_id: p.table_stake_left_minor_units for p in table.players}


async def test_a_session_plays_until_one_player_holds_both_stakes(lobby: Lobby) -> None:
    owner, joiner, table = await open_session(lobby)
    # Both bring-ins held, nothing else.
    for player in (owner, joiner):
        assert await balance(lobby.wallet, player) == (700, BRING_IN)
    first = await game_of(lobby, table.game_id, owner)
    # 300 at risk: the cube may reach 2 (200) but not 4 (400); the cap is shown.
    assert first.rules.table_stakes_at_risk_minor_units == BRING_IN
    assert first.table_stakes_max_cube == 2

    # Game 1: the owner resigns a gammon, W = 100 x 1 x 2 = 200; 4.9% = 9.8 -> 10 cents per
    # player. The owner's hold: 300 - 200 = 100; the joiner's: 300 + 200 - 20 = 480.
    ended = await resigns(lobby, first, owner, game_pb2.RESULT_TYPE_GAMMON)
    assert ended.last_outcome.points == 2
    second_table = await table_after(lobby, table.table_id, owner, games=2)
    assert stakes_left(second_table) == {owner: 100, joiner: 480}
    assert second_table.status == PLAYING and second_table.game_id != table.game_id
    # Only held money moved: the available balances did not change.
    assert await balance(lobby.wallet, owner) == (700, 100)
    assert await balance(lobby.wallet, joiner) == (700, 480)

    # Game 2: 100 at risk (the owner's stake left), so no double at all.
    second = await game_of(lobby, second_table.game_id, owner)
    assert second.rules.table_stakes_at_risk_minor_units == 100
    assert second.table_stakes_max_cube == 1
    while second.phase != game_pb2.TURN_PHASE_ROLL_OR_DOUBLE:
        second = await take_turn(lobby.games, second)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await lobby.games.Double(
            game_pb2.DoubleRequest(game_id=second.game_id, expected_version=second.version),
            metadata=as_player(second.awaiting_account_id),
        )
    assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "table stakes: the cube may not reach 2 in this game (at most 1)" in (
        caught.value.details() or ""
    )
    unchanged = await game_of(lobby, second.game_id, owner)
    assert (unchanged.version, unchanged.cube_value) == (second.version, 1)

    # The owner resigns a backgammon; it counts as a single game (300 > 100 at risk):
    # W = 100, 4.9% = 4.9 -> 5 cents each. The owner has 0 left; the joiner 480 + 90 = 570.
    last = await resigns(lobby, unchanged, owner, game_pb2.RESULT_TYPE_BACKGAMMON)
    assert last.last_outcome.points == 1
    over = await table_after(lobby, table.table_id, owner, closed=True)
    assert over.close_reason == f"table stakes: {joiner} holds both stakes"
    assert over.games_played == 2
    # The joiner's remaining hold is released: 700 + 570; the owner lost the 300 brought.
    assert await balance(lobby.wallet, owner) == (700, 0)
    assert await balance(lobby.wallet, joiner) == (1_270, 0)
    # 2,000 in, 1,970 with the players, 30 commission (10 + 10, then 5 + 5), per game.
    settled = await scalar(
        lobby.wallet_url,
        "SELECT string_agg(kind || ':' || win_sum || ':' || commission_total, ' '"
        " ORDER BY settled_at) FROM settlements WHERE table_id = :table",
        table=table.table_id,
    )
    assert settled == "table_stakes:200:20 table_stakes:100:10"
    assert await audit_database(lobby.wallet_url) == ()
    assert (await outbox_events(lobby.url, table.table_id))[-1] == "TableClosed"


async def test_a_player_who_leaves_ends_the_session_after_the_game_in_play(
    lobby: Lobby,
) -> None:
    owner, joiner, table = await open_session(lobby)
    # Game 1: the joiner resigns a single game, W = 100, 5 cents each: the owner 390,
    # the joiner 200.
    first = await game_of(lobby, table.game_id, owner)
    await resigns(lobby, first, joiner, game_pb2.RESULT_TYPE_SINGLE)
    second_table = await table_after(lobby, table.table_id, owner, games=2)
    assert stakes_left(second_table) == {owner: 390, joiner: 200}
    second = await game_of(lobby, second_table.game_id, owner)
    assert second.rules.table_stakes_at_risk_minor_units == 200

    # The owner leaves: no third game; the second is played out (here: resigned).
    leaving = await lobby.lobby.LeaveTable(
        matchmaking_pb2.LeaveTableRequest(table_id=table.table_id), metadata=as_player(owner)
    )
    assert leaving.status == PLAYING and leaving.leaving_account_id == owner
    # The owner resigns a single game: the owner 390 - 100 = 290, the joiner 200 + 90 = 290.
    await resigns(lobby, second, owner, game_pb2.RESULT_TYPE_SINGLE)
    over = await table_after(lobby, table.table_id, owner, closed=True)
    assert over.close_reason == f"table stakes: {owner} left the table between games"
    assert over.games_played == 2
    # Both holds released: nothing stays held, 20 cents went to the house.
    assert await balance(lobby.wallet, owner) == (990, 0)
    assert await balance(lobby.wallet, joiner) == (990, 0)
    assert await audit_database(lobby.wallet_url) == ()
    events = await outbox_events(lobby.url, table.table_id)
    assert events[-2:] == ["PlayerLeftTable", "TableClosed"]


async def test_table_stakes_are_refused_where_they_cannot_be_played(lobby: Lobby) -> None:
    owner = new_player()
    await fund(lobby.wallet, owner, 1_000)
    too_small = table_request(stake=STAKE)
    too_small.rules.table_stakes_minor_units = 99
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await lobby.lobby.CreateTable(too_small, metadata=as_player(owner))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "at least one game at cube 1" in (caught.value.details() or "")
    match = table_request(stake=STAKE, match_length=3)
    match.rules.table_stakes_minor_units = BRING_IN
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await lobby.lobby.CreateTable(match, metadata=as_player(owner))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "money-game option" in (caught.value.details() or "")
    assert await balance(lobby.wallet, owner) == (1_000, 0)
