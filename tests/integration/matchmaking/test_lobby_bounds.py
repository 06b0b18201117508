"""Stakes are bounded and play money is held, on the real stack (PostgreSQL, the broker,
the real wallet, game and geo services).

An int64 stake at CreateTable or EnterQueue answered 500, and a player with 0 PLAY sat at
a table staked 3 x 10^18 PLAY: play-money tables checked no cover and held nothing.
"""

from __future__ import annotations

from typing import Any

import grpc
import pytest

from tavla.matchmaking.v1 import matchmaking_pb2
from tests.integration.matchmaking.conftest import Lobby
from tests.support.identity import as_player
from tests.support.matchmaking import join_request, new_player, queue_request, table_request
from tests.support.wallet import balance, fund, top_up

INT64_MAX = 2**63 - 1
OPEN = matchmaking_pb2.TABLE_STATUS_OPEN
PLAYING = matchmaking_pb2.TABLE_STATUS_PLAYING


async def refused(call: Any) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call
    return caught.value


@pytest.mark.parametrize(
    ("stake", "currency", "limit"),
    [
        (INT64_MAX, "USD", "TAVLA_MONEY_MAX_STAKE_USD"),
        (3 * 10**18, "PLAY", "TAVLA_MONEY_MAX_STAKE_PLAY"),
        (500_001, "EUR", "TAVLA_MONEY_MAX_STAKE_EUR"),
    ],
)
async def test_a_stake_above_the_maximum_opens_no_table_and_enters_no_queue(
    lobby: Lobby, stake: int, currency: str, limit: str
) -> None:
    player = new_player()
    await fund(lobby.wallet, player, 2_000)
    await top_up(lobby.wallet, player)
    table = await refused(
        lobby.lobby.CreateTable(
            table_request(stake=stake, currency=currency), metadata=as_player(player)
        )
    )
    ticket = await refused(
        lobby.lobby.EnterQueue(
            queue_request(stake=stake, currency=currency), metadata=as_player(player)
        )
    )
    for error in (table, ticket):
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert limit in (error.details() or "")
    mine = await lobby.lobby.ListTables(
        matchmaking_pb2.ListTablesRequest(currency=currency, page_size=100),
        metadata=as_player(new_player()),
    )
    assert all(t.players[0].account_id != player for t in mine.tables)


async def test_a_play_money_table_refuses_an_owner_who_cannot_cover_it(lobby: Lobby) -> None:
    owner = new_player()  # 0 PLAY
    error = await refused(
        lobby.lobby.CreateTable(
            table_request(stake=100, currency="PLAY"), metadata=as_player(owner)
        )
    )
    assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "you cannot cover this table's stake" in (error.details() or "")
    queued = await refused(
        lobby.lobby.EnterQueue(queue_request(stake=100, currency="PLAY"), metadata=as_player(owner))
    )
    assert "you cannot cover this table's stake" in (queued.details() or "")


async def test_a_play_money_table_holds_both_stakes_and_refuses_a_joiner_who_cannot_cover(
    lobby: Lobby,
) -> None:
    owner, broke, joiner = new_player(), new_player(), new_player()
    await top_up(lobby.wallet, owner)
    await top_up(lobby.wallet, joiner)
    table = await lobby.lobby.CreateTable(
        table_request(stake=100_000, currency="PLAY"), metadata=as_player(owner)
    )
    error = await refused(
        lobby.lobby.JoinTable(join_request(table.table_id), metadata=as_player(broke))
    )
    assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "you cannot cover this table's stake" in (error.details() or "")
    again = await lobby.lobby.GetTable(
        matchmaking_pb2.GetTableRequest(table_id=table.table_id), metadata=as_player(owner)
    )
    assert again.status == OPEN  # the joiner's refusal leaves the table to others
    assert await balance(lobby.wallet, owner, "PLAY") == (1_000_000, 0)  # nothing left held
    started = await lobby.lobby.JoinTable(join_request(table.table_id), metadata=as_player(joiner))
    assert started.status == PLAYING and started.game_id
    # Each player sees their own seat's hold id only; the balances below show both held.
    assert [bool(p.hold_id) for p in started.players] == [
        p.account_id == joiner for p in started.players
    ]
    # A backgammon at cube 1: 3 x 1,000.00 PLAY held from each.
    for player in (owner, joiner):
        assert await balance(lobby.wallet, player, "PLAY") == (700_000, 300_000)
