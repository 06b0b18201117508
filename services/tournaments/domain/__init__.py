"""The tournaments' pure domain: no database, network, asyncio or clock.

Every function takes the state it needs as arguments and returns new, immutable
values. Modules:

- ``rules``: a tournament's rules as data, refused at construction when impossible.
- ``field``: bracket size, rounds, and which places a round's losers share.
- ``prizes``: the published prize tables, cash payouts with the remainder rule, and
  a satellite's tickets.
- ``draw``: the seed commitment and the seating draw (the dice's HMAC stream).
- ``bracket``: byes, matches, results applied exactly once, standings and awards.
- ``lobby``: a tournament as one aggregate: registration, the draw, the start, the end.
"""
