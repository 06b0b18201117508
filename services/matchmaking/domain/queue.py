"""Auto-match queue tickets: their pools, states and what a player may do with them.

Pure: no database, network or clock. A ticket waits in the pool of its rules
(tickets with equal rules are paired with each other) until a wave pairs it
(SEATING, at a lobby table made for the pair), then ends MATCHED (the game
started), REFUSED (this player could not be seated: the reason is kept; the
opponent's ticket waits again, its waiting time kept) or CANCELLED (the player
left while it waited).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from enum import Enum

from services.kit.errors import FailedPrecondition, InvalidArgument
from services.matchmaking.domain.pairing import DEFAULT_MAX_RATING_DIFFERENCE
from services.matchmaking.domain.pairing import Ticket as PairingTicket
from services.matchmaking.domain.tables import MAX_RATING, Rules, Sitter

MAX_KEY = 200


class TicketStatus(Enum):
    WAITING = "waiting"
    SEATING = "seating"
    MATCHED = "matched"
    CANCELLED = "cancelled"
    REFUSED = "refused"

    @property
    def live(self) -> bool:
        return self in (TicketStatus.WAITING, TicketStatus.SEATING)


def pool_of(rules: Rules) -> str:
    """The pool a ticket with these rules waits in: every rule, so only equal rules meet."""
    return ":".join(
        str(part)
        for part in (
            rules.kind.value,
            rules.match_length,
            rules.stake_minor,
            rules.currency,
            rules.cube_cap,
            int(rules.beaver),
            int(rules.jacoby),
            int(rules.crawford),
            rules.clock,
        )
    )


def accepted_difference(requested: int) -> float:
    """What a ticket accepts before waiting: the request's figure, 0 meaning the default."""
    if requested < 0 or requested > MAX_RATING:
        raise InvalidArgument(
            f"max_rating_difference is 0 (the default, {DEFAULT_MAX_RATING_DIFFERENCE:.0f}) "
            f"or up to {MAX_RATING}"
        )
    return float(requested) if requested else DEFAULT_MAX_RATING_DIFFERENCE


@dataclass(frozen=True, slots=True)
class Pairing:
    """Who a paired ticket sits with, and where."""

    table_id: str
    opponent_account_id: str
    rating: float
    opponent_rating: float


@dataclass(frozen=True, slots=True)
class QueueTicket:
    ticket_id: str
    sitter: Sitter
    rules: Rules
    max_rating_difference: float
    entered_at: datetime
    status: TicketStatus = TicketStatus.WAITING
    pairing: Pairing | None = None
    game_id: str = ""
    reason: str = ""

    @property
    def account_id(self) -> str:
        return self.sitter.account_id

    @property
    def pool(self) -> str:
        return pool_of(self.rules)

    def for_pairing(self, rating: float) -> PairingTicket:
        """The ticket as a wave sees it, with the player's current rating."""
        return PairingTicket(
            ticket_id=self.ticket_id,
            account_id=self.account_id,
            rating=rating,
            max_rating_difference=self.max_rating_difference,
            entered_at=self.entered_at,
        )

    def same_request(self, rules: Rules, max_rating_difference: float, key: str) -> QueueTicket:
        """This ticket again for a retried EnterQueue, or a clear refusal if it asked otherwise."""
        if self.rules != rules or self.max_rating_difference != max_rating_difference:
            raise FailedPrecondition(
                f"idempotency key {key!r} already entered ticket {self.ticket_id} with other "
                "rules; use a new key for a new ticket"
            )
        return self

    def check_leave(self) -> None:
        if self.status is TicketStatus.SEATING:
            raise FailedPrecondition(
                f"ticket {self.ticket_id} is paired and being seated at table "
                f"{self.pairing.table_id if self.pairing else ''}; it cannot leave the queue now"
            )

    def cancelled(self) -> QueueTicket:
        if self.status is not TicketStatus.WAITING:
            return self
        return replace(self, status=TicketStatus.CANCELLED)
