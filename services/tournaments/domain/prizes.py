"""Published prize tables, cash payouts to the minor unit, and satellite tickets.

**Tables.** A prize table gives, for each bracket size (2, 4, 8, ... 1024 slots), the
share of the prize pool each paid place wins, in basis points (1/100 of a percent,
so 12.5% is 1250 and every share is a whole number). A field of ``n`` entrants is
paid by the row of its bracket (the smallest power of two not below ``n``): a
scheduled event of 13 entrants is paid as a 16-slot bracket. A row pays at most
half its bracket, so it never reaches the first round's losers, whose number
depends on the byes; and places that share a finish (3rd-4th, 5th-8th, ...) have
equal shares, so tied players win the same. Both are checked when a table is made.

**Rounding (the remainder rule).** Each paid place wins ``floor(pool x share /
10000)`` minor units; the units left over (fewer than the number of paid places)
all go to 1st place. Payouts therefore sum exactly to the pool, and players who
share a finish always receive the same amount. Example: a pool of 1001 at 65/35
gives 650.65 -> 650 and 350.35 -> 350, 1 unit left over, so 651 and 350.

**Satellites** win tickets ("only tickets for other tournaments and not cash can be
won in Satellite tournaments"). A ticket is worth the target's buy-in plus its entry
fee (it enters its holder without money moving). The pool buys ``pool // ticket
price`` tickets; they go to whole finishes from the top (1, 2, 4, 8, ... players: a
ticket is never split between tied players), so the number of winners is the largest
of those not above what the pool buys. The tickets are won as soon as no more players
remain than tickets: a satellite plays only the rounds that leave that many players
(``SatellitePlan.rounds_played``: every round for one ticket, all but the final for two),
and the players left win equal tickets without playing on.

**The satellite remainder rule** (the reference's "unless otherwise stated": a pool
rarely buys whole tickets, and the entrants' money goes neither to the house nor to
waste): what the tickets leave of the pool (``remainder``) is paid **as cash to the
next finish**, the best finish that wins no ticket (the runner-up after one ticket,
the semi-final losers after two, the quarter-final losers after four), in equal
shares of ``floor(remainder / players of that finish)``; the units that do not divide
(fewer than those players) go to 1st place, as in the cash tables (when the tickets are
won before the final, 1st place is shared: the ticket winner seated first in the drawn
order takes them, the draw deciding as it decides the byes). Worked: 1200 at a
ticket of 1000 among 4 is one ticket for the champion and 200 in cash for the
runner-up; 3000 among 4 buys two tickets (three would split the semi-final losers),
so the finalists win tickets and the two semi-final losers 500 each; 2201 among 8 at
1000 is two tickets and 201 over, 100 to each semi-final loser and 1 to the champion.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from services.kit.errors import InvalidArgument
from services.kit.money_bounds import INT64_MAX
from services.tournaments.domain.field import (
    MAX_FIELD,
    FieldError,
    bracket_size,
    complete_tier_ends,
    finishing_tiers,
    round_count,
)

BASIS_POINTS: Final = 10_000
# The name a satellite gives as its prize table: its prizes are tickets.
TICKETS: Final = "tickets"


class PrizeError(InvalidArgument):
    """A prize table, pool or field that cannot be paid, with the reason."""


@dataclass(frozen=True, slots=True)
class PrizeTable:
    """A named table: for each bracket size, the share of each paid place in basis points."""

    name: str
    description: str
    rows: Mapping[int, tuple[int, ...]]

    def __post_init__(self) -> None:
        for size, shares in self.rows.items():
            _check_row(self.name, size, shares)

    def shares(self, field: int) -> tuple[int, ...]:
        """The shares paid to places 1, 2, ... for a field of ``field`` entrants."""
        try:
            size = bracket_size(field)
        except FieldError as error:
            raise PrizeError(str(error)) from None
        shares = self.rows.get(size)
        if shares is None:
            raise PrizeError(
                f"prize table {self.name!r} has no row for {field} entrants "
                f"(a {size}-slot bracket); it pays brackets of {_sizes(self)}"
            )
        return shares


def _sizes(table: PrizeTable) -> str:
    return ", ".join(str(size) for size in sorted(table.rows))


def _check_row(name: str, size: int, shares: tuple[int, ...]) -> None:
    where = f"prize table {name!r}, {size}-slot row"
    if size < 2 or size > MAX_FIELD or size & (size - 1):
        raise ValueError(f"{where}: a bracket size is a power of two from 2 to {MAX_FIELD}")
    if not shares or any(share <= 0 for share in shares):
        raise ValueError(f"{where}: every paid place needs a positive share")
    if sum(shares) != BASIS_POINTS:
        raise ValueError(f"{where}: the shares sum to {sum(shares)}, not {BASIS_POINTS}")
    if list(shares) != sorted(shares, reverse=True):
        raise ValueError(f"{where}: a better place never wins less than a worse one")
    if len(shares) not in complete_tier_ends(size):
        raise ValueError(
            f"{where}: pays {len(shares)} places; a cut must fall after a whole finish "
            f"and within half the bracket: one of {complete_tier_ends(size)}"
        )
    for best, worst in finishing_tiers(size):
        tied = shares[best - 1 : worst]
        if len(set(tied)) > 1:
            raise ValueError(f"{where}: places {best}-{worst} are shared, so equal shares")


def _repeat(share: int, places: int) -> tuple[int, ...]:
    return (share,) * places


def _standard_rows() -> dict[int, tuple[int, ...]]:
    # Shares per finish from the winner down: 1st, 2nd, then each shared range.
    return {
        2: (10_000,),
        4: (7_000, 3_000),
        8: (6_500, 3_500),
        16: (5_000, 2_500, *_repeat(1_250, 2)),
        32: (4_000, 2_000, *_repeat(1_000, 2), *_repeat(500, 4)),
        64: (3_000, 1_800, *_repeat(900, 2), *_repeat(450, 4), *_repeat(200, 8)),
        128: (2_500, 1_500, *_repeat(800, 2), *_repeat(400, 4), *_repeat(200, 8),
              *_repeat(75, 16)),
        256: (2_260, 1_300, *_repeat(700, 2), *_repeat(350, 4), *_repeat(175, 8),
              *_repeat(80, 16), *_repeat(30, 32)),
        512: (1_992, 1_200, *_repeat(650, 2), *_repeat(325, 4), *_repeat(160, 8),
              *_repeat(75, 16), *_repeat(30, 32), *_repeat(12, 64)),
        1024: (1_812, 1_100, *_repeat(600, 2), *_repeat(300, 4), *_repeat(150, 8),
               *_repeat(70, 16), *_repeat(30, 32), *_repeat(12, 64), *_repeat(5, 128)),
    }


def _sizes_up_to_max() -> tuple[int, ...]:
    return tuple(1 << power for power in range(1, MAX_FIELD.bit_length()))


PRIZE_TABLES: Final[Mapping[str, PrizeTable]] = MappingProxyType(
    {
        "standard": PrizeTable(
            "standard",
            "2: 100; 4: 70/30; 8: 65/35; 16: 50/25/12.5/12.5; 32: 40/20/10/10/5x4; "
            "from 8 slots on the top quarter of the bracket is paid (README)",
            MappingProxyType(_standard_rows()),
        ),
        "winner-takes-all": PrizeTable(
            "winner-takes-all",
            "the whole pool to the winner, any field",
            MappingProxyType({size: (BASIS_POINTS,) for size in _sizes_up_to_max()}),
        ),
    }
)


def prize_table(name: str) -> PrizeTable:
    """The published table called ``name``."""
    table = PRIZE_TABLES.get(name)
    if table is None:
        known = ", ".join(sorted(PRIZE_TABLES))
        raise PrizeError(
            f"there is no prize table {name!r}: the cash tables are {known}; "
            f"a satellite's prizes are {TICKETS!r}"
        )
    return table


def require_amount(amount: int, what: str) -> int:
    """``amount`` if it is a whole number of minor units within 0..int64."""
    if isinstance(amount, bool) or not isinstance(amount, int):
        raise PrizeError(f"{what} is a whole number of minor units, not {amount!r}")
    if not 0 <= amount <= INT64_MAX:
        raise PrizeError(f"{what} must be 0 to {INT64_MAX} minor units, not {amount}")
    return amount


def cash_payouts(pool: int, table: PrizeTable, field: int) -> tuple[int, ...]:
    """The minor units won by places 1, 2, ... (paid places only), summing to ``pool``."""
    require_amount(pool, "the prize pool")
    shares = table.shares(field)
    amounts = [pool * share // BASIS_POINTS for share in shares]
    amounts[0] += pool - sum(amounts)
    return tuple(amounts)


@dataclass(frozen=True, slots=True)
class TicketPrizes:
    """A satellite's prizes: ``winners`` tickets worth ``ticket_price`` each, and the rest
    of the pool, ``remainder``, paid as cash by the satellite remainder rule."""

    winners: int
    ticket_price: int
    remainder: int


def remainder_cash(remainder: int, next_finish: int) -> tuple[int, int]:
    """The satellite remainder rule: what each of the ``next_finish`` players sharing the
    best finish without a ticket wins, and the units left over for 1st place."""
    require_amount(remainder, "the pool's remainder over whole tickets")
    if next_finish < 1:
        return 0, remainder  # no finish below the tickets: the champion takes it
    return remainder // next_finish, remainder % next_finish


def ticket_prizes(pool: int, ticket_price: int, field: int) -> TicketPrizes:
    """How many players of a satellite's ``field`` win a ticket, and what is left over."""
    require_amount(pool, "the prize pool")
    require_amount(ticket_price, "a ticket's price (the target's buy-in plus fee)")
    if ticket_price == 0:
        raise PrizeError("a satellite's target must have a buy-in: a ticket is worth something")
    try:
        ends = complete_tier_ends(field)
    except FieldError as error:
        raise PrizeError(str(error)) from None
    affordable = pool // ticket_price
    winners = max((end for end in ends if end <= affordable), default=0)
    return TicketPrizes(winners, ticket_price, pool - winners * ticket_price)


@dataclass(frozen=True, slots=True)
class SatellitePlan:
    """All a satellite's field wins, known once its field is: ``tickets.winners`` equal
    tickets to the players left after ``rounds_played`` rounds (places 1 to that many),
    and the remainder in cash, ``each`` to every player of the next finish (places
    ``next_best``..``next_worst``) and ``to_first`` (the units that do not divide) to 1st
    place."""

    field: int
    tickets: TicketPrizes
    rounds_played: int
    next_best: int
    next_worst: int
    each: int
    to_first: int


def satellite_plan(pool: int, ticket_price: int, field: int) -> SatellitePlan:
    """The tickets a satellite's pool buys for ``field`` entrants, the rounds it plays, and
    the remainder's cash by the satellite remainder rule."""
    tickets = ticket_prizes(pool, ticket_price, field)
    if tickets.winners < 1:
        raise PrizeError(
            f"a pool of {pool} buys no ticket of {ticket_price}: a satellite's field must "
            "buy at least one"
        )
    # A whole finish of 2**k players is left after all but the last k rounds.
    rounds_played = round_count(field) - (tickets.winners.bit_length() - 1)
    best, worst = next(tier for tier in finishing_tiers(field) if tier[0] == tickets.winners + 1)
    each, to_first = remainder_cash(tickets.remainder, worst - best + 1)
    return SatellitePlan(field, tickets, rounds_played, best, worst, each, to_first)
