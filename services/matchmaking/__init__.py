"""The matchmaking service: lobby tables and seating (geo, stake holds, the game).

The auto-match queue and the ratings that move arrive with the rest of issue 12;
see README.md.
"""
