"""The game session aggregate: one money game or one match, as pure transitions.

A :class:`Session` wraps the rules library's :class:`~services.backgammon.game.Game`
(the board, dice, cube and resignations) and :class:`~services.backgammon.match.MatchScore`
with what the site adds around them: seats, the clock (per-move delay plus a reserve
bank), presence (the 5-minute reconnect window), provably fair dice from a secret
seed, and the end of a game or match for reasons the board does not know (timeout,
leaving, disconnection). :func:`apply` is deterministic given the session, the
command, the time and the seeds, so the action log replays to the same state.
Every rule of backgammon is the library's; this module only sequences it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from datetime import datetime, timedelta
from decimal import Decimal
from enum import Enum
from functools import lru_cache
from typing import Any

from google.protobuf.message import Message

from services.backgammon import dice
from services.backgammon import game as bg
from services.backgammon.board import STARTING_BOARD
from services.backgammon.errors import RulesError
from services.backgammon.game import Game, Phase
from services.backgammon.match import MatchRules, MatchScore, new_match, record_game
from services.backgammon.plays import count_plays
from services.backgammon.position_id import encode as position_id
from services.backgammon.scoring import EndReason, WinKind
from services.game import facts
from services.game.rules import (
    force_end,
    forfeit_kind,
    forfeit_points,
    kit_error,
    match_id_of,
    offer_resignation_by,
)
from services.kit import table_stakes as stakes_rule
from services.kit.errors import FailedPrecondition, InvalidArgument, PermissionDenied
from services.kit.money_bounds import MoneyBounds, checked_product

TOPIC = "tavla.game.v1"
RECONNECT_WINDOW = timedelta(minutes=5)
PLAY_MONEY = "PLAY"
MAX_MATCH_LENGTH = 25
# The house rules (shared/reference): the cube runs 2, 4, ... 64 and "redoubles can
# increase up to 64 times the original wager", whatever a table asks for.
MAX_CUBE = 64
CUBE_CAPS = tuple(2**power for power in range(7))  # 1 (no doubling) .. 64

SeedSource = Callable[[], bytes]


class Kind(Enum):
    MONEY = "money"
    MATCH = "match"


class Penalty(Enum):
    LOSE_GAME = "lose_game"
    LOSE_MATCH = "lose_match"


class Status(Enum):
    IN_PROGRESS = "in_progress"
    FINISHED = "finished"
    CANCELLED = "cancelled"


class Cause(Enum):
    BORNE_OFF = "borne_off"
    CUBE_DROPPED = "cube_dropped"
    RESIGNED = "resigned"
    TIMEOUT = "timeout"
    DISCONNECTION = "disconnection"
    LEFT = "left"


_CAUSE_OF_REASON = {
    EndReason.BORNE_OFF: Cause.BORNE_OFF,
    EndReason.DOUBLE_DROPPED: Cause.CUBE_DROPPED,
    EndReason.RESIGNED: Cause.RESIGNED,
}


@dataclass(frozen=True, slots=True)
class ClockPreset:
    name: str
    move_delay: timedelta
    reserve_per_point: timedelta
    reserve_per_game: timedelta
    penalty: Penalty


@dataclass(frozen=True, slots=True)
class TableRules:
    kind: Kind
    match_length: int
    stake_minor: int
    currency: str
    cube_cap: int
    beaver: bool
    jacoby: bool
    crawford: bool
    clock: ClockPreset
    # How long a disconnected player has to come back; the house rule is five minutes
    # (the service's TAVLA_GAME_RECONNECT_SECONDS_UNSAFE lowers it for tests and dev only).
    reconnect_window: timedelta = RECONNECT_WINDOW
    # Table stakes (money games only): each player's bring-in, held for the session, and the
    # most this game may put at risk (the smaller remaining stake when it started); 0 at
    # other tables. See services/kit/table_stakes.py.
    table_stakes_minor: int = 0
    at_risk_minor: int = 0
    # A match that moves both players' ratings whatever its stake: a tournament's match,
    # staked on nothing because the tournament holds and pays the money (MatchEnded.rated).
    rated: bool = False

    @property
    def table_stakes(self) -> bool:
        return self.table_stakes_minor > 0

    def max_cube(self) -> int:
        """The highest cube this game may reach: the table's cap, lower at table stakes."""
        if not self.table_stakes:
            return self.cube_cap or MAX_CUBE
        return stakes_rule.max_cube(self.stake_minor, self.at_risk_minor, self.cube_cap)

    def match_rules(self) -> MatchRules:
        try:
            return MatchRules(
                length=self.match_length,
                crawford=self.crawford and self.kind is Kind.MATCH,
                jacoby=self.jacoby,
                beavers=self.beaver,
                cube_cap=self.cube_cap,
            )
        except RulesError as error:  # a table that cannot exist: the caller must fix it
            raise InvalidArgument(str(error)) from None

    def reserve(self) -> timedelta:
        """Each player's reserve: per game for money play, per match point for a match."""
        if self.kind is Kind.MONEY:
            return self.clock.reserve_per_game
        return self.clock.reserve_per_point * self.match_length

    def validate(self) -> None:
        if self.kind is Kind.MATCH and not 1 <= self.match_length <= MAX_MATCH_LENGTH:
            raise InvalidArgument(f"a match is 1..{MAX_MATCH_LENGTH} points long")
        if self.kind is Kind.MONEY and self.match_length:
            raise InvalidArgument("a money game has no match length: send 0")
        if self.kind is Kind.MONEY and self.rated:
            raise InvalidArgument(
                "rated is a match option (a tournament's match): a money game is rated by its stake"
            )
        if self.stake_minor < 0 or not self.currency:
            raise InvalidArgument("the stake needs a non-negative amount and a currency")
        if self.cube_cap not in CUBE_CAPS:
            raise InvalidArgument(
                f"cube_cap must be a power of two from 1 to {MAX_CUBE} (0 means {MAX_CUBE}): "
                f"the cube never goes past {MAX_CUBE}; got {self.cube_cap}"
            )
        if self.clock.move_delay < timedelta(0) or self.reserve() <= timedelta(0):
            raise InvalidArgument("the clock preset needs a delay >= 0 and a positive reserve")
        self._validate_table_stakes()
        self.match_rules()

    def _validate_table_stakes(self) -> None:
        if not (self.table_stakes_minor or self.at_risk_minor):
            return
        if self.kind is not Kind.MONEY:
            raise InvalidArgument("table stakes are a money-game option: a match has its stake")
        if self.table_stakes_minor < 0 or self.stake_minor <= 0:
            raise InvalidArgument("table stakes need a positive stake per point and bring-in")
        # Neither player can have more left than both bring-ins together.
        if not self.stake_minor <= self.at_risk_minor <= 2 * self.table_stakes_minor:
            raise InvalidArgument(
                "table stakes: the amount at risk in a game (the smaller remaining stake, "
                f"{self.at_risk_minor} minor units) must cover a game at cube 1 "
                f"({self.stake_minor}) and be at most both bring-ins together "
                f"({2 * self.table_stakes_minor})"
            )


@dataclass(frozen=True, slots=True)
class Seat:
    account_id: str
    display_name: str
    rating: float
    hold_id: str = ""


@dataclass(frozen=True, slots=True)
class Presence:
    connected: bool = True
    disconnected_at: datetime | None = None
    deadline: datetime | None = None
    # Why the geo service blocked this seat's location ("" when it did not): a blocked
    # seat is disconnected, and only LOCATION_ALLOWED (an allowed check) brings it back.
    blocked: str = ""


@dataclass(frozen=True, slots=True)
class Located:
    """A seat's last location check in a real-money game: from which client address, with
    which declared residence, when. Kept beside the session's state, not in it (a check
    moves no version), and read with it."""

    address: str
    residence: str
    checked_at: datetime


def location_due(
    located: Located | None, address: str, residence: str, now: datetime, every: timedelta
) -> bool:
    """Whether a call from ``address`` needs a location check: the seat was never checked,
    its address or declared residence changed, or ``every`` passed since its last check."""
    return (
        located is None
        or located.address != address
        or located.residence != residence
        or now - located.checked_at >= every
    )


@dataclass(frozen=True, slots=True)
class Figures:
    """What a disconnection settlement's shares came from (recorded in the end events).

    ``method``: ``neural_net`` or ``exact`` (the analysis service's), or ``not_analysed``
    (the even split when the analysis service could not be reached in time); ``basis``
    says in words what was valued; the rest are the analysis service's figures for the
    player on roll (``None`` when it gave none).
    """

    method: str
    basis: str
    on_roll: int = 0  # the player (0 or 1) on roll where play stopped: whose figures
    plies: int = 0
    cubeful_equity: float | None = None
    match_winning_chance: float | None = None


@dataclass(frozen=True, slots=True)
class Stopped:
    """Where a game stopped by a timeout or a resignation: the position to value for the
    compliance record once the session is over (``StopValued``), never for money.

    ``player`` stopped it (whose clock ran out, or who resigned); the ids are GNU Backgammon's
    from the side of ``on_roll``, a resignation's position as it stood before the offer.
    """

    player: int
    position_id: str
    gnubg_match_id: str
    on_roll: int
    race: bool


def stopped_at(game: Game, score: MatchScore, player: int) -> Stopped:
    return Stopped(
        player, position_id(game.board), match_id_of(game, score), game.turn, game.board.is_race()
    )


@dataclass(frozen=True, slots=True)
class Outcome:
    """How one game ended; ``shares`` only for a disconnection settlement; ``stopped`` only
    for a timeout or a resignation (valued after the session ends, never settled by)."""

    winner: int
    kind: WinKind | None
    cube_value: int
    points: int
    cause: Cause
    shares: tuple[Decimal, Decimal] | None = None
    analysed: bool = False
    figures: Figures | None = None
    stopped: Stopped | None = None


class Action(Enum):
    ROLL = "roll"
    MOVE = "move"
    DOUBLE = "double"
    TAKE = "take"
    DROP = "drop"
    BEAVER = "beaver"
    RESIGN = "resign"
    ACCEPT_RESIGN = "accept_resign"
    REJECT_RESIGN = "reject_resign"
    LEAVE = "leave"
    RECONNECT = "reconnect"
    DISCONNECT = "disconnect"
    TIMEOUT = "timeout"
    SETTLE = "settle"
    LOCATION_BLOCKED = "location_blocked"  # the service's: text is the geo service's reasons
    LOCATION_ALLOWED = "location_allowed"  # the service's: a blocked seat checked allowed


# Decisions of the player whose turn it is; the others are presence, time and leaving.
PLAYER_DECISIONS = frozenset(
    {
        Action.ROLL,
        Action.MOVE,
        Action.DOUBLE,
        Action.TAKE,
        Action.DROP,
        Action.BEAVER,
        Action.RESIGN,
        Action.ACCEPT_RESIGN,
        Action.REJECT_RESIGN,
    }
)


@dataclass(frozen=True, slots=True)
class Command:
    action: Action
    player: int
    text: str = ""  # the play's notation, or the resignation level
    shares: tuple[Decimal, Decimal] | None = None
    analysed: bool = False
    figures: Figures | None = None


@dataclass(frozen=True, slots=True)
class EndedGame:
    """A finished game of the session, with what its dice record needs."""

    game_number: int
    game: Game
    seed: bytes
    roll_count: int


# Every view and the game's first events show the seed's commitment (a SHA-256): once per game.
_commitment = lru_cache(maxsize=4096)(dice.commitment)


@dataclass(frozen=True, slots=True)
class Session:
    game_id: str
    table_id: str
    rules: TableRules
    seats: tuple[Seat, Seat]
    client_seed: str
    created_at: datetime
    updated_at: datetime
    version: int
    status: Status
    game_number: int
    game: Game
    score: MatchScore
    seed: bytes  # secret until the game ends: never in events, views or logs
    roll_count: int
    decision_started_at: datetime
    reserves: tuple[timedelta, timedelta]
    presence: tuple[Presence, Presence] = (Presence(), Presence())
    last_outcome: Outcome | None = None
    winner: int | None = None
    # Each seat's last location check (real money only); not part of the state or the
    # version: stored in its own columns, like the seed (see services/game/store.py).
    located: tuple[Located | None, Located | None] = (None, None)

    @property
    def real_money(self) -> bool:
        return self.rules.currency != PLAY_MONEY

    @property
    def commitment(self) -> str:
        return _commitment(self.seed)

    @property
    def awaiting(self) -> int | None:
        """Whose decision it is (None once the session is over)."""
        if self.status is not Status.IN_PROGRESS:
            return None
        game = self.game
        if game.phase is Phase.DOUBLE_OFFERED and game.cube.offered_by is not None:
            return 1 - game.cube.offered_by
        if game.phase is Phase.RESIGN_OFFERED and game.resignation is not None:
            return 1 - game.resignation.by
        return game.turn

    def expires_at(self) -> datetime | None:
        """When the awaited player's reserve runs out; None while paused (disconnected)."""
        player = self.awaiting
        if player is None or not self.presence[player].connected:
            return None
        return self.decision_started_at + self.rules.clock.move_delay + self.reserves[player]

    def seat_of(self, account_id: str) -> int:
        for index, seat in enumerate(self.seats):
            if seat.account_id == account_id:
                return index
        raise PermissionDenied("you are not a player in this game")


_SESSION_FIELDS = tuple(f.name for f in fields(Session))
_new_object = object.__new__
_set_slot = object.__setattr__


def _evolved(session: Session, **changes: Any) -> Session:
    """``dataclasses.replace`` for a session, at half its cost.

    A command replaces its session three or four times (version, game, clock, decision
    start); ``replace`` walks the fields' metadata and calls ``__init__`` by keyword
    every time. ``Session`` has no ``__post_init__`` and every field is an ``__init__``
    field, so copying the slots is the same thing.
    """
    unknown = changes.keys() - _SESSION_FIELDS
    if unknown:
        raise TypeError(f"Session has no field {sorted(unknown)[0]!r}")
    evolved = _new_object(Session)
    for name in _SESSION_FIELDS:
        _set_slot(evolved, name, changes[name] if name in changes else getattr(session, name))
    return evolved


@dataclass
class Transition:
    """The session after a command, the facts to publish, and games that ended."""

    session: Session
    facts: list[Message] = field(default_factory=list)
    ended: list[EndedGame] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.facts)


def _rules_call(step: Callable[[], Game]) -> Game:
    try:
        return step()
    except RulesError as error:
        raise kit_error(error) from None


def _opening(score: MatchScore, seed: bytes, client_seed: str) -> tuple[Game, int]:
    """The game begun by the opening roll from ``seed``, and how many rolls that used."""
    number, (die0, die1) = dice.opening_roll(seed, client_seed)
    cube_rules = score.cube_rules()
    return _rules_call(lambda: bg.start_game(cube_rules, die0, die1)), number + 1


def create(
    *,
    game_id: str,
    table_id: str,
    rules: TableRules,
    seats: tuple[Seat, Seat],
    client_seed: str,
    seed: bytes,
    now: datetime,
) -> Transition:
    """A new session (version 1) with its first game started and the opening roll made."""
    rules.validate()
    if seats[0].account_id == seats[1].account_id:
        raise InvalidArgument("a game needs two different players")
    score = new_match(rules.match_rules())
    game, roll_count = _opening(score, seed, client_seed)
    reserve = rules.reserve()
    session = Session(
        game_id=game_id,
        table_id=table_id,
        rules=rules,
        seats=seats,
        client_seed=client_seed,
        created_at=now,
        updated_at=now,
        version=1,
        status=Status.IN_PROGRESS,
        game_number=1,
        game=game,
        score=score,
        seed=seed,
        roll_count=roll_count,
        decision_started_at=now,
        reserves=(reserve, reserve),
    )
    transition = Transition(session)
    _announce_game(transition, now)
    return transition


def _start_game(transition: Transition, seed: bytes, now: datetime) -> None:
    """The next game of a match (or session): new seed, opening roll, money reserves reset."""
    session = transition.session
    game, roll_count = _opening(session.score, seed, session.client_seed)
    reserves = session.reserves
    if session.rules.kind is Kind.MONEY:
        reserves = (session.rules.reserve(), session.rules.reserve())
    transition.session = replace(
        session,
        seed=seed,
        game_number=session.game_number + 1,
        game=game,
        roll_count=roll_count,
        decision_started_at=now,
        reserves=reserves,
    )
    _announce_game(transition, now)


def _announce_game(transition: Transition, now: datetime) -> None:
    session = transition.session
    transition.facts.append(facts.game_started(session, now))
    opening = session.roll_count - 1
    transition.facts.append(facts.dice_rolled(session, session.game.turn, opening, True, now))


def apply(session: Session, command: Command, now: datetime, new_seed: SeedSource) -> Transition:
    """Apply one command at ``now``; raises a kit error when it is not allowed.

    An applied command moves the version on by exactly one; a command that changes
    nothing (a stale timer, a reconnect of a connected player) returns ``session`` as is.
    """
    if session.status is not Status.IN_PROGRESS:
        raise FailedPrecondition("the game is over: nothing more can be played")
    transition = Transition(_evolved(session, version=session.version + 1, updated_at=now))
    if command.action in PLAYER_DECISIONS:
        _decide(transition, command, now, new_seed)
    else:
        _OTHER_HANDLERS[command.action](transition, command, now, new_seed)
    return transition if transition.facts else Transition(session)


def _decide(transition: Transition, command: Command, now: datetime, new_seed: SeedSource) -> None:
    session = transition.session
    player = command.player
    on_turn = session.awaiting == player
    # Either player may offer to resign while the board is in play; all else waits its turn.
    resigning = command.action is Action.RESIGN and session.game.phase in (Phase.ROLL, Phase.MOVE)
    if not on_turn and not resigning:
        waiting = session.seats[session.awaiting or 0].display_name
        raise FailedPrecondition(f"it is not your turn: waiting for {waiting} to decide")
    expiry = session.expires_at()
    if on_turn and expiry is not None and now >= expiry:
        raise FailedPrecondition("your time ran out: the game is being settled by the clock")
    if not session.presence[player].connected:  # acting proves the player is back
        _reconnect(transition, player, now)
    if on_turn:
        _charge_clock(transition, player, now)
    _DECISIONS[command.action](transition, command, now)
    _after_decision(transition, now, new_seed)


def _charge_clock(transition: Transition, player: int, now: datetime) -> None:
    """Spend the time of this decision beyond the per-move delay from the reserve."""
    session = transition.session
    spent = now - session.decision_started_at - session.rules.clock.move_delay
    if spent <= timedelta(0):
        return
    reserves = list(session.reserves)
    reserves[player] = max(timedelta(0), reserves[player] - spent)
    transition.session = _evolved(session, reserves=(reserves[0], reserves[1]))


def _set(transition: Transition, game: Game, **changes: object) -> None:
    transition.session = _evolved(transition.session, game=game, **changes)


def _roll(transition: Transition, command: Command, now: datetime) -> None:
    session = transition.session
    rolled = dice.roll(session.seed, session.client_seed, session.roll_count)
    game = _rules_call(lambda: bg.roll(session.game, rolled))
    _set(transition, game, roll_count=session.roll_count + 1)
    transition.facts.append(
        facts.dice_rolled(transition.session, command.player, session.roll_count, False, now)
    )
    if count_plays(game.board, rolled) == 0:
        # Nothing to play: the turn passes in the same call, without asking the player.
        _play(transition, Command(Action.MOVE, command.player), now, time_taken=timedelta(0))


def _play(
    transition: Transition, command: Command, now: datetime, time_taken: timedelta | None = None
) -> None:
    before = transition.session
    game = _rules_call(lambda: bg.play(before.game, command.text))
    taken = now - before.decision_started_at if time_taken is None else time_taken
    _set(transition, game)
    transition.facts.append(facts.move_played(before, transition.session, taken, now))


def _within_house_cap(session: Session, factor: int) -> None:
    """Refuse a cube past 64 even on a session stored with a higher cap before it was refused."""
    if session.game.cube.value * factor > MAX_CUBE:
        raise FailedPrecondition(
            f"the cube is at {session.game.cube.value}: it never goes past {MAX_CUBE}"
        )


def _within_table_stakes(session: Session, factor: int) -> None:
    """At table stakes, refuse a cube at which a single game would cost more than the poorer
    player has left at the table (the cap shown as the game's ``table_stakes_max_cube``)."""
    rules = session.rules
    cube = session.game.cube.value * factor
    if not rules.table_stakes:
        return
    if stakes_rule.may_reach(rules.stake_minor, rules.at_risk_minor, cube):
        return
    raise FailedPrecondition(
        f"table stakes: the cube may not reach {cube} in this game (at most "
        f"{rules.max_cube()}): a single game at {cube} costs {rules.stake_minor * cube} "
        f"minor units of {rules.currency}, more than the {rules.at_risk_minor} the poorer "
        "player has left at the table; the cube stays where it is"
    )


def _double(transition: Transition, command: Command, now: datetime) -> None:
    before = transition.session
    _within_house_cap(before, 2)
    _within_table_stakes(before, 2)
    _set(transition, _rules_call(lambda: bg.double(before.game)))
    transition.facts.append(facts.cube_offered(before, transition.session, now))


def _take(transition: Transition, command: Command, now: datetime) -> None:
    before = transition.session
    _set(transition, _rules_call(lambda: bg.take(before.game)))
    transition.facts.append(facts.cube_taken(before, transition.session, now))


def _drop(transition: Transition, command: Command, now: datetime) -> None:
    before = transition.session
    _set(transition, _rules_call(lambda: bg.drop(before.game)))
    transition.facts.append(facts.cube_dropped(before, transition.session, now))


def _beaver(transition: Transition, command: Command, now: datetime) -> None:
    before = transition.session
    _within_house_cap(before, 4)
    _within_table_stakes(before, 4)
    _set(transition, _rules_call(lambda: bg.beaver(before.game)))
    transition.facts.append(facts.cube_beavered(before, transition.session, now))


def _resign(transition: Transition, command: Command, now: datetime) -> None:
    before = transition.session
    try:
        level = int(command.text)
    except ValueError:
        raise InvalidArgument("resign as 1 (single), 2 (gammon) or 3 (backgammon)") from None
    _set(transition, _rules_call(lambda: offer_resignation_by(before.game, command.player, level)))
    transition.facts.append(facts.resign_offered(transition.session, command.player, level, now))


def _answer_resign(transition: Transition, command: Command, now: datetime) -> None:
    before = transition.session
    offer = before.game.resignation
    assert offer is not None  # the phase check of _decide guarantees a pending offer
    accept = command.action is Action.ACCEPT_RESIGN
    step = bg.accept_resignation if accept else bg.reject_resignation
    _set(transition, _rules_call(lambda: step(before.game)))
    build = facts.resign_accepted if accept else facts.resign_rejected
    transition.facts.append(build(transition.session, command.player, int(offer.kind), now))


_DECISIONS: dict[Action, Callable[[Transition, Command, datetime], None]] = {
    Action.ROLL: _roll,
    Action.MOVE: _play,
    Action.DOUBLE: _double,
    Action.TAKE: _take,
    Action.DROP: _drop,
    Action.BEAVER: _beaver,
    Action.RESIGN: _resign,
    Action.ACCEPT_RESIGN: _answer_resign,
    Action.REJECT_RESIGN: _answer_resign,
}


def _after_decision(transition: Transition, now: datetime, new_seed: SeedSource) -> None:
    """A new decision starts now; a game the board ended is scored."""
    transition.session = _evolved(transition.session, decision_started_at=now)
    result = transition.session.game.result
    if result is not None:
        cause = _CAUSE_OF_REASON[result.reason]
        outcome = Outcome(
            result.winner,
            result.kind,
            result.cube_value,
            result.points,
            cause,
            stopped=_resigned_at(transition.session) if cause is Cause.RESIGNED else None,
        )
        _end_game(transition, transition.session.game, outcome, now, new_seed)


def _resigned_at(session: Session) -> Stopped:
    """The accepted resignation's position as it stood before the offer (the offer left out:
    valued with it, the resignation binds the resigner and says nothing of the position)."""
    game = session.game
    assert game.result is not None
    resumed = replace(
        game,
        phase=Phase.MOVE if game.dice is not None else Phase.ROLL,
        result=None,
        resignation=None,
    )
    return stopped_at(resumed, session.score, 1 - game.result.winner)


def _end_game(
    transition: Transition,
    finished: Game,
    outcome: Outcome,
    now: datetime,
    new_seed: SeedSource,
    *,
    end_session: bool = False,
) -> None:
    """Score a finished game; end the session or start the next game of the match."""
    session = transition.session
    assert finished.result is not None
    outcome = _capped_by_table_stakes(session.rules, outcome)
    score = record_game(session.score, finished.result)
    transition.ended.append(
        EndedGame(session.game_number, finished, session.seed, session.roll_count)
    )
    session = replace(session, game=finished, score=score, last_outcome=outcome)
    transition.session = session
    transition.facts.append(facts.game_ended(session, outcome, now))
    if session.rules.kind is Kind.MONEY or score.is_over or end_session:
        transition.session = replace(session, status=Status.FINISHED, winner=outcome.winner)
        if session.rules.kind is Kind.MATCH:
            transition.facts.append(facts.match_ended(transition.session, outcome, now))
        return
    _start_game(transition, new_seed(), now)


def _capped_by_table_stakes(rules: TableRules, outcome: Outcome) -> Outcome:
    """At table stakes a gammon or backgammon counts only as far as the amount at risk
    covers at the final cube (never below a single game): the points the loser pays."""
    if not rules.table_stakes or outcome.kind is None or outcome.points == 0:
        return outcome
    cube = outcome.cube_value
    counted = stakes_rule.capped_multiplier(
        rules.stake_minor, cube, outcome.points // cube, rules.at_risk_minor
    )
    return replace(outcome, points=cube * counted)


def _forfeit(
    transition: Transition,
    loser: int,
    cause: Cause,
    now: datetime,
    new_seed: SeedSource,
    *,
    whole_match: bool,
) -> None:
    """``loser`` forfeits the game (and the rest of the match when ``whole_match``)."""
    session = transition.session
    winner = 1 - loser
    kind = forfeit_kind(session.game, loser)
    points = forfeit_points(session.game, kind)
    if whole_match and session.rules.kind is Kind.MATCH:
        # Whatever the winner still needs, so the score and the .mat record close the match.
        points = max(points, session.rules.match_length - session.score.score[winner])
    finished = force_end(session.game, winner, kind, points)
    stopped = stopped_at(session.game, session.score, loser) if cause is Cause.TIMEOUT else None
    outcome = Outcome(winner, kind, session.game.cube.value, points, cause, stopped=stopped)
    _end_game(transition, finished, outcome, now, new_seed)


Handler = Callable[[Transition, Command, datetime, SeedSource], None]


def _leave(transition: Transition, command: Command, now: datetime, new_seed: SeedSource) -> None:
    blocked = transition.session.presence[command.player].blocked
    if blocked:  # the disconnection rules settle it, not a forfeit from where play is barred
        raise FailedPrecondition(
            f"your location was blocked ({blocked}): the game is settled by the "
            "disconnection rules unless you come back from an allowed location in time"
        )
    _forfeit(transition, command.player, Cause.LEFT, now, new_seed, whole_match=True)


def _timeout(transition: Transition, command: Command, now: datetime, new_seed: SeedSource) -> None:
    session = transition.session
    expiry = session.expires_at()
    if session.awaiting != command.player or expiry is None or now < expiry:
        return  # stale timer: the player acted in time or the clock is paused
    reserves = list(session.reserves)
    reserves[command.player] = timedelta(0)
    _set(transition, session.game, reserves=(reserves[0], reserves[1]))
    transition.facts.append(facts.clock_expired(transition.session, command.player, now))
    whole = session.rules.clock.penalty is Penalty.LOSE_MATCH
    _forfeit(transition, command.player, Cause.TIMEOUT, now, new_seed, whole_match=whole)


def _disconnect(
    transition: Transition, command: Command, now: datetime, new_seed: SeedSource
) -> None:
    session = transition.session
    player = command.player
    if not session.presence[player].connected:
        return
    if session.awaiting == player:  # pause: the reserve stops running while away
        _charge_clock(transition, player, now)
        session = transition.session
    presence = Presence(False, now, now + session.rules.reconnect_window)
    _set(transition, session.game, presence=_with(session.presence, player, presence))
    transition.facts.append(facts.player_disconnected(transition.session, player, now))


def _reconnect_command(
    transition: Transition, command: Command, now: datetime, new_seed: SeedSource
) -> None:
    if not transition.session.presence[command.player].connected:
        _reconnect(transition, command.player, now)


def _reconnect(transition: Transition, player: int, now: datetime) -> None:
    session = transition.session
    blocked = session.presence[player].blocked
    if blocked:
        raise FailedPrecondition(
            f"your seat is disconnected because your location was blocked ({blocked}); "
            "come back from a place where real-money play is allowed within the reconnect window"
        )
    deadline = session.presence[player].deadline
    if deadline is not None and now >= deadline:
        window = session.rules.reconnect_window.total_seconds()
        raise FailedPrecondition(
            f"the {window:g}-second reconnect window closed at {deadline:%H:%M:%S} UTC: "
            "the game is being settled"
        )
    away_since = session.presence[player].disconnected_at or now
    started = now if session.awaiting == player else session.decision_started_at
    presence = _with(session.presence, player, Presence())
    _set(transition, session.game, presence=presence, decision_started_at=started)
    transition.facts.append(
        facts.player_reconnected(transition.session, player, now - away_since, now)
    )


def _location_blocked(
    transition: Transition, command: Command, now: datetime, new_seed: SeedSource
) -> None:
    """The geo service blocked the seat's location: it is treated as disconnected.

    A connected seat is disconnected as by silence (its clock paused, the reconnect
    window opened); a seat already away keeps its window, which a block never extends.
    """
    session = transition.session
    player = command.player
    presence = session.presence[player]
    if presence.blocked:
        return
    reason = command.text or "blocked by the location rules"
    if presence.connected:
        _disconnect(transition, command, now, new_seed)
        session = transition.session
        presence = session.presence[player]
    marked = replace(presence, blocked=reason)
    _set(transition, session.game, presence=_with(session.presence, player, marked))
    transition.facts.insert(0, facts.player_location_blocked(transition.session, player, now))


def _location_allowed(
    transition: Transition, command: Command, now: datetime, new_seed: SeedSource
) -> None:
    """A blocked seat's location was checked and allowed: the player is back (in time)."""
    session = transition.session
    presence = session.presence[command.player]
    if not presence.blocked:
        return
    cleared = replace(presence, blocked="")
    _set(transition, session.game, presence=_with(session.presence, command.player, cleared))
    _reconnect(transition, command.player, now)


def _first_move_made(session: Session) -> bool:
    """False until the opening roll's winner has played (the board is still the start)."""
    game = session.game
    untouched = game.phase is Phase.MOVE and game.board == STARTING_BOARD
    return session.game_number > 1 or not untouched


def settles_by_shares(session: Session, player: int, now: datetime) -> bool:
    """Whether ``SETTLE`` for ``player`` at ``now`` would end the game at shares (so they are
    worth asking for): in play, the player still away past their deadline, a move made."""
    away = session.presence[player]
    if session.status is not Status.IN_PROGRESS or away.connected or away.deadline is None:
        return False
    return now >= away.deadline and _first_move_made(session)


def _settle(transition: Transition, command: Command, now: datetime, new_seed: SeedSource) -> None:
    """The reconnect window passed: the game (and a match) ends at the analysed shares."""
    session = transition.session
    away = session.presence[command.player]
    if away.connected or away.deadline is None or now < away.deadline:
        return  # the player came back in time
    if not _first_move_made(session):  # nobody played: cancel, nothing to settle
        seat = session.seats[command.player]
        transition.session = replace(session, status=Status.CANCELLED)
        reason = f"{seat.display_name} never arrived"
        transition.facts.append(
            facts.game_cancelled(transition.session, reason, now, absent=seat.account_id)
        )
        return
    shares = command.shares or (Decimal("0.5"), Decimal("0.5"))
    if sum(shares) != 1 or min(shares) < 0:
        raise InvalidArgument(f"settlement shares must be in [0, 1] and sum to 1, got {shares}")
    stayed = 1 - command.player
    winner = stayed if shares[stayed] >= shares[command.player] else command.player
    cube = session.game.cube.value
    outcome = Outcome(
        winner, None, cube, 0, Cause.DISCONNECTION, shares, command.analysed, command.figures
    )
    finished = force_end(session.game, winner, WinKind.SINGLE, 0)
    _end_game(transition, finished, outcome, now, new_seed, end_session=True)


def _with(
    pair: tuple[Presence, Presence], index: int, value: Presence
) -> tuple[Presence, Presence]:
    return (value, pair[1]) if index == 0 else (pair[0], value)


_OTHER_HANDLERS: dict[Action, Handler] = {
    Action.LEAVE: _leave,
    Action.TIMEOUT: _timeout,
    Action.DISCONNECT: _disconnect,
    Action.RECONNECT: _reconnect_command,
    Action.SETTLE: _settle,
    Action.LOCATION_BLOCKED: _location_blocked,
    Action.LOCATION_ALLOWED: _location_allowed,
}


def cover_needed(session: Session, cube_value: int) -> int:
    """Largest loss at ``cube_value`` in minor units: a backgammon (money play only).
    Table stakes: 0, since each hold is the player's whole stake at the table and no game
    may cost more than the poorer one (the cube and the result are capped instead)."""
    if session.rules.kind is not Kind.MONEY or session.rules.table_stakes:
        return 0
    return checked_product(
        session.rules.stake_minor,
        cube_value,
        int(WinKind.BACKGAMMON),
        what=f"the largest loss at cube {cube_value} (stake x cube x 3)",
    )


def opening_hold(rules: TableRules) -> int:
    """What each seat's stake hold must cover when the session starts (the wallet's
    ``required_hold`` at cube 1): a backgammon at cube 1, or a match's stake."""
    if rules.kind is Kind.MATCH:
        return rules.stake_minor
    if rules.table_stakes:  # each hold must cover what this game can put at risk
        return rules.at_risk_minor
    return checked_product(
        rules.stake_minor, int(WinKind.BACKGAMMON), what="the opening hold (stake x 3)"
    )


def largest_loss(rules: TableRules, bounds: MoneyBounds) -> int:
    """What one player can lose under ``rules`` (stake x cube cap x 3, a match's stake), or
    ``AmountOutOfBounds`` when the stake or that loss passes the operator's bounds."""
    if rules.table_stakes:  # the bring-in is what one player can lose at the table
        stakes_rule.require_bring_in(
            bounds, rules.stake_minor, rules.table_stakes_minor, rules.currency
        )
        return rules.at_risk_minor
    cap = rules.cube_cap or MAX_CUBE
    match = rules.kind is Kind.MATCH
    return bounds.exposure(rules.stake_minor, cap, rules.currency, match=match)
