"""Matchmaking's pure domain: no database, network, asyncio or clock.

Every function takes the state it needs and the current time as arguments.
Modules:

- ``tables``: lobby tables, their rules, seats and seating claims.
- ``pairing``: one auto-match wave over one pool of compatible queue tickets.
- ``ratings``: the FIBS rating formula, the 1400 commission floor and display.
"""
