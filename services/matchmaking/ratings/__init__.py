"""Ratings: the store, the consumer of finished games and matches, the queries and their API.

The formula itself is pure and lives in :mod:`services.matchmaking.domain.ratings`.
"""
