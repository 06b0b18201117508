"""What each finish of a tournament wins by its published prize table, before it is paid.

The lobby shows a tournament's prizes by place from the moment it is listed: for the
field it has or will have (a Sit & Go's seats; a scheduled event's entrants so far but at
least its minimum, since it is cancelled below that; the drawn field once registration
has closed), its prize pool paid by the table with the remainder rule (``cash_payouts``).
A satellite's prizes are tickets: ``satellite_places`` gives what its field wins (how
many tickets, the rounds it plays, the remainder's cash) for the same field, so a
scheduled satellite shows what its tickets will be while it registers, and the drawn
field's from its draw on.
"""

from __future__ import annotations

from dataclasses import dataclass

from services.tournaments.domain.field import finishing_tiers
from services.tournaments.domain.lobby import Tournament
from services.tournaments.domain.prizes import (
    TICKETS,
    SatellitePlan,
    cash_payouts,
    prize_table,
    satellite_plan,
)
from services.tournaments.domain.rules import SitAndGo


@dataclass(frozen=True, slots=True)
class PrizePlace:
    best: int
    worst: int  # the places best..worst share the finish (3-4, 5-8, ...)
    share: int  # basis points of the pool won by each player of the finish
    amount: int  # minor units won by each player of the finish


def prize_field(tournament: Tournament) -> int:
    """The field the prizes are shown for (see the module's docstring)."""
    if tournament.bracket is not None:
        return tournament.bracket.field
    rules = tournament.rules
    if isinstance(rules.start, SitAndGo):
        return rules.start.seats
    return max(len(tournament.entrants), rules.min_field)


def prize_places(tournament: Tournament) -> tuple[PrizePlace, ...]:
    """Every paid finish from the winner down, for ``prize_field`` entrants."""
    rules = tournament.rules
    if rules.prize_table == TICKETS:
        return ()
    field = prize_field(tournament)
    table = prize_table(rules.prize_table)
    shares = table.shares(field)
    amounts = cash_payouts(rules.prize_pool(field), table, field)
    return tuple(
        PrizePlace(best, worst, shares[best - 1], amounts[best - 1])
        for best, worst in finishing_tiers(field)
        if best <= len(shares)
    )


def satellite_places(tournament: Tournament) -> SatellitePlan | None:
    """A satellite's tickets and remainder for ``prize_field`` entrants (None for a cash
    tournament, or a satellite stored before its ticket's worth was kept in its rules)."""
    rules = tournament.rules
    if rules.prize_table != TICKETS or not rules.ticket_value:
        return None
    field = prize_field(tournament)
    return satellite_plan(rules.prize_pool(field), rules.ticket_value, field)
