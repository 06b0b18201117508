"""A tournament's life as one aggregate: registration, the draw, the start, the end.

``REGISTERING`` -> (registration closes) -> ``SEATED`` (the seating drawn from the
committed seed, the bracket built, the seed revealed) -> (the start: fees taken, pool
formed) -> ``RUNNING`` -> (the final won, prizes paid) -> ``FINISHED``; or, for a
scheduled event below its minimum when registration closes, ``CANCELLING`` (every
entrant's holds being released) -> ``CANCELLED``.

Registration closes when a Sit & Go's last seat is taken, or at a scheduled event's
``registration_closes_at``; a scheduled event starts at ``starts_at``, a Sit & Go at
once. A player registers once (the same player again changes nothing), only while
registration is open and a seat is free, and may leave until registration closes.
Every transition is a function returning a new value; the service saves it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum

from services.kit.errors import FailedPrecondition, InvalidArgument
from services.tournaments.domain import bracket as brackets
from services.tournaments.domain.draw import commitment, seating_order
from services.tournaments.domain.prizes import SatellitePlan, cash_payouts, prize_table
from services.tournaments.domain.prizes import satellite_plan as prize_plan
from services.tournaments.domain.rules import Kind, Rules, Scheduled, SitAndGo


class RegistrationRefused(FailedPrecondition):
    """A registration or a departure the tournament's state does not allow; says why."""


class Status(StrEnum):
    REGISTERING = "registering"
    SEATED = "seated"
    RUNNING = "running"
    FINISHED = "finished"
    CANCELLING = "cancelling"
    CANCELLED = "cancelled"


# Statuses in which the seed stays secret: before the draw, and for an event never drawn.
SEED_SECRET = frozenset({Status.REGISTERING, Status.CANCELLING, Status.CANCELLED})


@dataclass(frozen=True, slots=True)
class Entrant:
    account_id: str
    buy_in_hold_id: str  # "" when the buy-in is 0
    fee_hold_id: str  # "" when there is no entry fee
    registered_at: datetime

    @property
    def hold_ids(self) -> tuple[str, ...]:
        return tuple(hold for hold in (self.buy_in_hold_id, self.fee_hold_id) if hold)


@dataclass(frozen=True, slots=True)
class Ticket:
    """A satellite's prize: the target's buy-in and fee, held in the winner's name at the
    target (the holds the wallet placed when the satellite's pool paid it)."""

    satellite_id: str
    account_id: str
    target_id: str
    value: int  # minor units: the target's buy-in plus fee
    buy_in_hold_id: str
    fee_hold_id: str  # "" when the target has no fee
    used: bool = False

    def entrant(self, now: datetime) -> Entrant:
        """The ticket's holder entered into the target with the ticket's holds."""
        return Entrant(self.account_id, self.buy_in_hold_id, self.fee_hold_id, now)


@dataclass(frozen=True, slots=True)
class Tournament:
    id: str
    name: str
    rules: Rules
    seed: bytes
    created_at: datetime
    status: Status = Status.REGISTERING
    entrants: tuple[Entrant, ...] = ()
    bracket: brackets.Bracket | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    cancel_reason: str = ""
    tickets: tuple[Ticket, ...] = ()  # a satellite's, once they are won

    @property
    def commitment(self) -> str:
        return commitment(self.seed)

    @property
    def revealed_seed(self) -> bytes | None:
        """The seed once registration has closed and the seating is drawn; None before."""
        return None if self.status in SEED_SECRET else self.seed

    @property
    def prize_pool(self) -> int:
        return self.rules.prize_pool(len(self.entrants))

    @property
    def house_revenue(self) -> int:
        return self.rules.entry_fee * len(self.entrants)

    def entrant(self, account_id: str) -> Entrant | None:
        return next((e for e in self.entrants if e.account_id == account_id), None)


def registration_refusal(tournament: Tournament, account_id: str, now: datetime) -> str | None:
    """Why ``account_id`` may not register now (None: they may, or already have)."""
    if tournament.entrant(account_id) is not None:
        return None
    if tournament.status is not Status.REGISTERING:
        return f"registration for {tournament.name!r} is closed (it is {tournament.status.value})"
    start = tournament.rules.start
    if isinstance(start, Scheduled):
        if now < start.registration_opens_at:
            return f"registration opens at {start.registration_opens_at.isoformat()}"
        if now >= start.registration_closes_at:
            return f"registration closed at {start.registration_closes_at.isoformat()}"
    if len(tournament.entrants) >= tournament.rules.max_field:
        return f"{tournament.name!r} is full ({tournament.rules.max_field} seats)"
    return None


def register(tournament: Tournament, entrant: Entrant, now: datetime) -> Tournament:
    """The tournament with ``entrant`` seated; the same player again changes nothing."""
    if tournament.entrant(entrant.account_id) is not None:
        return tournament
    refusal = registration_refusal(tournament, entrant.account_id, now)
    if refusal is not None:
        raise RegistrationRefused(refusal)
    return replace(tournament, entrants=(*tournament.entrants, entrant))


def unregister(tournament: Tournament, account_id: str) -> tuple[Tournament, Entrant]:
    """The tournament without ``account_id``, and their entry (whose holds go back)."""
    entrant = tournament.entrant(account_id)
    if entrant is None:
        raise RegistrationRefused(f"you are not registered for {tournament.name!r}")
    if tournament.status is not Status.REGISTERING:
        raise RegistrationRefused(
            f"{tournament.name!r} has closed registration: entrants can leave only before"
        )
    remaining = tuple(e for e in tournament.entrants if e.account_id != account_id)
    return replace(tournament, entrants=remaining), entrant


def registration_closes(tournament: Tournament, now: datetime) -> bool:
    """True once a registering tournament should close: full Sit & Go, or its close time."""
    if tournament.status is not Status.REGISTERING:
        return False
    start = tournament.rules.start
    if isinstance(start, SitAndGo):
        return len(tournament.entrants) == start.seats
    return now >= start.registration_closes_at


def close_registration(tournament: Tournament) -> Tournament:
    """The draw (SEATED), or, below the minimum, the cancellation (CANCELLING)."""
    if tournament.status is not Status.REGISTERING:
        raise RegistrationRefused(f"registration is already closed ({tournament.status.value})")
    entrants = len(tournament.entrants)
    if entrants < tournament.rules.min_field:
        reason = (
            f"{entrants} registered, below the minimum of {tournament.rules.min_field}: "
            "cancelled, every buy-in and fee refunded"
        )
        return replace(tournament, status=Status.CANCELLING, cancel_reason=reason)
    accounts = (entrant.account_id for entrant in tournament.entrants)
    order = seating_order(tournament.seed, tournament.id, accounts)
    return replace(tournament, status=Status.SEATED, bracket=brackets.build(order))


def start_due(tournament: Tournament, now: datetime) -> bool:
    """A seated tournament starts at once (Sit & Go) or at its start time (scheduled)."""
    if tournament.status is not Status.SEATED:
        return False
    start = tournament.rules.start
    return isinstance(start, SitAndGo) or now >= start.starts_at


def started(tournament: Tournament, now: datetime) -> Tournament:
    if tournament.status is not Status.SEATED:
        raise InvalidArgument(f"only a seated tournament starts, not a {tournament.status} one")
    return replace(tournament, status=Status.RUNNING, started_at=now)


def with_bracket(tournament: Tournament, bracket: brackets.Bracket) -> Tournament:
    return replace(tournament, bracket=bracket)


def prizes(tournament: Tournament) -> dict[str, int]:
    """What each player placed in the money wins, once the final is won."""
    bracket = tournament.bracket
    if bracket is None or not bracket.finished:
        raise brackets.MatchNotInPlay("prizes are paid once the final is won")
    payouts = cash_payouts(
        tournament.prize_pool, prize_table(tournament.rules.prize_table), bracket.field
    )
    return brackets.cash_awards(bracket, payouts)


def finished(tournament: Tournament, now: datetime) -> Tournament:
    return replace(tournament, status=Status.FINISHED, finished_at=now)


def cancelled(tournament: Tournament, now: datetime) -> Tournament:
    return replace(tournament, status=Status.CANCELLED, finished_at=now)


def satellite_plan(tournament: Tournament, ticket_price: int) -> SatellitePlan:
    """What the drawn satellite's field wins in tickets worth ``ticket_price`` (the
    target's buy-in plus fee) and in cash: known at the draw, whatever its start."""
    bracket = tournament.bracket
    if bracket is None:
        raise brackets.MatchNotInPlay("a satellite's tickets are known once its field is drawn")
    return prize_plan(tournament.prize_pool, ticket_price, bracket.field)


def matches_to_play(tournament: Tournament, ticket_price: int = 0) -> tuple[brackets.Match, ...]:
    """The ready matches whose games should be created: every one, but for a satellite
    (``ticket_price``, its tickets' worth) only those of the rounds that decide who wins a
    ticket; the later ones are never played."""
    bracket = tournament.bracket
    if bracket is None:
        return ()
    ready = bracket.ready()
    if tournament.rules.kind is not Kind.SATELLITE:
        return ready
    last = satellite_plan(tournament, ticket_price).rounds_played
    return tuple(match for match in ready if match.round <= last)


def prizes_due(tournament: Tournament, ticket_price: int = 0) -> bool:
    """True once the prizes are won: the final, or for a satellite the moment no more
    players remain than it has tickets (``bracket.ticket_winners``)."""
    bracket = tournament.bracket
    if bracket is None:
        return False
    if bracket.finished or tournament.rules.kind is not Kind.SATELLITE:
        return bracket.finished
    winners = satellite_plan(tournament, ticket_price).tickets.winners
    return brackets.ticket_winners(bracket, winners) is not None


def satellite_prizes(
    tournament: Tournament, target: Rules
) -> tuple[tuple[str, ...], dict[str, int]]:
    """Once the satellite's tickets are won (``prizes_due``): who wins a ticket to
    ``target`` (the best whole finishes, as many players as the pool buys tickets, best
    first: the players left, in the drawn order, when they win before the final), and the
    cash each player wins by the satellite remainder rule (``prizes.remainder_cash``): the
    pool the tickets leave, in equal shares to the next finish, the units that do not
    divide to 1st place (the first of the players left)."""
    if not prizes_due(tournament, target.ticket_price):
        raise brackets.MatchNotInPlay("tickets are won once no more players remain than tickets")
    assert tournament.bracket is not None
    plan = satellite_plan(tournament, target.ticket_price)
    placed = brackets.standings(tournament.bracket)  # best first, drawn order within a place
    winners = tuple(s.player for s in placed if s.best <= plan.tickets.winners)
    cash = {s.player: plan.each for s in placed if s.best == plan.next_best and plan.each}
    if plan.to_first:
        first = placed[0].player
        cash[first] = cash.get(first, 0) + plan.to_first
    return winners, cash


def ticket_winners(tournament: Tournament, target: Rules) -> tuple[str, ...]:
    """Who wins a ticket to ``target`` once they are known, best first."""
    return satellite_prizes(tournament, target)[0]
