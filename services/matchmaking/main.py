"""Wiring for the matchmaking service: the ratings consumer and the ratings' gRPC methods.

The lobby's and the queue's methods are not wired in this module yet (the
servicer answers them UNIMPLEMENTED).
"""

from __future__ import annotations

from services.kit.config import Settings
from services.kit.events.kafka import make_consumer
from services.kit.server import Runtime, Wiring, run_service
from services.matchmaking.ratings.api import RatingsApi
from services.matchmaking.ratings.consumer import GAME_TOPIC, RATINGS_GROUP, ratings_consumer
from services.matchmaking.ratings.queries import RatingQueries
from tavla.matchmaking.v1 import matchmaking_pb2, matchmaking_pb2_grpc


class MatchmakingServicer(RatingsApi, matchmaking_pb2_grpc.MatchmakingServiceServicer):
    def __init__(self, queries: RatingQueries) -> None:
        self.rating_queries = queries


def wiring(runtime: Runtime) -> Wiring:
    bootstrap = runtime.settings.kafka_bootstrap
    session_timeout_ms = runtime.settings.kafka_session_timeout_ms
    ratings = ratings_consumer(
        sessions=runtime.sessions,
        consumer_factory=lambda: make_consumer(
            bootstrap,
            group=RATINGS_GROUP,
            topics=[GAME_TOPIC],
            session_timeout_ms=session_timeout_ms,
        ),
        clock=runtime.clock,
        service=runtime.settings.service,
    )
    # Abstract until the lobby's handlers join it: the generated base answers them UNIMPLEMENTED.
    servicer = MatchmakingServicer(RatingQueries(runtime.sessions))  # type: ignore[abstract]
    return Wiring(
        servicers=[(matchmaking_pb2_grpc.add_MatchmakingServiceServicer_to_server, servicer)],
        service_names=[
            matchmaking_pb2.DESCRIPTOR.services_by_name["MatchmakingService"].full_name
        ],
        consumers=[ratings],
    )


async def serve(settings: Settings) -> None:
    await run_service(settings, wiring)
