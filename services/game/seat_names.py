"""What a seat is called: the name the caller gave, else the player's screen name (the
game's copy of the accounts service's, :mod:`services.kit.screen_names`), else the
start of the account id (a player whose name has not reached the copy yet).

The name is the seat's for the whole session: the game view's players, table chat and
the match record all show it. ``CreateGame`` reads the copy in its first statement
(:mod:`services.game.creation`) and names the seats with :func:`named`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from services.game.domain import Seat

ID_SHOWN = 8  # characters of an account id shown for a player without a name


def named(seats: tuple[Seat, Seat], known: Mapping[str, str]) -> tuple[Seat, Seat]:
    """``seats`` with each unnamed one given its screen name from ``known``, else its id's start."""
    first, second = (
        seat if seat.display_name else replace(
            seat, display_name=known.get(seat.account_id, seat.account_id[:ID_SHOWN])
        )
        for seat in seats
    )  # fmt: skip
    return first, second
