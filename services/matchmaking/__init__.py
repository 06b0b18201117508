"""The matchmaking service: lobby tables and seating (geo, stake holds, the game).

Also the auto-match queue and the FIBS ratings that finished games move; see README.md.
"""
