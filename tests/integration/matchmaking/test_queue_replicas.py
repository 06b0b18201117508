"""Two matchmaking replicas on one database wave one pool of many tickets at the same time
(real PostgreSQL, broker, wallet, game and geo): no ticket is paired twice, no table or
game made twice, each stake held once. Waves run every 0.05 s on both, and each entry
wakes the replica it reached, so the two meet on the pool again and again."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine

from services.matchmaking.ticket_store import TicketRepository
from tavla.matchmaking.v1 import matchmaking_pb2, matchmaking_pb2_grpc
from tavla.wallet.v1 import wallet_pb2_grpc
from tests.support.game import start_game_with_wallet
from tests.support.identity import as_player
from tests.support.matchmaking import (
    new_player,
    queue_request,
    scalar,
    start_matchmaking,
    ticket_reaching,
)
from tests.support.services import RunningService, new_database, stop_service
from tests.support.wallet import balance, fund, start_wallet

PLAYERS = 30
STAKE = 800


@pytest.fixture(scope="module")
async def replicas(
    postgres_server: Any, kafka_broker: Any, geo_service: RunningService
) -> AsyncIterator[tuple[list[RunningService], RunningService, str]]:
    names = [new_database(postgres_server, p) for p in ("wallet_rep", "game_rep", "mm_rep")]
    urls = [postgres_server.url(name) for name in names]
    wallet = await start_wallet(urls[0], kafka_broker.bootstrap, geo_address=geo_service.address)
    game = await start_game_with_wallet(
        urls[1], kafka_broker.bootstrap, wallet.address, geo_service.address
    )
    both = [
        await start_matchmaking(
            urls[2],
            kafka_broker.bootstrap,
            wallet_address=wallet.address,
            game_address=game.address,
            geo_address=geo_service.address,
            wave_seconds=0.05,
        )
        for _ in range(2)
    ]
    yield both, wallet, urls[2]
    for service in (*both, game, wallet):
        await stop_service(service)


async def test_two_replicas_never_pair_a_ticket_twice(
    replicas: tuple[list[RunningService], RunningService, str],
) -> None:
    both, wallet_service, url = replicas
    stubs = [matchmaking_pb2_grpc.MatchmakingServiceStub(s.channel) for s in both]
    wallet = wallet_pb2_grpc.WalletServiceStub(wallet_service.channel)
    players = [new_player() for _ in range(PLAYERS)]
    await asyncio.gather(*(fund(wallet, p, 10_000) for p in players))

    async def enter(index: int, player: str) -> str:
        stub = stubs[index % 2]  # alternate replicas
        ticket = await stub.EnterQueue(queue_request(stake=STAKE), metadata=as_player(player))
        return ticket.ticket_id

    tickets = await asyncio.gather(*(enter(i, p) for i, p in enumerate(players)))
    # Every player starts at 1500: all within reach of each other, so all are paired.
    matched = await asyncio.gather(
        *(
            ticket_reaching(stubs[0], t, p, matchmaking_pb2.TICKET_STATUS_MATCHED, timeout=120)
            for t, p in zip(tickets, players, strict=True)
        )
    )
    per_table = Counter(t.table_id for t in matched)
    assert len(per_table) == PLAYERS // 2 and set(per_table.values()) == {2}
    per_game = Counter(t.game_id for t in matched)
    assert len(per_game) == PLAYERS // 2 and set(per_game.values()) == {2}
    by_player = {p: t for p, t in zip(players, matched, strict=True)}
    for player, ticket in by_player.items():  # partners name each other
        assert by_player[ticket.opponent_account_id].opponent_account_id == player
    # Each stake held exactly once: 3 x $8 of $100.
    balances = await asyncio.gather(*(balance(wallet, p) for p in players))
    assert set(balances) == {(10_000 - 3 * STAKE, 3 * STAKE)}
    queue_tables = "SELECT count(*) FROM lobby_tables WHERE idempotency_key LIKE 'queue:%'"
    assert await scalar(url, queue_tables) == PLAYERS // 2


async def test_one_wave_per_pool_at_a_time(
    replicas: tuple[list[RunningService], RunningService, str],
) -> None:
    """The pool lock itself: while one transaction holds a pool's, another gets False for
    that pool (and skips it) but may take another pool's; the lock ends with the holder's
    transaction."""
    _, _, url = replicas
    engine = create_async_engine(url)
    sessions = async_sessionmaker(engine)
    try:
        async with sessions() as holder, sessions() as other:
            first, second = TicketRepository(holder), TicketRepository(other)
            assert await first.lock_pool("money_game:0:800:USD:64:0:0:0:standard")
            assert not await second.lock_pool("money_game:0:800:USD:64:0:0:0:standard")
            assert await second.lock_pool("money_game:0:900:USD:64:0:0:0:standard")
            await holder.rollback()  # the wave's transaction ends: its lock goes with it
            await other.rollback()
            assert await second.lock_pool("money_game:0:800:USD:64:0:0:0:standard")
            await other.rollback()
    finally:
        await engine.dispose()
