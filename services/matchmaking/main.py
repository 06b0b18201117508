"""Wiring for the matchmaking service: settings -> unit of work -> lobby, ratings -> servicer.

Service-specific settings: ``TAVLA_WALLET_ADDRESS`` and ``TAVLA_GAME_ADDRESS``
(required: seating holds stakes and creates games; without them the service
refuses to start, naming the variable), ``TAVLA_GEO_ADDRESS`` (the geo service;
unset, real-money tables are refused and play money goes on, see
:mod:`services.kit.geo_gate`), ``TAVLA_MATCHMAKING_CLAIM_SECONDS`` (how long a
seating attempt may hold the free seat before the recovery takes it on, default
30), ``TAVLA_MATCHMAKING_RECOVERY_SECONDS`` (how often the recovery looks, default 5),
``TAVLA_MATCHMAKING_WAVE_SECONDS`` (how often the queue's waves run when no entry
wakes them, default 2), ``TAVLA_MATCHMAKING_WATCH_POLL_SECONDS`` (how often a
WatchQueueTicket stream looks at its ticket, default 0.5).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial

from services.kit.config import Env, Settings
from services.kit.events.consumer import EventConsumer
from services.kit.events.kafka import make_consumer
from services.kit.geo_gate import GeoGate
from services.kit.money_bounds import MoneyBounds
from services.kit.remote import GrpcGames
from services.kit.self_exclusion import ACCOUNTS_TOPIC, consumer_group
from services.kit.server import Runtime, Wiring, run_service
from services.matchmaking.api import LobbyApi
from services.matchmaking.consumers import (
    ANTIABUSE_TOPIC,
    GAME_TOPIC,
    TABLES_GROUP,
    VERDICTS_GROUP,
    exclusions_consumer,
    tables_consumer,
    verdicts_consumer,
)
from services.matchmaking.ports import GrpcWallet
from services.matchmaking.queue import QueueService
from services.matchmaking.queue_api import QueueApi
from services.matchmaking.ratings.api import RatingsApi
from services.matchmaking.ratings.consumer import RATINGS_GROUP, ratings_consumer
from services.matchmaking.ratings.queries import RatingQueries
from services.matchmaking.seating import Seating
from services.matchmaking.service import LobbyService
from services.matchmaking.store import MatchmakingUnitOfWork, StoredRatings
from services.matchmaking.table_stakes import (
    TABLE_STAKES_GROUP,
    WALLET_TOPIC,
    table_stakes_consumer,
)
from services.matchmaking.waves import Waves
from tavla.matchmaking.v1 import matchmaking_pb2, matchmaking_pb2_grpc


@dataclass(frozen=True)
class MatchmakingSettings:
    wallet_address: str
    game_address: str
    claim_seconds: float = 30.0
    recovery_seconds: float = 5.0
    wave_seconds: float = 2.0
    watch_poll_seconds: float = 0.5
    # None: read TAVLA_GEO_ADDRESS from the process environment (GeoGate.from_env).
    geo_environ: Mapping[str, str] | None = None
    # The operator's maximum stakes and largest losses per currency (TAVLA_MONEY_MAX_*).
    money_bounds: MoneyBounds = field(default_factory=MoneyBounds.defaults)

    @classmethod
    def from_env(cls, env: Env | None = None) -> MatchmakingSettings:
        env = env or Env()
        return cls(
            wallet_address=env.address("TAVLA_WALLET_ADDRESS", needed_to="place stake holds"),
            game_address=env.address("TAVLA_GAME_ADDRESS", needed_to="create games"),
            claim_seconds=env.number(
                "TAVLA_MATCHMAKING_CLAIM_SECONDS", 30.0, low=1.0, high=600.0
            ),
            recovery_seconds=env.number(
                "TAVLA_MATCHMAKING_RECOVERY_SECONDS", 5.0, low=0.05, high=600.0
            ),
            wave_seconds=env.number("TAVLA_MATCHMAKING_WAVE_SECONDS", 2.0, low=0.05, high=60.0),
            watch_poll_seconds=env.number(
                "TAVLA_MATCHMAKING_WATCH_POLL_SECONDS", 0.5, low=0.05, high=10.0
            ),
            money_bounds=MoneyBounds.from_env(env),
        )


class MatchmakingServicer(QueueApi, RatingsApi, LobbyApi):
    """The lobby's methods, the queue's and the ratings' (GetRating, GetLeaderboard) on one
    service."""

    def __init__(self, lobby: LobbyService, queries: RatingQueries, queue: QueueService) -> None:
        super().__init__(lobby)
        self.rating_queries = queries
        self.queue = queue


def wiring(runtime: Runtime, settings: MatchmakingSettings) -> Wiring:
    unit_of_work = partial(
        MatchmakingUnitOfWork,
        runtime.sessions,
        source=runtime.settings.service,
        clock=runtime.clock,
        on_commit=runtime.relay.wake,
    )
    geo = GeoGate.from_env(runtime.credentials, settings.geo_environ)
    wallet = GrpcWallet(settings.wallet_address, runtime.credentials)
    games = GrpcGames(settings.game_address, runtime.credentials)
    ratings = StoredRatings(runtime.sessions)
    seating = Seating(
        unit_of_work,
        geo=geo,
        wallet=wallet,
        games=games,
        clock=runtime.clock,
        claim_seconds=settings.claim_seconds,
        bounds=settings.money_bounds,
    )
    lobby = LobbyService(
        unit_of_work, seating=seating, wallet=wallet, ratings=ratings, clock=runtime.clock
    )
    waves = Waves(
        unit_of_work,
        seating=seating,
        ratings=ratings,
        clock=runtime.clock,
        claim_seconds=settings.claim_seconds,
    )
    queue = QueueService(
        unit_of_work,
        seating=seating,
        wallet=wallet,
        clock=runtime.clock,
        entered=waves.wake,
        watch_poll_seconds=settings.watch_poll_seconds,
    )
    kafka = runtime.settings.kafka
    session_timeout_ms = runtime.settings.kafka_session_timeout_ms

    def consumer(build: Callable[..., EventConsumer], group: str, topic: str) -> EventConsumer:
        """One of matchmaking's consumers: its own group on one topic, in this runtime."""
        return build(
            sessions=runtime.sessions,
            consumer_factory=lambda: make_consumer(
                kafka, group=group, topics=[topic], session_timeout_ms=session_timeout_ms
            ),
            clock=runtime.clock,
            service=runtime.settings.service,
        )

    verdicts = consumer(verdicts_consumer, VERDICTS_GROUP, ANTIABUSE_TOPIC)
    games_over = consumer(tables_consumer, TABLES_GROUP, GAME_TOPIC)
    rated_results = consumer(ratings_consumer, RATINGS_GROUP, GAME_TOPIC)
    exclusions = consumer(exclusions_consumer, consumer_group("matchmaking"), ACCOUNTS_TOPIC)
    stakes = partial(table_stakes_consumer, games=games, wallet=wallet)
    table_stakes = consumer(stakes, TABLE_STAKES_GROUP, WALLET_TOPIC)
    servicer = MatchmakingServicer(lobby, RatingQueries(runtime.sessions), queue)
    return Wiring(
        servicers=[(matchmaking_pb2_grpc.add_MatchmakingServiceServicer_to_server, servicer)],
        service_names=[
            matchmaking_pb2.DESCRIPTOR.services_by_name["MatchmakingService"].full_name
        ],
        consumers=[verdicts, games_over, rated_results, exclusions, table_stakes],
        background=[
            partial(seating.run_recovery, settings.recovery_seconds),
            partial(waves.run, settings.wave_seconds),
        ],
        on_stop=[geo.close, wallet.close, games.close],
    )


async def serve(settings: Settings) -> None:
    # Before migrating: a missing wallet or game address stops the process, naming it.
    matchmaking = MatchmakingSettings.from_env()
    await run_service(settings, lambda runtime: wiring(runtime, matchmaking))
