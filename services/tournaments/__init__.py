"""Tournaments: Sit & Go, scheduled, satellite and freeroll knockouts (see its README).

What exists is the pure domain (``domain/``: rules, prize tables and payouts, the
seating draw from a committed seed, the bracket) and ``tavla tournament payouts``
(``cli``). The service around it (registration, holds, games, the lobby API) is
described in the README's "Design" section and is not built yet.
"""
