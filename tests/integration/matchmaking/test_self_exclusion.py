"""Self-exclusion refuses every table and queue entry, real or play money, at the first call.

The player self-excludes through the real accounts service; its AccountSelfExcluded goes
through the outbox and the real broker to matchmaking's self-exclusions consumer. Once
that copy holds it (read from matchmaking's database, not by calling the lobby), the
player's very first CreateTable, JoinTable or EnterQueue is refused with the reason.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable
from datetime import UTC, datetime, timedelta

import grpc
import pytest
from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine

from services.kit.clock import ManualClock
from services.kit.self_exclusion import SelfExclusionHandler, excluded_until
from tavla.accounts.v1 import accounts_pb2, accounts_pb2_grpc
from tavla.accounts.v1 import events_pb2 as account_events
from tavla.matchmaking.v1 import matchmaking_pb2
from tests.integration.matchmaking.conftest import Lobby
from tests.support.identity import as_player
from tests.support.matchmaking import (
    join_request,
    new_player,
    queue_request,
    scalar,
    table_request,
)
from tests.support.services import RunningService
from tests.support.wallet import fund, received, top_up

UNTIL = datetime(2027, 6, 30, 12, 0, tzinfo=UTC)
REASON = "you are self-excluded until 2027-06-30T12:00:00+00:00"


async def registered(accounts: RunningService) -> str:
    stub = accounts_pb2_grpc.AccountsServiceStub(accounts.channel)
    name = f"x{uuid.uuid4().hex[:10]}"
    account = await stub.Register(
        accounts_pb2.RegisterRequest(
            email=f"{name}@example.com", password="correct horse battery",
            display_name=name, residence="MT", date_of_birth="1990-04-21",
        )
    )  # fmt: skip
    return account.account_id


async def self_exclude(accounts: RunningService, lobby: Lobby, account_id: str) -> None:
    """The player's own SelfExclude call, then wait until matchmaking's copy holds it."""
    stub = accounts_pb2_grpc.AccountsServiceStub(accounts.channel)
    request = accounts_pb2.SelfExcludeRequest(account_id=account_id)
    request.until.FromDatetime(UNTIL)
    await stub.SelfExclude(request, metadata=as_player(account_id))
    held = "SELECT count(*) FROM self_exclusions WHERE account_id = :a"
    async with asyncio.timeout(60):
        while await scalar(lobby.url, held, a=account_id) != 1:
            await asyncio.sleep(0.1)


async def refused(call: Awaitable[object]) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call
    assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert REASON in (caught.value.details() or ""), caught.value.details()
    assert "real or play money" in (caught.value.details() or "")


async def test_a_self_excluded_player_opens_no_table_real_or_play_money(
    lobby: Lobby, accounts_service: RunningService
) -> None:
    player = await registered(accounts_service)
    await fund(lobby.wallet, player, 5000)  # before: a deposit would be refused after
    await self_exclude(accounts_service, lobby, player)
    meta = as_player(player)
    await refused(lobby.lobby.CreateTable(table_request(stake=100, currency="PLAY"), metadata=meta))
    await refused(lobby.lobby.CreateTable(table_request(stake=100), metadata=meta))
    owned = "SELECT count(*) FROM lobby_tables WHERE owner_account_id = :a"
    assert await scalar(lobby.url, owned, a=player) == 0


async def test_a_self_excluded_player_joins_no_play_money_table(
    lobby: Lobby, accounts_service: RunningService
) -> None:
    owner, player = new_player(), await registered(accounts_service)
    # Both could cover the stake (play money is held too): only the exclusion refuses.
    await top_up(lobby.wallet, owner)
    await top_up(lobby.wallet, player)
    await self_exclude(accounts_service, lobby, player)
    table = await lobby.lobby.CreateTable(
        table_request(stake=100, currency="PLAY"), metadata=as_player(owner)
    )
    await refused(lobby.lobby.JoinTable(join_request(table.table_id), metadata=as_player(player)))
    still = await lobby.lobby.GetTable(
        matchmaking_pb2.GetTableRequest(table_id=table.table_id), metadata=as_player(owner)
    )
    assert still.status == matchmaking_pb2.TABLE_STATUS_OPEN


async def test_a_self_excluded_player_enters_no_queue(
    lobby: Lobby, accounts_service: RunningService
) -> None:
    player = await registered(accounts_service)
    await fund(lobby.wallet, player, 5000)
    await self_exclude(accounts_service, lobby, player)
    meta = as_player(player)
    await refused(lobby.lobby.EnterQueue(queue_request(stake=137), metadata=meta))
    await refused(lobby.lobby.EnterQueue(queue_request(stake=137, currency="PLAY"), metadata=meta))
    tickets = "SELECT count(*) FROM queue_tickets WHERE account_id = :a"
    assert await scalar(lobby.url, tickets, a=player) == 0


async def test_what_a_player_left_waiting_is_withdrawn_when_they_self_exclude(
    lobby: Lobby, accounts_service: RunningService
) -> None:
    player, joiner = await registered(accounts_service), new_player()
    await top_up(lobby.wallet, player)
    await top_up(lobby.wallet, joiner)
    meta = as_player(player)
    table = await lobby.lobby.CreateTable(table_request(stake=100, currency="PLAY"), metadata=meta)
    ticket = await lobby.lobby.EnterQueue(
        queue_request(stake=139, currency="PLAY"), metadata=meta
    )
    await self_exclude(accounts_service, lobby, player)
    # In the same transaction as the copy: the table closed as if its owner had left
    # (other players are not told why), the ticket refused with the reason.
    closed = await lobby.lobby.GetTable(
        matchmaking_pb2.GetTableRequest(table_id=table.table_id), metadata=as_player(joiner)
    )
    assert closed.status == matchmaking_pb2.TABLE_STATUS_CLOSED
    assert closed.close_reason == "its owner left"
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await lobby.lobby.JoinTable(join_request(table.table_id), metadata=as_player(joiner))
    assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "self-excluded" not in (caught.value.details() or "")
    refused_ticket = await lobby.lobby.GetQueueTicket(
        matchmaking_pb2.GetQueueTicketRequest(ticket_id=ticket.ticket_id), metadata=meta
    )
    assert refused_ticket.status == matchmaking_pb2.TICKET_STATUS_REFUSED
    assert REASON in refused_ticket.reason


async def test_the_copy_only_ever_lengthens_an_exclusion(lobby: Lobby) -> None:
    """A replayed or late AccountSelfExcluded with an earlier end shortens nothing."""
    player = new_player()
    engine = create_async_engine(lobby.url)
    sessions = async_sessionmaker(engine)
    handler = SelfExclusionHandler(ManualClock(datetime(2026, 12, 5, tzinfo=UTC)))
    try:
        for until in (UNTIL, UNTIL - timedelta(days=90)):
            fact = account_events.AccountSelfExcluded(account_id=player)
            fact.until.FromDatetime(until)
            async with sessions.begin() as session:
                await handler.self_excluded(session, received(fact, topic="tavla.accounts.v1"))
        async with sessions() as session:
            found = await excluded_until(session, [player], datetime(2027, 6, 1, tzinfo=UTC))
    finally:
        await engine.dispose()
    assert found == {player: UNTIL}

