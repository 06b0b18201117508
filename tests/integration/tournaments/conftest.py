"""Tournament fixtures: the tournaments service with the real wallet, game and geo services,
in-process, on the real PostgreSQL and broker."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

from tavla.game.v1 import game_pb2_grpc
from tavla.tournaments.v1 import tournaments_pb2_grpc
from tavla.wallet.v1 import wallet_pb2_grpc
from tests.support.game import start_game_with_wallet
from tests.support.services import RunningService, new_database, stop_service
from tests.support.tournaments import start_tournaments
from tests.support.wallet import start_wallet


@dataclass
class Venue:
    tournaments: RunningService
    stub: tournaments_pb2_grpc.TournamentsServiceStub
    wallet: wallet_pb2_grpc.WalletServiceStub
    games: game_pb2_grpc.GameServiceStub
    url: str  # the tournaments' database
    wallet_url: str
    wallet_address: str
    game_address: str
    geo_address: str


@pytest.fixture(scope="module")
async def venue(
    postgres_server: Any, kafka_broker: Any, geo_service: RunningService
) -> AsyncIterator[Venue]:
    names = [new_database(postgres_server, p) for p in ("wallet_t", "game_t", "tournaments")]
    urls = [postgres_server.url(name) for name in names]
    wallet = await start_wallet(urls[0], kafka_broker.bootstrap, geo_address=geo_service.address)
    game = await start_game_with_wallet(
        urls[1], kafka_broker.bootstrap, wallet.address, geo_service.address
    )
    tournaments = await start_tournaments(
        urls[2],
        kafka_broker.bootstrap,
        wallet_address=wallet.address,
        game_address=game.address,
        geo_address=geo_service.address,
    )
    yield Venue(
        tournaments,
        tournaments_pb2_grpc.TournamentsServiceStub(tournaments.channel),
        wallet_pb2_grpc.WalletServiceStub(wallet.channel),
        game_pb2_grpc.GameServiceStub(game.channel),
        urls[2],
        urls[0],
        wallet.address,
        game.address,
        geo_service.address,
    )
    for service in (tournaments, game, wallet):
        await stop_service(service)
