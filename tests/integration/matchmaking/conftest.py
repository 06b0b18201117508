"""Lobby fixtures: matchmaking with the real wallet, game and geo services, in-process."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

from tavla.game.v1 import game_pb2_grpc
from tavla.matchmaking.v1 import matchmaking_pb2_grpc
from tavla.wallet.v1 import wallet_pb2_grpc
from tests.support.game import start_game_with_wallet
from tests.support.matchmaking import start_matchmaking
from tests.support.services import RunningService, new_database, stop_service
from tests.support.wallet import start_wallet


@dataclass
class Lobby:
    """The running services and their stubs; ``url`` is matchmaking's database."""

    matchmaking: RunningService
    lobby: matchmaking_pb2_grpc.MatchmakingServiceStub
    wallet: wallet_pb2_grpc.WalletServiceStub
    games: game_pb2_grpc.GameServiceStub
    url: str
    wallet_address: str
    game_address: str
    wallet_url: str = ""  # the wallet's database, for its audit


@pytest.fixture(scope="module")
async def lobby(
    postgres_server: Any, kafka_broker: Any, geo_service: RunningService
) -> AsyncIterator[Lobby]:
    names = [new_database(postgres_server, p) for p in ("wallet_lobby", "game_lobby", "mm")]
    urls = [postgres_server.url(name) for name in names]
    wallet = await start_wallet(urls[0], kafka_broker.bootstrap, geo_address=geo_service.address)
    game = await start_game_with_wallet(
        urls[1], kafka_broker.bootstrap, wallet.address, geo_service.address
    )
    matchmaking = await start_matchmaking(
        urls[2],
        kafka_broker.bootstrap,
        wallet_address=wallet.address,
        game_address=game.address,
        geo_address=geo_service.address,
    )
    yield Lobby(
        matchmaking,
        matchmaking_pb2_grpc.MatchmakingServiceStub(matchmaking.channel),
        wallet_pb2_grpc.WalletServiceStub(wallet.channel),
        game_pb2_grpc.GameServiceStub(game.channel),
        urls[2],
        wallet.address,
        game.address,
        urls[0],
    )
    for service in (matchmaking, game, wallet):
        await stop_service(service)
