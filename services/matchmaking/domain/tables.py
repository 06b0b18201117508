"""Lobby tables: their rules, who may sit, and how a table moves from open to playing.

Pure: no database, network or clock. A table is opened by its owner (seat 0),
waits for a second player, is claimed by one joiner at a time (status SEATING,
an attempt with a deadline) while the seating arranges geo, holds and the game,
and then either starts (PLAYING, with the game id and both holds) or is given
back (OPEN again, the joiner removed). A claim past its deadline (its process
died) is resumed by the recovery, never taken over by another joiner, since
holds or a game of its own may exist. Only the owner may leave or close it, and
only before a game starts. Every refusal is a kit error with a sentence the
player can act on.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from enum import Enum

from services.kit import table_stakes as stakes_rule
from services.kit.errors import FailedPrecondition, InvalidArgument, NotFound, PermissionDenied
from services.kit.money_bounds import MoneyBounds, checked_product

PLAY = "PLAY"
MAX_MATCH_LENGTH = 25
MAX_CUBE = 64
CUBE_CAPS = tuple(2**power for power in range(7))  # 1 (no doubling) .. 64
CLOCK_PRESETS = ("standard", "blitz")
DEFAULT_CLOCK = "standard"
MAX_RATING = 4000


class Kind(Enum):
    MONEY_GAME = "money_game"
    MATCH = "match"


class Status(Enum):
    OPEN = "open"
    SEATING = "seating"
    PLAYING = "playing"
    CLOSED = "closed"


@dataclass(frozen=True, slots=True)
class Rules:
    """A table's rules, fixed when it opens; the game is created under them."""

    kind: Kind
    match_length: int
    stake_minor: int
    currency: str
    cube_cap: int = MAX_CUBE
    beaver: bool = False
    jacoby: bool = False
    crawford: bool = False
    clock: str = DEFAULT_CLOCK
    # Table stakes: what each player brings and has held for the whole session; 0: none.
    table_stakes_minor: int = 0

    @property
    def real_money(self) -> bool:
        return self.currency != PLAY

    @property
    def table_stakes(self) -> bool:
        return self.table_stakes_minor > 0

    def opening_hold(self) -> int:
        """What each stake hold must cover when the game starts: a backgammon at cube 1
        for a money game (stake x 3), the match stake for a match (the wallet's rule);
        at table stakes the whole bring-in, held for every game of the session."""
        if self.kind is Kind.MATCH:
            return self.stake_minor
        if self.table_stakes:
            return self.table_stakes_minor
        return checked_product(self.stake_minor, 3, what="the opening hold (stake x 3)")

    def largest_loss(self, bounds: MoneyBounds) -> int:
        """What one player can lose at this table (stake x cube cap x 3, a match's stake,
        the bring-in at table stakes), or ``AmountOutOfBounds`` when the stake or that loss
        passes the operator's bounds."""
        if self.table_stakes:
            return stakes_rule.require_bring_in(
                bounds, self.stake_minor, self.table_stakes_minor, self.currency
            )
        match = self.kind is Kind.MATCH
        return bounds.exposure(self.stake_minor, self.cube_cap, self.currency, match=match)


def parse_rules(
    *,
    kind: Kind | None,
    match_length: int,
    stake_minor: int,
    currency: str,
    cube_cap: int,
    beaver: bool,
    jacoby: bool,
    crawford: bool | None,
    clock: str,
    table_stakes_minor: int = 0,
) -> Rules:
    """Validated rules; ``cube_cap`` 0 means 64, ``crawford`` None means on (matches)."""
    if kind is None:
        raise InvalidArgument("rules.kind must be PLAY_KIND_MONEY_GAME or PLAY_KIND_MATCH")
    if kind is Kind.MATCH and not 1 <= match_length <= MAX_MATCH_LENGTH:
        raise InvalidArgument(f"a match is 1..{MAX_MATCH_LENGTH} points long; got {match_length}")
    if kind is Kind.MONEY_GAME and match_length:
        raise InvalidArgument("a money game has no match length: send 0")
    if stake_minor <= 0:
        raise InvalidArgument("the stake must be a positive amount in minor units (cents)")
    if not (currency == PLAY or (len(currency) == 3 and currency.isascii() and currency.isupper())):
        raise InvalidArgument(
            f"currency {currency!r} is neither an ISO-4217 code (\"USD\") nor \"PLAY\""
        )
    cap = cube_cap or MAX_CUBE
    if cap not in CUBE_CAPS:
        raise InvalidArgument(
            f"cube_cap must be a power of two from 1 to {MAX_CUBE} (0 means {MAX_CUBE}); "
            f"got {cube_cap}"
        )
    if kind is Kind.MATCH and (beaver or jacoby):
        raise InvalidArgument("beaver and Jacoby are money-game options; a match takes neither")
    if kind is Kind.MONEY_GAME and crawford:
        raise InvalidArgument("the Crawford rule is for matches; a money game takes none")
    if table_stakes_minor < 0:
        raise InvalidArgument("table stakes are a positive amount in minor units (0: none)")
    if table_stakes_minor and kind is not Kind.MONEY_GAME:
        raise InvalidArgument("table stakes are a money-game option: a match has its stake")
    if table_stakes_minor and table_stakes_minor < stake_minor:
        raise InvalidArgument(
            f"the table stake each player brings ({table_stakes_minor}) must cover at least "
            f"one game at cube 1, the stake per point ({stake_minor})"
        )
    name = clock or DEFAULT_CLOCK
    if name not in CLOCK_PRESETS:
        raise InvalidArgument(f"clock preset {name!r} is not one of {', '.join(CLOCK_PRESETS)}")
    return Rules(
        kind=kind,
        match_length=match_length,
        stake_minor=stake_minor,
        currency=currency,
        cube_cap=cap,
        beaver=beaver,
        jacoby=jacoby,
        crawford=kind is Kind.MATCH and (True if crawford is None else crawford),
        clock=name,
        table_stakes_minor=table_stakes_minor,
    )


@dataclass(frozen=True, slots=True)
class RatingRange:
    """The opponents' ratings a table accepts; None = no bound on that side."""

    low: int | None = None
    high: int | None = None

    @classmethod
    def parse(cls, low: int, high: int) -> RatingRange:
        """From the wire, where 0 means no bound."""
        for value in (low, high):
            if value < 0 or value > MAX_RATING:
                raise InvalidArgument(f"a rating bound is 0 (none) or up to {MAX_RATING}")
        if low and high and low > high:
            raise InvalidArgument(f"the rating range {low}..{high} is empty: min above max")
        return cls(low or None, high or None)

    def admits(self, rating: float) -> bool:
        return (self.low is None or rating >= self.low) and (
            self.high is None or rating <= self.high
        )

    def describe(self) -> str:
        return f"{self.low or 'any'}..{self.high or 'any'}"


@dataclass(frozen=True, slots=True)
class Sitter:
    """A player sitting down, with what the gateway said about them on that call."""

    account_id: str
    residence: str = ""
    address: str = ""
    device_id: str = ""


@dataclass(frozen=True, slots=True)
class Seat:
    number: int  # 0: the owner, 1: the joiner
    sitter: Sitter
    rating: float | None = None
    hold_id: str = ""
    stake_left: int = 0  # table stakes: this seat's hold after the last settled game

    @property
    def account_id(self) -> str:
        return self.sitter.account_id


@dataclass(frozen=True, slots=True)
class Attempt:
    """A joiner's claim on the free seat while geo, holds and the game are arranged."""

    attempt_id: str
    account_id: str
    deadline: datetime


@dataclass(frozen=True, slots=True)
class Table:
    table_id: str
    owner_id: str
    rules: Rules
    status: Status
    created_at: datetime
    seats: tuple[Seat, ...]
    rating_range: RatingRange = RatingRange()
    invited_account_id: str = ""
    game_id: str = ""
    attempt: Attempt | None = None
    close_reason: str = ""
    games_played: int = 0  # table stakes: games started so far (game_id is the latest)
    leaving_id: str = ""  # table stakes: a player who asked to leave after this game

    @classmethod
    def open(
        cls,
        *,
        table_id: str,
        owner: Sitter,
        rules: Rules,
        now: datetime,
        owner_rating: float | None = None,
        rating_range: RatingRange = RatingRange(),
        invited_account_id: str = "",
    ) -> Table:
        if invited_account_id == owner.account_id:
            raise InvalidArgument("a private table invites someone else: you sit at it already")
        return cls(
            table_id=table_id,
            owner_id=owner.account_id,
            rules=rules,
            status=Status.OPEN,
            created_at=now,
            seats=(Seat(0, owner, owner_rating),),
            rating_range=rating_range,
            invited_account_id=invited_account_id,
        )

    @property
    def owner_seat(self) -> Seat:
        return self.seats[0]

    def seated(self, account_id: str) -> bool:
        return any(seat.account_id == account_id for seat in self.seats)

    def visible_to(self, account_id: str) -> bool:
        """A private table is listed only to its owner and its guest."""
        return not self.invited_account_id or account_id in (self.owner_id, self.invited_account_id)

    def check_join(
        self, joiner_id: str, joiner_rating: float, forbidden: str | None, now: datetime
    ) -> None:
        """Refuse, with the reason, a player who may not take the free seat now."""
        if self.status is Status.CLOSED:
            raise FailedPrecondition(f"table {self.table_id} is closed ({self.close_reason})")
        if joiner_id == self.owner_id:
            raise FailedPrecondition("you cannot sit against yourself: this is your own table")
        if self.status is Status.PLAYING:
            raise FailedPrecondition(f"table {self.table_id} is full: its game has started")
        if self.status is Status.SEATING:
            raise FailedPrecondition(
                f"another player is sitting down at table {self.table_id}; "
                "it may open again in a moment, or pick another table"
            )
        if self.invited_account_id and joiner_id != self.invited_account_id:
            raise PermissionDenied(f"table {self.table_id} is private: only its guest may join")
        if not self.rating_range.admits(joiner_rating):
            raise FailedPrecondition(
                f"table {self.table_id} accepts ratings {self.rating_range.describe()}; "
                f"yours is {joiner_rating:.0f}"
            )
        if forbidden is not None:
            raise FailedPrecondition(
                f"you cannot play the owner of table {self.table_id}: {forbidden}"
            )

    def attempt_expired(self, now: datetime) -> bool:
        """A seating attempt past its deadline: its process died or stalled, and the
        recovery resumes it (see ``Seating.recover``)."""
        return (
            self.status is Status.SEATING
            and self.attempt is not None
            and self.attempt.deadline <= now
        )

    def resumed(self, deadline: datetime) -> Table:
        """A stale attempt taken on by the recovery, with a new deadline."""
        if self.attempt is None:
            raise FailedPrecondition(f"table {self.table_id} has no seating attempt")
        return replace(self, attempt=replace(self.attempt, deadline=deadline))

    def claim(
        self,
        joiner: Sitter,
        attempt_id: str,
        deadline: datetime,
        ratings: tuple[float, float],
    ) -> Table:
        """The free seat taken for one seating attempt (after :meth:`check_join`), with
        both players' ratings as the game will be given them."""
        return replace(
            self,
            status=Status.SEATING,
            seats=(
                replace(self.owner_seat, rating=ratings[0], hold_id=""),
                Seat(1, joiner, ratings[1]),
            ),
            attempt=Attempt(attempt_id, joiner.account_id, deadline),
        )

    def holds_placed(self, attempt_id: str, holds: tuple[str, str]) -> Table:
        """Both stakes held for the attempt (owner's, joiner's): recorded before the game
        is asked for, so a recovery knows they exist."""
        if not self.holds(attempt_id):
            raise FailedPrecondition(f"table {self.table_id} was given to another player")
        seats = tuple(replace(seat, hold_id=holds[seat.number]) for seat in self.seats)
        return replace(self, seats=seats)

    @property
    def recorded_holds(self) -> tuple[str, str] | None:
        """Both seats' hold ids, once recorded."""
        if len(self.seats) == 2 and all(seat.hold_id for seat in self.seats):
            return self.seats[0].hold_id, self.seats[1].hold_id
        return None

    @property
    def ratings(self) -> tuple[float, float]:
        """The seats' ratings as claimed (1500 where none was recorded)."""
        found = [seat.rating if seat.rating is not None else 1500.0 for seat in self.seats]
        return found[0], found[1] if len(found) > 1 else 1500.0

    def holds(self, attempt_id: str) -> bool:
        """Whether the seating attempt ``attempt_id`` still holds the free seat."""
        return (
            self.status is Status.SEATING
            and self.attempt is not None
            and self.attempt.attempt_id == attempt_id
        )

    def started(self, attempt_id: str, game_id: str) -> Table:
        """Both seated and the game created: the table plays (again: no change)."""
        if self.status is Status.PLAYING and self.game_id == game_id:
            return self
        if not self.holds(attempt_id):
            raise FailedPrecondition(f"table {self.table_id} was given to another player")
        playing = replace(self, status=Status.PLAYING, game_id=game_id, attempt=None)
        if not self.rules.table_stakes:
            return playing
        bring_in = self.rules.table_stakes_minor
        seats = tuple(replace(seat, stake_left=bring_in) for seat in self.seats)
        return replace(playing, seats=seats, games_played=1)

    def given_back(self, attempt_id: str) -> Table:
        """The attempt failed: the free seat is free again (nothing else changes)."""
        if not self.holds(attempt_id):
            return self
        owner = replace(self.owner_seat, hold_id="")
        return replace(self, status=Status.OPEN, seats=(owner,), attempt=None)

    def finished(self, game_id: str, reason: str) -> Table:
        """The table's game is over: it closes (an event about another game changes nothing)."""
        if self.status is not Status.PLAYING or self.game_id != game_id:
            return self
        return self.closed(reason)

    # ------------------------------------------------------------ table stakes

    def stakes_left(self) -> tuple[int, int]:
        return self.seats[0].stake_left, self.seats[1].stake_left

    def at_risk(self) -> int:
        """What the table's next (or current) game may put at risk: the smaller stake left."""
        return min(self.stakes_left())

    def settled(self, game_id: str, left: dict[str, int]) -> Table:
        """The table-stakes game ``game_id`` was settled: each seat has ``left`` (by account)."""
        if not self.plays_table_stakes(game_id):
            return self
        seats = tuple(replace(seat, stake_left=left[seat.account_id]) for seat in self.seats)
        return replace(self, seats=seats)

    def plays_table_stakes(self, game_id: str) -> bool:
        return self.rules.table_stakes and self.status is Status.PLAYING and self.game_id == game_id

    def goes_on(self) -> bool:
        """Another game: nobody asked to leave and both stakes left cover a game at cube 1."""
        left = self.stakes_left()
        return not self.leaving_id and stakes_rule.session_goes_on(self.rules.stake_minor, left)

    def next_game(self, game_id: str) -> Table:
        """The session's next game started (again: no change)."""
        if self.game_id == game_id:
            return self
        return replace(self, game_id=game_id, games_played=self.games_played + 1)

    def session_end_reason(self) -> str:
        """Why a table-stakes session is over (see ``goes_on``)."""
        if self.leaving_id:
            return f"table stakes: {self.leaving_id} left the table between games"
        richer = max(self.seats, key=lambda seat: seat.stake_left)
        return f"table stakes: {richer.account_id} holds both stakes"

    def leave_after_game(self, account_id: str) -> Table:
        """A seated player leaves a table-stakes session: no further game starts, and the
        session ends once the game in play is settled (the player plays it out or resigns)."""
        if not self.seated(account_id):
            raise NotFound(f"you are not at table {self.table_id}")
        if self.status is not Status.PLAYING or not self.rules.table_stakes:
            raise FailedPrecondition(f"table {self.table_id} is not playing table stakes")
        if self.leaving_id:
            return self
        return replace(self, leaving_id=account_id)

    def closed(self, reason: str) -> Table:
        return replace(self, status=Status.CLOSED, attempt=None, close_reason=reason)

    def check_owner_action(self, account_id: str, doing: str) -> None:
        """Only the owner leaves or closes, and only before anyone else sits."""
        if not self.seated(account_id):
            raise NotFound(f"you are not at table {self.table_id}")
        if account_id != self.owner_id:
            raise PermissionDenied(f"only the owner of table {self.table_id} can {doing} it")
        if self.status is Status.CLOSED:
            raise FailedPrecondition(f"table {self.table_id} is closed already")
        if self.status is Status.PLAYING:
            raise FailedPrecondition(
                f"table {self.table_id} has started its game; leave the game instead"
            )
        if self.status is Status.SEATING:
            raise FailedPrecondition(
                f"a player is sitting down at table {self.table_id}; try again in a moment"
            )
