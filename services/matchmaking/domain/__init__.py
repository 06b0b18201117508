"""Matchmaking's pure domain: lobby tables, pairing and ratings (no I/O)."""
