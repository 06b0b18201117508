"""The ratings' gRPC handlers, a mixin of matchmaking's servicer: GetRating and GetLeaderboard.

Both are player methods: ratings are public within the site (any signed-in player
may look up any player's, as the lobby shows them at tables); the leaderboard
also gives the acting player their own standing. The servicer that mixes this
in lists it before the generated ``MatchmakingServiceServicer`` (whose GetRating
answers UNIMPLEMENTED) and sets ``rating_queries`` before serving, as
``services/matchmaking/main.py`` does.
"""

from __future__ import annotations

from typing import Any

import grpc

from services.kit.auth import acting_account
from services.kit.errors import InvalidArgument
from services.matchmaking.domain.ratings import display_rating
from services.matchmaking.ratings.queries import RankedRating, RatingQueries
from tavla.matchmaking.v1 import matchmaking_pb2

Context = grpc.aio.ServicerContext[Any, Any]


def rating_message(player: RankedRating) -> matchmaking_pb2.Rating:
    message = matchmaking_pb2.Rating(
        account_id=player.account_id,
        rating=player.standing.rating,
        experience=player.standing.experience,
        display=display_rating(player.standing.rating),
        rank=player.rank,
    )
    if player.updated_at is not None:
        message.updated_at.FromDatetime(player.updated_at)
    return message


class RatingsApi:
    rating_queries: RatingQueries

    async def GetRating(
        self, request: matchmaking_pb2.GetRatingRequest, context: Context
    ) -> matchmaking_pb2.Rating:
        acting_account(context)
        if not request.account_id:
            raise InvalidArgument("account_id is required: whose rating to show")
        return rating_message(await self.rating_queries.rating(request.account_id))

    async def GetLeaderboard(
        self, request: matchmaking_pb2.GetLeaderboardRequest, context: Context
    ) -> matchmaking_pb2.Leaderboard:
        acting = acting_account(context)
        entries = await self.rating_queries.leaderboard(request.limit)
        own = await self.rating_queries.rating(acting)
        return matchmaking_pb2.Leaderboard(
            entries=[rating_message(entry) for entry in entries], own=rating_message(own)
        )
