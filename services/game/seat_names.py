"""What a seat is called: the name the caller gave, else the player's screen name (the
game's copy of the accounts service's, :mod:`services.kit.screen_names`), else the
start of the account id (a player whose name has not reached the copy yet).

The name is the seat's for the whole session: the game view's players, table chat and
the match record all show it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from services.game.domain import Seat
from services.game.store import GameUnitOfWork
from services.kit.screen_names import names_of

ID_SHOWN = 8  # characters of an account id shown for a player without a name


class SeatNames:
    def __init__(self, unit_of_work: Callable[[], GameUnitOfWork]) -> None:
        self._uow = unit_of_work

    async def named(self, seats: tuple[Seat, Seat]) -> tuple[Seat, Seat]:
        unnamed = [seat.account_id for seat in seats if not seat.display_name]
        if not unnamed:
            return seats
        async with self._uow() as uow:
            known = await names_of(uow.session, unnamed)
        first, second = (
            seat if seat.display_name else replace(
                seat, display_name=known.get(seat.account_id, seat.account_id[:ID_SHOWN])
            )
            for seat in seats
        )  # fmt: skip
        return first, second
