"""Match analysis: every checker play and cube decision of a recorded match, graded.

Input is a :class:`~services.analysis.domain.matread.MatRecord` (a Jellyfish ``.mat``
file, as GNU Backgammon and the game service export it); each game is replayed with
the rules library and every decision is valued with the :class:`Evaluator` at the
chosen ply. :func:`analyse_game` does one game (the pool runs games in parallel),
:func:`summarise` adds up each player's figures.

Units: every error and luck figure is in normalised equity at the cube of the moment
("EMG", equivalent to money game: per unit of cube in money, gnubg's normalised
match equity in a match), as gnubg's "EMG" columns, so PR figures compare across
cube levels and scores.

Decisions (as GNU Backgammon counts them in its statistics):

- ``checker``: the play of a roll. Error = the best play's equity - the played one's.
  **Counted** only when unforced: at least two legal plays with different results
  (a roll with no legal play, or only one, is not a decision).
- ``double``: the player on roll doubled. Always counted. Error = no double - the
  doubled equity (min of double/take and double/pass) when not doubling was better.
- ``no_double``: the player on roll could double and rolled instead. Counted when
  close (best - doubled equity < 0.16, gnubg's isCloseCubedecision) or when doubling
  was right (a missed double). Error = doubled equity - no double when doubling was right.
  The opening roll, a turn whose double was just taken, a centred/owned cube the
  player cannot use (Crawford game, cube dead at the score or at the house cap) are
  not decisions.
- ``take`` / ``pass`` (a beaver counts as a take): the doubled player's answer. Always
  counted. Error = the doubler's equity after the answer - after the better answer.

Tiers (exclusive, as gnubg marks them): doubtful 0.04 <= e < 0.08, bad 0.08 <= e <
0.16, very bad e >= 0.16. PR = 500 x total error / counted decisions (XG-style);
error per decision = total error / counted decisions.

Luck of a roll (gnubg's LuckNormal/LuckFirst at 0-ply): the mover's equity after the
best play of the dice rolled minus the average of that over the 36 rolls (the
opening roll: over the 30 non-doubles), each roll played as the net's 0-ply choice
and valued with the cube model, so luck and its average are measured alike.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from services.analysis.domain.engine import Evaluator, PositionEvaluation
from services.analysis.domain.matread import Action, GameRecord, Kind, MatFileError, MatRecord
from services.backgammon.board import STARTING_BOARD, Board
from services.backgammon.errors import RulesError
from services.backgammon.match_id import MatchIdState
from services.backgammon.movegen import find_play

DOUBTFUL, BAD, VERY_BAD = 0.04, 0.08, 0.16
CLOSE_CUBE = 0.16  # gnubg's isCloseCubedecision threshold
PR_SCALE = 500.0


@dataclass(frozen=True, slots=True)
class Decision:
    game: int  # 1-based game number in the match
    line: int  # the .mat line it came from
    player: int  # 0 = the record's first player
    kind: str  # checker | double | no_double | take | pass
    counted: bool
    error: float  # >= 0, normalised equity (EMG)
    luck: float = 0.0  # checker decisions only
    dice: tuple[int, int] = (0, 0)
    played: str = ""
    best: str = ""
    cube: int = 1
    # Checker plays with a legal play: the play's place in the engine's ranking (1 = the
    # best; 0: not a checker play, or no legal play) and the losses of the second- and
    # third-best plays (None when there are fewer plays). The assistance detector reads
    # the shape of a player's mistakes from them: which alternative was played, and how
    # close it was.
    rank: int = 0
    second_loss: float | None = None
    third_loss: float | None = None


@dataclass(slots=True)
class PlayerFigures:
    name: str
    decisions: int = 0
    checker_decisions: int = 0
    cube_decisions: int = 0
    checker_error: float = 0.0
    cube_error: float = 0.0
    doubtful: int = 0
    bad: int = 0
    very_bad: int = 0
    luck: float = 0.0
    decision_seconds: list[float] = field(default_factory=list)

    @property
    def error(self) -> float:
        return self.checker_error + self.cube_error

    @property
    def error_per_decision(self) -> float:
        return self.error / self.decisions if self.decisions else 0.0

    @property
    def checker_error_per_decision(self) -> float:
        return self.checker_error / self.checker_decisions if self.checker_decisions else 0.0

    @property
    def cube_error_per_decision(self) -> float:
        return self.cube_error / self.cube_decisions if self.cube_decisions else 0.0

    @property
    def pr(self) -> float:
        return PR_SCALE * self.error_per_decision

    def as_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "decisions": self.decisions,
            "checker_decisions": self.checker_decisions,
            "cube_decisions": self.cube_decisions,
            "error_per_decision": round(self.error_per_decision, 6),
            "checker_error_per_decision": round(self.checker_error_per_decision, 6),
            "cube_error_per_decision": round(self.cube_error_per_decision, 6),
            "pr": round(self.pr, 3),
            "doubtful": self.doubtful,
            "bad": self.bad,
            "very_bad": self.very_bad,
            "luck": round(self.luck, 6),
        }


def tier(error: float) -> str:
    if error >= VERY_BAD:
        return "very_bad"
    if error >= BAD:
        return "bad"
    if error >= DOUBTFUL:
        return "doubtful"
    return ""


def summarise(names: tuple[str, str], decisions: list[Decision]) -> list[PlayerFigures]:
    players = [PlayerFigures(names[0]), PlayerFigures(names[1])]
    for decision in decisions:
        figures = players[decision.player]
        figures.luck += decision.luck
        if not decision.counted:
            continue
        figures.decisions += 1
        if decision.kind == "checker":
            figures.checker_decisions += 1
            figures.checker_error += decision.error
        else:
            figures.cube_decisions += 1
            figures.cube_error += decision.error
        grade = tier(decision.error)
        if grade:
            setattr(figures, grade, getattr(figures, grade) + 1)
    return players


def crawford_games(record: MatRecord) -> list[bool]:
    """Per game: is it the Crawford game (the first game with a side one point away)?"""
    flags, done = [], False
    for game in record.games:
        at_one = record.length > 0 and record.length - 1 in game.score
        flag = record.crawford and at_one and not done
        done = done or at_one
        flags.append(flag)
    return flags


def analyse(record: MatRecord, engine: Evaluator, plies: int = 0) -> list[Decision]:
    """Every decision of every game, in order."""
    flags = crawford_games(record)
    decisions: list[Decision] = []
    for index in range(len(record.games)):
        decisions += analyse_game(record, index, engine, plies, flags[index])
    return decisions


class _Replay:
    """One game's state while it is replayed: board (seen from player 0), cube, score."""

    def __init__(self, record: MatRecord, game: GameRecord, crawford: bool) -> None:
        self.record = record
        self.game = game
        self.crawford = crawford
        self.board = STARTING_BOARD
        self.cube = 1
        self.owner: int | None = None

    def view(self, player: int) -> Board:
        return self.board if player == 0 else self.board.swapped()

    def state(self, player: int) -> MatchIdState:
        return MatchIdState(
            cube_value=self.cube,
            cube_owner=self.owner,
            on_roll=player,
            turn=player,
            crawford=self.crawford,
            match_length=self.record.length,
            score=self.game.score,
            jacoby=self.record.jacoby and not self.record.length,
        )

    def may_double(self, player: int) -> bool:
        if self.owner not in (None, player) or self.crawford:
            return False
        if self.record.length:
            return self.game.score[player] + self.cube < self.record.length
        return self.cube * 2 <= self.record.cube_cap


def _doubled(ev: PositionEvaluation) -> float:
    return min(ev.double_take, ev.double_pass)


def analyse_game(
    record: MatRecord, index: int, engine: Evaluator, plies: int = 0, crawford: bool = False
) -> list[Decision]:
    """The decisions of game ``index`` (0-based), or :class:`MatFileError` naming the line."""
    game = _GameAnalysis(record, record.games[index], engine, plies, crawford)
    for action in game.replay.game.actions:
        if not game.apply(action):
            break
    return game.decisions


class _GameAnalysis:
    """One game's decisions, action by action, checking whose turn each action is."""

    def __init__(
        self, record: MatRecord, game: GameRecord, engine: Evaluator, plies: int, crawford: bool
    ) -> None:
        self.replay = _Replay(record, game, crawford)
        self.engine, self.plies = engine, plies
        self.decisions: list[Decision] = []
        self.pending: tuple[int, PositionEvaluation] | None = None  # (doubler, figures)
        self.doubled_now = -1  # whose double was just taken: no second cube decision
        self.first = True
        self.expected: tuple[int, frozenset[Kind]] | None = None  # None: either may start
        self.beavered = False

    def _check_turn(self, action: Action) -> None:
        if self.expected is None:
            return
        player, kinds = self.expected
        if action.kind is Kind.WIN:
            return
        if action.player != player or action.kind not in kinds:
            names = self.replay.record.names
            wanted = " or ".join(sorted(k.value for k in kinds))
            raise MatFileError(
                action.line,
                f"{names[action.player]} {action.kind.value}s out of turn: "
                f"{names[player]} was to {wanted}",
            )

    def apply(self, action: Action) -> bool:
        """Apply one action; False once the game is over."""
        self._check_turn(action)
        if action.kind is Kind.MOVE:
            self._move(action)
        elif action.kind is Kind.DOUBLE:
            self._double(action)
        elif action.kind in (Kind.TAKE, Kind.BEAVER, Kind.DROP):
            return self._answer(action)
        else:  # WIN
            return False
        return True

    def _move(self, action: Action) -> None:
        player, replay = action.player, self.replay
        state = replay.state(player)
        if not self.first and self.doubled_now != player and replay.may_double(player):
            before = self.engine.evaluate(replay.view(player), state, self.plies)
            self.decisions.append(_no_double(replay.game, action.line, player, before, replay.cube))
        self.decisions.append(_checker(replay, action, state, self.engine, self.plies, self.first))
        self.first, self.doubled_now, self.pending, self.beavered = False, -1, None, False
        self.expected = (1 - player, frozenset((Kind.MOVE, Kind.DOUBLE)))

    def _double(self, action: Action) -> None:
        replay = self.replay
        ev = self.engine.evaluate(replay.view(action.player), replay.state(action.player),
                                  self.plies)  # fmt: skip
        error = max(ev.no_double - _doubled(ev), 0.0)
        self.decisions.append(Decision(replay.game.number, action.line, action.player, "double",
                                       True, error, cube=replay.cube))  # fmt: skip
        self.pending = (action.player, ev)
        self.expected = (1 - action.player, frozenset((Kind.TAKE, Kind.DROP, Kind.BEAVER)))

    def _answer(self, action: Action) -> bool:
        if self.beavered:  # the doubler's answer to a beaver: not graded
            self.beavered = False
            self.expected = (action.player, frozenset((Kind.MOVE,)))
            return action.kind is not Kind.DROP
        if self.pending is None:
            raise MatFileError(action.line, f"{action.kind.value} without a double before it")
        doubler, ev = self.pending
        dropped = action.kind is Kind.DROP
        error = max((ev.double_pass - ev.double_take) if dropped else
                    (ev.double_take - ev.double_pass), 0.0)  # fmt: skip
        self.decisions.append(
            Decision(self.replay.game.number, action.line, action.player,
                     "pass" if dropped else "take", True, error, cube=self.replay.cube)
        )  # fmt: skip
        if dropped:
            return False
        beaver = action.kind is Kind.BEAVER
        self.replay.cube = action.value if beaver else self.replay.cube * 2
        self.replay.owner = action.player
        self.doubled_now, self.pending = doubler, None
        # After a beaver the doubler may answer it (Jellyfish writers may omit the take).
        self.beavered = beaver
        kinds = (Kind.MOVE, Kind.TAKE, Kind.DROP) if beaver else (Kind.MOVE,)
        self.expected = (doubler, frozenset(kinds))
        return True


def _no_double(
    game: GameRecord, line: int, player: int, ev: PositionEvaluation, cube: int
) -> Decision:
    doubled = _doubled(ev)
    best = max(ev.no_double, doubled)
    missed = doubled > ev.no_double
    counted = missed or best - doubled < CLOSE_CUBE
    error = doubled - ev.no_double if missed else 0.0
    return Decision(game.number, line, player, "no_double", counted, error, cube=cube)


def _checker(
    replay: _Replay,
    action: Action,
    state: MatchIdState,
    engine: Evaluator,
    plies: int,
    opening: bool,
) -> Decision:
    board = replay.view(action.player)
    plays = engine.best_moves(board, state, action.dice, plies)
    number = replay.game.number
    if not plays:
        if action.text:
            raise MatFileError(
                action.line, f"{action.text!r}: no legal play exists for {action.dice}"
            )
        luck = _luck(engine, board, state, action.dice, plies, opening)
        return Decision(number, action.line, action.player, "checker", False, 0.0, luck=luck,
                        dice=action.dice, cube=replay.cube)  # fmt: skip
    if not action.text:
        raise MatFileError(
            action.line, f"no play written for {action.dice} but {plays[0].notation} is legal"
        )
    try:
        played = find_play(board, action.dice, _gnubg_points(action.text))
    except RulesError as error:
        raise MatFileError(action.line, str(error)) from None
    rank, chosen = next((i, p) for i, p in enumerate(plays, 1) if p.result == played.result)
    luck = _luck(engine, board, state, action.dice, plies, opening)
    best = plays[0]
    replay.board = chosen.result if action.player == 0 else chosen.result.swapped()
    return Decision(
        number,
        action.line,
        action.player,
        "checker",
        len(plays) > 1,
        max(best.equity - chosen.equity, 0.0),
        luck=luck,
        dice=action.dice,
        played=chosen.notation,
        best=best.notation,
        cube=replay.cube,
        rank=rank,
        second_loss=plays[1].equity_loss if len(plays) > 1 else None,
        third_loss=plays[2].equity_loss if len(plays) > 2 else None,
    )


def _luck(
    engine: Evaluator,
    board: Board,
    state: MatchIdState,
    dice: tuple[int, int],
    plies: int,
    opening: bool,
) -> float:
    values = engine.roll_values(board, state, plies)
    weighted = [
        (value, 2 if high != low else (0 if opening else 1))
        for (high, low), value in values.items()
    ]
    average = sum(v * w for v, w in weighted) / sum(w for _, w in weighted)
    return values[(max(dice), min(dice))] - average


def _gnubg_points(text: str) -> str:
    """Jellyfish writers also spell the bar 25 and off 0: the rules library's names."""
    words = []
    for word in text.split():
        parts = word.split("/")
        if parts and parts[0] == "25":
            parts[0] = "bar"
        if len(parts) > 1 and parts[-1].split("(")[0].rstrip("*") == "0":
            parts[-1] = "off" + parts[-1][1:]
        words.append("/".join(parts))
    return " ".join(words)
