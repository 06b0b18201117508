"""The auto-match queue on the real stack: PostgreSQL, the broker, and the real wallet, game
and geo services in-process; the waves run in matchmaking's background every 0.2 s. Each
test keeps to a stake of its own, so its tickets are alone in their pool."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import pytest

from services.geo.devdata import FLORIDA_IP
from tavla.antiabuse.v1 import events_pb2 as antiabuse_events
from tavla.game.v1 import game_pb2
from tavla.matchmaking.v1 import matchmaking_pb2
from tests.integration.matchmaking.conftest import Lobby
from tests.support.identity import as_player
from tests.support.matchmaking import (
    join_request,
    new_player,
    publish_verdict,
    queue_request,
    scalar,
    set_rating,
    table_request,
    ticket_reaching,
)
from tests.support.wallet import balance, fund, outbox_events

WAITING = matchmaking_pb2.TICKET_STATUS_WAITING
MATCHED = matchmaking_pb2.TICKET_STATUS_MATCHED
CANCELLED = matchmaking_pb2.TICKET_STATUS_CANCELLED
REFUSED = matchmaking_pb2.TICKET_STATUS_REFUSED
# Several waves at 0.2 s each: long enough for a wave to have paired what it could.
SEVERAL_WAVES = 1.5


async def funded(lobby: Lobby, *amounts: int) -> list[str]:
    players = [new_player() for _ in amounts]
    await asyncio.gather(*(fund(lobby.wallet, p, a) for p, a in zip(players, amounts, strict=True)))
    return players


async def enter(lobby: Lobby, player: str, stake: int, **options: Any) -> str:
    ticket = await lobby.lobby.EnterQueue(
        queue_request(stake=stake, **options), metadata=as_player(player)
    )
    return ticket.ticket_id


async def status_of(lobby: Lobby, ticket_id: str, player: str) -> matchmaking_pb2.QueueTicket:
    return await lobby.lobby.GetQueueTicket(
        matchmaking_pb2.GetQueueTicketRequest(ticket_id=ticket_id), metadata=as_player(player)
    )


async def test_two_players_in_the_queue_are_matched_into_one_game_with_both_holds(
    lobby: Lobby,
) -> None:
    first, second = await funded(lobby, 6_000, 6_000)
    await set_rating(lobby.url, first, 1760.0, 400)
    await set_rating(lobby.url, second, 1750.0, 300)
    entered = await lobby.lobby.EnterQueue(
        queue_request(stake=2_000, key="k1"), metadata=as_player(first)
    )
    assert entered.status == WAITING and entered.max_rating_difference == 300
    again = await lobby.lobby.EnterQueue(
        queue_request(stake=2_000, key="k1"), metadata=as_player(first)
    )
    assert again.ticket_id == entered.ticket_id  # the same key answers the same ticket
    other = await enter(lobby, second, 2_000)
    mine = await ticket_reaching(lobby.lobby, entered.ticket_id, first, MATCHED)
    theirs = await ticket_reaching(lobby.lobby, other, second, MATCHED)
    assert mine.game_id and mine.game_id == theirs.game_id
    assert mine.table_id == theirs.table_id
    assert (mine.opponent_account_id, theirs.opponent_account_id) == (second, first)
    assert (mine.rating, mine.opponent_rating) == (1760.0, 1750.0)
    # By hand, from the reference schedule: a $20 money game at cube 1 pays 4.9% ($0.98)
    # a player; both ratings over 1700 halve it: $0.49 (1500 for either would raise it).
    assert mine.commission.commission_per_player.minor_units == 49
    assert mine.commission.rate == "0.0245"
    # A money game's hold covers a backgammon at cube 1: 3 x $20, once each.
    for player in (first, second):
        assert await balance(lobby.wallet, player) == (0, 6_000)
    game = await lobby.games.GetGame(
        game_pb2.GetGameRequest(game_id=mine.game_id), metadata=as_player(first)
    )
    assert {p.account_id: p.rating for p in game.players} == {first: 1760.0, second: 1750.0}
    assert await outbox_events(lobby.url, mine.table_id) == ["PlayerSeated", "MatchMade"]


async def test_a_player_who_cannot_cover_is_refused_on_entry(lobby: Lobby) -> None:
    (poor,) = await funded(lobby, 1_000)
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await enter(lobby, poor, 2_100)
    assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "you cannot cover this table's stake" in (refused.value.details() or "")
    tickets = "SELECT count(*) FROM queue_tickets WHERE account_id = :a"
    assert await scalar(lobby.url, tickets, a=poor) == 0


async def test_a_florida_address_is_refused_on_entry(lobby: Lobby) -> None:
    (player,) = await funded(lobby, 10_000)
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await lobby.lobby.EnterQueue(
            queue_request(stake=2_200), metadata=as_player(player, address=FLORIDA_IP)
        )
    assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION


async def test_one_live_ticket_per_player_per_pool(lobby: Lobby) -> None:
    (player,) = await funded(lobby, 10_000)
    await enter(lobby, player, 2_300)
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await enter(lobby, player, 2_300)
    assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "you already wait in the queue" in (refused.value.details() or "")
    await enter(lobby, player, 2_400)  # another pool is another ticket


async def test_a_forbidden_pair_is_never_paired(lobby: Lobby, kafka_broker: Any) -> None:
    first, second, third = await funded(lobby, 2_000, 2_000, 2_000)
    restriction = antiabuse_events.PairRestricted(
        restriction_id=f"q-{first[:8]}",
        account_id=first,
        other_account_id=second,
        reason=antiabuse_events.PAIR_RESTRICTION_REASON_UNDER_INVESTIGATION,
        detail="chip dumping suspected",
    )
    await publish_verdict(kafka_broker.bootstrap, restriction)
    low, high = sorted((first, second))
    standing = (
        "SELECT count(*) FROM forbidden_pairs WHERE lifted_at IS NULL "
        "AND low_account_id = :low AND high_account_id = :high"
    )
    async with asyncio.timeout(60):
        while await scalar(lobby.url, standing, low=low, high=high) != 1:
            await asyncio.sleep(0.1)
    tickets = {first: await enter(lobby, first, 300), second: await enter(lobby, second, 300)}
    await asyncio.sleep(SEVERAL_WAVES)
    for player, ticket in tickets.items():
        assert (await status_of(lobby, ticket, player)).status == WAITING
    third_ticket = await enter(lobby, third, 300)
    matched = await ticket_reaching(lobby.lobby, third_ticket, third, MATCHED)
    partner = matched.opponent_account_id
    assert partner in (first, second)
    left = second if partner == first else first
    assert (await status_of(lobby, tickets[left], left)).status == WAITING


async def test_leave_queue_stops_a_ticket_from_being_paired(lobby: Lobby) -> None:
    first, second, third = await funded(lobby, 2_000, 2_000, 2_000)
    gone = await enter(lobby, first, 400)
    left = await lobby.lobby.LeaveQueue(
        matchmaking_pb2.LeaveQueueRequest(ticket_id=gone), metadata=as_player(first)
    )
    assert left.status == CANCELLED
    waiting = await enter(lobby, second, 400)
    await asyncio.sleep(SEVERAL_WAVES)
    assert (await status_of(lobby, waiting, second)).status == WAITING
    assert (await status_of(lobby, gone, first)).status == CANCELLED
    assert await balance(lobby.wallet, first) == (2_000, 0)
    last = await enter(lobby, third, 400)
    matched = await ticket_reaching(lobby.lobby, last, third, MATCHED)
    assert matched.opponent_account_id == second


async def test_a_player_refused_at_seating_is_refused_and_the_other_waits_on(
    lobby: Lobby,
) -> None:
    player, owner, other = await funded(lobby, 2_000, 2_000, 2_000)
    ticket = await enter(lobby, player, 500)  # alone in the pool: it waits
    entered_at = (await status_of(lobby, ticket, player)).entered_at
    # Their money goes to a lobby table meanwhile: $15 held of $20.
    table = await lobby.lobby.CreateTable(table_request(stake=500), metadata=as_player(owner))
    await lobby.lobby.JoinTable(join_request(table.table_id), metadata=as_player(player))
    assert await balance(lobby.wallet, player) == (500, 1_500)
    opponent = await enter(lobby, other, 500)
    refused = await ticket_reaching(lobby.lobby, ticket, player, REFUSED)
    assert refused.reason.startswith("you cannot cover this table's stake")
    again = await ticket_reaching(lobby.lobby, opponent, other, WAITING)
    assert again.table_id == "" and again.opponent_account_id == ""
    assert await balance(lobby.wallet, other) == (2_000, 0)  # its hold was given back
    assert await balance(lobby.wallet, player) == (500, 1_500)
    assert (await status_of(lobby, ticket, player)).entered_at == entered_at
    closed = await lobby.lobby.GetTable(
        matchmaking_pb2.GetTableRequest(table_id=refused.table_id), metadata=as_player(other)
    )
    assert closed.status == matchmaking_pb2.TABLE_STATUS_CLOSED


async def test_watch_queue_ticket_streams_waiting_then_matched(lobby: Lobby) -> None:
    first, second = await funded(lobby, 2_000, 2_000)
    ticket = await enter(lobby, first, 600)
    stream = lobby.lobby.WatchQueueTicket(
        matchmaking_pb2.GetQueueTicketRequest(ticket_id=ticket), metadata=as_player(first)
    )
    seen: list[matchmaking_pb2.QueueTicket] = []
    async with asyncio.timeout(30):
        iterator = stream.__aiter__()
        seen.append(await iterator.__anext__())
        assert seen[0].status == WAITING
        await enter(lobby, second, 600)
        async for update in iterator:
            seen.append(update)
    statuses = [update.status for update in seen]
    assert statuses[0] == WAITING and statuses[-1] == MATCHED
    assert set(statuses) <= {WAITING, matchmaking_pb2.TICKET_STATUS_SEATING, MATCHED}
    assert seen[-1].game_id and seen[-1].opponent_account_id == second


async def test_someone_elses_ticket_is_not_found(lobby: Lobby) -> None:
    (first,) = await funded(lobby, 2_000)
    stranger = new_player()
    ticket = await enter(lobby, first, 650)
    with pytest.raises(grpc.aio.AioRpcError) as missing:
        await status_of(lobby, ticket, stranger)
    assert missing.value.code() == grpc.StatusCode.NOT_FOUND
