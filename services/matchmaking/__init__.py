"""The matchmaking service: lobby tables, rating-based auto-match, ratings.

Today a skeleton that serves health, reflection and metrics only; its use
cases arrive with its issue.
"""
