"""``tavla bench matchmaking --seating``: tables seated per second over gRPC with real holds,
against the wallet's hold rate measured alone in the same run.

Production's processes (:mod:`services.kit.benchstack`): ``tavla serve`` wallet (the
sandbox, USD allowed), game, geo (on the dev databases of
:mod:`services.geo.devdata`) and matchmaking, log level info, one PostgreSQL and
one broker; the benchmark only calls them, with players' access tokens (residence
MT, calling from a Malta address as the gateway would say) or, for the holds
alone, as matchmaking.

1. Setup (not timed): ``2 x --tables`` players deposit through the wallet; each
   of ``--tables`` owners opens a real-money table (``CreateTable``: geo and
   ``CanCover``, nothing held).
2. Holds alone (timed): ``2 x --tables`` ``PlaceHold`` calls (a seat's opening
   hold, stake x 3) by ``--clients`` concurrent callers, as matchmaking's seating
   places them. Holds per second.
3. Seating (timed): each joiner's ``JoinTable`` by ``--clients`` concurrent
   players: the claim, geo for both (asked at once), both holds in one
   ``PlaceHolds`` call, ``CreateGame`` with both ratings (which claims both holds
   at the wallet), the table started. Tables seated per second; every one must
   end PLAYING with a game.

A seating places two holds, so if holds placed one a call were all it cost, tables
per second would be half the hold rate: ``ratio`` = tables per second / holds per
second says how close it comes (0.5 = two ``PlaceHold`` calls' worth; a seating's
one ``PlaceHolds`` call for both can take it past that). The last line printed is::

    {"tables", "seated_per_s", "holds_per_s", "ratio"}
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from contextlib import ExitStack
from typing import Any

from services.geo.devdata import MALTA_IP, write_dev_databases
from services.kit.benchstack import FUNDING_WALLET_ENV, BenchKeys, BenchStack, ServiceProcess
from services.kit.client_signals import CLIENT_ADDRESS_HEADER
from services.wallet.bench import fund_players, place_seat_hold
from tavla.common.v1 import money_pb2
from tavla.game.v1 import game_pb2
from tavla.matchmaking.v1 import matchmaking_pb2, matchmaking_pb2_grpc
from tavla.wallet.v1 import wallet_pb2_grpc

STAKE = 100  # $1 money games: each seat holds $3


def start_stack(bench: BenchStack) -> dict[str, ServiceProcess]:
    """Wallet, game, geo and matchmaking as production runs them; SERVING on return."""
    city, anonymous = write_dev_databases(bench.run_dir / "geo")
    wallet = bench.start_service(
        "wallet", "wallet", bench.new_database("wallet_seat"), FUNDING_WALLET_ENV
    )
    geo = bench.start_service(
        "geo", "geo", bench.new_database("geo_seat"),
        {"TAVLA_GEO_CITY_DB": str(city), "TAVLA_GEO_ANONYMOUS_DB": str(anonymous)},
    )  # fmt: skip
    asyncio.run(bench.wait_serving(wallet, geo))
    game = bench.start_service(
        "game", "game", bench.new_database("game_seat"), {"TAVLA_WALLET_ADDRESS": wallet.address}
    )
    asyncio.run(bench.wait_serving(game))
    matchmaking = bench.start_service(
        "matchmaking",
        "matchmaking",
        bench.new_database("mm_seat"),
        {
            "TAVLA_WALLET_ADDRESS": wallet.address,
            "TAVLA_GAME_ADDRESS": game.address,
            "TAVLA_GEO_ADDRESS": geo.address,
        },
    )
    asyncio.run(bench.wait_serving(matchmaking))
    return {"wallet": wallet, "game": game, "geo": geo, "matchmaking": matchmaking}


async def _concurrently(
    items: Sequence[Any], clients: int, call: Callable[[Any], Awaitable[None]]
) -> float:
    """Seconds to run ``call`` on every item, ``clients`` at a time."""
    queue = iter(items)

    async def worker() -> None:
        for item in queue:
            await call(item)

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(clients)))
    return time.perf_counter() - started


async def holds_alone(keys: BenchKeys, wallet: str, players: list[str], clients: int) -> float:
    """Holds per second: one seat's hold for each player, as matchmaking places them."""
    run = uuid.uuid4().hex[:8]
    async with keys.channel(wallet, target="wallet", caller="matchmaking") as channel:
        stub = wallet_pb2_grpc.WalletServiceStub(channel)

        async def hold(player: str) -> None:
            await place_seat_hold(stub, player, STAKE * 3, f"holds-{run}-{player}")

        seconds = await _concurrently(players, clients, hold)
    return len(players) / seconds


async def seat_tables(
    keys: BenchKeys, matchmaking: str, pairs: list[tuple[str, str]], clients: int
) -> float:
    """Tables seated per second: each owner's table opened (not timed), then joined (timed)."""
    tokens = keys.players(residence="MT")

    def player(account: str) -> list[tuple[str, str]]:
        return [*tokens(account), (CLIENT_ADDRESS_HEADER, MALTA_IP)]

    rules = game_pb2.TableRules(
        kind=game_pb2.PLAY_KIND_MONEY_GAME,
        stake=money_pb2.Money(minor_units=STAKE, currency="USD"),
    )
    async with keys.channel(matchmaking, target="matchmaking", caller="game") as channel:
        stub = matchmaking_pb2_grpc.MatchmakingServiceStub(channel)
        tables: dict[str, str] = {}

        async def open_table(pair: tuple[str, str]) -> None:
            made = await stub.CreateTable(
                matchmaking_pb2.CreateTableRequest(rules=rules, idempotency_key="bench"),
                metadata=player(pair[0]),
            )
            tables[pair[1]] = made.table_id

        await _concurrently(pairs, clients, open_table)
        seated: list[str] = []

        async def join(pair: tuple[str, str]) -> None:
            table = await stub.JoinTable(
                matchmaking_pb2.JoinTableRequest(table_id=tables[pair[1]], idempotency_key="b"),
                metadata=player(pair[1]),
            )
            if table.status != matchmaking_pb2.TABLE_STATUS_PLAYING or not table.game_id:
                raise RuntimeError(f"table {table.table_id} did not start: {table}")
            seated.append(table.game_id)

        seconds = await _concurrently(pairs, clients, join)
    if len(set(seated)) != len(pairs):
        raise RuntimeError(f"{len(set(seated))} games for {len(pairs)} tables")
    return len(pairs) / seconds


def run(tables: int, clients: int) -> dict[str, Any]:
    with ExitStack() as stack:
        bench = BenchStack(stack)
        services = start_stack(bench)
        wallet = services["wallet"]
        players = asyncio.run(
            fund_players(bench.keys, wallet.address, wallet.database_url, 2 * tables, clients)
        )
        pairs = list(zip(players[::2], players[1::2], strict=True))
        holds_per_s = asyncio.run(holds_alone(bench.keys, wallet.address, players, clients))
        print(f"wallet alone: {2 * tables} PlaceHold calls, {holds_per_s:.1f} holds/s "
              f"({clients} concurrent callers)")
        seated_per_s = asyncio.run(
            seat_tables(bench.keys, services["matchmaking"].address, pairs, clients)
        )
    ratio = seated_per_s / holds_per_s
    print(f"seating: {tables} real-money tables, {seated_per_s:.1f} tables/s (geo for both, "
          f"both holds in one call, CreateGame), {ratio:.3f} of the hold rate "
          f"(0.5 = two PlaceHold calls a table)")
    return {
        "tables": tables,
        "seated_per_s": round(seated_per_s, 1),
        "holds_per_s": round(holds_per_s, 1),
        "ratio": round(ratio, 3),
    }
