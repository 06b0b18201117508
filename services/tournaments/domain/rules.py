"""A tournament's rules as data, checked when the tournament is made.

"Different tournaments have different rules. You can find a copy of the rules for
each tournament in the lobby": every tournament carries one :class:`Rules`, and
making one refuses rules that could not be run (:class:`InvalidRules`, with a
sentence naming the field), so no tournament exists under impossible rules. The kinds:

- **Sit & Go** (:class:`SitAndGo`): 2, 4, 8, 16 or 32 seats; starts when the last
  seat is taken.
- **Scheduled** (:class:`Scheduled`): a start time, a registration window that
  closes no later than the start, and a minimum and maximum number of entrants
  (2..1024); below the minimum at the start it is cancelled.
- **Satellite**: either start, prizes that are tickets to a named target
  tournament (prize table ``tickets``), each worth ``ticket_value`` (the target's buy-in
  plus fee, set from the target when the satellite is created); see ``prizes.py``.
- **Freeroll**: either start, no buy-in and no fee, the prize pool added by the
  house (``added_prize``).

Matches are Match Series, as the house rules have them: the Crawford rule on, no
Jacoby rule, no beavers; their lengths may grow by round (``match_lengths[r-1]``
for round ``r``, the last length for every later round). Money is integer minor
units of one currency (an ISO-4217 code or ``PLAY``); the buy-ins of a full field
plus the added prize must fit in int64, the ledger's type.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Final

from services.kit.errors import InvalidArgument
from services.kit.money_bounds import INT64_MAX, AmountOutOfBounds, checked_product
from services.tournaments.domain.field import MAX_FIELD, MIN_FIELD, bracket_size, round_count
from services.tournaments.domain.prizes import (
    TICKETS,
    PrizeError,
    prize_table,
    require_amount,
)

PLAY: Final = "PLAY"
SIT_AND_GO_SEATS: Final = (2, 4, 8, 16, 32)
MAX_MATCH_LENGTH: Final = 25
# The game service's clock presets, by name.
CLOCK_PRESETS: Final = ("standard", "blitz")


class InvalidRules(InvalidArgument):
    """Rules a tournament cannot be run under; the message names the field."""


class Kind(StrEnum):
    SIT_AND_GO = "sit_and_go"
    SCHEDULED = "scheduled"
    SATELLITE = "satellite"
    FREEROLL = "freeroll"


@dataclass(frozen=True, slots=True)
class SitAndGo:
    seats: int


@dataclass(frozen=True, slots=True)
class Scheduled:
    starts_at: datetime
    registration_opens_at: datetime
    registration_closes_at: datetime
    min_entrants: int
    max_entrants: int


Start = SitAndGo | Scheduled


@dataclass(frozen=True, slots=True)
class Rules:
    start: Start
    match_lengths: tuple[int, ...]
    clock: str
    currency: str
    buy_in: int  # minor units; the buy-ins form the prize pool
    entry_fee: int  # minor units; the house's revenue
    prize_table: str  # a published cash table, or "tickets" for a satellite
    added_prize: int = 0  # minor units the house adds to the pool (a freeroll's whole pool)
    target_tournament_id: str = ""  # a satellite's target
    ticket_value: int = 0  # a satellite's: what a ticket is worth (the target's ticket_price)
    crawford: bool = True
    jacoby: bool = False
    beaver: bool = False

    def __post_init__(self) -> None:
        _check_start(self.start)
        _check_match(self)
        _check_money(self)
        _check_prizes(self)

    @property
    def kind(self) -> Kind:
        if self.prize_table == TICKETS:
            return Kind.SATELLITE
        if self.buy_in == 0:
            return Kind.FREEROLL
        return Kind.SIT_AND_GO if isinstance(self.start, SitAndGo) else Kind.SCHEDULED

    @property
    def max_field(self) -> int:
        start = self.start
        return start.seats if isinstance(start, SitAndGo) else start.max_entrants

    @property
    def min_field(self) -> int:
        start = self.start
        return start.seats if isinstance(start, SitAndGo) else start.min_entrants

    @property
    def ticket_price(self) -> int:
        """What a ticket to this tournament is worth: its buy-in plus its fee."""
        return self.buy_in + self.entry_fee

    def match_length(self, round_number: int) -> int:
        """The length, in points, of round ``round_number``'s matches."""
        if round_number < 1:
            raise InvalidArgument("rounds are numbered from 1")
        return self.match_lengths[min(round_number, len(self.match_lengths)) - 1]

    def prize_pool(self, entrants: int) -> int:
        """The buy-ins of ``entrants`` plus the added prize, in minor units."""
        return checked_product(self.buy_in, entrants, what="the prize pool") + self.added_prize


def _check_start(start: Start) -> None:
    if isinstance(start, SitAndGo):
        if start.seats not in SIT_AND_GO_SEATS:
            raise InvalidRules(f"a Sit & Go has {SIT_AND_GO_SEATS} seats, not {start.seats}")
        return
    times = (start.registration_opens_at, start.registration_closes_at, start.starts_at)
    if any(moment.tzinfo is None for moment in times):
        raise InvalidRules("a scheduled tournament's times carry their time zone (UTC)")
    if not start.registration_opens_at < start.registration_closes_at <= start.starts_at:
        raise InvalidRules(
            "registration opens before it closes, and closes no later than the start"
        )
    if not MIN_FIELD <= start.min_entrants <= start.max_entrants <= MAX_FIELD:
        raise InvalidRules(
            f"entrants: {MIN_FIELD} <= minimum <= maximum <= {MAX_FIELD}, "
            f"not {start.min_entrants}..{start.max_entrants}"
        )


def _check_match(rules: Rules) -> None:
    lengths = rules.match_lengths
    rounds = round_count(rules.max_field)
    if not 1 <= len(lengths) <= rounds:
        raise InvalidRules(f"give a match length for 1 to {rounds} rounds, not {len(lengths)}")
    if any(not 1 <= length <= MAX_MATCH_LENGTH for length in lengths):
        raise InvalidRules(f"a match is 1 to {MAX_MATCH_LENGTH} points long: {lengths}")
    if list(lengths) != sorted(lengths):
        raise InvalidRules(f"match lengths may grow by round, never shrink: {lengths}")
    if rules.clock not in CLOCK_PRESETS:
        raise InvalidRules(f"the clock is a preset by name {CLOCK_PRESETS}, not {rules.clock!r}")
    if not rules.crawford or rules.jacoby or rules.beaver:
        raise InvalidRules(
            "tournament matches are Match Series: the Crawford rule on, no Jacoby, no beavers"
        )


def require_currency(currency: str) -> str:
    """``currency`` if it is an ISO-4217 code ("USD") or ``PLAY``."""
    if not (currency == PLAY or (len(currency) == 3 and currency.isascii() and currency.isupper())):
        raise InvalidRules(f"currency {currency!r} is neither an ISO-4217 code nor {PLAY!r}")
    return currency


def _check_money(rules: Rules) -> None:
    require_currency(rules.currency)
    try:
        for amount, what in (
            (rules.buy_in, "the buy-in"),
            (rules.entry_fee, "the entry fee"),
            (rules.added_prize, "the added prize"),
            (rules.ticket_value, "a satellite's ticket value"),
        ):
            require_amount(amount, what)
        checked_product(rules.ticket_price, rules.max_field, what="a full field's buy-ins and fees")
        pool = rules.prize_pool(rules.max_field)
    except (PrizeError, AmountOutOfBounds) as error:
        raise InvalidRules(error.message) from None
    if pool > INT64_MAX:
        raise InvalidRules(f"a full field's prize pool ({pool}) passes int64 ({INT64_MAX})")
    if rules.buy_in == 0 and (rules.entry_fee or not rules.added_prize):
        raise InvalidRules(
            "a tournament without a buy-in is a freeroll: no entry fee, and a prize the house adds"
        )


def _check_prizes(rules: Rules) -> None:
    if rules.prize_table == TICKETS:
        if not rules.target_tournament_id:
            raise InvalidRules("a satellite's prizes are tickets to a target: name its id")
        return
    if rules.target_tournament_id or rules.ticket_value:
        raise InvalidRules(
            f"only a satellite (prize table {TICKETS!r}) has a target tournament and tickets"
        )
    try:
        table = prize_table(rules.prize_table)
        for size in _bracket_sizes(rules):
            table.shares(size)
    except PrizeError as error:
        raise InvalidRules(error.message) from None


def _bracket_sizes(rules: Rules) -> list[int]:
    low, high = bracket_size(rules.min_field), bracket_size(rules.max_field)
    return [1 << power for power in range(low.bit_length() - 1, high.bit_length())]


def validate_satellite_target(satellite: Rules, target_id: str, target: Rules) -> None:
    """A satellite's target must exist as named, play in its currency, cost something,
    and cost more than the satellite, so that its smallest field wins at least one ticket
    and not every entrant wins one; and a scheduled satellite must start before its
    scheduled target's registration closes, or its tickets could never be used.

    What a scheduled satellite's field wins is known only at its draw
    (``prizes.satellite_plan``); these checks hold for every field it may have: at
    least its minimum buys a ticket, and a buy-in below the ticket never buys one per
    entrant."""
    if satellite.kind is not Kind.SATELLITE:
        raise InvalidRules("only a satellite has a target tournament")
    if satellite.target_tournament_id != target_id:
        raise InvalidRules(
            f"the satellite names target {satellite.target_tournament_id!r}, not {target_id!r}"
        )
    if target.currency != satellite.currency:
        raise InvalidRules(
            f"a satellite's tickets are paid in its target's currency: {target.currency}, "
            f"not {satellite.currency}"
        )
    price = target.ticket_price
    if not satellite.buy_in < price:
        raise InvalidRules(
            f"a satellite's buy-in ({satellite.buy_in}) is below the ticket it wins "
            f"(the target's buy-in plus fee, {price})"
        )
    if satellite.prize_pool(satellite.min_field) < price:
        raise InvalidRules(
            f"the satellite's smallest field ({satellite.min_field}) does not buy one ticket "
            f"of {price}: raise the minimum or the buy-in"
        )
    if (
        isinstance(satellite.start, Scheduled)
        and isinstance(target.start, Scheduled)
        and satellite.start.starts_at >= target.start.registration_closes_at
    ):
        raise InvalidRules(
            f"the satellite starts at {satellite.start.starts_at.isoformat()}, once its "
            f"target's registration has closed ({target.start.registration_closes_at.isoformat()})"
            ": its tickets could never be used"
        )
    if satellite.ticket_value not in (0, price):
        raise InvalidRules(
            f"a ticket is worth the target's buy-in plus fee ({price}), not "
            f"{satellite.ticket_value}"
        )
