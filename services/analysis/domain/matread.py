"""Read a Jellyfish ``.mat`` file (as GNU Backgammon and the game service export it).

The result is the match as data: the two names, the match length (0 = money
session), the rules from XG-style header tags (``Crawford``, ``Jacoby``,
``CubeLimit``), and per game its starting score and the actions in order, each with
the player (0 = left column, "Player 1"), what it was and the line it came from.
Moves stay as text here; :mod:`services.analysis.domain.match_analysis` plays them.

Anything not understood is a :class:`MatFileError` naming the line number, so a
command can say exactly where a file is wrong.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum


class MatFileError(ValueError):
    """A line of the file is not Jellyfish ``.mat``; ``line`` is 1-based (0 = the file)."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}" if line else message)
        self.line = line
        self.message = message

    def __reduce__(self) -> tuple[type[MatFileError], tuple[int, str]]:
        # Raised in a worker process: it must unpickle in the service's (its two arguments).
        return (MatFileError, (self.line, self.message))


class Kind(Enum):
    MOVE = "move"  # dice rolled and played (text may be empty: no legal play)
    DOUBLE = "double"
    BEAVER = "beaver"
    TAKE = "take"
    DROP = "drop"
    WIN = "win"


@dataclass(frozen=True, slots=True)
class Action:
    line: int
    player: int
    kind: Kind
    dice: tuple[int, int] = (0, 0)
    text: str = ""  # the play (MOVE)
    value: int = 0  # the cube offered (DOUBLE, BEAVER) or the points won (WIN)


@dataclass(slots=True)
class GameRecord:
    number: int
    line: int
    score: tuple[int, int]
    actions: list[Action] = field(default_factory=list)


@dataclass(slots=True)
class MatRecord:
    names: tuple[str, str] = ("Player 1", "Player 2")
    length: int = 0
    crawford: bool = True
    jacoby: bool = False
    cube_cap: int = 64
    games: list[GameRecord] = field(default_factory=list)


_TAG = re.compile(r'^\s*;\s*\[(?P<name>[^"\]]+?)\s+"(?P<value>[^"]*)"\]\s*$')
_LENGTH = re.compile(r"^\s*(\d+)\s+point\s+match\s*$", re.I)
_GAME = re.compile(r"^\s*Game\s+(\d+)\s*$", re.I)
_SCORE = re.compile(r"^\s*(?P<a>\S.*?)\s*:\s*(?P<sa>\d+)\s+(?P<b>\S.*?)\s*:\s*(?P<sb>\d+)\s*$")
_ROW = re.compile(r"^\s*\d+\)(?P<rest>.*)$")
_TOKEN = re.compile(
    r"(?P<dice>[1-6][1-6]):|(?P<double>Doubles)\s*=>\s*(?P<dv>\d+)|(?P<beaver>Beavers)\s*=>\s*(?P<bv>\d+)"
    r"|(?P<take>Takes)|(?P<drop>Drops)|(?P<win>Wins)\s+(?P<points>\d+)\s+points?(?:\s+and\s+the\s+match)?",
    re.I,
)
# A cell starting this many characters or more after the row's ")" is the right column.
_RIGHT_COLUMN = 14
_STANDALONE_RIGHT = 20


def parse(text: str) -> MatRecord:
    """The match in ``text``, or :class:`MatFileError` naming the first bad line."""
    record = MatRecord()
    seen_length = False
    current: GameRecord | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.startswith(";"):
            _tag(record, line, number)
            continue
        if (found := _LENGTH.match(line)) is not None:
            record.length = int(found[1])
            seen_length = True
            continue
        if (found := _GAME.match(line)) is not None:
            if not seen_length:
                raise MatFileError(number, "a game starts before the 'N point match' line")
            current = GameRecord(int(found[1]), number, (0, 0))
            record.games.append(current)
            continue
        if current is None:
            raise MatFileError(number, f"expected 'N point match' or 'Game N', got {stripped!r}")
        if not current.actions and (found := _SCORE.match(line)) and not _ROW.match(line):
            current.score = (int(found["sa"]), int(found["sb"]))
            if len(record.games) == 1:
                record.names = (found["a"], found["b"])
            continue
        current.actions.extend(_row(line, number))
    if not seen_length:
        raise MatFileError(0, "no 'N point match' line: not a Jellyfish .mat file")
    if not record.games:
        raise MatFileError(0, "the file holds no games")
    return record


def _tag(record: MatRecord, line: str, number: int) -> None:
    found = _TAG.match(line)
    if found is None:
        return  # other comments are allowed
    name, value = found["name"].strip().lower(), found["value"].strip()
    if name == "crawford":
        record.crawford = value.lower() == "on"
    elif name == "jacoby":
        record.jacoby = value.lower() == "on"
    elif name == "cubelimit":
        if not value.isdigit() or int(value) < 1:
            raise MatFileError(number, f"CubeLimit must be a positive number, got {value!r}")
        record.cube_cap = int(value)


def _row(line: str, number: int) -> list[Action]:
    row = _ROW.match(line)
    body, start = (row["rest"], row.start("rest")) if row else (line, 0)
    tokens = list(_TOKEN.finditer(body))
    if not tokens:
        raise MatFileError(number, f"not a move, cube action or result: {line.strip()!r}")
    if body[: tokens[0].start()].strip():
        raise MatFileError(number, f"unexpected text {body[: tokens[0].start()].strip()!r}")
    actions = []
    for index, token in enumerate(tokens):
        end = tokens[index + 1].start() if index + 1 < len(tokens) else len(body)
        if len(tokens) == 2:
            player = index
        elif row:
            player = 1 if token.start() >= _RIGHT_COLUMN else 0
        else:
            player = 1 if start + token.start() >= _STANDALONE_RIGHT else 0
        actions.append(_action(token, body[token.end() : end].strip(), player, number))
    return actions


def _action(token: re.Match[str], rest: str, player: int, number: int) -> Action:
    if token["dice"]:
        dice = (int(token["dice"][0]), int(token["dice"][1]))
        return Action(number, player, Kind.MOVE, dice, rest)
    if rest:
        raise MatFileError(number, f"unexpected text {rest!r} after {token[0]!r}")
    if token["double"]:
        return Action(number, player, Kind.DOUBLE, value=int(token["dv"]))
    if token["beaver"]:
        return Action(number, player, Kind.BEAVER, value=int(token["bv"]))
    if token["take"]:
        return Action(number, player, Kind.TAKE)
    if token["drop"]:
        return Action(number, player, Kind.DROP)
    return Action(number, player, Kind.WIN, value=int(token["points"]))
